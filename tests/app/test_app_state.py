"""The app's flags without the app (``app.state.AppFlags``): the quit that waits for a write."""

from __future__ import annotations

from dsh_memory_tui.app.state import AppFlags, Quit


def test_q_with_nothing_being_written_quits_once_the_keys_ahead_are_handled() -> None:
    flags = AppFlags()
    assert flags.quit_pressed() is Quit.NOTHING  # the decision waits behind the keys ahead
    assert flags.after_keys(writing=False) is Quit.EXIT


def test_q_during_a_write_says_once_that_it_waits_then_quits_when_the_write_is_done() -> None:
    flags = AppFlags()
    flags.quit_pressed()
    assert flags.after_keys(writing=True) is Quit.WAIT
    assert flags.after_keys(writing=True) is Quit.NOTHING  # the timer's second word: silent
    assert flags.after_write(failed=False, writing=True) is Quit.NOTHING  # one more runs
    assert flags.after_write(failed=False, writing=False) is Quit.EXIT


def test_q_again_quits_at_once() -> None:
    flags = AppFlags()
    flags.quit_pressed()
    assert flags.quit_pressed() is Quit.EXIT


def test_a_failed_write_calls_the_quit_off_and_q_starts_over() -> None:
    flags = AppFlags()
    flags.quit_pressed()
    flags.after_keys(writing=True)
    assert flags.after_write(failed=True, writing=False) is Quit.STAY
    assert flags.after_keys(writing=False) is Quit.NOTHING  # the pending check finds no quit
    assert flags.quit_pressed() is Quit.NOTHING  # q waits again, as the first time
    assert flags.after_keys(writing=False) is Quit.EXIT


def test_a_write_ending_without_a_quit_asked_does_nothing() -> None:
    flags = AppFlags()
    assert flags.after_write(failed=True, writing=False) is Quit.NOTHING
    assert flags.after_write(failed=False, writing=False) is Quit.NOTHING
