"""The chapter executions that ``tests/test_chapters.py`` checks start in the background as soon as
the tests are collected (:func:`rnnbook.execute.start_many`: side by side, longest first), so the
other tests run meanwhile on the CPU time they leave idle; a test of test_chapters.py then waits
for its own execution (fixture ``execution``)."""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
import torch

from rnnbook.execute import EXECUTED_DIR, start_many

EXECUTIONS = pytest.StashKey[dict]()
TIMELINE = pytest.StashKey[list]()


def run_of(item: pytest.Item) -> tuple[str, dict, bool] | None:
    """The execution a test checks, if it checks one: (chapter, parameters, for the book?)."""
    name, p = getattr(item, "originalname", None), getattr(item, "callspec", None)
    if name == "test_chapter_quick_claims":
        return p.params["chapter"], {}, True
    if name == "test_chapter_refuses_bad_parameters":
        return p.params["chapter"], p.params["parameters"], False
    if name == "test_chapter_full_profile_smoke":
        return p.params["chapter"], {"profile": "full", "smoke": True}, False
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    items = [i for i in session.items if run_of(i)]
    if not items or session.config.option.collectonly:
        return
    root = Path(tempfile.mkdtemp(prefix="rnnbook-executions-"))
    runs = []
    for n, item in enumerate(items):
        chapter, parameters, book = run_of(item)
        runs.append((chapter, parameters, root / str(n),
                     EXECUTED_DIR / f"{chapter}.ipynb" if book else None))
    # The executions fill the cores: a second torch thread here would make every small operation of
    # the unit tests wait at a barrier for a descheduled thread (a 0.1 s test took 4 min).
    torch.set_num_threads(1)
    t0, ends = time.perf_counter(), {}
    pool, futures = start_many(runs)
    for n, f in enumerate(futures):
        f.add_done_callback(lambda f, n=n: ends.__setitem__(n, time.perf_counter() - t0))
    session.stash[EXECUTIONS] = {"pool": pool, "root": root, "runs": runs, "ends": ends, "by_test": {
        item.nodeid: (run[2], f) for item, run, f in zip(items, runs, futures)}}


def timeline(state: dict) -> list[str]:
    """When each chapter execution ended (seconds after collection) and how long it ran (its
    ``run.json``), in the order they ended: where ``make test``'s time goes, on CI too."""
    lines = []
    for n, end in sorted(state["ends"].items(), key=lambda x: x[1]):
        chapter, parameters, results_dir, _ = state["runs"][n]
        record = results_dir / chapter / "run.json"
        ran = (f"ran {json.loads(record.read_text())['wall_seconds']:5.0f} s" if record.exists()
               else "no run.json (refused or failed)")
        lines.append(f"ended at {end:5.0f} s, {ran}: {chapter} {parameters or ''}")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    lines = config.stash.get(TIMELINE, [])
    if lines:
        terminalreporter.section("chapter executions")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.stash.get(EXECUTIONS, None)
    if state:
        state["pool"].shutdown(wait=True, cancel_futures=True)
        session.config.stash[TIMELINE] = timeline(state)
        if not session.testsfailed:  # kept for a look when a test failed
            shutil.rmtree(state["root"], ignore_errors=True)


@pytest.fixture
def execution(request) -> tuple[Path, Future]:
    """The results directory and the future of the chapter execution this test checks."""
    return request.session.stash[EXECUTIONS]["by_test"][request.node.nodeid]
