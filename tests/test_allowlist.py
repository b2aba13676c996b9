"""Deny by default, and at most one notice per interval to a stranger."""

from __future__ import annotations

from runwield_bridge.channels.allowlist import Allowlist, NoticeThrottle, stranger_notice
from runwield_bridge.channels.types import Conversation, Sender

ALICE, MALLORY = Sender("1", "alice"), Sender("666", "mallory")
PRIVATE, TEAM = Conversation("telegram", "1"), Conversation("telegram", "-100", group=True)


def test_nobody_is_allowed_by_default() -> None:
    assert not Allowlist([], []).allows(ALICE, PRIVATE)


def test_listed_users_anywhere_and_everyone_in_listed_chats() -> None:
    allowlist = Allowlist(["1"], ["-100"])
    assert allowlist.allows(ALICE, PRIVATE)
    assert allowlist.allows(MALLORY, TEAM)
    assert not allowlist.allows(MALLORY, Conversation("telegram", "666"))


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_stranger_is_told_at_most_once_per_interval() -> None:
    clock = Clock()
    throttle = NoticeThrottle(3600, clock)
    assert throttle.should_notify("666")
    clock.now = 3599
    assert not throttle.should_notify("666")
    assert throttle.should_notify("777"), "each stranger has their own hour"
    clock.now = 3600
    assert throttle.should_notify("666")


def test_the_throttle_forgets_old_strangers() -> None:
    clock = Clock()
    throttle = NoticeThrottle(10, clock)
    for n in range(2000):
        throttle.should_notify(str(n))
    clock.now = 100
    throttle.should_notify("new")
    assert len(throttle._last) == 1


def test_the_notice_names_the_ids_to_add() -> None:
    text = stranger_notice("telegram", MALLORY, TEAM)
    assert "666" in text and "-100" in text and "channels.telegram.allowed_users" in text
