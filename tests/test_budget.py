"""The per-chat send/edit budget: a token bucket that a 429 pauses."""

from __future__ import annotations

from runwield_bridge.channels.budget import Budgets, ChatBudget


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_then_the_sustained_rate() -> None:
    clock = Clock()
    budget = ChatBudget(rate=1.0, burst=3, clock=clock)
    assert [budget.take() for _ in range(4)] == [True, True, True, False]
    assert budget.delay() == 1.0
    clock.now += 0.5
    assert not budget.take() and budget.delay() == 0.5
    clock.now += 0.5
    assert budget.take()


def test_a_429_pauses_the_chat_for_retry_after() -> None:
    clock = Clock()
    budget = ChatBudget(rate=10.0, burst=5, clock=clock)
    budget.pause(3.0)
    assert budget.delay() == 3.0 and not budget.take()
    clock.now += 2.9
    assert not budget.take()
    clock.now += 0.2
    assert budget.take()


def test_tokens_do_not_pile_up_beyond_the_burst() -> None:
    clock = Clock()
    budget = ChatBudget(rate=1.0, burst=2, clock=clock)
    clock.now += 1000
    assert [budget.take() for _ in range(3)] == [True, True, False]


def test_groups_get_the_group_rate_and_each_chat_its_own_budget() -> None:
    budgets = Budgets(rate=1.0, burst=1, group_rate=0.25, clock=Clock())
    private, group = budgets.for_chat("1", group=False), budgets.for_chat("-2", group=True)
    assert (private.rate, group.rate) == (1.0, 0.25)
    assert budgets.for_chat("1", group=False) is private
    assert private.take() and group.take()
