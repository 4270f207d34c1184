"""The dataset registry (stable-models chapter; mechanism shared by all chapters).

Each registered file has an expected sha256 and a canonical upstream URL. :func:`fetch` resolves it
from the data directory -- ``$RNNBOOK_DATA`` if set, else ``../shared/data`` beside the book if present,
else ``data/external/`` in the book -- verifies the checksum, and downloads a missing file from
upstream (then verifies it too). Files are parsed as JSON / MAT / text only: never unpickled.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rnnbook.paths import BOOK_ROOT

SHARED_DATA = BOOK_ROOT.parent / "shared" / "data"
EXTERNAL_DATA = BOOK_ROOT / "data" / "external"


class DataError(RuntimeError):
    """A dataset file is missing and cannot be downloaded, or its checksum does not match."""


@dataclass(frozen=True)
class DataFile:
    dataset: str  # folder in the data directory
    path: str  # path inside that folder
    sha256: str
    url: str  # canonical upstream copy


_JSB = ("https://raw.githubusercontent.com/czhuang/JSB-Chorales-dataset/"
        "9a7f733ddb4ed91f48da64ac7f0f621c34aadd4d/")
REGISTRY: dict[str, dict[str, DataFile]] = {
    "jsb-chorales": {
        "jsb-chorales-quarter.json": DataFile(
            "jsb-chorales", "jsb-chorales-quarter.json",
            "2db9329f1881a1d3f49703ec556bf1d6f84b4f6c1d702c156536e93cf31e1c91",
            _JSB + "jsb-chorales-quarter.json"),
    },
}


def data_dirs(data_dir: str | os.PathLike | None = None) -> list[Path]:
    """Where to look, in order: the given directory, else ``$RNNBOOK_DATA``, else the shared data
    (if present) and ``data/external``. Downloads go to the last of these."""
    chosen = data_dir or os.environ.get("RNNBOOK_DATA")
    if chosen:
        return [Path(chosen).expanduser()]
    return ([SHARED_DATA] if SHARED_DATA.is_dir() else []) + [EXTERNAL_DATA]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def entry(dataset: str, name: str) -> DataFile:
    if dataset not in REGISTRY:
        raise DataError(f"unknown dataset {dataset!r}; registered: {', '.join(sorted(REGISTRY))}")
    if name not in REGISTRY[dataset]:
        raise DataError(f"unknown file {name!r} of {dataset!r}; registered: "
                        f"{', '.join(sorted(REGISTRY[dataset]))}")
    return REGISTRY[dataset][name]


def fetch(dataset: str, name: str, data_dir: str | os.PathLike | None = None,
          download: bool = True) -> Path:
    """The verified local path of a registered file, downloading it if it is missing."""
    f = entry(dataset, name)
    dirs = data_dirs(data_dir)
    for d in dirs:
        path = d / f.dataset / f.path
        if path.exists():
            _verify(path, f)
            return path
    target = dirs[-1] / f.dataset / f.path
    where = " or ".join(str(d / f.dataset / f.path) for d in dirs)
    if not download:
        raise DataError(f"{dataset}/{name} not found at {where}; put the file there, set "
                        f"RNNBOOK_DATA to a directory holding {f.dataset}/{f.path}, or allow "
                        f"the download from {f.url}")
    try:
        _download(f, target)
    except (OSError, ValueError, http.client.HTTPException) as e:
        raise DataError(f"{dataset}/{name} not found at {where} and the download from {f.url} "
                        f"failed ({e}); put the file (sha256 {f.sha256}) at {target} or set "
                        f"RNNBOOK_DATA to a directory holding {f.dataset}/{f.path}") from e
    return target


def load_json(dataset: str, name: str, data_dir: str | os.PathLike | None = None) -> Any:
    """A registered JSON file, verified and parsed."""
    return json.loads(fetch(dataset, name, data_dir).read_text())


def _verify(path: Path, f: DataFile) -> None:
    got = sha256(path)
    if got != f.sha256:
        raise DataError(f"checksum mismatch for {path}: sha256 {got}, expected {f.sha256}. The "
                        f"file is corrupted or a different version; replace it with the upstream "
                        f"copy {f.url}")


def _download(f: DataFile, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(f.url, timeout=60) as resp:
            for block in iter(lambda: resp.read(1 << 20), b""):
                out.write(block)
        got = sha256(Path(tmp))
        if got != f.sha256:
            raise DataError(f"checksum mismatch: the file downloaded from {f.url} has sha256 {got}, expected "
                            f"{f.sha256}; it was not saved. Put a verified copy at {target}")
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)
