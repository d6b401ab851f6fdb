"""Compare two JSON exports of the real model: structure, text and ids exactly, numbers to a tolerance."""

from __future__ import annotations

import math

#: Float32 sums in another order (BLAS threads, another CPU's kernels) move the 5th significant
#: figure of an attention weight or probability; anything a code change would do moves far more.
EXPORT_REL_TOL = 1e-3
EXPORT_ABS_TOL = 1e-6


def differences(a, b, path="", out=None):
    """Paths where two exports differ: structure, text and ids exactly, numbers within the tolerances."""
    out = [] if out is None else out
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or a is None:
        if a != b:
            out.append(f"{path}: {a!r} != {b!r}")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if not math.isclose(a, b, rel_tol=EXPORT_REL_TOL, abs_tol=EXPORT_ABS_TOL):
            out.append(f"{path}: {a!r} != {b!r}")
    elif isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            out.append(f"{path}: keys {sorted(a)} != {sorted(b)}")
        for k in a.keys() & b.keys():
            differences(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            differences(x, y, f"{path}[{i}]", out)
    else:
        out.append(f"{path}: {a!r} != {b!r}")
    return out


