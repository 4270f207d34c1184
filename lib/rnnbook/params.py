"""Validation of papermill parameters (all chapters).

Every chapter's first code cell passes its parameters through these checks, so that a bad value
stops the run before any computation with one error naming the parameter and what is allowed.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import torch

PROFILES = ("quick", "full")
DEVICES = ("auto", "cpu", "cuda")


class ParameterError(ValueError):
    """A papermill parameter has an unknown value, a wrong type or an impossible value."""

    def __init__(self, name: str, value: Any, allowed: str):
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"parameter {name!r} = {value!r} is not allowed; allowed: {allowed}")


def smoke(value: Any, profile: str) -> bool:
    """``smoke``: a bool, True only with the full profile (its code paths at toy sizes)."""
    if not isinstance(value, bool):
        raise ParameterError("smoke", value, "True or False")
    if value and profile != "full":
        raise ParameterError("smoke", value, "True only with profile 'full' (its code at toy sizes)")
    return value


def choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    """``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ParameterError(name, value, "one of " + ", ".join(repr(a) for a in allowed))
    return value


def integer(name: str, value: Any, lo: int | None = None, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]`` (floats such as 5e4 are accepted if integral)."""
    allowed = "an integer" + _range(lo, hi)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(name, value, allowed)
    if not float(value).is_integer():
        raise ParameterError(name, value, allowed)
    value = int(value)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ParameterError(name, value, allowed)
    return value


def real(name: str, value: Any, lo: float | None = None, hi: float | None = None,
         lo_open: bool = False) -> float:
    """``value`` as a finite float in ``[lo, hi]`` (``(lo, hi]`` if ``lo_open``)."""
    allowed = "a finite number" + _range(lo, hi, lo_open)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ParameterError(name, value, allowed)
    value = float(value)
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ParameterError(name, value, allowed)
    if hi is not None and value > hi:
        raise ParameterError(name, value, allowed)
    return value


def sequence(name: str, value: Any, min_len: int = 1) -> list:
    """``value`` as a list of at least ``min_len`` items (a scalar is not a list)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) < min_len:
        raise ParameterError(name, value, f"a list of at least {min_len} item(s)")
    return list(value)


def device(value: Any) -> torch.device:
    """Resolve ``device``: "auto" picks CUDA when available, else the CPU."""
    choice("device", value, DEVICES)
    if value == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if value == "cuda" and not torch.cuda.is_available():
        raise ParameterError("device", value, "'auto' or 'cpu' (no CUDA device is available here)")
    return torch.device(value)


def _range(lo: float | None, hi: float | None, lo_open: bool = False) -> str:
    if lo is not None and hi is not None:
        return f" in {'(' if lo_open else '['}{lo}, {hi}]"
    if lo is not None:
        return f" {'>' if lo_open else '>='} {lo}"
    if hi is not None:
        return f" <= {hi}"
    return ""
