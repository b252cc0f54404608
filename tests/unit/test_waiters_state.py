"""A waiter's verdict, as kapp words it."""

from kapply.apply.waiters import Word, failed, ok, ongoing


def test_state_words_are_kapps():
    assert ok().word == Word.OK == "ok"
    assert failed("x").word == "fail"
    assert ongoing("x").word == "ongoing"
