"""A chapter's reproduction report (all chapters), in the form that reproduction reports readers
trust use (ReScience C, the ML Reproducibility Challenge, the AEA replicator's report): a findings
table, one row per figure, table or number of the paper that the chapter treats, the paper's beside
ours; and a short summary box (scope, what we read, what was easy and hard, compute, what differs
and why).

Each chapter's package holds its report's data in ``rnnbook.<chapter>.report``: ``FINDINGS``
(a list of :class:`Finding`) and ``SUMMARY`` (a :class:`Summary`); :meth:`rnnbook.run.Run.show_claims`
shows them with the run's own claims, time and hardware.
"""
from __future__ import annotations

import html
import importlib
import os
import platform
from dataclasses import dataclass
from types import ModuleType

from rnnbook.claims import REASONS, Claim, id_order

OUTCOMES = ("same", "shape only", "differs", "not run")
# what each coded reason of an evidence claim means, for the summary box
REASON_TEXT = {"differs": "our runs show something else", "not-at-scale":
               "the quick scale cannot show it (the full profile can)", "setting":
               "it holds only under a choice of ours", "unread": "the paper's value could not be read",
               "not-run": "the experiment was not run"}
assert set(REASON_TEXT) == set(REASONS)


class ReportError(ValueError):
    """A finding or summary that breaks :mod:`rnnbook.report`'s rules; the message names it."""


@dataclass(frozen=True)
class Finding:
    """One row of a findings table: the paper's ``item`` (a figure, table or number with its
    locator: "Fig. 2", "Table 1, JSB", "§4.3"), what it ``shows`` (its number where it has one),
    ``ours`` (our figures and claims that redo it, comma-separated names such as "F2, C3"; empty
    where none), the ``outcome`` (:data:`OUTCOMES`) and a short ``note``."""

    item: str
    shows: str
    ours: str
    outcome: str
    note: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ReportError(f"finding {self.item!r}: outcome {self.outcome!r} is not one of {OUTCOMES}")
        if (self.outcome == "not run") != (not self.names):
            raise ReportError(f"finding {self.item!r}: 'not run' exactly when it names none of ours "
                              f"(ours = {self.ours!r}, outcome {self.outcome!r})")

    @property
    def names(self) -> list[str]:
        return [n.strip() for n in self.ours.split(",") if n.strip()]


@dataclass(frozen=True)
class Summary:
    """The hand-written part of a chapter's summary box: what of the paper we ``read``, what was
    ``easy`` and ``hard`` to reproduce, and the full profile's cost (``full_cost``: measured, with
    date and hardware, or an estimate that says so). Scope, the quick run's compute and what
    differs come from the run itself (:func:`summary_box_html`)."""

    read: str
    easy: str
    hard: str
    full_cost: str


def chapter_report(chapter: str) -> ModuleType:
    """The module ``rnnbook.<chapter>.report`` with its ``FINDINGS`` and ``SUMMARY``."""
    module = importlib.import_module(f"rnnbook.{chapter}.report")
    if not (isinstance(getattr(module, "SUMMARY", None), Summary) and module.FINDINGS
            and all(isinstance(f, Finding) for f in module.FINDINGS)):
        raise ReportError(f"rnnbook.{chapter}.report needs FINDINGS (a list of Finding) and SUMMARY")
    return module


def findings_for(chapter: str, figure: str) -> list[dict]:
    """The paper's items that our figure ``figure`` of ``chapter`` redoes, with their outcomes, from
    the chapter's findings (``figures.json`` and the gallery); none for a chapter without them."""
    try:
        findings = chapter_report(chapter).FINDINGS
    except ModuleNotFoundError:
        return []
    return [{"paper": f.item, "outcome": f.outcome} for f in findings if figure in f.names]


def findings_myst(chapter: str, findings: list[Finding], figures: set[str], claims: set[str]) -> str:
    """The findings table as MyST: our figures as numbered references, our claims as links to
    where they are checked; a name that is neither one of this run's ``figures`` nor one of its
    ``claims`` (a figure of the full profile only) is marked so (:func:`unknown_names` lets the
    tests insist on the quick run's)."""
    def link(name: str) -> str:
        if name in figures:
            return f"{{numref}}`Fig. %s ({name}) <fig-{chapter}-{name}>`"
        if name in claims:
            return f'<a href="#claim-{html.escape(name)}">{html.escape(name)}</a>'
        return f"{html.escape(name)} (not made in this run)"

    def cell(text: str) -> str:
        return " ".join(text.split()) or "—"

    counts = ", ".join(f"{sum(f.outcome == o for f in findings)} {o}" for o in OUTCOMES
                       if any(f.outcome == o for f in findings))
    rows = ["* - the paper's\n  - what it shows\n  - ours\n  - outcome\n  - note"]
    for f in findings:
        ours = ", ".join(link(n) for n in f.names) or "—"
        outcome = f'<span class="finding finding-{f.outcome.replace(" ", "-")}">{f.outcome}</span>'
        rows.append(f"* - {cell(f.item)}\n  - {cell(f.shows)}\n  - {ours}\n  - {outcome}\n"
                    f"  - {cell(f.note)}")
    return (f"::::{{list-table}} Findings: the paper's figures and numbers beside ours ({counts})\n"
            ":header-rows: 1\n:class: rnnbook-findings\n\n" + "\n".join(rows) + "\n::::\n")


def unknown_names(findings: list[Finding], figures: set[str], claims: set[str]) -> list[str]:
    """The names of our figures and claims in ``findings`` that a run made none of."""
    return [n for f in findings for n in f.names if n not in figures | claims]


def hardware() -> str:
    """This machine in a few words: processor and CPU count."""
    cpu = platform.processor() or platform.machine()
    return f"{cpu}, {os.cpu_count()} CPU cores"


def summary_box_html(summary: Summary, claims: list[Claim], findings: list[Finding], profile: str,
                     device: str, seconds: float) -> str:
    """The reproduction summary box near the top of a chapter (the MLRC report's first page,
    short): scope, what we read, easy, hard, compute (this run's measured time and hardware; the
    full profile's cost), and what differs and why (the evidence claims' coded reasons)."""
    evidence = sorted((c for c in claims if c.is_evidence), key=id_order)
    others = len(claims) - len(evidence)
    scope = (f"{len(evidence)} claims of the paper tested on our runs "
             f"({', '.join(c.id for c in evidence)}), {others} "
             f"{'check or construction' if others == 1 else 'checks and constructions'} of ours; "
             f"{len(findings)} of the paper's figures, tables and numbers in the findings table")
    compute = (f"this page's {profile} run: {seconds / 60:.1f} min on {device} ({hardware()}); "
               f"full profile: {summary.full_cost}")
    differs = [f"{c.id} ({c.verdict}; {REASON_TEXT[c.reason]})" for c in evidence if c.reason]
    rows = [("Scope", scope), ("What we read", summary.read), ("What was easy", summary.easy),
            ("What was hard", summary.hard), ("Compute", compute),
            ("What differs, and why", "; ".join(differs) or "nothing: every claim tested reproduced")]
    body = "".join(f"<dt>{k}</dt><dd>{html.escape(v, quote=False)}</dd>" for k, v in rows)
    return ('<div class="summary-box"><p class="summary-box-title">Reproduction summary</p>'
            f"<dl>{body}</dl></div>")
