"""The synthesis chapter: what the four papers say about one another.

Each section carries one paper's prediction into another paper's setting and measures it with the
two chapters' own code (imported from their packages, never written again):

- :mod:`~rnnbook.synthesis.regulariser`: S1, Proca et al.'s regulariser is Zucchet & Orvieto's
  hidden-state variance (learning dynamics, curse of memory).
- :mod:`~rnnbook.synthesis.stable_students`: S2, extrapolation lives outside Miller & Hardt's stable
  regime (extrapolation, stable models).
- :mod:`~rnnbook.synthesis.sharpness`: S3, the curse of memory at a finite training length
  (extrapolation, curse of memory).
- :mod:`~rnnbook.synthesis.learnability`: S4, Proca et al.'s learnability meets Cohen-Karlik et al.'s
  teachers (extrapolation, learning dynamics).
- :mod:`~rnnbook.synthesis.memory_scale`: S5, one memory scale in three papers (stable models, curse
  of memory, learning dynamics).
- :mod:`~rnnbook.synthesis.plots`: the figures S1-S5 (presentation only).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rnnbook import params


@dataclass(frozen=True)
class Settings:
    """The chapter's settings: one :class:`Settings` of each section's module."""

    s1: Any
    s2: Any
    s3: Any
    s4: Any
    s5: Any


def resolve(profile: str, *, lams: Sequence[float] | None = None, smoke: bool = False) -> Settings:
    """Validate the chapter's parameters (before any compute) and return each section's settings
    for ``profile`` (``smoke``: the full profile's code paths at toy sizes); ``lams``: S2's bounds λ
    of the stable students (None: the profile's)."""
    from rnnbook.synthesis import learnability, memory_scale, regulariser, sharpness, stable_students
    params.choice("profile", profile, params.PROFILES)
    smoke = params.smoke(smoke, profile)
    s1, s2, s3, s4, s5 = (m.settings(profile, smoke=smoke) for m in
                          (regulariser, stable_students, sharpness, learnability, memory_scale))
    if lams is not None:
        s2 = replace(s2, lams=tuple(params.sequence("lams", lams)))
    return Settings(s1, s2, s3, s4, s5)
