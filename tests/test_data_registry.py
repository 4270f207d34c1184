"""The dataset registry covers the real benchmark files in /work/shared/data and verifies them.

Fast and offline: downloads are refused, and the only files written go to pytest's ``tmp_path``.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rnnbook import data
from rnnbook.data import DataError

REAL_DATA = Path("/work/shared/data")
needs_real_data = pytest.mark.skipif(
    not REAL_DATA.is_dir(), reason=f"{REAL_DATA} (the shared benchmark data) is not present")

# Present in the data folders but deliberately not registered.
NOT_DATA = {"README.md", "SOURCE.md"}
NEVER_REGISTERED = (".pkl", ".pickle")  # never unpickle downloaded data

ENTRIES = [(ds, name) for ds, files in data.REGISTRY.items() for name in files]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.delenv("RNNBOOK_DATA", raising=False)

    def refuse(*a, **k):
        raise AssertionError("no download expected")
    monkeypatch.setattr(data.urllib.request, "urlopen", refuse)


def test_registry_is_consistent():
    assert set(data.REGISTRY) == {"wikitext-2", "ptb", "jsb-chorales", "atis"}
    for ds, files in data.REGISTRY.items():
        for name, f in files.items():
            assert (f.dataset, f.path) == (ds, name)
            assert re.fullmatch(r"[0-9a-f]{64}", f.sha256), (ds, name)


@pytest.mark.parametrize("dataset,name", ENTRIES)
def test_no_pickles_and_pinned_https_urls(dataset, name):
    f = data.entry(dataset, name)
    assert not name.lower().endswith(NEVER_REGISTERED)
    assert f.url.startswith("https://"), f.url
    assert re.search(r"/[0-9a-f]{40}/", f.url), f"{f.url} is not pinned to a commit"


@needs_real_data
def test_every_registered_file_exists_and_verifies():
    for dataset, name in ENTRIES:
        path = REAL_DATA / dataset / name
        assert path.is_file(), f"{dataset}/{name} is registered but missing from {REAL_DATA}"
        assert data.fetch(dataset, name, data_dir=REAL_DATA) == path  # checks the sha256
        assert data.fetch(dataset, name, data_dir=str(REAL_DATA), download=False) == path


@needs_real_data
def test_every_shared_data_file_is_registered():
    present = {(p.relative_to(REAL_DATA).parts[0], "/".join(p.relative_to(REAL_DATA).parts[1:]))
               for p in REAL_DATA.rglob("*") if p.is_file()
               and p.name not in NOT_DATA and not p.name.lower().endswith(NEVER_REGISTERED)}
    assert present, f"no data files found under {REAL_DATA}"
    forgotten = sorted(f"{ds}/{name}" for ds, name in present - set(ENTRIES))
    assert not forgotten, f"present in {REAL_DATA} but not registered: {forgotten}"


@needs_real_data
def test_corrupted_copy_is_refused(tmp_path):
    dataset, name = "atis", "miulab/valid/label"  # small, and nested like most of atis
    target = tmp_path / dataset / name
    target.parent.mkdir(parents=True)
    shutil.copyfile(REAL_DATA / dataset / name, target)  # copyfile: not the shared file's mode
    assert data.fetch(dataset, name, data_dir=tmp_path) == target  # intact copy passes
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    target.write_bytes(bytes(raw))
    with pytest.raises(DataError, match="checksum") as e:
        data.fetch(dataset, name, data_dir=tmp_path)
    assert str(target) in str(e.value)
    assert data.entry(dataset, name).url in str(e.value)
    assert target.read_bytes() == bytes(raw)  # reported, not replaced


# The words of each dataset's terms that its licence entry must carry, as its SOURCE.md gives them.
TERMS = {"wikitext-2": "CC BY-SA", "ptb": "LDC", "jsb-chorales": "public domain", "atis": "LDC"}


def test_every_dataset_states_its_licence():
    """Issue 42: the registry states each dataset's licence or terms (the stable-models page shows
    them), as the data folder's SOURCE.md gives them."""
    assert set(data.LICENCES) == set(data.REGISTRY) == set(TERMS)
    assert [r["dataset"] for r in data.licences()] == list(data.REGISTRY)
    for ds, term in TERMS.items():
        assert term in data.LICENCES[ds], ds
        source = REAL_DATA / ds / "SOURCE.md"
        if source.exists():
            assert term.lower() in source.read_text().lower().replace("creative commons "
                                                                      "attribution-sharealike", "cc by-sa"), ds
