"""Sweeps through submitit (rnnbook.engine): the local executor against inline, an interrupted
driver, a failing job, a survey of seeds as jobs; the SLURM executor is tested in test_slurm.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from functools import partial
from pathlib import Path

import cloudpickle
import numpy as np
import pytest

from rnnbook import claims as claims_mod
from rnnbook import engine, execute
from rnnbook import __main__ as cli
from rnnbook.cache import Cache
from rnnbook.extrapolation import experiments, train
from rnnbook.params import ParameterError

# the jobs unpickle this module's functions, which their processes cannot import
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture
def executor(monkeypatch):
    """Set the process's executor (as `rnnbook run --executor` sets the chapter kernel's)."""
    def use(text: str, **kw) -> engine.Executor:
        ex = engine.parse(text, **kw)
        monkeypatch.setenv(engine.ENV, engine.to_env(ex))
        return ex
    return use


def test_bad_executor_options_are_refused_before_any_compute(capsys):
    for text in ("local:0", "local", "local:2x", "cluster", ""):
        with pytest.raises(ParameterError, match="--executor.*inline, local:N"):
            engine.parse(text)
    with pytest.raises(ParameterError, match="--retries"):
        engine.parse("local:2", retries=-1)
    with pytest.raises(ParameterError, match="'gpu'.*partition, gpus"):
        engine.parse("slurm", {"gpu": 1})
    with pytest.raises(ParameterError, match="'time'.*integer >= 1"):
        engine.parse("slurm", {"time": "1:00:00"})
    for argv in (["--executor", "local:0"], ["--executor", "slurm", "--slurm-option", "account"]):
        with pytest.raises(SystemExit):
            cli.main(["run", "extrapolation", *argv])
        assert "is not allowed; allowed:" in capsys.readouterr().err
    ex = engine.parse("slurm", {"partition": "debug", "gpus": 1, "options": {"account": "x"}})
    assert engine.current() == engine.Executor()
    os.environ[engine.ENV] = engine.to_env(ex)
    try:
        assert engine.current() == ex
    finally:
        del os.environ[engine.ENV]


def small_sweep() -> list[train.RunConfig]:
    """Eight small extrapolation runs (two teachers' k values, two seeds)."""
    return [train.RunConfig("F1", 8, (1.0, -0.9), (0.5, 0.5), k, "sym_bal", 1e-2, 1e-2, 400, seed,
                            30, experiments.checkpoint_steps(400, "quick"))
            for k in (3, 4, 5, 6) for seed in (1, 2)]


def test_local_executor_gives_the_inline_entries_byte_for_byte(tmp_path, executor):
    """A sweep through `local:2` writes the same cache entries (bytes) as inline, and the rows and
    the claim's check made from them are the same."""
    configs = small_sweep()
    inline = Cache(tmp_path / "inline", "v")
    rows_inline = experiments.train_sweep(configs, inline, lambda it, **kw: it, chunk_size=3)
    executor("local:2")
    local = Cache(tmp_path / "local", "v")
    rows_local = experiments.train_sweep(configs, local, lambda it, **kw: it, chunk_size=3)
    assert local.misses == len(configs) and len(list((tmp_path / "local" / "jobs").glob("*_log.err"))) == 2
    for c in configs:
        a, b = inline.path("linear", c.__dict__), local.path("linear", c.__dict__)
        assert a.name == b.name and a.read_bytes() == b.read_bytes()
    assert json.dumps(claims_mod.to_json(rows_inline)) == json.dumps(claims_mod.to_json(rows_local))
    check = [experiments.transition_check(rows, 2, 1e-4, 1e-2) for rows in (rows_inline, rows_local)]
    assert json.dumps(claims_mod.to_json(check[0])) == json.dumps(claims_mod.to_json(check[1]))


DRIVER = """
import os, sys, time
import numpy as np
from rnnbook.cache import Cache

def compute(configs, log=sys.argv[2]):  # (a job's own sys.argv is submitit's)
    out = []
    for c in configs:
        time.sleep(0.4)
        with open(log, "a") as f:
            f.write(f"{c['i']}\\n")
        out.append({"x": np.full(3, float(c["i"]))})
    return out

Cache(sys.argv[1], "v").cached_batch("toy", [{"i": i} for i in range(8)], compute, chunk_size=1)
"""


def logged_compute(log: Path, configs: list[dict]) -> list[dict]:
    """The driver's computation, run by the rerun's jobs."""
    with open(log, "a") as f:
        f.writelines(f"{c['i']}\n" for c in configs)
    return [{"x": np.full(3, float(c["i"]))} for c in configs]


def test_a_chunk_larger_than_a_jobs_share_is_split_among_the_jobs(tmp_path, executor):
    """With local:2, six configs in chunks of up to 64 (extrapolation's full profile) run as two
    jobs of three, not one job of six while the other process idles."""
    executor("local:2")
    log, cache = tmp_path / "computed.txt", Cache(tmp_path / "cache", "v")
    got = cache.cached_batch("toy", [{"i": i} for i in range(6)], partial(logged_compute, log),
                             chunk_size=64)
    assert [float(r["x"][0]) for r in got] == list(range(6))
    assert len(list((tmp_path / "cache" / "jobs").glob("*_log.err"))) == 2


def test_an_interrupted_sweep_finishes_only_the_missing_entries(tmp_path, executor):
    """Kill the driver and its jobs mid-sweep (as Ctrl-C in a terminal does): rerun, and only the
    entries that are not in the cache are computed."""
    ex = executor("local:2")
    log, cache = tmp_path / "computed.txt", Cache(tmp_path / "cache", "v")
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    driver = subprocess.Popen([sys.executable, str(script), str(cache.directory), str(log)],
                              start_new_session=True, env={**os.environ, "RNNBOOK_QUIET": "1"})
    deadline = time.time() + 120
    while len(list(cache.directory.glob("toy-*.npz"))) < 2 and time.time() < deadline:
        time.sleep(0.1)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    time.sleep(0.5)
    before = {int(json.loads(p.with_suffix(".json").read_text())["config"]["i"])
              for p in cache.directory.glob("toy-*.npz")}
    assert 2 <= len(before) < 8, "the driver should have been killed mid-sweep"
    n_before = len(log.read_text().split())
    got = cache.cached_batch("toy", [{"i": i} for i in range(8)], partial(logged_compute, log),
                             chunk_size=1)
    assert [float(r["x"][0]) for r in got] == list(range(8))
    assert cache.hits == len(before) and cache.misses == 8 - len(before)
    redone = [int(i) for i in log.read_text().split()[n_before:]]
    assert sorted(redone) == sorted(set(range(8)) - before)  # each missing entry once, no other
    assert ex.kind == "local"


def failing_compute(configs):
    print("computing", [c["i"] for c in configs], file=sys.stderr)
    raise ValueError("boom: this config cannot be trained")


def test_a_failing_job_is_retried_then_reported_with_its_id_log_and_error(tmp_path, executor):
    executor("local:1", retries=1)
    cache = Cache(tmp_path / "cache", "v")
    with pytest.raises(engine.JobFailed) as err:
        cache.cached_batch("bad", [{"i": 0}], failing_compute)
    text = str(err.value)
    assert "job " in text and "(2 attempts)" in text and "boom: this config cannot be trained" in text
    log = Path(text.split("log: ")[1].split("\n")[0])
    assert log.exists() and "ValueError" in log.read_text()
    assert len(list((tmp_path / "cache" / "jobs").glob("*_log.err"))) == 2  # tried, then retried


def fake_run(chapter, parameters, folder, quiet=True):
    """A chapter run of the survey test: claims and run record, the verdict moving with the seed."""
    seed = parameters["seed"]
    out = folder / chapter
    out.mkdir(parents=True, exist_ok=True)
    found = [claims_mod.Claim("C1", "s", "§1", seed, "tol", verdict="reproduced", passed=True),
             claims_mod.Claim("C2", "s", "§2", seed, "tol", passed=seed < 1,
                              verdict="partly" if seed < 1 else "not reproduced")]
    (out / "claims.json").write_text(json.dumps([c.__dict__ for c in found]))
    (out / "run.json").write_text(json.dumps({"wall_seconds": 1.0 + seed, "commit": "abc",
                                              "pid": os.getpid()}))


def test_a_survey_runs_its_seeds_as_jobs(tmp_path):
    record = execute.survey_chapter("extrapolation", [0, 1, 2], {"profile": "quick"}, tmp_path,
                                    run=fake_run, executor=engine.parse("local:2"))
    assert list(record["variations"]) == ["seed 0", "seed 1", "seed 2"]
    assert claims_mod.unstable(record["variations"]) == ["C2"]
    pids = {json.loads((tmp_path / f"seed-{s}" / "extrapolation" / "run.json").read_text())["pid"]
            for s in range(3)}
    assert len(pids) == 2 and os.getpid() not in pids  # two job processes, not this one


def test_stable_models_stacks_train_as_jobs_into_the_inline_entries(tmp_path, executor):
    """The stable-models chapter's stacks (here its language-model truncations at toy sizes) go
    to the executor one stack a job, and write the entries inline training writes."""
    from dataclasses import replace

    import torch

    from rnnbook.stable_models import experiments as sm, settings, train as sm_train
    S = settings.resolve(profile="full", device="cpu", seed=0, tasks=["ptb_char"], hidden_size=4,
                         epochs=1, max_train_tokens=4000, data_dir=None, lstm_forget_bias=0.0,
                         lstm_constraint="row", n_seeds=None)
    S.configs["ptb_char"] = replace(S.configs["ptb_char"], emb=4, schedule=None)
    S.lm_k, S.workers = [2, 3], 1
    jobs = sm.lm_truncation_jobs(S)
    torch.set_num_threads(1)  # as a job trains
    inline = Cache(tmp_path / "inline", "v")
    sm_train.fit_jobs(inline, S, {"ptb_char": sm_train.load_task("ptb_char", S)}, jobs)
    executor("local:2")
    local = Cache(tmp_path / "local", "v")
    sm_train.prefit(local, S, jobs, S.workers)
    entries = sorted(p.name for p in inline.directory.glob("*.npz"))
    assert len(entries) == 2 * len(jobs) == 8  # each run's summary and its weights
    assert sorted(p.name for p in local.directory.glob("*.npz")) == entries
    for name in entries:  # the same numbers, all but how long they took
        a, b = (dict(np.load(c.directory / name)) for c in (inline, local))
        assert a.keys() == b.keys()
        differ = [k for k in a if not np.array_equal(a[k], b[k])]
        assert set(differ) <= {"cpu_s", "wall_s"}, differ


def test_local_processes_are_pinned_one_per_gpu(monkeypatch, tmp_path):
    """`local:N` on a machine with GPUs: process i sees only GPU i (modulo their number), by the
    ids CUDA_VISIBLE_DEVICES gives them; without GPUs they see none."""
    import torch
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    executors = engine._local_executors(engine.parse("local:3"), tmp_path)
    assert [e.parameters["visible_gpus"] for e in executors] == [(2,), (3,), (2,)]
    assert all(e.parameters["gpus_per_node"] == 1 for e in executors)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    (e,) = engine._local_executors(engine.parse("local:1"), tmp_path)
    assert e.parameters["gpus_per_node"] == 0 and e.parameters["visible_gpus"] == ()
    assert "export OMP_NUM_THREADS=" in " ".join(e.parameters["setup"])
