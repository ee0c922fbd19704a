"""The suite's own order (tests/conftest.py `spread_slow`): the slow tests spread over the first
half of the run, and every test still runs exactly once."""

from __future__ import annotations

from conftest import spread_slow


def test_every_test_runs_once_with_the_slow_ones_spread_over_the_first_half() -> None:
    items = [f"t{i}" for i in range(100)]
    slow = {"t3", "t50", "t97"}
    order = spread_slow(items, lambda name: name in slow)
    assert sorted(order) == sorted(items)  # none lost, none twice
    # Slow first, then an equal share of the others (97 // 6 = 16) before the next slow one.
    assert [order.index(name) for name in ("t3", "t50", "t97")] == [0, 17, 34]
    assert order[1:17] == [f"t{i}" for i in range(100) if f"t{i}" not in slow][:16]


def test_without_slow_tests_the_order_is_kept() -> None:
    items = list(range(10))
    assert spread_slow(items, lambda _n: False) == items
    assert spread_slow([], lambda _n: True) == []
