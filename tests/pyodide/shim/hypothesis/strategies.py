"""Strategies stand-in: any ``st.<name>(...)`` returns an inert object (tests using them are skipped)."""


class _Strategy:
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        return lambda *a, **k: _Strategy()

    def __or__(self, other):
        return self


def composite(fn):
    return lambda *a, **k: _Strategy()


def __getattr__(name):
    return lambda *a, **k: _Strategy()
