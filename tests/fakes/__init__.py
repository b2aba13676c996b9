"""Local fakes of the Telegram, Discord and Slack APIs for network-free tests."""
