"""The run of one chapter: validated parameters, seeding, claims, figures, cache, progress.

Every chapter's first code cell is ``run = rnnbook.setup("<chapter>", profile=..., device=...,
seed=..., results_dir=...)``; everything the chapter writes lands in ``run.dir``
(``<results_dir>/<chapter>/``): ``claims.json``, ``figures/``, ``cache/``.
"""
from __future__ import annotations

import json
import os
import platform
import random
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from tqdm.std import tqdm

from rnnbook import params
from rnnbook.cache import Cache
from rnnbook.claims import Claim, Claims, summary_html, verdict_box_html
from rnnbook.display import full_figures_myst, full_results_html
from rnnbook.figures import provenance, save_figure, use_style
from rnnbook.report import chapter_report, findings_myst, summary_box_html
from rnnbook.paths import DEVICE_FILE, SURVEY_DIR, code_version, default_results_dir, quiet, results_version

T = TypeVar("T")


@dataclass
class Run:
    chapter: str
    profile: str
    device: torch.device
    seed: int
    dir: Path
    smoke: bool = False  # the full profile's code at toy sizes: a test, never results
    claims: Claims = field(init=False)
    cache: Cache = field(init=False)
    started: float = field(init=False, default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.claims = Claims(self.dir / "claims.json")
        self.cache = Cache(self.dir / "cache", results_version(self.chapter))

    def pick(self, quick: T, full: T) -> T:
        """The value for this run's profile."""
        return quick if self.profile == "quick" else full

    def claim(self, id: str, statement: str, source: str, value: Any, tolerance: str,
              passed: bool, verdict: str | None = None, *, kind: str | None = None,
              paper: str | None = None, ours: str | None = None, reason: str | None = None) -> Claim:
        """Record a checked claim of ``kind`` (evidence, construction or check; with the paper's
        value beside ``ours`` and a coded ``reason``: see :meth:`rnnbook.claims.Claims.add`) and
        show its one-line verdict callout where it is checked (in a notebook)."""
        from IPython import get_ipython
        from IPython.display import HTML, display
        c = self.claims.add(id, statement, source, value, tolerance, passed, verdict, kind=kind,
                            paper=paper, ours=ours, reason=reason)
        if get_ipython() is not None:
            display(HTML(c.callout_html()))
        return c

    def save_figure(self, fig, name: str, caption: str) -> None:
        """Export ``fig`` to ``figures/<name>.{png,svg,outline.svg}`` and show it labelled
        ``fig-<chapter>-<name>``."""
        save_figure(fig, name, caption, self.dir / "figures", self.chapter,
                    provenance=provenance(self.label, self.seed, self.device.type),
                    outline=not self.smoke)  # a smoke run's figures are never shown

    @property
    def label(self) -> str:
        """The profile, ``full (smoke)`` for a smoke run."""
        return f"{self.profile} (smoke)" if self.smoke else self.profile

    def progress(self, iterable: Iterable[T], **kwargs) -> Iterable[T]:
        """A tqdm progress bar (silent when ``RNNBOOK_QUIET`` is set)."""
        return tqdm(iterable, disable=quiet(), dynamic_ncols=True, **kwargs)

    def show_claims(self) -> None:
        """Show the chapter's findings table (:mod:`rnnbook.report`) and claims table (the
        chapter's last cell), and after them the committed full-profile results of the chapter when
        this is a quick run. Glues the chapter's verdict box (``verdict_box``) and reproduction
        summary (``summary_box``), both shown at the top of its page, and its scorecard entry
        (``verdict_summary``, in the preface)."""
        from IPython.display import HTML, Markdown, display
        from myst_nb import glue
        items = self.claims.items
        glue("verdict_box", HTML(verdict_box_html(items, self.label)), display=False)
        glue("verdict_summary", HTML(summary_html(items, self.label)), display=False)
        try:
            report = chapter_report(self.chapter)
        except ModuleNotFoundError:  # a chapter without its report (tests): the book build fails
            report = None
        if report is not None:
            glue("summary_box", HTML(summary_box_html(
                report.SUMMARY, items, report.FINDINGS, self.label, self.device.type,
                time.monotonic() - self.started)), display=False)
            manifest = self.dir / "figures" / "figures.json"
            figures = set(json.loads(manifest.read_text())) if manifest.exists() else set()
            display(Markdown(findings_myst(self.chapter, report.FINDINGS, figures,
                                           {c.id for c in items})))
        survey = SURVEY_DIR / f"{self.chapter}.json"
        variations = json.loads(survey.read_text())["variations"] if survey.exists() else None
        display(HTML(self.claims.table_html(variations)))
        if self.profile == "quick":
            display(HTML(full_results_html(self.chapter, self.claims.items)))
            figures = full_figures_myst(self.chapter, quick=self.dir / "figures")
            if figures:
                display(Markdown("The figures of that full-profile run:\n\n" + figures))

    def banner(self) -> None:
        """Show how this run was made (profile, device, seed, code version)."""
        from IPython.display import Markdown, display
        display(Markdown(
            f"```{{note}}\nThis page was computed in the **{self.label}** profile on "
            f"`{self.device.type}` ({platform.processor() or platform.machine()}), seed {self.seed}, "
            f"library version `{code_version(self.chapter)}`. See {{doc}}`/intro` for how to rerun "
            "it.\n```\n"))


NUMPY_SCALARS = (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                 np.uint8, np.uint16, np.uint32, np.uint64)


def plain_numpy_scalars(shell=None) -> None:
    """Show numpy scalars as plain numbers (``3.05``, not numpy 2's ``np.float64(3.05)``) in the
    kernel, so that a glued value formatted in the text (``{glue:text}`x:.2f```) can be parsed."""
    if shell is None:
        from IPython import get_ipython
        shell = get_ipython()
    if shell is None:
        return
    plain = shell.display_formatter.formatters["text/plain"]
    for t in NUMPY_SCALARS:
        as_python = float if issubclass(t, np.floating) else int
        plain.for_type(t, lambda x, p, cycle, as_python=as_python: p.text(repr(as_python(x))))


def setup(chapter: str, profile: str = "quick", device: str = "auto", seed: int = 0,
          results_dir: str | os.PathLike | None = None, threads: int | None = None,
          smoke: bool = False) -> Run:
    """Validate the common parameters, seed every generator and return the chapter's :class:`Run`.

    ``threads`` sets ``torch.set_num_threads`` (1 for launch-bound programs of many small models).
    ``smoke`` (full profile only) runs the full profile's code paths at toy sizes, as a test
    (``python -m rnnbook run CHAPTER --profile full --smoke``).
    """
    if not isinstance(chapter, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", chapter):
        raise params.ParameterError("chapter", chapter, "a snake_case chapter name")
    params.choice("profile", profile, params.PROFILES)
    dev = params.device(device)
    seed = params.integer("seed", seed, lo=0)
    if results_dir is not None and not isinstance(results_dir, (str, os.PathLike)):
        raise params.ParameterError("results_dir", results_dir, "None or a directory path")
    params.smoke(smoke, profile)
    if threads is not None:
        torch.set_num_threads(params.integer("threads", threads, lo=1))
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    use_style()
    plain_numpy_scalars()
    root = Path(results_dir) if results_dir is not None else default_results_dir(profile)
    run = Run(chapter, profile, dev, seed, root.expanduser().resolve() / chapter, smoke)
    run.dir.mkdir(parents=True, exist_ok=True)
    (run.dir / DEVICE_FILE).write_text(dev.type)  # for the run record (rnnbook.execute)
    return run
