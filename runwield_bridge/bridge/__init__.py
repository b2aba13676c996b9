"""The ACP client runtime that chats use: conversations bound to sessions, agent links, asking, bridge commands."""
