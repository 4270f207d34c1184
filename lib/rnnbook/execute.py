"""Executing chapters with papermill, and reusing those executions in the book build.

``execute_chapter`` runs ``chapters/<name>.md`` (read with jupytext) through papermill into
``<results_dir>/<chapter>/``. The results directory reaches the kernel through ``$RNNBOOK_RESULTS``,
so a run with default parameters injects no cell: its code cells are then exactly those the book
builds, and :func:`seed_book_cache` can hand its outputs to the book instead of executing again --
only when the chapter's source and the library's code version are unchanged since the run.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jupytext
import nbformat
import yaml

from rnnbook import claims
from rnnbook.paths import BOOK_ROOT, BUILD_DIR, CHAPTERS_DIR, chapters, code_version, default_results_dir

EXECUTED_DIR = BUILD_DIR / "executed"  # executions of default parameters the book may reuse
BOOK_CACHE = BUILD_DIR / ".jupyter_cache"
REUSE_CONFIG = BUILD_DIR / "_config.reuse.yml"  # _config.yml with execution from that cache


def chapter_source(chapter: str) -> Path:
    if chapter not in chapters():
        raise ValueError(f"unknown chapter {chapter!r}; chapters: {', '.join(chapters())}")
    return CHAPTERS_DIR / f"{chapter}.md"


def source_hash(chapter: str) -> str:
    return hashlib.sha256(chapter_source(chapter).read_bytes()).hexdigest()


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute_chapter(chapter: str, parameters: dict[str, Any] | None = None,
                    results_dir: str | os.PathLike | None = None,
                    output: str | os.PathLike | None = None, quiet: bool = False
                    ) -> tuple[list[claims.Claim], Path]:
    """Run a chapter with papermill; return its claims and the executed notebook's path.

    A cell error raises ``papermill.PapermillExecutionError``.
    """
    import papermill

    parameters = dict(parameters or {})
    root = Path(results_dir or default_results_dir(parameters.get("profile", "quick"))).resolve()
    out = Path(output) if output else root / chapter / f"{chapter}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(chapter_source(chapter))
    nb.metadata["rnnbook"] = {"source_sha256": source_hash(chapter),
                              "code_version": code_version(), "parameters": parameters}
    (root / chapter).mkdir(parents=True, exist_ok=True)
    with _env(RNNBOOK_RESULTS=str(root), RNNBOOK_QUIET="1" if quiet else "0"):
        papermill.execute_notebook(nb, str(out), parameters=parameters, cwd=str(CHAPTERS_DIR),
                                   kernel_name="python3", progress_bar=False)
    return claims.load(root / chapter / "claims.json"), out


def seed_book_cache(executed_dir: Path = EXECUTED_DIR, cache_path: Path = BOOK_CACHE,
                    config_path: Path = REUSE_CONFIG) -> list[str]:
    """Empty the book's execution cache, then fill it with the fresh executions in
    ``executed_dir``: those of default parameters, without errors, whose chapter source and library
    code version are unchanged. Writes the book configuration that builds from this cache to
    ``config_path``. Returns the chapters seeded; the book build executes the others."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.read import read_myst_markdown_notebook

    shutil.rmtree(cache_path, ignore_errors=True)
    cache = get_cache(str(cache_path))
    seeded = []
    for chapter in chapters():
        path = executed_dir / f"{chapter}.ipynb"
        if not path.exists():
            continue
        executed = nbformat.read(path, as_version=4)
        if any(o.get("output_type") == "error" for c in executed.cells for o in c.get("outputs", [])):
            continue
        stamp = executed.metadata.get("rnnbook", {})
        if stamp != {"source_sha256": source_hash(chapter), "code_version": code_version(),
                     "parameters": {}}:
            continue
        # the notebook exactly as the book reads it, with the executed outputs
        nb = read_myst_markdown_notebook(chapter_source(chapter).read_text())
        src = [c for c in nb.cells if c.cell_type == "code"]
        run = [c for c in executed.cells if c.cell_type == "code"]
        if [c.source for c in src] != [c.source for c in run]:
            continue
        for i, (s, r) in enumerate(zip(src, run), start=1):
            s.outputs, s.execution_count = r.outputs, i
        cache.cache_notebook_bundle(CacheBundleIn(nb, str(chapter_source(chapter))))
        seeded.append(chapter)
    config = yaml.safe_load((BOOK_ROOT / "_config.yml").read_text())
    config["execute"].update(execute_notebooks="cache", cache=str(cache_path))
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return seeded
