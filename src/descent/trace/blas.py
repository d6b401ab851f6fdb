"""One BLAS thread for the trace: the model's matrix products are too small to share.

A decode step multiplies one activation row (1, 576) by each weight matrix (at most 1,536 x 576
float32), and a prefill a few dozen rows. NumPy's bundled OpenBLAS splits each product over every
core by default; its worker threads then spend more time waking up and waiting than multiplying.
Measured on the 2-core build machine shared with other jobs (SmolLM2-135M, one decode step):
0.38 s wall / 0.23 s CPU with OpenBLAS's default 2 threads, 0.025 s wall / 0.017 s CPU with 1.

:func:`use_one_thread` sets the thread count of the OpenBLAS that NumPy has loaded, through its
``*_set_num_threads`` entry point (the call ``threadpoolctl`` makes), unless the user chose a
count with ``OPENBLAS_NUM_THREADS``. With another BLAS (Accelerate, MKL) it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

#: Entry points that set OpenBLAS's thread count: NumPy's wheels bundle ``scipy-openblas`` (64-bit
#: integers, symbols prefixed ``scipy_``); a system OpenBLAS has the plain names.
SET_THREADS_SYMBOLS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


@functools.cache
def use_one_thread() -> bool:
    """Run NumPy's OpenBLAS on one thread (once per process). True if a thread count was set.

    Leaves the count alone when ``OPENBLAS_NUM_THREADS`` is set (the user's choice) or when NumPy's
    OpenBLAS cannot be found (another BLAS, a different wheel layout): correctness never depends on it.
    """
    if os.environ.get("OPENBLAS_NUM_THREADS"):
        return False
    import numpy as np

    # manylinux / macOS wheels keep their shared libraries in numpy.libs / numpy/.dylibs.
    root = Path(np.__file__).resolve().parent
    for lib in sorted([*root.parent.glob("numpy.libs/*openblas*"), *root.glob(".dylibs/*openblas*")]):
        try:
            dll = ctypes.CDLL(str(lib))  # the copy NumPy already loaded: dlopen returns its handle
        except OSError:
            continue
        for name in SET_THREADS_SYMBOLS:
            setter = getattr(dll, name, None)
            if setter is not None:
                setter(ctypes.c_int(1))
                return True
    return False
