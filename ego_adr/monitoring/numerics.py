"""The same numbers on every machine: how a learned monitor trains so that its per-step file does not depend on
the thread count or the CPU, and the CPU a result was computed on.

Measured (issue 34): ``sgt-oneclass`` on Assembly101-O gave 72.1 macro F1 on one x86-64 machine and 72.8 on
another, same torch and numpy; here, forcing other kernels of the same machine (``ATEN_CPU_CAPABILITY`` and
``MKL_ENABLE_INSTRUCTIONS``, what a CPU without AVX-512 gets) changed the chosen threshold in its sixth digit and
so the file's bytes. Float32 training drifts by ~1e-7 per operation between kernels, and a chosen setting (a
threshold, an epoch by held-out likelihood) turns that drift into other alarms. So, in :func:`fixed_numerics`:

- float64 tensors (the drift between kernels is then ~1e-16 per operation, far below every rounding we apply);
- one intra-op thread (a reduction split over threads adds in another order) and torch's deterministic
  algorithms; the caller's settings are restored afterwards;
- the per-step probability is written rounded to :data:`P_DIGITS` decimals (:func:`stable`), so the last bits of a
  float64 never reach the file.
"""

from __future__ import annotations

import contextlib
import platform
from pathlib import Path

P_DIGITS = 6


def stable(p: float) -> float:
    """``p`` rounded to :data:`P_DIGITS` decimals: what a per-step file records of a learned probability."""
    return round(float(p), P_DIGITS)


@contextlib.contextmanager
def fixed_numerics(threads: int = 1):
    """float64 default dtype, ``threads`` intra-op threads and deterministic algorithms inside; restored after."""
    import torch

    before = (torch.get_default_dtype(), torch.get_num_threads(), torch.are_deterministic_algorithms_enabled())
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_default_dtype(before[0])
        torch.set_num_threads(before[1])
        torch.use_deterministic_algorithms(before[2])


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; elsewhere what :mod:`platform` knows) and its architecture."""
    name = ""
    info = Path("/proc/cpuinfo")
    if info.is_file():
        for line in info.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                name = line.split(":", 1)[1].strip()
                break
    return f"{name or platform.processor() or 'unknown'} ({platform.machine()})"
