"""Where the book, its chapters and its results live (all chapters)."""
from __future__ import annotations

import ast
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


# A chapter module's module-level tuple of the results-cache pieces it computes (e.g. ``PIECES =
# ("hessians", "f7")``): such a piece is keyed by :func:`piece_versions`, the version of the modules
# that compute it only, so that a change elsewhere in the chapter's package keeps it.
PIECES = "PIECES"


def declared_pieces(path: Path) -> tuple[str, ...]:
    """The piece names a module declares in its :data:`PIECES` tuple (read from its source)."""
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == PIECES):
            return tuple(ast.literal_eval(node.value))
    return ()


def _module_file(dotted: str) -> Path | None:
    """The library file of the module ``rnnbook.<...>`` (a package's ``__init__.py``), if any."""
    base = LIB_DIR.joinpath(*dotted.split(".")[1:])
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _runtime_nodes(tree: ast.AST):
    """The nodes of ``tree`` but those under ``if TYPE_CHECKING:`` (imports for annotations only)."""
    for node in ast.iter_child_nodes(tree):
        test = getattr(node, "test", None) if isinstance(node, ast.If) else None
        if not (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
                or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            yield node
            yield from _runtime_nodes(node)


def imported_files(path: Path) -> set[Path]:
    """``path`` and the library files it imports at run time, directly or not (each package's
    ``__init__.py`` with its modules): the code a piece computed in ``path`` can run."""
    seen: set[Path] = set()
    todo = [path]
    while todo:
        file = todo.pop()
        if file in seen:
            continue
        seen.add(file)
        names = [".".join(("rnnbook", *file.relative_to(LIB_DIR).parent.parts))]  # its package
        for node in _runtime_nodes(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "rnnbook":
                todo += [f for i in range(2, len(parts) + 1) if (f := _module_file(".".join(parts[:i])))]
    return seen


@cache
def piece_versions(chapter: str) -> dict[str, str]:
    """For each piece a module of ``chapter``'s package declares (:data:`PIECES`), the version it
    is keyed by: :func:`results_version`'s files less the chapter packages' modules that the
    declaring module does not import (:func:`imported_files`). Other pieces are keyed by the
    chapter's :func:`results_version`."""
    files = version_files(chapter, results=True)
    versions = {}
    for module in sorted((LIB_DIR / chapter).glob("*.py")):
        names = declared_pieces(module)
        if names:
            used = imported_files(module)
            own = _hash([p for p in files if chapter_of(p) is None or p in used])
            versions.update(dict.fromkeys(names, own))
    return versions


def piece_versions_of(code: str) -> dict[str, str]:
    """:func:`piece_versions` of the chapter whose :func:`results_version` is ``code`` (none: {})."""
    return next((piece_versions(c) for c in chapters() if results_version(c) == code), {})


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
