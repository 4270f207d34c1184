"""Executing chapters with papermill, and reusing those executions in the book build.

``execute_chapter`` runs ``chapters/<name>.md`` (read with jupytext) through papermill into
``<results_dir>/<chapter>/``. The results directory reaches the kernel through ``$RNNBOOK_RESULTS``,
so a run with default parameters injects no cell: its code cells are then exactly those the book
builds, and :func:`seed_book_cache` can hand its outputs to the book instead of executing again --
only when the chapter's source and the library's code version are unchanged since the run.
:func:`start_many` / :func:`execute_many` run several executions side by side (the tests' and
the book's).
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
import multiprocessing
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import jupytext
import nbformat
import yaml

from rnnbook import claims, engine
from rnnbook.display import SmokeResults
from rnnbook.paths import (BOOK_ROOT, BUILD_DIR, CHAPTERS_DIR, DEVICE_FILE, FULL_RESULTS_DIR,
                           LIB_DIR, SURVEY_DIR, chapters, code_version, default_results_dir, git_commit,
                           results_version)

EXECUTED_DIR = BUILD_DIR / "executed"  # executions of default parameters the book may reuse
BOOK_CACHE = BUILD_DIR / ".jupyter_cache"
REUSE_CONFIG = BUILD_DIR / "_config.reuse.yml"  # _config.yml with execution from that cache


def chapter_source(chapter: str) -> Path:
    if chapter not in chapters():
        raise ValueError(f"unknown chapter {chapter!r}; chapters: {', '.join(chapters())}")
    return CHAPTERS_DIR / f"{chapter}.md"


def source_hash(chapter: str) -> str:
    return hashlib.sha256(chapter_source(chapter).read_bytes()).hexdigest()


def shown_results_files(chapter: str = "*") -> list[Path]:
    """The committed results that a quick page shows: the full profile's ``claims.json``,
    ``run.json`` and ``figures/`` under ``data/results/full/<chapter>/``, and the quick profile's
    seed survey ``data/results/survey/<chapter>.json`` (all chapters by default)."""
    full = [p for pattern in ("claims.json", "run.json", "figures/*")
            for p in FULL_RESULTS_DIR.glob(f"{chapter}/{pattern}")]
    return sorted(p for p in full + list(SURVEY_DIR.glob(f"{chapter}.json")) if p.is_file())


def shown_results_hash(chapter: str) -> str:
    """A hash of :func:`shown_results_files` of ``chapter``: an execution that shows them is reused
    only while they are unchanged (so ``make full`` is followed by a book that shows its results)."""
    h = hashlib.sha256()
    for path in shown_results_files(chapter):
        h.update(f"{path.parent.name}/{path.name}".encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def execution_stamp(chapter: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """What an execution of ``chapter`` was made from; the book reuses it only if all is current."""
    return {"source_sha256": source_hash(chapter), "code_version": code_version(chapter),
            "full_results": shown_results_hash(chapter), "parameters": parameters}


ORIGIN = "rnnbook_run"  # the executed notebook's metadata key for :func:`run_origin`


def run_origin(chapter: str) -> dict[str, str]:
    """What a run of ``chapter`` starts from (its run record names these, not those of the checkout
    that writes the record later, issue 47): the commit, the chapter source's hash, and the
    library's code and results versions."""
    return {"commit": git_commit(), "source_sha256": source_hash(chapter),
            "rnnbook_code": code_version(chapter), "rnnbook_results": results_version(chapter)}


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


def kernel_pythonpath() -> str:
    """``PYTHONPATH`` for a chapter's kernel (all chapters): this library's folder first, so that the
    kernel imports the same ``rnnbook`` as the driver. The kernel starts in ``chapters/``, where a
    relative ``PYTHONPATH=lib`` finds nothing, and an editable install of another checkout (a venv
    shared with a git worktree) would otherwise win."""
    rest = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([str(LIB_DIR.parent)] + ([rest] if rest else []))


def execute_chapter(chapter: str, parameters: dict[str, Any] | None = None,
                    results_dir: str | os.PathLike | None = None,
                    output: str | os.PathLike | None = None, quiet: bool = False,
                    executor: engine.Executor | None = None) -> tuple[list[claims.Claim], Path]:
    """Run a chapter with papermill; return its claims and the executed notebook's path.

    ``executor`` (default inline) is where the chapter's sweeps compute (:mod:`rnnbook.engine`).
    Unless ``quiet``, a bar counts the executed cells and the chapter's own progress bars (its
    stderr) are shown. A finished run leaves its run record ``run.json`` beside ``claims.json``
    (:func:`run_record`); a run that stops early leaves none. A cell error raises
    ``papermill.PapermillExecutionError``.
    """
    import papermill

    parameters = dict(parameters or {})
    root = Path(results_dir or default_results_dir(parameters.get("profile", "quick"))).resolve()
    if parameters.get("smoke") and root.is_relative_to(FULL_RESULTS_DIR.resolve()):
        raise SmokeResults(f"a smoke run (toy sizes) cannot write into {FULL_RESULTS_DIR}, where "
                           "committed full-profile results live: give another --results-dir")
    out = Path(output) if output else root / chapter / f"{chapter}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(chapter_source(chapter))
    nb.metadata["rnnbook"] = execution_stamp(chapter, parameters)
    nb.metadata[ORIGIN] = origin = run_origin(chapter)
    (root / chapter).mkdir(parents=True, exist_ok=True)
    for stale in (RUN_RECORD, DEVICE_FILE):
        (root / chapter / stale).unlink(missing_ok=True)
    reused = len(list((root / chapter / "cache").glob("*.json")))  # a resumed run's finished work
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.perf_counter()
    executor = executor or engine.Executor()
    with _env(RNNBOOK_RESULTS=str(root), RNNBOOK_QUIET="1" if quiet else "0", PYTHONPATH=kernel_pythonpath(),
              **{engine.ENV: engine.to_env(executor)}):
        papermill.execute_notebook(nb, str(out), parameters=parameters, cwd=str(CHAPTERS_DIR),
                                   kernel_name="python3", progress_bar=not quiet,
                                   stderr_file=None if quiet else sys.stderr)
    found = claims.load(root / chapter / "claims.json")
    used = root / chapter / DEVICE_FILE
    record = run_record(chapter, parameters, started, time.perf_counter() - t0, found, reused,
                        executor, used.read_text() if used.exists() else None, origin)
    claims.atomic_write(root / chapter / RUN_RECORD, json.dumps(record, indent=2).encode())
    return found, out


RUN_RECORD = "run.json"


class PartialRunError(ValueError):
    """A results folder that :func:`partial_record` cannot describe as a stopped full run."""


def partial_record(chapter: str, folder: Path) -> dict[str, Any]:
    """The run record (``run.json``) of a full run of ``chapter`` in ``folder``
    (``<results_dir>/<chapter>/``) that stopped before its end, or is still running (issue 47: its
    claims so far are paper-scale verdicts, shown before the whole run has finished): as
    :func:`run_record`, from the executed notebook's papermill times, the claims recorded so far and
    the commit and versions the run started from (:func:`run_origin`), with ``partial``: how many
    code cells completed and the first line of the cell it stopped in. Refused unless the notebook
    is a full, non-smoke run of ``chapter`` without a run record, made by this checkout's results
    version (:func:`~rnnbook.paths.results_version`), with no failed cell and a cell left to run."""
    notebook = folder / f"{chapter}.ipynb"
    if not notebook.is_file() or not (folder / "claims.json").is_file():
        raise PartialRunError(f"{folder}: no executed notebook {notebook.name} and claims.json of a run")
    if (folder / RUN_RECORD).exists():
        raise PartialRunError(f"{folder / RUN_RECORD}: the run finished; its record is already there")
    nb = nbformat.read(notebook, as_version=4)
    parameters = nb.metadata.get("rnnbook", {}).get("parameters", {})
    if parameters.get("profile") != "full" or parameters.get("smoke"):
        raise PartialRunError(f"{notebook}: not a full-profile run (parameters {parameters})")
    origin = nb.metadata.get(ORIGIN)
    if origin is None:
        raise PartialRunError(f"{notebook}: the run did not record the commit it started from "
                              "(a run older than 7 December 2026): write its record from that commit")
    if origin["rnnbook_results"] != results_version(chapter):
        raise PartialRunError(f"{notebook}: made by results version {origin['rnnbook_results']}, not "
                              f"this checkout's {results_version(chapter)}: its claims are other code's")
    cells = [c for c in nb.cells if c.cell_type == "code"]
    meta = [c.metadata.get("papermill", {}) for c in cells]
    if any(m.get("status") == "failed" for m in meta):
        raise PartialRunError(f"{notebook}: a cell failed (papermill status 'failed'): an error, not a stop")
    done = next((i for i, m in enumerate(meta) if m.get("status") != "completed"), len(cells))
    if done == len(cells):
        raise PartialRunError(f"{notebook}: every code cell completed but no {RUN_RECORD} was written: "
                              "rerun the chapter, which resumes from its cache")
    started = datetime.datetime.fromisoformat(nb.metadata["papermill"]["start_time"])
    ended = max((datetime.datetime.fromisoformat(m["end_time"]) for m in meta[:done] if m.get("end_time")),
                default=started)
    used = folder / DEVICE_FILE
    record = run_record(chapter, parameters, started, (ended - started).total_seconds(),
                        claims.load(folder / "claims.json"),
                        _pieces_before(folder / "cache", origin["rnnbook_results"], started),
                        device=used.read_text() if used.exists() else None, origin=origin)
    record["finished"] = ended.strftime("%Y-%m-%dT%H:%M:%SZ")
    record["partial"] = {"cells_completed": done, "cells": len(cells),
                         "stopped_in": (cells[done].source.strip().splitlines() or [""])[0]}
    return record


def _pieces_before(cache: Path, version: str, started: datetime.datetime) -> int:
    """How many pieces of results version ``version`` in ``cache`` were made before ``started`` (a
    resumed run's finished work): sidecars of that version whose entry is there."""
    sidecars = [(p, json.loads(p.read_text())) for p in cache.glob("*.json")]
    return sum(meta.get("code_version") == version and "made" in meta and p.with_suffix(".npz").exists()
               and datetime.datetime.fromisoformat(meta["made"]) < started for p, meta in sidecars)


def survey_chapter(chapter: str, seeds: list[int], parameters: dict[str, Any] | None = None,
                   results_dir: str | os.PathLike | None = None, quiet: bool = True,
                   run: Any = None, executor: engine.Executor | None = None) -> dict[str, Any]:
    """A seed survey (all chapters: a verdict is the paper's, not the seed's): ``chapter`` run once
    per seed with ``parameters`` into ``<results_dir>/seed-<n>/``, one after another, or each seed
    as a job of ``executor`` (:mod:`rnnbook.engine`); returns the record that
    ``data/results/survey/<chapter>.json`` commits (:func:`claims.survey` of the runs, their
    commands, commits and wall times). ``run`` replaces :func:`execute_chapter` (tests)."""
    run = run or execute_chapter
    parameters = dict(parameters or {})
    root = Path(results_dir or default_results_dir(parameters.get("profile", "quick")) / "survey")
    extra = "".join(f" -p {k} {shlex.quote(v if isinstance(v, str) else json.dumps(v))}"
                    for k, v in parameters.items() if k not in ("profile", "device", "seed"))
    one = partial(_survey_run, run, chapter, parameters, root, quiet)
    if executor is not None and executor.kind != "inline":
        started = time.time()

        def done(seed: int) -> bool:  # finished in this survey (an older run.json is not)
            record = root / f"seed-{seed}" / chapter / RUN_RECORD
            return record.exists() and record.stat().st_mtime >= started
        engine.run(one, seeds, done, root / "jobs", executor, label=f"survey {chapter}")
    else:
        for seed in seeds:
            one(seed)
    runs, commands, walls, commits = {}, {}, {}, set()
    for seed in seeds:
        name, folder = f"seed {seed}", root / f"seed-{seed}"
        runs[name] = folder / chapter / "claims.json"
        record = json.loads((folder / chapter / RUN_RECORD).read_text())
        walls[name] = record["wall_seconds"]
        commits.add(record["commit"])
        commands[name] = (f"python -m rnnbook run {chapter} --profile {parameters.get('profile', 'quick')}"
                          f" -p seed {seed}{extra}")
    return {"chapter": chapter, "profile": parameters.get("profile", "quick"),
            "made": f"{datetime.date.today():%d %B %Y} at commit {', '.join(sorted(commits))}",
            "commands": commands, "wall_seconds": walls, "variations": claims.survey(runs)}


def _survey_run(run, chapter: str, parameters: dict[str, Any], root: Path, quiet: bool,
                seed: int) -> None:
    """One seed of :func:`survey_chapter`."""
    run(chapter, {**parameters, "seed": seed}, root / f"seed-{seed}", quiet=quiet)


# Quick-profile seconds of each chapter on 2 CPU cores, two chapters side by side as `make test`
# runs them (3 December 2026; extrapolation's 7 December, 96 s beside one full run, after issue 43's
# new claims and a cheaper GD step; learning dynamics' 7 December, 69 and 71 s beside two full
# runs, after issue 45's); they only
# decide which chapter starts first where no execution on this machine says better
# (:func:`expected_seconds`, which reads the same kind of duration).
QUICK_SECONDS = {"stable_models": 670, "curse_of_memory": 224, "extrapolation": 100,
                 "learning_dynamics": 70, "synthesis": 56}

Execution = tuple[str, dict[str, Any], Path, Path | None]  # chapter, parameters, results dir, output


def expected_seconds(chapter: str, parameters: dict[str, Any]) -> float:
    """How long a run should take: the last execution of the chapter's defaults on this machine
    (``_build/executed``), else :data:`QUICK_SECONDS`; runs with parameters count as short."""
    if parameters:
        return 0.0
    path = EXECUTED_DIR / f"{chapter}.ipynb"
    if path.exists():
        seconds = nbformat.read(path, as_version=4).metadata.get("papermill", {}).get("duration")
        if seconds:
            return float(seconds)
    return QUICK_SECONDS.get(chapter, 0.0)


def start_many(runs: list[Execution], workers: int | None = None, quiet: bool = True,
               report=lambda chapter, seconds, error: None
               ) -> tuple[ProcessPoolExecutor, list[Future]]:
    """Start :func:`execute_chapter` for every run, ``workers`` (default: the CPU count) at a time
    in separate processes, the longest first, and return at once: the pool (to shut down) and the
    futures in the order of ``runs``. The chapters train on one thread each (the stable-models
    chapter in two worker processes), so on two cores two chapters run side by side. A future's
    ``.result()`` gives the claims and the executed notebook, or raises the run's error (a cell
    error: ``papermill.PapermillExecutionError``). ``report(chapter, seconds since the start,
    error or None)`` is called as each run ends."""
    order = sorted(range(len(runs)), key=lambda i: -expected_seconds(*runs[i][:2]))
    futures: list[Future | None] = [None] * len(runs)
    t0 = time.perf_counter()
    pool = ProcessPoolExecutor(workers or os.cpu_count(),
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=_quiet_stderr if quiet else None)
    for i in order:
        chapter, parameters, results_dir, output = runs[i]
        futures[i] = pool.submit(execute_chapter, chapter, parameters, results_dir, output, quiet)
        futures[i].add_done_callback(
            lambda f, c=chapter: report(c, time.perf_counter() - t0, f.exception()))
    return pool, futures


def _quiet_stderr() -> None:
    """A quiet worker's stderr (and its kernels', e.g. their start-up warnings) goes nowhere; a
    cell error still reaches the caller as the run's exception."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def execute_many(runs: list[Execution], workers: int | None = None, quiet: bool = True,
                 report=lambda chapter, seconds, error: None) -> list[Future]:
    """:func:`start_many`, waiting for every run: the finished futures in the order of ``runs``."""
    pool, futures = start_many(runs, workers, quiet, report)
    pool.shutdown(wait=True)
    return futures


def hardware() -> dict[str, Any]:
    """The machine a run used: CPU, core count, memory and the CUDA devices torch sees."""
    import platform

    import torch

    cuda = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        memory = None
    cpu = platform.processor() or platform.machine()
    summary = f"{cuda[0]}" + (f" x{len(cuda)}" if len(cuda) > 1 else "") if cuda else \
        f"{os.cpu_count()} CPU cores ({cpu})"
    return {"summary": summary, "cpu": cpu, "cpu_count": os.cpu_count(),
            "memory_gib": round(memory, 1) if memory else None, "cuda": cuda,
            "system": f"{platform.system()} {platform.release()}"}


def run_record(chapter: str, parameters: dict[str, Any], started: datetime.datetime,
               wall_seconds: float, found: list[claims.Claim], cached_at_start: int = 0,
               executor: engine.Executor | None = None, device: str | None = None,
               origin: dict[str, str] | None = None) -> dict[str, Any]:
    """Where, when and with what a chapter run was made (``run.json``); ``wall_seconds`` is this
    process's time, which for a resumed run (``cached_at_start`` results already in its cache)
    leaves out the earlier processes' work. ``device``: the one the chapter's run used (its
    :data:`~rnnbook.paths.DEVICE_FILE`), else the parameters' with "auto" resolved here.
    ``origin``: the commit and versions the run started from (:func:`run_origin`; default: now's)."""
    import platform
    from importlib import metadata

    import torch

    origin = origin or run_origin(chapter)
    versions = {"python": platform.python_version(), "rnnbook_code": origin["rnnbook_code"],
                "rnnbook_results": origin["rnnbook_results"]}
    for package in ("torch", "numpy", "scipy", "matplotlib", "papermill"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[package] = metadata.version(package)
    device = device or parameters.get("device", "auto")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return {"chapter": chapter, "profile": parameters.get("profile", "quick"),
            "parameters": claims.to_json(parameters), "device": device,
            "hardware": hardware(), "versions": versions, "commit": origin["commit"],
            "source_sha256": origin["source_sha256"],
            "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "wall_seconds": round(wall_seconds, 1), "cached_at_start": cached_at_start,
            "executor": dataclasses.asdict(executor or engine.Executor()),
            "smoke": bool(parameters.get("smoke")),
            "claims": {"total": len(found), "passed": sum(c.passed for c in found)}}


def reusable_execution(chapter: str, executed_dir: Path = EXECUTED_DIR) -> nbformat.NotebookNode | None:
    """The chapter as the book reads it, with the outputs of its execution in ``executed_dir`` --
    if that execution is fresh: default parameters, no error, chapter source, library code version
    and committed full results unchanged (:func:`execution_stamp`), the same code cells -- else None."""
    from myst_nb.core.read import read_myst_markdown_notebook

    path = executed_dir / f"{chapter}.ipynb"
    if not path.exists():
        return None
    executed = nbformat.read(path, as_version=4)
    if any(o.get("output_type") == "error" for c in executed.cells for o in c.get("outputs", [])):
        return None
    if executed.metadata.get("rnnbook", {}) != execution_stamp(chapter, {}):
        return None
    nb = read_myst_markdown_notebook(chapter_source(chapter).read_text())
    src = [c for c in nb.cells if c.cell_type == "code"]
    run = [c for c in executed.cells if c.cell_type == "code"]
    if [c.source for c in src] != [c.source for c in run]:
        return None
    for i, (s, r) in enumerate(zip(src, run), start=1):
        s.outputs, s.execution_count = r.outputs, i
    nb.metadata["execution_seconds"] = executed.metadata.get("papermill", {}).get("duration")
    return nb


def seed_book_cache(executed_dir: Path = EXECUTED_DIR, cache_path: Path = BOOK_CACHE,
                    config_path: Path = REUSE_CONFIG) -> list[str]:
    """Empty the book's execution cache, then fill it with the fresh executions in
    ``executed_dir`` (:func:`reusable_execution`). Writes the book configuration that builds from
    this cache to ``config_path``. Returns the chapters seeded; the book build executes the others."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    shutil.rmtree(cache_path, ignore_errors=True)
    cache = get_cache(str(cache_path))
    seeded = []
    for chapter in chapters():
        nb = reusable_execution(chapter, executed_dir)
        if nb is None:
            continue
        seconds = nb.metadata.pop("execution_seconds")
        cache.cache_notebook_bundle(CacheBundleIn(nb, str(chapter_source(chapter)),
                                                  data={"execution_seconds": seconds}))
        seeded.append(chapter)
    config = yaml.safe_load((BOOK_ROOT / "_config.yml").read_text())
    config["execute"].update(execute_notebooks="cache", cache=str(cache_path))
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return seeded


# ------------------------------------------------------------------------ building the book

HTML_DIR = BUILD_DIR / "html"
BUILD_STAMP = HTML_DIR / ".rnnbook-build.json"  # what the HTML in HTML_DIR was built from
FIGURES_EXPORT = BUILD_DIR / "figures"
JB_FLAGS = ["-W", "-n", "--keep-going"]

# Run in a new network namespace: bring up loopback (kernels talk over 127.0.0.1), then exec argv.
_LOOPBACK_UP = """import fcntl, os, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack("16sH14s", fcntl.ioctl(s, 0x8913, struct.pack("16sH14s", b"lo", 0, b"")))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", flags | 1, b""))  # SIOCSIFFLAGS: IFF_UP
os.execvp(sys.argv[1], sys.argv[1:])
"""


def offline_prefix() -> list[str] | None:
    """A command prefix that runs its command with no network at all (a new network namespace with
    only loopback, via ``unshare -n`` or, unprivileged, ``unshare -rn``), or None where this
    machine does not permit one."""
    if not shutil.which("unshare"):
        return None
    for flags in ("-n", "-rn"):
        prefix = ["unshare", flags, sys.executable, "-c", _LOOPBACK_UP]
        try:
            ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            ok = False
        if ok:
            return prefix
    return None


def book_inputs() -> str:
    """A hash of everything the HTML book is made from: its sources, configuration, static files,
    the library's code version and the committed full-profile results it shows."""
    h = hashlib.sha256(code_version().encode())
    files = [*BOOK_ROOT.glob("*.md"), *BOOK_ROOT.glob("*.yml"), *BOOK_ROOT.glob("*.bib"),
             *CHAPTERS_DIR.glob("*.md"), *(BOOK_ROOT / "_static").rglob("*"),
             *shown_results_files()]
    for path in sorted(p for p in files if p.is_file()):
        h.update(path.relative_to(BOOK_ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def built_stamp() -> dict[str, Any] | None:
    """The stamp of the HTML build if it was made from the current inputs, else None."""
    if not BUILD_STAMP.exists():
        return None
    stamp = json.loads(BUILD_STAMP.read_text())
    return stamp if stamp.get("inputs") == book_inputs() else None


def build_book(offline: bool = False, if_stale: bool = False) -> dict[str, Any]:
    """Build the HTML book in ``_build/html`` (quick profile, CPU, Sphinx warnings as errors):
    the chapters without a fresh execution (:func:`reusable_execution`, e.g. one by the tests) are
    executed first, side by side (``python -m rnnbook execute``), then Sphinx builds from all the
    executions (:func:`seed_book_cache`); a cell error stops the build. With ``offline``, in a network
    namespace with no network (an error where none can be made). With ``if_stale``, keep a build
    made from the current inputs (with no network, if ``offline``). Return the build's stamp."""
    stamp = built_stamp() if if_stale else None
    if stamp and (stamp["offline"] or not offline):
        return {**stamp, "reused": True}
    prefix = []
    if offline:
        prefix = offline_prefix()
        if prefix is None:
            raise RuntimeError("no network namespace can be made here (unshare -n / -rn refused)")
    inputs = book_inputs()
    BUILD_STAMP.unlink(missing_ok=True)
    t0 = time.perf_counter()
    env = {**os.environ, "RNNBOOK_QUIET": "1", "CUDA_VISIBLE_DEVICES": ""}
    stale = [c for c in chapters() if reusable_execution(c) is None]
    if stale:  # executed side by side, then reused like the tests' executions
        subprocess.run([*prefix, sys.executable, "-m", "rnnbook", "execute", *stale], check=True,
                       env=env, cwd=BOOK_ROOT)
    seeded = seed_book_cache()
    jb = Path(sys.executable).parent / "jupyter-book"
    cmd = [*prefix, str(jb), "build", str(BOOK_ROOT), "--all", *JB_FLAGS, "--config", str(REUSE_CONFIG)]
    subprocess.run(cmd, check=True, env=env, cwd=BOOK_ROOT)
    stamp = {"inputs": inputs, "offline": offline, "seeded": seeded,
             "seconds": round(time.perf_counter() - t0, 1), "commit": git_commit(),
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    claims.atomic_write(BUILD_STAMP, json.dumps(stamp, indent=2).encode())
    return {**stamp, "reused": False}


def export_figures(html_dir: Path = HTML_DIR, dest: Path = FIGURES_EXPORT) -> list[dict[str, Any]]:
    """Copy every chapter's figure files and ``figures.json`` from the HTML build (where the
    :mod:`rnnbook.figures` extension put them) to ``dest/<chapter>/``; return all entries."""
    shutil.rmtree(dest, ignore_errors=True)
    entries = []
    for manifest in sorted((html_dir / "_figures").glob("*/figures.json")):
        shutil.copytree(manifest.parent, dest / manifest.parent.name)
        entries += json.loads(manifest.read_text())
    return entries
