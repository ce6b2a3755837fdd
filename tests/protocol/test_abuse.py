"""The abuse rule: more than 20 bad requests within 60 s."""

from __future__ import annotations

from protocol import ABUSE_LIMIT, ABUSE_WINDOW_SECONDS, AbuseMeter


def test_the_limit_itself_is_tolerated_and_one_more_is_not() -> None:
    meter = AbuseMeter()
    assert not any(meter.strike(float(second)) for second in range(ABUSE_LIMIT))
    assert meter.strike(float(ABUSE_LIMIT))


def test_old_strikes_leave_the_window() -> None:
    meter = AbuseMeter(limit=2, window=10.0)
    assert not meter.strike(0.0)
    assert not meter.strike(5.0)
    assert not meter.strike(10.0)  # the strike at 0 is 10 s old: out
    assert meter.strike(14.0)


def test_a_steady_trickle_is_never_abuse() -> None:
    meter = AbuseMeter()
    spacing = ABUSE_WINDOW_SECONDS / ABUSE_LIMIT
    assert not any(meter.strike(index * spacing) for index in range(1000))
