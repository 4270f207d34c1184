"""Every chapter is a jupytext pair: the .md is the source, the .ipynb in sync and without outputs."""
from __future__ import annotations

import jupytext
import nbformat
import pytest

from rnnbook.paths import CHAPTERS_DIR, chapters


def code_and_markdown(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


@pytest.mark.parametrize("chapter", chapters())
def test_pair_in_sync_and_clean(chapter):
    md = jupytext.read(CHAPTERS_DIR / f"{chapter}.md")
    path = CHAPTERS_DIR / f"{chapter}.ipynb"
    assert path.exists(), f"run: jupytext --sync chapters/{chapter}.md"
    nb = nbformat.read(path, as_version=4)
    assert code_and_markdown(nb) == code_and_markdown(md), f"run: jupytext --sync chapters/{chapter}.md"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{path} carries outputs"


def test_every_chapter_in_toc():
    toc = (CHAPTERS_DIR.parent / "_toc.yml").read_text()
    for chapter in chapters():
        assert f"chapters/{chapter}" in toc


@pytest.mark.parametrize("chapter", chapters())
def test_parameters_cell(chapter):
    nb = jupytext.read(CHAPTERS_DIR / f"{chapter}.md")
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1
    for name in ("profile", "device", "seed", "results_dir"):
        assert f"\n{name} = " in "\n" + cells[0].source
    assert '\nprofile = "quick"' in "\n" + cells[0].source


@pytest.mark.parametrize("chapter", chapters())
def test_tables_are_shown(chapter):
    """A table built in a cell but not as its last expression is never displayed (Jupyter shows
    only the last one): the prose below it would describe a table the page does not have."""
    import ast
    nb = jupytext.read(CHAPTERS_DIR / f"{chapter}.md")
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        code = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        for statement in ast.parse(code).body[:-1]:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if isinstance(call, ast.Call):
                assert not ast.unparse(call.func).endswith("table"), \
                    f"{chapter}: {ast.unparse(call)[:60]} is not its cell's last expression"


SPECS = CHAPTERS_DIR.parent / "specs"
SHARED_PAPERS = CHAPTERS_DIR.parent.parent / "shared" / "papers"


@pytest.mark.parametrize("page", sorted(p.name for p in SPECS.glob("*.md") if p.name != "index.md"))
def test_published_specifications_are_the_projects(page):
    """The appendix "Our specifications" shows the documents the chapters were planned from,
    unedited: each page is the project's copy, byte for byte."""
    source = SHARED_PAPERS / page.replace("_check.md", ".check.md")
    if not SHARED_PAPERS.exists():
        pytest.skip(f"the project's specifications are not beside the book ({SHARED_PAPERS})")
    assert (SPECS / page).read_bytes() == source.read_bytes(), f"copy {source} to specs/{page}"


def test_extrapolation_defaults_shared_with_the_synthesis_chapter():
    """The synthesis chapter reuses the extrapolation chapter's default sigma and eta as constants
    (rnnbook.extrapolation.experiments): they must be its parameter cell's values."""
    import papermill

    from rnnbook.extrapolation import experiments

    cell = papermill.inspect_notebook(str(CHAPTERS_DIR / "extrapolation.ipynb"))
    assert float(cell["lr"]["default"]) == experiments.LR
    assert float(cell["init_scale"]["default"]) == experiments.INIT_SCALE
