"""Results cache for long computations (all chapters).

An entry is keyed by a hash of its name, its configuration and the results version
(:func:`rnnbook.paths.results_version`; a chapter's own in a chapter's cache), so a change to
either is a miss, never a stale hit. Entries are ``.npz`` files of plain arrays (loaded with
``allow_pickle=False``) written atomically and byte for byte the same for the same arrays, with a JSON sidecar of the
configuration for humans. A sweep cached entry by entry resumes where it stopped; with an executor
(:mod:`rnnbook.engine`) its chunks run as jobs that write their entries here.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import zipfile
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from rnnbook import engine
from rnnbook.claims import atomic_write, to_json
from rnnbook.paths import results_version

Result = dict[str, Any]


class Cache:
    """A directory of cached results."""

    def __init__(self, directory: Path, code: str | None = None):
        """``code``: the version the entries are keyed by (default: the whole library's results
        version)."""
        self.directory = Path(directory)
        self.code = code or results_version()
        self.hits = 0
        self.misses = 0

    def path(self, name: str, config: dict) -> Path:
        blob = json.dumps({"name": name, "config": to_json(config), "code": self.code},
                          sort_keys=True)
        return self.directory / f"{name}-{hashlib.sha256(blob.encode()).hexdigest()[:20]}.npz"

    def get(self, name: str, config: dict) -> Result | None:
        path = self.path(name, config)
        if not path.exists():
            return None
        with np.load(path, allow_pickle=False) as z:
            return {k: (z[k].item() if z[k].ndim == 0 else z[k]) for k in z.files}

    def put(self, name: str, config: dict, result: Result) -> None:
        """Store ``result``: a dict of arrays, numbers or strings (never objects: no pickles)."""
        path = self.path(name, config)
        arrays = {k: np.asarray(v) for k, v in result.items()}
        for k, a in arrays.items():
            if a.dtype.hasobject or k in ("file", "allow_pickle"):
                raise TypeError(f"cannot cache {k!r}: results are plain arrays with plain names")
        atomic_write(path, npz_bytes(arrays))
        side = {"name": name, "config": to_json(config), "code_version": self.code}
        atomic_write(path.with_suffix(".json"), json.dumps(side, indent=2).encode())

    def cached(self, name: str, config: dict, compute: Callable[[], Result]) -> Result:
        """``compute()``, or its cached result for this ``(name, config, code)``."""
        return self.cached_batch(name, [config], lambda cfgs: [compute()])[0]

    def cached_batch(self, name: str, configs: Sequence[dict],
                     compute: Callable[[list[dict]], list[Result]], chunk_size: int | None = None,
                     progress: Callable[[Iterable], Iterable] = iter) -> list[Result]:
        """Results for every config: cached ones are loaded, the rest computed ``chunk_size`` at a
        time by one batched ``compute(configs) -> results`` call and stored as each chunk ends."""
        results: list[Result | None] = [self.get(name, c) for c in configs]
        todo = [i for i, r in enumerate(results) if r is None]
        self.hits += len(configs) - len(todo)
        self.misses += len(todo)
        executor = engine.current()
        if todo and executor.kind != "inline":
            size = chunk_size or math.ceil(len(todo) / executor.parallel)
            chunks = [[configs[i] for i in todo[s:s + size]] for s in range(0, len(todo), size)]
            engine.run(partial(compute_chunk, self.directory, self.code, name, compute), chunks,
                       lambda chunk: all(self.path(name, c).exists() for c in chunk),
                       self.directory / "jobs", executor, label=name)
            return [r or self.get(name, c) for r, c in zip(results, configs)]
        size = chunk_size or max(len(todo), 1)
        for start in progress(range(0, len(todo), size)):
            idx = todo[start:start + size]
            for i, r in zip(idx, compute([configs[i] for i in idx]), strict=True):
                self.put(name, configs[i], r)
                results[i] = self.get(name, configs[i])  # what a resumed run would see
        return results  # type: ignore[return-value]


def compute_chunk(directory: Path, code: str, name: str,
                  compute: Callable[[list[dict]], list[Result]], configs: list[dict]) -> None:
    """A job of :meth:`Cache.cached_batch`: compute the configs of one chunk not cached yet and
    store their entries in the cache at ``directory``."""
    cache = Cache(directory, code)
    todo = [c for c in configs if not cache.path(name, c).exists()]
    if todo:
        for c, r in zip(todo, compute(todo), strict=True):
            cache.put(name, c, r)


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
