"""Showing code and tables in a chapter, and the committed full-profile results beside a quick
run's (all chapters)."""
from __future__ import annotations

import ast
import html
import inspect
import json
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rnnbook.claims import Claim, format_value, id_order, value_html, verdict_badge
from rnnbook.paths import FULL_RESULTS_DIR, SURVEY_DIR


def show_code(*objects: Any) -> None:
    """Show the library source of functions or classes next to the equation they implement, in
    a collapsed dropdown titled with their names and where they live (all chapters)."""
    from IPython.display import Markdown, display
    display(Markdown(code_markdown(*objects)))


def code_markdown(*objects: Any) -> str:
    """The MyST of :func:`show_code`: a dropdown (sphinx-design) holding, for each object, its
    docstring as text (math typeset) and its source without the docstring."""
    parts = [(doc_markdown(o), source_without_docstring(o)) for o in objects]
    names = ", ".join(f"`{o.__qualname__}`" for o in objects)
    lines = sum(src.count("\n") + 1 for _, src in parts)
    body = "\n\n".join(f"{doc}\n\n````python\n{src}\n````" for doc, src in parts)
    return (f":::::{{dropdown}} The code: {names} (`{objects[0].__module__}`, {lines} lines)\n"
            f"{body}\n:::::\n")


REST_ROLE = re.compile(r":(?:func|class|mod|data|meth|attr|obj|exc):`(~?)([\w.]+)(?:\(\))?`")


def doc_markdown(obj: Any) -> str:
    """An object's docstring as MyST: ``:math:`x``` as ``$x$``, cross-references to the library
    as code (``~`` keeps the last name, as Sphinx does), double back-quotes as single."""
    doc = inspect.getdoc(obj) or ""
    doc = doc.replace("$", "\\$")
    doc = re.sub(r":math:`([^`]+)`", lambda m: f"${m[1]}$", doc)
    doc = REST_ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", doc)
    doc = re.sub(r"``([^`]+)``", r"`\1`", doc)
    doc = re.sub(r"^>", r"\\>", doc, flags=re.M)  # "> 1" continuing a line, not a quote
    return f"**`{obj.__qualname__}`**: {doc}" if doc else f"**`{obj.__qualname__}`**"


def source_without_docstring(obj: Any) -> str:
    """The source of a function or class (dedented) less its docstring's lines."""
    src = textwrap.dedent(inspect.getsource(obj)).rstrip()
    node = ast.parse(src).body[0]
    first = node.body[0] if getattr(node, "body", None) else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return src
    lines = src.split("\n")
    return "\n".join(lines[:first.lineno - 1] + lines[first.end_lineno:])


class Table:
    """A small table of records, shown as HTML in the book and as text elsewhere."""

    def __init__(self, records: Sequence[Mapping[str, Any]]):
        self.records = list(records)
        self.columns = list(dict.fromkeys(k for r in self.records for k in r))

    def _cells(self) -> list[list[str]]:
        return [[format_value(r.get(c, "")) for c in self.columns] for r in self.records]

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(x)}</td>" for x in row) + "</tr>"
                       for row in self._cells())
        return f'<div class="rnnbook-table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'

    def __repr__(self) -> str:
        rows = [self.columns] + self._cells()
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.columns))]
        return "\n".join("  ".join(x.ljust(w) for x, w in zip(r, widths)) for r in rows)


def table(records: Sequence[Mapping[str, Any]]) -> Table:
    """A table of ``records`` (one dict per row) for display."""
    return Table(records)


def _given(record: dict) -> dict:
    """The parameters a run record says were set, but for the profile, device and results folder."""
    return {k: v for k, v in record.get("parameters", {}).items()
            if k not in ("profile", "device", "results_dir")}


# A full run given one of these is a declared paper-scale subset of its chapter's full profile
# (stable models: the tasks a CPU can train at the paper's sizes): its results are committed and
# shown, labelled so, but the chapter's full profile counts as unfinished (issue 47).
SUBSET_PARAMETERS = ("tasks",)


def subset(record: dict) -> dict:
    """The subset parameters (:data:`SUBSET_PARAMETERS`) a full run record was given; {}: the whole."""
    return {k: v for k, v in record.get("parameters", {}).items() if k in SUBSET_PARAMETERS}


class SmokeResults(ValueError):
    """A smoke run's results (toy sizes) where full-profile results belong."""


def full_record(folder: Path) -> dict:
    """The run record of the committed full results in ``folder``; a smoke run's is refused."""
    record = json.loads((folder / "run.json").read_text())
    if record.get("smoke") or (record.get("parameters") or {}).get("smoke"):
        raise SmokeResults(f"{folder} holds a smoke run (the full profile's code at toy sizes), "
                           "not full-profile results: delete it and run without --smoke")
    return record


def full_run_finished(chapter: str, root: Path = FULL_RESULTS_DIR) -> bool:
    """Whether ``<root>/<chapter>`` holds a finished full run (not a partial record, not a smoke
    run, not a declared subset: :func:`subset`) made by code of this build's results version: nothing of the chapter's full profile is left
    to run (``python -m rnnbook status --unfinished``, ``bench/device_check.sh``)."""
    folder = root / chapter
    if not (folder / "run.json").is_file():
        return False
    try:
        record = full_record(folder)
    except SmokeResults:
        return False
    return not record.get("partial") and not subset(record) and made_by_this_code(chapter, record)


def full_results_html(chapter: str, quick: list[Claim], root: Path = FULL_RESULTS_DIR) -> str:
    """The committed full-profile claims of ``chapter`` (``<root>/<chapter>/claims.json`` with the
    run record ``run.json`` of a finished run, or of a partial one, labelled so) beside this run's
    ``quick`` ones, labelled with where and when they were made; or a short note saying that none
    are committed and how to make them."""
    folder = root / chapter
    full = full_claims(chapter, root)
    if not full:
        return ('<p class="rnnbook-full-results">No full-profile results of this chapter are '
                f"committed yet: make them with <code>python -m rnnbook run {chapter} --profile "
                "full --results-dir data/results/full</code> (on a GPU machine where the chapter's "
                "text says its full profile uses one; <code>make full</code> runs every chapter, "
                f"each on the device its <code>auto</code> picks) and commit <code>data/results/full/{chapter}/</code>.</p>")
    record = full_record(folder)
    where = ", ".join(str(x) for x in (record.get("hardware", {}).get("summary"),
                                       record.get("device")) if x)
    part = subset(record)
    given = {k: v for k, v in _given(record).items() if k not in part}
    minutes = f"{record.get('wall_seconds', 0) / 60:.0f} min"
    if record.get("cached_at_start"):  # resumed: the time is the last process's only
        minutes = (f"{minutes} (the wall time of its last session, which resumed from "
                   f"{record['cached_at_start']} results cached by earlier ones)")
    label = (_head(record)
             + (" with " + ", ".join(f"{k} = {v}" for k, v in given.items()) if given else "")
             + f", made {record.get('finished', '?')[:10]} on {where or '?'} in {minutes}, "
             f"commit {record.get('commit', '?')}" + _stale(chapter, record))
    head = "".join(f"<th>{h}</th>" for h in ("id", "quick value", "quick verdict", "full value",
                                             "full verdict", "full check"))
    rows = []
    by_id = {c.id: c for c in quick}
    for cid in (c.id for c in sorted({**full, **by_id}.values(), key=id_order)):  # as the quick table
        q, f = by_id.get(cid), full.get(cid)
        cells = [html.escape(cid), value_html(q.value) if q else "",
                 verdict_badge(q.verdict) if q else "", value_html(f.value) if f else "",
                 verdict_badge(full_verdict(f, q)) if f else "", ("✓" if f.passed else "✗") if f else ""]
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    return (f'<div class="claims-table rnnbook-full-results"><p><strong>{html.escape(label)}'
            f'</strong></p><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table></div>")


def full_claims(chapter: str, root: Path = FULL_RESULTS_DIR) -> dict[str, Claim]:
    """The committed full-profile claims of ``chapter`` by id (of a finished or a partial run, as
    :func:`full_results_html` shows them), for the page's text to quote; empty if none are
    committed."""
    from rnnbook.claims import load

    folder = root / chapter
    if not (folder / "claims.json").exists() or not (folder / "run.json").exists():
        return {}
    full_record(folder)  # refuses a smoke run's
    return {c.id: c for c in load(folder / "claims.json")}


def _partial(record: dict, of: str = "") -> str:
    """The head of a run record of a full run (``of``: what it ran, if a subset) that had not
    finished (:func:`rnnbook.execute.partial_record`), else ''."""
    part = record.get("partial")
    if not part:
        return ""
    where = (f", in code cell {part['cells_completed'] + 1} of {part['cells']} "
             f"({part['stopped_in']})" if part.get("stopped_in") else "")
    return (f"Partial full-profile results: the claims of a full run{of} that had not finished{where}; "
            "claims with no full value are not yet judged at this scale")


def _head(record: dict) -> str:
    """What a committed full record holds: a finished run, a declared subset (:func:`subset`) or a
    run that had not finished (:func:`_partial`), the last two possibly both."""
    part = subset(record)
    given = "; ".join(f"{k} = {', '.join(map(str, v)) if isinstance(v, list) else v}"
                      for k, v in part.items())
    of = (f" of a paper-scale subset ({given}; the rest is not run at this scale: the claims that "
          "need it are inconclusive or missing)") if part else ""
    return _partial(record, of) or f"Full-profile results{of}"


def made_by_this_code(chapter: str, record: dict) -> bool:
    """Whether a run record of ``chapter`` names this build's results version
    (:func:`rnnbook.paths.results_version`; a record from before versions were kept counts as so)."""
    from rnnbook.paths import results_version

    return record.get("versions", {}).get("rnnbook_results") in (None, results_version(chapter))


def _stale(chapter: str, record: dict) -> str:
    """A note when the code that computes ``chapter``'s results changed since its full run
    (:func:`made_by_this_code`); else ''."""
    from rnnbook.paths import results_version

    if made_by_this_code(chapter, record):
        return ""
    return (f". The code that computes them has changed since (results version "
            f"{record['versions']['rnnbook_results']}, now {results_version(chapter)}): a rerun "
            "would recompute them, and may differ")


def full_verdict(full: Claim, quick: Claim | None) -> str:
    """A full run's verdict as the quick page counts it: a record made before claims had kinds
    (no ``kind``) of a claim that is now a check or construction passes or fails, as its check."""
    if full.kind or quick is None or quick.kind not in ("check", "construction"):
        return full.verdict
    return "passes" if full.passed else "fails"


def survey_table(chapter: str, root: Path = SURVEY_DIR) -> Table | str:
    """The committed seed survey of ``chapter`` (``<root>/<chapter>.json``, made by
    :func:`rnnbook.claims.survey`): one row per claim with its verdict in every variation (grouped:
    "reproduced (all 9)" when it is the same everywhere, else each verdict with its variations; ✗
    where the check failed); or a note that none is committed."""
    from rnnbook.claims import unstable

    path = root / f"{chapter}.json"
    if not path.exists():
        return f"No seed survey of this chapter is committed (data/results/survey/{chapter}.json)."
    runs = json.loads(path.read_text())["variations"]
    moving = set(unstable(runs))
    rows = []
    for cid in sorted({cid for v in runs.values() for cid in v}, key=lambda c: (len(c), c)):
        groups: dict[str, list[str]] = {}
        for name, v in runs.items():
            c = v.get(cid)
            groups.setdefault(c["verdict"] + ("" if c["passed"] else " ✗") if c else "—", []).append(name)
        verdicts = (f"{next(iter(groups))} (all {len(runs)})" if len(groups) == 1 else
                    "; ".join(f"{g}: {', '.join(names)}" for g, names in groups.items()))
        rows.append({"claim": cid, "verdict in each run": verdicts,
                     "same in all": "no" if cid in moving else "yes"})
    return table(rows)


def full_figures_myst(chapter: str, root: Path = FULL_RESULTS_DIR, quick: Path | None = None) -> str:
    """The committed full-profile figures of ``chapter`` (``<root>/<chapter>/figures/`` with their
    captions in its ``figures.json``) as MyST figures labelled ``fig-<chapter>-<name>-full``, for a
    quick page to show after :func:`full_results_html`. Each is stored with the full run's
    provenance (``run.json``), so the book links it to its files as ``<chapter>-<name>-full.{png,svg}``.
    A figure whose pixels equal the quick run's (in the folder ``quick``) is named, not repeated.
    Empty without a finished full run."""
    from rnnbook.figures import figure_files, figure_myst, label, store

    folder = root / chapter
    manifest = folder / "figures" / "figures.json"
    if not manifest.exists() or not (folder / "run.json").exists():
        return ""
    record = full_record(folder)
    given = _given(record)
    made = {"profile": "full", "device": record.get("device"), "commit": record.get("commit"),
            "date": record.get("finished", ""), **({"seed": given["seed"]} if "seed" in given else {}),
            "parameters": given}
    out, same = [], []
    notes = [n for n, on in (("a run not finished", record.get("partial")),
                             ("a paper-scale subset", subset(record))) if on]
    unfinished = f" ({', '.join(notes)})" if notes else ""
    for name, entry in json.loads(manifest.read_text()).items():
        paths = figure_files(folder / "figures", name)
        if quick is not None and same_pixels(paths["png"], quick / f"{name}.png"):
            same.append(name)
            continue
        key = store(paths, {"chapter": chapter, "name": f"{name}-full", "caption": entry["caption"],
                            **made})
        out.append(figure_myst(paths["png"], label(chapter, f"{name}-full"),
                               f"**{name}, full profile{unfinished}.** {entry['caption']}", key))
    if same:
        verb = "is" if len(same) == 1 else "are"
        out.append(f"The full run's {', '.join(same)} {verb} the same as this page's, pixel for "
                   "pixel, and not shown again.\n")
    return "\n".join(out)


def same_pixels(a: Path, b: Path) -> bool:
    """Whether two PNG files show the same image (their metadata may differ)."""
    import matplotlib.image
    import numpy as np
    if not (a.exists() and b.exists()):
        return False
    x, y = matplotlib.image.imread(a), matplotlib.image.imread(b)
    return x.shape == y.shape and bool(np.array_equal(x, y))
