"""Claims as data (all chapters).

A chapter checks each claim of its paper and records it with :meth:`Claims.add`. Each record is a
JSON object with the fields of :data:`FIELDS`; the chapter's list is written to
``<results_dir>/<chapter>/claims.json`` after every claim and shown as a table at the chapter's end.

Each claim has a ``kind`` (:data:`KINDS`). Only ``evidence``, a statement of the paper tested on
our runs, gets a verdict about the paper (:data:`EVIDENCE_VERDICTS`), and records the paper's own
value beside ours (``paper``, ``ours``) and, unless it reproduced, a coded ``reason``
(:data:`REASONS`). A ``construction`` (our own example that illustrates a statement of the paper)
or a ``check`` (an identity, a lemma verified numerically, a test of our implementation) only
passes or fails (:data:`CHECK_VERDICTS`): it says nothing of the paper's truth.
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
EVIDENCE_VERDICTS = ("reproduced", "agree", "partly", "not reproduced", "conflict", "inconclusive")
CHECK_VERDICTS = ("passes", "fails")
VERDICTS = EVIDENCE_VERDICTS + CHECK_VERDICTS
KINDS = ("evidence", "construction", "check")
# why an evidence claim did not reproduce (or agree): our runs show something else; the quick scale
# cannot show it (the full profile can); it holds only under a choice of ours, named in the record;
# the paper's value could not be read; the experiment was not run
REASONS = ("differs", "not-at-scale", "setting", "unread", "not-run")
FIELDS = ("id", "statement", "source", "value", "tolerance", "verdict", "passed", "kind", "paper",
          "ours", "reason")
TABLE_HEAD = ("id", "claim (source)", "the paper's value", "ours (measured)", "tolerance", "verdict")


class ClaimError(ValueError):
    """A claim record that breaks the schema of :mod:`rnnbook.claims`; the message names the claim."""


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
    kind: str = ""  # "" only in records written before kinds existed (committed results, surveys)
    paper: str | None = None  # evidence: what the paper states or shows, with its locator
    ours: str | None = None  # evidence: our measured value at this run, in the paper's terms
    reason: str | None = None  # evidence not reproduced (or agreeing): one of REASONS

    @property
    def is_evidence(self) -> bool:
        return self.kind == "evidence"

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


def validate(c: Claim) -> None:
    """Raise :class:`ClaimError`, naming the claim, where a record breaks the schema: a missing or
    unknown kind, an unknown verdict or reason, an evidence claim without the paper's value or
    ours, a verdict other than reproduced (agree) without a reason, a check with an evidence
    verdict, or an inconclusive claim that passed."""
    where = f"claim {c.id}"
    if c.kind not in KINDS:
        raise ClaimError(f"{where}: kind {c.kind or None!r} is not one of {KINDS}")
    if c.kind != "evidence":
        if c.verdict not in CHECK_VERDICTS or (c.verdict == "passes") != c.passed:
            raise ClaimError(f"{where}: a {c.kind} passes or fails (verdict one of "
                             f"{CHECK_VERDICTS}, as its check), not {c.verdict!r}")
        if c.reason is not None:
            raise ClaimError(f"{where}: a {c.kind} takes no reason ({c.reason!r}); only evidence does")
        return
    if c.verdict not in EVIDENCE_VERDICTS:
        raise ClaimError(f"{where}: verdict {c.verdict!r} is not one of {EVIDENCE_VERDICTS}")
    if c.verdict == "inconclusive" and c.passed:
        raise ClaimError(f"{where}: an inconclusive claim cannot pass")
    for name in ("paper", "ours"):
        if not (isinstance(getattr(c, name), str) and getattr(c, name).strip()):
            raise ClaimError(f"{where}: evidence needs {name!r} (the paper's value with its locator, "
                             "or 'not readable: ...'; and ours at this run)")
    if c.verdict in ("reproduced", "agree"):
        if c.reason is not None:
            raise ClaimError(f"{where}: a {c.verdict} claim takes no reason ({c.reason!r})")
    elif c.reason not in REASONS:
        raise ClaimError(f"{where}: verdict {c.verdict!r} needs a reason, one of {REASONS}, "
                         f"not {c.reason!r}")


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
            passed: bool, verdict: str | None = None, *, kind: str | None = None,
            paper: str | None = None, ours: str | None = None, reason: str | None = None) -> Claim:
        """Record a claim of ``kind`` (:data:`KINDS`). Evidence: ``verdict`` defaults to
        "reproduced" if ``passed`` else "not reproduced"; pass "inconclusive" when too few runs
        converged to judge, or (synthesis) when the derivation joining two papers failed its check
        (then ``passed`` is False); ``paper`` and ``ours`` are required, and ``reason`` unless it
        reproduced. A construction or check passes or fails: its verdict follows ``passed``.
        A record that breaks these rules raises :class:`ClaimError` naming the claim."""
        if any(c.id == id for c in self.items):
            raise ClaimError(f"claim id {id!r} recorded twice")
        if not isinstance(passed, (bool, np.bool_)):
            raise TypeError(f"claim {id}: passed must be a bool, not {type(passed).__name__}")
        if kind in ("construction", "check"):
            if verdict is not None:
                raise ClaimError(f"claim {id}: a {kind} passes or fails; it takes no verdict "
                                 f"({verdict!r}); only evidence does")
            verdict = CHECK_VERDICTS[0] if passed else CHECK_VERDICTS[1]
        else:
            verdict = verdict or ("reproduced" if passed else "not reproduced")
        c = Claim(id, statement, source, to_json(value), tolerance, verdict, bool(passed), kind or "",
                  paper, None if ours is None else str(ours), reason)
        validate(c)
        self._write(self.items + [c])  # raises on a value JSON cannot hold, recording nothing
        self.items.append(c)
        return c

    def _write(self, items: list[Claim] | None = None) -> None:
        text = json.dumps([asdict(c) for c in (self.items if items is None else items)],
                          indent=2, allow_nan=False)
        atomic_write(self.path, text.encode())

    def table_html(self, survey: dict[str, dict[str, dict]] | None = None) -> str:
        """The claims as an HTML table (the chapter's closing table): the evidence first, then the
        checks and constructions under a heading row of their own; the paper's value beside ours
        (the full measured record collapsed under ours), the source under the statement and the
        check mark beside the verdict; with the chapter's committed seed ``survey`` (its
        variations), whether each verdict was the same in all of its runs (:func:`stability_html`)."""
        head = "".join(f"<th>{h}</th>" for h in TABLE_HEAD)
        rows = []
        for group, cs in grouped(self.items).items():
            rows.append(f'<tr class="claim-group"><th colspan="{len(TABLE_HEAD)}">{group}</th></tr>')
            rows += [self._row(c, survey) for c in cs]
        legend = sources_legend(self.items)
        # the scorecard line as the footer's heading (its length is the chapter's, not a cell's)
        foot = f'<tfoot><tr><th colspan="{len(TABLE_HEAD)}">{summary_html(self.items)}</th></tr></tfoot>'
        return (f'<div class="claims-table"><table><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(rows)}</tbody>{foot}</table>'
                f'{f"<p>{legend}</p>" if legend else ""}</div>')

    @staticmethod
    def _row(c: Claim, survey: dict[str, dict[str, dict]] | None) -> str:
        cid = html.escape(c.id)
        source = shown(c.source, 40)  # the statement gets the rest of the cell's LONG characters
        claim = (f'{collapsed(c.statement, LONG - len(source))}<br>'
                 f'<span class="claim-source">{collapsed(c.source, 40)}</span>')
        paper = collapsed(c.paper) if c.paper else '<span class="claim-source">—</span>'
        ours = value_html(c.value)
        if c.ours:
            ours = (f"{collapsed(c.ours, LONG - len(RECORD))}<details><summary>{RECORD}</summary>"
                    f"{value_html(c.value)}</details>")
        reason = f'<br><span class="claim-reason">reason: {c.reason}</span>' if c.reason else ""
        verdict = (f'{verdict_badge(c.verdict)}{reason}<br><span class="claim-check">our check '
                   f'{"✓" if c.passed else "✗ FAILED"}</span>'
                   + (f"<br>{stability_html(c.id, survey)}" if survey else ""))
        cells = [f'<a href="#claim-{cid}">{cid}</a>', claim, paper, ours, collapsed(c.tolerance), verdict]
        tds = "".join(f"<td>{x}</td>" for x in cells)
        return f'<tr class="claim-{"pass" if c.passed else "fail"} claim-kind-{c.kind}">{tds}</tr>'


GROUPS = {"evidence": "Evidence: the paper's statements tested on our runs",
          "construction": "Checks and constructions (they pass or fail; they are not evidence for the paper)"}


def grouped(items: list[Claim]) -> dict[str, list[Claim]]:
    """The claims in id order, evidence under :data:`GROUPS`' first heading and checks and
    constructions under the second (all chapters' claims tables)."""
    ordered = sorted(items, key=id_order)
    out = {GROUPS["evidence"]: [c for c in ordered if c.is_evidence],
           GROUPS["construction"]: [c for c in ordered if not c.is_evidence]}
    return {g: cs for g, cs in out.items() if cs}


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


def _ids(cs: list[Claim]) -> str:
    return f'<span class="claim-ids">({", ".join(html.escape(c.id) for c in cs)})</span>'


def checks_line(items: list[Claim]) -> str:
    """"N checks and constructions pass (ids)", and those that fail: the second line of a
    scorecard entry and of a verdict box."""
    others = [c for c in items if not c.is_evidence]
    if not others:
        return ""
    good = sorted((c for c in others if c.passed), key=id_order)
    bad = sorted((c for c in others if not c.passed), key=id_order)
    line = (f"{len(good)} {'check or construction passes' if len(good) == 1 else 'checks and constructions pass'} "
            f"{_ids(good)}" if good else "")
    if bad:
        line += (", " if line else "") + verdict_badge("fails", f"{len(bad)} fail") + f" {_ids(bad)}"
    return f'<span class="checks-line">{line}</span>'


def summary_html(items: list[Claim], profile: str = "quick") -> str:
    """One entry of the preface's scorecard: the evidence claims by verdict, with the ``profile``
    that judged them, and on a line of its own how many checks and constructions pass."""
    evidence = [c for c in items if c.is_evidence]
    badges = " ".join(verdict_badge(v, f"{len(cs)} {v}") + f" {_ids(cs)}"
                      for v, cs in by_verdict(evidence).items())
    return (f'<span class="verdict-summary"><span class="evidence-line">{len(evidence)} claims of '
            f'the paper tested ({profile} profile): {badges}</span><br>{checks_line(items)}</span>')


def verdict_box_html(items: list[Claim], profile: str = "quick") -> str:
    """The verdict box at the top of a chapter: per verdict, its evidence claims (id, statement,
    the paper's value and ours, the reason of a verdict other than reproduced), then one line for
    the checks and constructions."""
    rows = []
    for v, cs in by_verdict([c for c in items if c.is_evidence]).items():
        lines = "".join(
            f"<li><b>{html.escape(c.id)}</b> {html.escape(c.statement)}"
            f'<br><span class="claim-beside">paper: {collapsed(c.paper or "", 160)}; '
            f'ours: {collapsed(c.ours or "", 160)}'
            + (f" (reason: {c.reason})" if c.reason else "") + "</span></li>" for c in cs)
        rows.append(f"<dt>{verdict_badge(v, f'{v} ({len(cs)})')}</dt><dd><ul>{lines}</ul></dd>")
    n = sum(c.is_evidence for c in items)
    checks = checks_line(items)
    return ('<div class="verdict-box"><p class="verdict-box-title">Verdict of this page: '
            f'{n} claims of the paper tested on our runs ({profile} profile; details in the claims '
            f'table at the end)</p><dl>{"".join(rows)}</dl>'
            + (f'<p class="verdict-box-checks">{checks} (our code, identities and our own examples: '
               "not evidence for the paper)</p>" if checks else "") + "</div>")


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
RECORD = "the measured record"  # the summary under which a claim's whole value sits, below ours


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
