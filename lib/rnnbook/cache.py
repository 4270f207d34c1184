"""Results cache for long computations (all chapters); its entries are the pieces of a full run.

An entry is keyed by a hash of its name, its configuration and the results version
(:func:`rnnbook.paths.results_version`; a chapter's own in a chapter's cache, or, for a piece a
chapter module declares, the version of the modules that compute it:
:func:`rnnbook.paths.piece_versions`), so a change to either is a miss, never a stale hit. Entries
are ``.npz`` files of plain arrays (loaded with ``allow_pickle=False``) written atomically and byte
for byte the same for the same arrays, with a JSON sidecar that names the entry (name,
configuration, code version), holds its SHA-256 and the seconds its computation took. An entry whose
sidecar is missing, names another entry or whose bytes differ from its checksum is refused with a
:class:`PieceError` naming the file, never used. A sweep cached entry by entry resumes where it
stopped; it first writes its plan (``plans/``: every entry it will hold), so that ``python -m
rnnbook status`` can say what is done and what is left (:func:`progress`); with an executor
(:mod:`rnnbook.engine`) its chunks run as jobs that write their entries here. :func:`collect`
copies a run's finished entries into a chapter's committed cache, :func:`prune` drops those of
other versions (``python -m rnnbook collect``).
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import time
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from rnnbook import engine
from rnnbook.claims import atomic_write, to_json
from rnnbook.paths import piece_versions_of, results_version

Result = dict[str, Any]


class PieceError(RuntimeError):
    """A file in the results cache that is not the entry its name says, intact: never used."""

    def __init__(self, path: Path, why: str):
        super().__init__(f"results cache entry {path} refused: {why}. Delete it and its .json "
                         "sidecar to compute it again.")


def canonical(value: Any) -> str:
    """``value`` as sorted JSON (NaN included), for comparing a sidecar with a key."""
    return json.dumps(value, sort_keys=True)


class Cache:
    """A directory of cached results."""

    def __init__(self, directory: Path, code: str | None = None, pieces: dict[str, str] | None = None):
        """``code``: the version the entries are keyed by (default: the whole library's results
        version); ``pieces``: the version of each piece name keyed otherwise (default: the
        :func:`~rnnbook.paths.piece_versions` of the chapter whose results version ``code`` is)."""
        self.directory = Path(directory)
        self.code = code or results_version()
        self.pieces = piece_versions_of(self.code) if pieces is None else dict(pieces)
        self.hits = 0
        self.misses = 0

    def code_for(self, name: str) -> str:
        """The version the entries of piece ``name`` are keyed by."""
        return self.pieces.get(name, self.code)

    def path(self, name: str, config: dict) -> Path:
        blob = json.dumps({"name": name, "config": to_json(config), "code": self.code_for(name)},
                          sort_keys=True)
        return self.directory / f"{name}-{hashlib.sha256(blob.encode()).hexdigest()[:20]}.npz"

    def get(self, name: str, config: dict) -> Result | None:
        """The entry for ``(name, config)``, or None if there is none; a :class:`PieceError` if
        the file there is not that entry, intact."""
        path = self.path(name, config)
        if not path.exists():
            return None
        data = path.read_bytes()
        side = self._sidecar(path)
        expected = {"name": name, "config": to_json(config), "code_version": self.code_for(name)}
        foreign = [k for k, v in expected.items() if canonical(side.get(k)) != canonical(v)]
        if foreign:
            raise PieceError(path, f"its sidecar names another entry ({', '.join(foreign)} differ)")
        if hashlib.sha256(data).hexdigest() != side.get("sha256"):
            raise PieceError(path, "its bytes differ from the SHA-256 its sidecar records (corrupted)")
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: (z[k].item() if z[k].ndim == 0 else z[k]) for k in z.files}

    @staticmethod
    def _sidecar(path: Path) -> dict:
        side = path.with_suffix(".json")
        try:
            return json.loads(side.read_text())
        except FileNotFoundError:
            raise PieceError(path, f"it has no sidecar {side.name}, so nothing says what it holds")
        except (ValueError, UnicodeDecodeError):
            raise PieceError(path, f"its sidecar {side.name} is not JSON")

    def put(self, name: str, config: dict, result: Result, seconds: float | None = None) -> None:
        """Store ``result``: a dict of arrays, numbers or strings (never objects: no pickles), and
        ``seconds``, the time its computation took (its share of a batched chunk's)."""
        path = self.path(name, config)
        arrays = {k: np.asarray(v) for k, v in result.items()}
        for k, a in arrays.items():
            if a.dtype.hasobject or k in ("file", "allow_pickle"):
                raise TypeError(f"cannot cache {k!r}: results are plain arrays with plain names")
        data = npz_bytes(arrays)
        side = {"name": name, "config": to_json(config), "code_version": self.code_for(name),
                "sha256": hashlib.sha256(data).hexdigest(), "seconds": seconds,
                "made": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        # the sidecar first: a run killed between the two writes leaves no entry, not an unnamed one
        atomic_write(path.with_suffix(".json"), json.dumps(side, indent=2).encode())
        atomic_write(path, data)

    def plan(self, name: str, configs: Sequence[dict]) -> None:
        """Record that a sweep will hold the entries of ``configs`` (for :func:`progress`)."""
        files = sorted(self.path(name, c).name for c in configs)
        key = hashlib.sha256(json.dumps(files).encode()).hexdigest()[:12]
        plan = {"name": name, "code_version": self.code_for(name), "entries": files}
        path = self.directory / "plans" / f"{name}-{key}.json"
        if not path.exists():
            atomic_write(path, json.dumps(plan, indent=1).encode())

    def cached(self, name: str, config: dict, compute: Callable[[], Result]) -> Result:
        """``compute()``, or its cached result for this ``(name, config, code)``."""
        return self.cached_batch(name, [config], lambda cfgs: [compute()])[0]

    def cached_batch(self, name: str, configs: Sequence[dict],
                     compute: Callable[[list[dict]], list[Result]], chunk_size: int | None = None,
                     progress: Callable[[Iterable], Iterable] = iter) -> list[Result]:
        """Results for every config: cached ones are loaded, the rest computed ``chunk_size`` at a
        time by one batched ``compute(configs) -> results`` call and stored as each chunk ends; with
        the local executor, in chunks of at most an equal share of its processes, so that none
        idles (a SLURM array takes ``chunk_size`` as given)."""
        self.plan(name, configs)
        results: list[Result | None] = [self.get(name, c) for c in configs]
        todo = [i for i, r in enumerate(results) if r is None]
        self.hits += len(configs) - len(todo)
        self.misses += len(todo)
        executor = engine.current()
        if todo and executor.kind != "inline":
            share = math.ceil(len(todo) / executor.parallel)
            size = chunk_size or share
            if executor.kind == "local":  # no process idles
                size = min(size, share)
            chunks = [[configs[i] for i in todo[s:s + size]] for s in range(0, len(todo), size)]
            engine.run(partial(compute_chunk, self.directory, self.code_for(name), name, compute), chunks,
                       lambda chunk: all(self.path(name, c).exists() for c in chunk),
                       self.directory / "jobs", executor, label=name)
            return [r or self.get(name, c) for r, c in zip(results, configs)]
        size = chunk_size or max(len(todo), 1)
        for start in progress(range(0, len(todo), size)):
            idx = todo[start:start + size]
            seconds, got = timed(compute, [configs[i] for i in idx])
            for i, r in zip(idx, got, strict=True):
                self.put(name, configs[i], r, seconds / len(idx))
                results[i] = self.get(name, configs[i])  # what a resumed run would see
        return results  # type: ignore[return-value]


def compute_chunk(directory: Path, code: str, name: str,
                  compute: Callable[[list[dict]], list[Result]], configs: list[dict]) -> None:
    """A job of :meth:`Cache.cached_batch`: compute the configs of one chunk not cached yet and
    store their entries in the cache at ``directory``."""
    cache = Cache(directory, code)
    todo = [c for c in configs if not cache.path(name, c).exists()]
    if todo:
        seconds, got = timed(compute, todo)
        for c, r in zip(todo, got, strict=True):
            cache.put(name, c, r, seconds / len(todo))


def timed(compute: Callable[[list[dict]], list[Result]], configs: list[dict]) -> tuple[float, list[Result]]:
    """``compute(configs)`` and the wall-clock seconds it took."""
    start = time.perf_counter()
    results = compute(configs)
    return time.perf_counter() - start, results


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """``np.savez`` of ``arrays`` with fixed zip timestamps, so the same arrays give the same bytes
    (an entry computed by a job is the one computed inline)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for key, a in arrays.items():
            with z.open(zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0)), "w",
                        force_zip64=True) as f:
                np.lib.format.write_array(f, a, allow_pickle=False)
    return buf.getvalue()


@dataclass
class SweepProgress:
    """How far one planned sweep of a cache is (:func:`progress`)."""
    name: str
    current: bool  # planned by the code version the cache is read with (else never used)
    done: int
    total: int
    seconds: float  # measured compute time of the finished entries
    timed: int  # finished entries whose sidecar records their time
    size: int  # bytes of the finished entries and their sidecars

    @property
    def per_piece(self) -> float | None:
        return self.seconds / self.timed if self.timed else None

    @property
    def left(self) -> float | None:
        """Seconds left, estimated from the finished entries' mean time."""
        return None if self.per_piece is None else self.per_piece * (self.total - self.done)


def progress(directory: Path, code: str, pieces: dict[str, str] | None = None) -> list[SweepProgress]:
    """Every sweep planned in the cache at ``directory`` (:meth:`Cache.plan`): its finished
    entries, their measured cost and whether the plan is of code version ``code`` (or, for a
    piece name in ``pieces``, of its version there)."""
    pieces = pieces or {}
    out = []
    for plan_file in sorted((Path(directory) / "plans").glob("*.json")):
        plan = json.loads(plan_file.read_text())
        done = [directory / f for f in plan["entries"] if (directory / f).exists()]
        sides = [json.loads(f.with_suffix(".json").read_text()) for f in done
                 if f.with_suffix(".json").exists()]
        times = [s["seconds"] for s in sides if s.get("seconds") is not None]
        size = sum(f.stat().st_size + f.with_suffix(".json").stat().st_size for f in done
                   if f.with_suffix(".json").exists())
        current = plan["code_version"] == pieces.get(plan["name"], code)
        out.append(SweepProgress(plan["name"], current, len(done), len(plan["entries"]), sum(times),
                                 len(times), size))
    return out


PIECE_LIMIT = 1_000_000  # bytes: the largest file the repository takes; larger pieces stay local
WEIGHTS = "-weights"  # a piece whose name ends so holds model weights: never committed (.gitignore)


def collect(source: Path, target: Path, code: str, pieces: dict[str, str] | None = None,
            plans: bool = True, limit: int = PIECE_LIMIT) -> dict[str, list]:
    """Copy into the cache at ``target`` (a chapter's committed one) the entries of the cache at
    ``source`` (a run's) that are of this code (keyed by ``code``, or by ``pieces[name]``:
    :meth:`Cache.code_for`) and that ``target`` lacks, sidecar first; with ``plans``, the plans of
    this code that it lacks. Left out: entries over ``limit`` bytes and model weights
    (:data:`WEIGHTS`). Returns the files "added" and those "too large" (name, bytes)."""
    source, target, pieces = Path(source), Path(target), pieces or {}
    out: dict[str, list] = {"added": [], "too large": []}
    for side in sorted(source.glob("*.json")):
        entry, meta = side.with_suffix(".npz"), json.loads(side.read_text())
        if (meta.get("code_version") != pieces.get(meta.get("name"), code) or not entry.exists()
                or (target / entry.name).exists()):
            continue
        if entry.stat().st_size > limit or meta["name"].endswith(WEIGHTS):
            out["too large"].append((entry.name, entry.stat().st_size))
            continue
        target.mkdir(parents=True, exist_ok=True)
        for f in (side, entry):
            atomic_write(target / f.name, f.read_bytes())
        out["added"].append(entry.name)
    for plan in sorted((source / "plans").glob("*.json")) if plans else []:
        meta = json.loads(plan.read_text())
        if meta["code_version"] == pieces.get(meta["name"], code) and not (target / "plans" / plan.name).exists():
            (target / "plans").mkdir(parents=True, exist_ok=True)
            atomic_write(target / "plans" / plan.name, plan.read_bytes())
            out["added"].append(f"plans/{plan.name}")
    return out


def prune(directory: Path, code: str, pieces: dict[str, str] | None = None) -> list[str]:
    """Delete the entries and plans of the cache at ``directory`` that are of another code version
    than ``code`` / ``pieces`` (:meth:`Cache.code_for`): no run of this code reads them. Returns
    the entries' and plans' names."""
    directory, pieces, gone = Path(directory), pieces or {}, []
    for meta_file in sorted([*directory.glob("*.json"), *(directory / "plans").glob("*.json")]):
        meta = json.loads(meta_file.read_text())
        if meta.get("code_version") == pieces.get(meta.get("name"), code):
            continue
        entry = meta_file.with_suffix(".npz") if meta_file.parent == directory else meta_file
        gone.append(entry.relative_to(directory).as_posix())
        entry.unlink(missing_ok=True)
        meta_file.unlink(missing_ok=True)
    return gone
