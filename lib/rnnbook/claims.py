"""Claims as data (all chapters).

A chapter checks each claim of its paper and records it with :meth:`Claims.add`. Each record is a
JSON object with the fields of :data:`FIELDS`; the chapter's list is written to
``<results_dir>/<chapter>/claims.json`` after every claim and shown as a table at the chapter's end.
"""
from __future__ import annotations

import html
import json
import math
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

# A paper's claim is reproduced, partly, not reproduced or inconclusive; a prediction that carries
# one paper into another's setting (the synthesis chapter) agrees, partly agrees or conflicts, and is
# inconclusive when the derivation that joins the two papers fails its own check (nothing carried).
VERDICTS = ("reproduced", "agree", "partly", "not reproduced", "conflict", "inconclusive")
FIELDS = ("id", "statement", "source", "value", "tolerance", "verdict", "passed")
TABLE_HEAD = ("id", "claim (source)", "measured", "tolerance", "verdict")


@dataclass(frozen=True)
class Claim:
    """One checked claim. ``passed`` says whether our check's condition held; ``verdict`` says what
    that means for the paper (a claim that does not reproduce can be pinned as such and pass)."""

    id: str
    statement: str
    source: str
    value: Any
    tolerance: str
    verdict: str
    passed: bool

    def __repr__(self) -> str:  # what a chapter cell shows after recording a claim
        return f"{self.id}: {self.verdict} ({'check passed' if self.passed else 'check FAILED'})"

    def _ipython_display_(self) -> None:
        """Nothing: :meth:`rnnbook.run.Run.claim` has shown the claim's callout as it recorded it."""

    def callout_html(self) -> str:
        """The one-line verdict callout where the claim is checked (its badge, then the check)."""
        check = "our check passed" if self.passed else "our check FAILED"
        return (f'<div class="claim-callout" id="claim-{html.escape(self.id)}">'
                f'{verdict_badge(self.verdict)} <b>{html.escape(self.id)}</b>'
                f" {html.escape(self.statement)} <span class=\"claim-check\">({check})</span></div>")


def verdict_badge(verdict: str, text: str | None = None) -> str:
    """A coloured badge of a verdict (all chapters' claims tables, verdict boxes and scorecard)."""
    css = verdict.replace(" ", "-")
    return f'<span class="verdict-badge verdict-{css}">{html.escape(text or verdict)}</span>'


def to_json(value: Any) -> Any:
    """Plain JSON for numbers, arrays and containers; non-finite floats become "inf"/"-inf"/"nan"."""
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if hasattr(value, "tolist"):  # numpy / torch arrays and scalars
        return to_json(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


class Claims:
    """The claims of one chapter run, persisted to ``path`` (a JSON list of :class:`Claim`)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.items: list[Claim] = []
        self._write()

    def add(self, id: str, statement: str, source: str, value: Any, tolerance: str,
            passed: bool, verdict: str | None = None) -> Claim:
        """Record a claim. ``verdict`` defaults to "reproduced" if ``passed`` else "not reproduced";
        pass "inconclusive" when too few runs converged to judge, or (synthesis) when the derivation
        joining two papers failed its check (then ``passed`` is False)."""
        if any(c.id == id for c in self.items):
            raise ValueError(f"claim id {id!r} recorded twice")
        if not isinstance(passed, (bool, np.bool_)):
            raise TypeError(f"passed must be a bool, not {type(passed).__name__}")
        verdict = verdict or ("reproduced" if passed else "not reproduced")
        if verdict not in VERDICTS:
            raise ValueError(f"verdict {verdict!r} is not one of {VERDICTS}")
        if verdict == "inconclusive" and passed:
            raise ValueError("an inconclusive claim cannot pass")
        c = Claim(id, statement, source, to_json(value), tolerance, verdict, bool(passed))
        self._write(self.items + [c])  # raises on a value JSON cannot hold, recording nothing
        self.items.append(c)
        return c

    def _write(self, items: list[Claim] | None = None) -> None:
        text = json.dumps([asdict(c) for c in (self.items if items is None else items)],
                          indent=2, allow_nan=False)
        atomic_write(self.path, text.encode())

    def table_html(self, survey: dict[str, dict[str, dict]] | None = None) -> str:
        """The claims as an HTML table (the chapter's closing table): the source under the
        statement and the check mark beside the verdict, so the measured values get the room;
        with the chapter's committed seed ``survey`` (its variations), whether each verdict was
        the same in all of its runs (:func:`stability_html`)."""
        head = "".join(f"<th>{h}</th>" for h in TABLE_HEAD)
        rows = []
        for c in sorted(self.items, key=id_order):
            cid = html.escape(c.id)
            source = shown(c.source, 40)  # the statement gets the rest of the cell's LONG characters
            claim = (f'{collapsed(c.statement, LONG - len(source))}<br>'
                     f'<span class="claim-source">{collapsed(c.source, 40)}</span>')
            verdict = (f'{verdict_badge(c.verdict)}<br><span class="claim-check">our check '
                       f'{"✓" if c.passed else "✗ FAILED"}</span>'
                       + (f"<br>{stability_html(c.id, survey)}" if survey else ""))
            cells = [f'<a href="#claim-{cid}">{cid}</a>', claim, value_html(c.value),
                     collapsed(c.tolerance), verdict]
            tds = "".join(f"<td>{x}</td>" for x in cells)
            rows.append(f'<tr class="claim-{"pass" if c.passed else "fail"}">{tds}</tr>')
        legend = sources_legend(self.items)
        foot = f'<tfoot><tr><td colspan="{len(TABLE_HEAD)}">{summary_html(self.items)}</td></tr></tfoot>'
        return (f'<div class="claims-table"><table><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(rows)}</tbody>{foot}</table>'
                f'{f"<p>{legend}</p>" if legend else ""}</div>')


def sources_legend(items: list[Claim]) -> str:
    """What the sources of a claims table that are not the paper's sections mean: the OpenReview
    reviews (Rv1, ...) and the authors' rebuttal there."""
    said = " ".join(c.source for c in items)
    parts = (["Rv1, Rv2, ...: the paper's OpenReview reviews, numbered by us in the order we read "
              "them"] if re.search(r"\bRv\d", said) else [])
    parts += ["rebuttal: the authors' replies to the reviews on OpenReview"] if "rebuttal" in said else []
    return ('<span class="claim-source">Sources: sections, figures, equations and appendices are the '
            f'paper\'s; {"; ".join(parts)}.</span>') if parts else ""


def stability_html(cid: str, survey: dict[str, dict[str, dict]]) -> str:
    """The seed-stability mark of claim ``cid`` in a claims table: in how many runs of the
    committed survey (:func:`survey`'s variations) it was checked, and whether its verdict and
    check result were the same in all of them."""
    runs = [v[cid] for v in survey.values() if cid in v]
    if not runs:
        return '<span class="claim-stability">not in the seed survey</span>'
    if cid in unstable({name: v for name, v in survey.items() if cid in v}):
        return (f'<span class="claim-stability claim-moves">⚠ verdict moves in the seed survey '
                f'({len(runs)} runs)</span>')
    return f'<span class="claim-stability">same in all {len(runs)} survey runs</span>'


def by_verdict(items: list[Claim]) -> dict[str, list[Claim]]:
    """The claims under each verdict of :data:`VERDICTS` (in id order), empty verdicts left out."""
    ordered = sorted(items, key=id_order)
    return {v: [c for c in ordered if c.verdict == v] for v in VERDICTS
            if any(c.verdict == v for c in ordered)}


def summary_html(items: list[Claim]) -> str:
    """One line for the preface's scorecard: how many checks, and a badge per verdict with its
    count and claim ids."""
    groups = by_verdict(items)
    badges = " ".join(verdict_badge(v, f"{len(cs)} {v}") + f' <span class="claim-ids">'
                      f'({", ".join(html.escape(c.id) for c in cs)})</span>' for v, cs in groups.items())
    return f'<span class="verdict-summary">{len(items)} checks: {badges}</span>'


def verdict_box_html(items: list[Claim]) -> str:
    """The verdict box at the top of a chapter: per verdict, its claims (id and statement)."""
    rows = []
    for v, cs in by_verdict(items).items():
        lines = "".join(f"<li><b>{html.escape(c.id)}</b> {html.escape(c.statement)}</li>" for c in cs)
        rows.append(f"<dt>{verdict_badge(v, f'{v} ({len(cs)})')}</dt><dd><ul>{lines}</ul></dd>")
    return ('<div class="verdict-box"><p class="verdict-box-title">Verdict of this page: '
            f'{len(items)} claims checked (details in the claims table at the end)</p>'
            f'<dl>{"".join(rows)}</dl></div>')


def id_order(claim: Claim) -> tuple:
    """Sort key of claim ids in the specification's order: C2 < C10 < C10-train < E1."""
    m = re.fullmatch(r"([A-Za-z]*)(\d*)(.*)", claim.id)
    return (m[1], int(m[2]) if m[2] else -1, m[3])


def load(path: Path) -> list[Claim]:
    """Read a ``claims.json`` written by :class:`Claims`."""
    return [Claim(**d) for d in json.loads(Path(path).read_text())]


def survey(runs: dict[str, Path]) -> dict[str, dict[str, dict]]:
    """A seed and setting survey of a chapter (all chapters: a verdict is the paper's, not the
    seed's): for each variation (its name -> the ``claims.json`` of its run), each claim's verdict,
    whether its check passed, and its value."""
    return {name: {c.id: {"verdict": c.verdict, "passed": c.passed, "value": to_json(c.value)}
                   for c in load(path)} for name, path in runs.items()}


def survey_values(path: Path) -> dict[str, dict]:
    """Each claim's value in every run of a committed seed survey (:func:`survey`)."""
    return {name: {cid: x["value"] for cid, x in c.items()}
            for name, c in json.loads(Path(path).read_text())["variations"].items()}


def unstable(variations: dict[str, dict[str, dict]]) -> list[str]:
    """The claims of a :func:`survey` whose verdict or check result is not the same in every
    variation."""
    ids = {cid for claims in variations.values() for cid in claims}
    return sorted(cid for cid in ids if len({(v[cid]["verdict"], v[cid]["passed"]) if cid in v else None
                                             for v in variations.values()}) > 1)


def format_value(value: Any) -> str:
    """Short human form of a measured value: 3 significant digits for floats."""
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


LONG = 120  # visible characters of a value cell; a longer record is collapsed under its start


def value_html(value: Any) -> str:
    """A measured value for the claims tables: a dict one entry per line, escaped; a record
    longer than :data:`LONG` characters collapsed (``<details>``) under its first entries."""
    if isinstance(value, dict):
        lines = [html.escape(f"{k}: {format_value(v)}") for k, v in value.items()]
    else:
        lines = [html.escape(format_value(value))]
    return collapsed(format_value(value), LONG, "<br>".join(lines))


def shown(text: str, limit: int = LONG) -> str:
    """What a claims-table cell shows of ``text`` (unescaped): all of it up to ``limit`` characters,
    else its first words and " …", at most ``limit`` characters."""
    return text if len(text) <= limit else text[:limit - 10].rsplit(" ", 1)[0] + " …"


def collapsed(text: str, limit: int = LONG, full: str | None = None) -> str:
    """``text`` escaped (or its HTML ``full``), collapsed under its first words (``<details>``)
    when it is longer than ``limit`` characters (all chapters' claims tables)."""
    full = html.escape(text) if full is None else full
    if len(text) <= limit:
        return full
    return f"<details><summary>{html.escape(shown(text, limit))}</summary>{full}</details>"


def spearman(x: Any, y: Any) -> float:
    """Spearman's rank correlation, as the claim checks compare it with a threshold (curse of
    memory C11, extrapolation C6, learning dynamics C7). On ranks it is a ratio of small integers,
    but scipy computes it as a Pearson correlation in floats, which can land one rounding step on
    the wrong side of a threshold (−0.7999999999999999 for −4/5, seen on curse of memory C11 with
    seed 1); rounding to 12 decimals gives the exact value back."""
    from scipy.stats import spearmanr
    return round(float(spearmanr(x, y).statistic), 12)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader never sees a half-written file; the file is
    readable by anyone (0644: results, claims and figures are shared, e.g. on a cluster's
    filesystem, where mkstemp's 0600 would hide them from other users)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
