"""Reliability of the whole book: same seed => same claims, an interrupted run resumes without
redoing finished work, and the book builds with no network at all.

(Each chapter's refusal of bad parameters is tested in ``tests/test_chapters.py``.)
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from rnnbook import execute
from rnnbook.paths import results_version

# A real chapter, end to end, at reduced size (about 35 s of CPU each): the extrapolation chapter
# with one teacher, a small student, short training and a small GRU. Its claims need not pass at
# this size; they must come out identical.
CHAPTER = "extrapolation"
SMALL = {"d": "8", "d_hat": "[1]", "steps": "2000", "n_seeds": "2", "gru_hidden": "4",
         "gru_steps": "20"}


def run_chapter(results_dir, prefix=()) -> subprocess.Popen:
    cmd = [*prefix, sys.executable, "-m", "rnnbook", "run", CHAPTER, "--quiet",
           "--device", "cpu", "--results-dir", str(results_dir)]
    for name, value in SMALL.items():
        cmd += ["-p", name, value]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module", autouse=True)
def same_seed_runs(tmp_path_factory) -> tuple:
    """The chapter run twice with the same seed, at once, in separate processes and results
    directories, so nothing is shared (the second with no network where a namespace can be made).
    They start before this module's first test and run while the others (mostly one core: the
    Sphinx build, a sleeping sweep) go on; :func:`test_same_seed_same_claims`, last, checks them."""
    root = tmp_path_factory.mktemp("same-seed")
    prefix = execute.offline_prefix() or ()
    runs = (run_chapter(root / "a"), run_chapter(root / "b", prefix))
    yield root, runs
    for p in runs:
        if p.poll() is None:
            p.kill()
            p.communicate()


# ------------------------------------------------------------------------- killed and resumed

SWEEP = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import torch
    from rnnbook.cache import Cache

    cache_dir, log, delay = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    version = sys.argv[4]  # the parent's: a library edited meanwhile does not void the cache

    def compute(configs):  # one chunk: a small seeded training run per config
        out = []
        for c in configs:
            torch.manual_seed(c["seed"])
            W = torch.randn(16, 16, dtype=torch.float64) / 4
            for _ in range(200):
                W = W - c["lr"] * (W @ W.T @ W - W)
            out.append({"W": W.numpy(), "loss": float((W @ W.T).trace())})
            with log.open("a") as f:
                f.write(f"{c['seed']}\\n")
        time.sleep(delay)
        return out

    configs = [{"seed": s, "lr": 0.05} for s in range(8)]
    Cache(cache_dir, version).cached_batch("sweep", configs, compute, chunk_size=1)
""")


def sweep(cache_dir, log, delay=0.0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SWEEP, str(cache_dir), str(log), str(delay),
                             results_version()])


def entries(cache_dir) -> list:
    return sorted(cache_dir.glob("sweep-*.npz"))


def computed(log) -> list[int]:
    return [int(x) for x in log.read_text().split()] if log.exists() else []


def test_killed_sweep_resumes(tmp_path):
    """A cached_batch sweep SIGKILLed midway: the rerun reuses every finished entry, computes only
    the rest, and ends with exactly the results of an uninterrupted run."""
    cache, log = tmp_path / "cache", tmp_path / "computed.txt"
    proc = sweep(cache, log, delay=0.5)
    deadline = time.monotonic() + 120
    while len(entries(cache)) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = entries(cache)
    assert 3 <= len(done) < 8, f"killed after {len(done)} of 8 entries"
    first = computed(log)
    assert sorted(first) == list(range(len(first)))  # chunks in order; the last may be unsaved

    assert sweep(cache, log).wait(timeout=300) == 0
    second = computed(log)[len(first):]
    assert len(entries(cache)) == 8
    assert sorted(second) == list(range(len(done), 8)), "finished entries were computed again"
    assert not list(cache.glob(".*.tmp")), "a half-written entry was left behind"

    fresh, fresh_log = tmp_path / "fresh", tmp_path / "fresh.txt"
    assert sweep(fresh, fresh_log).wait(timeout=300) == 0
    assert [p.name for p in entries(fresh)] == [p.name for p in entries(cache)]
    for a, b in zip(entries(cache), entries(fresh), strict=True):
        with np.load(a, allow_pickle=False) as x, np.load(b, allow_pickle=False) as y:
            assert x.files == y.files
            for k in x.files:
                np.testing.assert_array_equal(x[k], y[k])


# ----------------------------------------------------------------------------- no network

def test_offline_namespace_has_no_network():
    prefix = execute.offline_prefix()
    if prefix is None:
        pytest.skip("this machine refuses new network namespaces (unshare -n and -rn)")
    out = subprocess.run([*prefix, "cat", "/proc/net/dev"], capture_output=True, text=True,
                         check=True).stdout
    interfaces = [line.split(":")[0].strip() for line in out.splitlines() if ":" in line]
    assert interfaces == ["lo"]
    up = subprocess.run([*prefix, "cat", "/sys/class/net/lo/operstate"], capture_output=True,
                        text=True, check=True).stdout.strip()
    assert up in ("unknown", "up")  # loopback is up: kernels can talk to their clients


def test_book_builds_with_no_network():
    """The book (Sphinx, theme, MathJax, bibliography; chapters whose test executions are stale
    are executed too) builds in a namespace with no network. Kept if ``_build/html`` already was
    built so from the current sources; ``tests/test_browser.py`` then checks that build."""
    if execute.offline_prefix() is None:
        pytest.skip("this machine refuses new network namespaces (unshare -n and -rn): "
                    "the offline build cannot be tested here")
    stamp = execute.build_book(offline=True, if_stale=True)
    assert stamp["offline"]
    assert (execute.HTML_DIR / "index.html").exists()


# ------------------------------------------------------------------------- same seed, same claims

def test_same_seed_same_claims(same_seed_runs):
    """The two runs of :func:`same_seed_runs` write identical claims.json values."""
    root, runs = same_seed_runs
    outputs = [p.communicate(timeout=900)[0] for p in runs]
    claims = []
    for name, out in zip("ab", outputs):
        folder = root / name / CHAPTER
        assert (folder / "run.json").exists(), f"run {name} did not finish:\n{out[-3000:]}"
        claims.append(json.loads((folder / "claims.json").read_text()))
    assert claims[0], "no claims recorded"
    assert claims[0] == claims[1]
    record = json.loads((root / "a" / CHAPTER / "run.json").read_text())
    assert record["claims"]["total"] == len(claims[0]) and record["wall_seconds"] > 0
