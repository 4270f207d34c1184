"""Sweeps as jobs through submitit (all chapters; issue 24, item 3).

``python -m rnnbook run CHAPTER --executor inline|local:N|slurm`` chooses where the chapter's sweeps
compute; the choice reaches the chapter's kernel as ``RNNBOOK_EXECUTOR`` (the JSON of an
:class:`Executor`). ``inline``, the default, computes in the chapter's own process. Otherwise a
sweep's chunks (:meth:`rnnbook.cache.Cache.cached_batch`, the stable-models chapter's stacks) are
submitted as jobs: ``local:N`` runs them in N processes here, one per GPU where there are GPUs,
each pinned to its GPU (submitit's ``LocalExecutor``); ``slurm`` as a SLURM job array (submitit's
``SlurmExecutor``). A job writes its entries atomically into the results cache, the shared store,
and the driver reads them from there as a resumed run would; so an interrupted driver, rerun, skips
the entries that are there and resubmits the rest.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from rnnbook.params import ParameterError
from rnnbook.paths import quiet

T = TypeVar("T")
ENV = "RNNBOOK_EXECUTOR"
EXECUTORS = "inline, local:N (N >= 1 processes) or slurm"
# sbatch settings a user may give (--slurm-* options or a YAML file); ``options`` are further
# ``sbatch`` options (name: value, without the leading --).
SLURM_KEYS = {"partition": str, "gpus": int, "cpus": int, "time": int, "mem": str,
              "array_parallelism": int, "options": dict}
LOCAL_TIMEOUT_MIN = 7 * 24 * 60  # a local job is never cut short (submitit's default: 2 minutes)
POLL_S = 0.5


@dataclass(frozen=True)
class Executor:
    """Where sweeps compute: ``kind`` inline, local or slurm; ``workers`` local processes;
    ``retries``: resubmissions of a failed or preempted job; ``slurm``: :data:`SLURM_KEYS`."""

    kind: str = "inline"
    workers: int = 1
    retries: int = 2
    slurm: dict = field(default_factory=dict)

    @property
    def threads(self) -> int:
        """The torch and BLAS threads of one job: the cores shared among the local processes, or
        the CPUs a SLURM job asks for."""
        if self.kind == "slurm":
            return self.slurm.get("cpus", 1)
        return max(1, (os.cpu_count() or 1) // self.workers)

    @property
    def parallel(self) -> int:
        """How many jobs run at once: the local processes, or the array's parallelism."""
        return self.workers if self.kind == "local" else self.slurm.get("array_parallelism", 16)


def parse(text: str, slurm: dict | None = None, retries: int = 2) -> Executor:
    """``inline``, ``local:N`` or ``slurm`` (with :func:`slurm_settings`) as an :class:`Executor`;
    anything else is a :class:`ParameterError` naming ``--executor`` and the allowed values."""
    m = re.fullmatch(r"(inline|slurm|local:([1-9][0-9]*))", str(text))
    if not m:
        raise ParameterError("--executor", text, EXECUTORS)
    if not isinstance(retries, int) or retries < 0:
        raise ParameterError("--retries", retries, "an integer >= 0")
    kind = m.group(1).split(":")[0]
    return Executor(kind, int(m.group(2) or 1), retries, slurm_settings(slurm or {}) if kind == "slurm" else {})


def slurm_settings(values: dict) -> dict:
    """Validated :data:`SLURM_KEYS` (from ``--slurm-*`` options over a YAML file's)."""
    out = {}
    for key, value in values.items():
        if value is None:
            continue
        kind = SLURM_KEYS.get(key)
        if kind is None:
            raise ParameterError(f"slurm setting {key!r}", value, ", ".join(SLURM_KEYS))
        if kind is int and (not isinstance(value, int) or value < 1):
            raise ParameterError(f"slurm setting {key!r}", value, "an integer >= 1")
        if not isinstance(value, kind):
            raise ParameterError(f"slurm setting {key!r}", value, f"a {kind.__name__}")
        out[key] = value
    return out


def current() -> Executor:
    """The executor of this process: ``RNNBOOK_EXECUTOR``, or inline."""
    text = os.environ.get(ENV, "")
    if text in ("", "inline"):
        return Executor()
    return Executor(**json.loads(text))


def to_env(executor: Executor) -> str:
    """The value of ``RNNBOOK_EXECUTOR`` that makes :func:`current` return ``executor``."""
    return json.dumps(dataclasses.asdict(executor), sort_keys=True)


class JobFailed(RuntimeError):
    """A job failed more often than its retries allow (its id, log and error tail in the text)."""


def _job(fn: Callable[[Any], None], items: Sequence[Any], threads: int) -> None:
    """One job: ``fn`` over ``items`` in order; it computes inline (it does not submit jobs)."""
    import torch
    os.environ[ENV] = "inline"
    torch.set_num_threads(threads)
    for item in items:
        fn(item)


def _threads_setup(threads: int) -> list[str]:
    return [f"export {v}={threads}" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                              "MKL_NUM_THREADS")]


def visible_gpus() -> list[int]:
    """The GPUs this process may use, by the ids ``CUDA_VISIBLE_DEVICES`` gives them."""
    import torch
    shown = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    n = torch.cuda.device_count()
    ids = [int(x) for x in shown.split(",") if x.strip().isdigit()]
    return ids[:n] if ids else list(range(n))


def _local_executors(executor: Executor, folder: Path) -> list:
    """One ``LocalExecutor`` per process, each pinned to one GPU where there are GPUs."""
    import submitit
    gpus = visible_gpus()
    out = []
    for slot in range(executor.workers):
        ex = submitit.LocalExecutor(folder)
        ex.update_parameters(timeout_min=LOCAL_TIMEOUT_MIN, gpus_per_node=1 if gpus else 0,
                             visible_gpus=(gpus[slot % len(gpus)],) if gpus else (),
                             setup=_threads_setup(executor.threads))
        out.append(ex)
    return out


def _slurm_executor(executor: Executor, folder: Path):
    import submitit
    s = executor.slurm
    ex = submitit.SlurmExecutor(folder)
    params: dict[str, Any] = {"job_name": "rnnbook", "time": s.get("time", 60),
                              "array_parallelism": s.get("array_parallelism", 16),
                              "cpus_per_task": executor.threads,
                              "setup": _threads_setup(executor.threads)}
    for key, name in (("partition", "partition"), ("gpus", "gpus_per_node"), ("mem", "mem")):
        if key in s:
            params[name] = s[key]
    if s.get("options"):
        params["additional_parameters"] = dict(s["options"])
    ex.update_parameters(**params)
    return ex


def _error_tail(job, lines: int = 25) -> str:
    """The last ``lines`` of a job's error log (else the exception submitit reports)."""
    try:
        text = Path(job.paths.stderr).read_text(errors="replace")
    except OSError:
        text = ""
    if not text.strip():
        text = str(job.exception())
    return "\n".join(text.rstrip().splitlines()[-lines:])


class Jobs:
    """``fn(item)`` for every item, as jobs of an :class:`Executor`, submitted at construction;
    :meth:`wait` returns once every item is ``done``."""

    def __init__(self, fn: Callable[[T], None], items: Sequence[T], done: Callable[[T], bool],
                 folder: Path, executor: Executor, label: str = "sweep"):
        self.fn, self.done, self.executor, self.label = fn, done, executor, label
        self.items = [it for it in items if not done(it)]
        self.folder = Path(folder)
        if executor.kind == "local":
            self.executors = _local_executors(executor, self.folder)
            # one job per process, the items dealt in turn (costliest first where they are sorted)
            self.groups = [self.items[s::executor.workers] for s in range(executor.workers)]
        else:
            self.executors = [_slurm_executor(executor, self.folder)]
            self.groups = [[it] for it in self.items]
        self.groups = [g for g in self.groups if g]
        self.tries = [0] * len(self.groups)
        self.running: dict[int, Any] = {}
        slurm = executor.kind == "slurm"
        with self.executors[0].batch() if slurm else contextlib.nullcontext():  # one job array
            for i in range(len(self.groups)):
                self._submit(i)

    def _submit(self, i: int) -> None:
        ex = self.executors[i % len(self.executors)]
        left = [it for it in self.groups[i] if not self.done(it)]  # a retry skips finished work
        self.running[i] = ex.submit(_job, self.fn, left, self.executor.threads)

    def wait(self, progress: Callable | None = None) -> None:
        """Poll the jobs, showing one bar over the items (its own: ``progress`` is accepted so that
        a caller of the stable-models ``Workers.wait`` can wait on jobs alike); resubmit a failed
        job up to ``retries`` times, then raise :class:`JobFailed` with its id, log and error tail."""
        from tqdm.std import tqdm
        bar = tqdm(total=len(self.items), desc=self.label, disable=quiet(), dynamic_ncols=True)
        try:
            while self.running:
                time.sleep(POLL_S)
                bar.n = sum(map(self.done, self.items))
                bar.refresh()
                for i, job in list(self.running.items()):
                    if job.done():
                        del self.running[i]
                        self._finished(i, job)
            missing = [it for it in self.items if not self.done(it)]
            if missing:
                raise JobFailed(f"{self.label}: every job ended but {len(missing)} of "
                                f"{len(self.items)} items have no results (job logs in {self.folder})")
            bar.n = len(self.items)
            bar.refresh()
        finally:
            bar.close()

    def _finished(self, i: int, job) -> None:
        if job.exception() is None:
            return
        if self.tries[i] < self.executor.retries:
            self.tries[i] += 1
            self._submit(i)
            return
        for other in self.running.values():
            other.cancel(check=False)
        raise JobFailed(f"{self.label}: job {job.job_id} failed ({self.tries[i] + 1} attempts); "
                        f"log: {job.paths.stderr}\n{_error_tail(job)}")


def submit(fn: Callable[[T], None], items: Sequence[T], done: Callable[[T], bool], folder: Path,
           executor: Executor | None = None, label: str = "sweep") -> Jobs:
    """Start ``fn(item)`` for every item not ``done`` as jobs of ``executor`` (default:
    :func:`current`), their logs under ``folder``; ``.wait()`` for them."""
    return Jobs(fn, items, done, folder, executor or current(), label)


def run(fn: Callable[[T], None], items: Sequence[T], done: Callable[[T], bool], folder: Path,
        executor: Executor | None = None, label: str = "sweep") -> None:
    """:func:`submit`, then wait."""
    submit(fn, items, done, folder, executor, label).wait()

