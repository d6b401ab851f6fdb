"""Public measurements beside the step model's ceilings (descent.predict), and their summaries.

Every function calls :mod:`descent.predict`. Standard library only (runs in Pyodide).
"""

from __future__ import annotations

from descent import params as P
from descent.quantities.registry import blame, quantity

__all__: list[str] = []


def _predict(measurement: str):
    from descent import predict

    return blame("measurement", predict.predict, measurement)


def _group(group: str):
    from descent import predict

    return blame("group", predict.group, group)


@quantity("measured_rate", "Measured", "tokens_per_s", P.MEASUREMENT)
def measured_rate(measurement: str) -> float:
    """What a published measurement reached, as a speed (a TTFT as prompt / TTFT): catalog measurements.toml."""
    return _predict(measurement).measured_rate


@quantity("measured_ceiling", "Ceiling", "tokens_per_s", P.MEASUREMENT)
def measured_ceiling(measurement: str) -> float:
    """The step model's ceiling for a measurement's configuration, as a speed (descent.predict)."""
    return _predict(measurement).ceiling_rate


@quantity("measured_share", "Share of the ceiling", "fraction", P.MEASUREMENT)
def measured_share(measurement: str) -> float:
    """Measured speed over the step model's ceiling for the same configuration (descent.predict)."""
    return _predict(measurement).share


@quantity("measured_bound", "Bound", "text", P.MEASUREMENT)
def measured_bound(measurement: str) -> str:
    """Memory or compute: what bounds the step model's step for a measurement's configuration (descent.predict)."""
    return _predict(measurement).bound


@quantity("measured_count", "Measurements", "integer", P.MEASURED_GROUP)
def measured_count(group: str) -> int:
    """How many catalog measurements a group holds (descent.predict.group)."""
    return len(_group(group))


@quantity("measured_share_median", "Median share of the ceiling", "fraction", P.MEASURED_GROUP)
def measured_share_median(group: str) -> float:
    """The median share of the ceiling a group of measurements reached (descent.predict.spread)."""
    from descent import predict

    return blame("group", predict.spread, _group(group)).median


@quantity("measured_share_low", "Lowest share of the ceiling", "fraction", P.MEASURED_GROUP)
def measured_share_low(group: str) -> float:
    """The lowest share of the ceiling in a group of measurements (descent.predict.spread)."""
    from descent import predict

    return blame("group", predict.spread, _group(group)).low


@quantity("measured_share_high", "Highest share of the ceiling", "fraction", P.MEASURED_GROUP)
def measured_share_high(group: str) -> float:
    """The highest share of the ceiling in a group of measurements (descent.predict.spread)."""
    from descent import predict

    return blame("group", predict.spread, _group(group)).high


@quantity("measured_loo_coverage", "Left-out measurements inside their class's range", "fraction", P.MEASURED_GROUP)
def measured_loo_coverage(group: str) -> float:
    """Leave-one-out: the share of a group's measurements inside the range the rest of their class gives."""
    from descent import predict

    return blame("group", lambda rows: predict.leave_one_out(rows).share, _group(group))


@quantity("measured_loo_tested", "Measurements tested by leaving them out", "integer", P.MEASURED_GROUP)
def measured_loo_tested(group: str) -> int:
    """How many of a group's measurements have a class with two others to test them against (descent.predict)."""
    from descent import predict

    return predict.leave_one_out(_group(group)).tested


@quantity("measured_loo_coverage_pooled", "Left-out measurements inside the calculators' range", "fraction", P.MEASURED_GROUP)
def measured_loo_coverage_pooled(group: str) -> float:
    """Leave-one-out of the range the calculators print: the share of a group's measurements inside the
    range the rest of their chip class and bound give, every engine together, shares counted at most 1
    (descent.predict.leave_one_out with pooled)."""
    from descent import predict

    return blame("group", lambda rows: predict.leave_one_out(rows, pooled=True).share, _group(group))


@quantity("measured_loo_tested_pooled", "Measurements tested against the calculators' range", "integer", P.MEASURED_GROUP)
def measured_loo_tested_pooled(group: str) -> int:
    """How many of a group's measurements have two others of their chip class and bound (descent.predict)."""
    from descent import predict

    return predict.leave_one_out(_group(group), pooled=True).tested
