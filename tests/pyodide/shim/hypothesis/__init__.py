"""A stand-in for hypothesis inside Pyodide: property tests are skipped there (they run in CPython).

``given`` marks the test so the runner counts it as skipped ("needs hypothesis"); ``settings``,
``assume``, ``example`` and ``HealthCheck`` exist so that modules import.
"""


def given(*args, **kwargs):
    def deco(fn):
        fn._shim_needs_hypothesis = True
        return fn

    return deco


class settings:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, fn):
        return fn

    @staticmethod
    def register_profile(*args, **kwargs):
        pass

    @staticmethod
    def load_profile(*args, **kwargs):
        pass


def example(*args, **kwargs):
    return lambda fn: fn


def assume(condition):
    return True


def note(value):
    pass


class HealthCheck:
    def __getattr__(self, name):
        return name

    too_slow = data_too_large = filter_too_much = function_scoped_fixture = large_base_example = "x"
