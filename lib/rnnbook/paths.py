"""Where the book, its chapters and its results live (all chapters)."""
from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

LIB_DIR = Path(__file__).resolve().parent
BOOK_ROOT = LIB_DIR.parents[1]
CHAPTERS_DIR = BOOK_ROOT / "chapters"
BUILD_DIR = BOOK_ROOT / "_build"


def chapters() -> list[str]:
    """Names of the book's chapters: every ``chapters/<name>.md``."""
    return sorted(p.stem for p in CHAPTERS_DIR.glob("*.md"))


def default_results_dir(profile: str) -> Path:
    """``$RNNBOOK_RESULTS`` if set, else ``_build/results/<profile>`` in the book."""
    env = os.environ.get("RNNBOOK_RESULTS")
    return Path(env) if env else BUILD_DIR / "results" / profile


# Modules that only present results (pages, tables, figures, the command line): no cached value
# is computed by them, so the results version leaves them out, as it does each chapter's ``plots.py``.
PRESENTATION = ("__main__.py", "bench.py", "display.py", "execute.py", "figures.py", "report.py")
# Modules that store, dispatch or locate results but compute none: a fix to them keeps finished
# pieces of a full run (an entry they cannot read is refused, :class:`rnnbook.cache.PieceError`).
INFRASTRUCTURE = ("cache.py", "engine.py", "paths.py")
PLOTS = "plots"  # a chapter package's figures (``<chapter>/plots.py``, ``plots_*.py``): presentation only
REPORT = "report"  # a chapter package's findings and summary (``<chapter>/report.py``): the same
# The chapters whose packages a chapter computes with besides its own (the synthesis chapter imports
# the four papers' packages), so that its code version changes with theirs.
USES: dict[str, tuple[str, ...]] = {
    "synthesis": ("curse_of_memory", "extrapolation", "learning_dynamics", "stable_models")}


def quiet() -> bool:
    """Progress bars are off when ``RNNBOOK_QUIET`` is set to a non-empty value other than 0."""
    return os.environ.get("RNNBOOK_QUIET", "0") not in ("", "0")


def chapter_of(path: Path) -> str | None:
    """The chapter whose package holds the library file ``path`` (``lib/rnnbook/<chapter>/...``),
    or None for the book's machinery and the shared models (``lib/rnnbook/*.py``)."""
    parts = path.relative_to(LIB_DIR).parts
    return parts[0] if len(parts) > 1 else None


def presentation_only(path: Path) -> bool:
    """Whether the library file ``path`` only shows results: one of :data:`PRESENTATION`, or a
    chapter package's :data:`PLOTS` or :data:`REPORT`."""
    rel = path.relative_to(LIB_DIR)
    if len(rel.parts) == 1:
        return rel.name in PRESENTATION
    return rel.stem in (PLOTS, REPORT) or rel.stem.startswith(PLOTS + "_")


def version_files(chapter: str | None = None, results: bool = False) -> list[Path]:
    """The library files a version hashes: all of them, or, for ``chapter``, all but the packages of
    the chapters it does not use (``lib/rnnbook/<other chapter>/``, :data:`USES`); with ``results``,
    also without the presentation modules (:func:`presentation_only`) and :data:`INFRASTRUCTURE`."""
    others = set(chapters()) - {chapter} - set(USES.get(chapter, ())) if chapter else set()
    return sorted(p for p in LIB_DIR.rglob("*.py") if ".ipynb_checkpoints" not in p.parts
                  and chapter_of(p) not in others
                  and not (results and (presentation_only(p) or p.name in INFRASTRUCTURE
                                        and p.parent == LIB_DIR)))


def _hash(files: list[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(LIB_DIR).as_posix().encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


@cache
def code_version(chapter: str | None = None) -> str:
    """A hash of the library's source, which decides whether an execution of a chapter may be
    reused by the book. A chapter's version leaves out the other chapters' modules, so editing one
    chapter's code does not invalidate the executions (and results) of the others."""
    return _hash(version_files(chapter))


@cache
def results_version(chapter: str | None = None) -> str:
    """The version a results cache is keyed by: :func:`code_version` without the presentation
    modules, so that a fix to how results are shown does not throw away hours of finished runs,
    while any change to code that computes them is a miss, never a stale hit."""
    return _hash(version_files(chapter, results=True))


FULL_RESULTS_DIR = BOOK_ROOT / "data" / "results" / "full"  # committed full-profile results
# in a chapter's results folder: the device its run resolved (the run record reports it, since a
# chapter's "auto" can mean the CPU on a GPU machine)
DEVICE_FILE = "device.txt"
SURVEY_DIR = BOOK_ROOT / "data" / "results" / "survey"  # committed quick seed surveys, <chapter>.json
FIGURE_STORE = BUILD_DIR / "figure-store"  # figure files by content, for the book build's links


@cache
def git_commit() -> str:
    """The book's commit (12 hex digits), with ``-dirty`` when tracked sources differ from it, or
    ``unknown`` outside a git checkout. Committed results (``data/results/``) do not count: a full
    run rewrites its own, and its record must still name a clean commit."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(BOOK_ROOT), *args], capture_output=True, text=True,
                              check=True, timeout=30).stdout.strip()
    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)data/results")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("-dirty" if dirty else "")
