"""Unit tests of the foundation modules of ``rnnbook`` (params, run, claims, figures, cache, data,
paths, execute, command line). Fast (a few seconds), offline (only file:// and loopback URLs), and
everything they write goes to pytest's ``tmp_path``.
"""
from __future__ import annotations

import argparse
import ast
import base64
import dataclasses
import hashlib
import io
import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

import rnnbook  # noqa: E402
import rnnbook.__main__ as cli  # noqa: E402
from rnnbook import cache as cache_mod  # noqa: E402
from rnnbook import claims as claims_mod  # noqa: E402
from rnnbook import data, engine, execute, figures, params, paths  # noqa: E402
from rnnbook.cache import Cache  # noqa: E402
from rnnbook.data import DataError  # noqa: E402

REAL_DATA = Path("/work/shared/data")
JSB, JSB_FILE = "jsb-chorales", "jsb-chorales-quarter.json"
REAL_JSB = REAL_DATA / JSB / JSB_FILE
needs_jsb = pytest.mark.skipif(not REAL_JSB.exists(), reason=f"{REAL_JSB} is not present")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch):
    """No test sees the caller's data/results directories or writes into the book."""
    monkeypatch.delenv("RNNBOOK_DATA", raising=False)
    monkeypatch.delenv("RNNBOOK_RESULTS", raising=False)
    monkeypatch.setenv("RNNBOOK_QUIET", "1")


@pytest.fixture(autouse=True)
def _isolated_figure_store(monkeypatch, tmp_path):
    """Figures stored by content go to the test's folder, not the book's build."""
    monkeypatch.setattr(paths, "FIGURE_STORE", tmp_path / "figure-store")


@pytest.fixture(scope="module", autouse=True)
def cli_subprocess(tmp_path_factory):
    """``python -m rnnbook run nosuchchapter`` in a subprocess, started before the first test so
    that its slow start (importing torch) overlaps the other tests."""
    proc = subprocess.Popen([sys.executable, "-m", "rnnbook", "run", "nosuchchapter"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path_factory.mktemp("cli"))
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


@pytest.fixture
def run(tmp_path):
    return rnnbook.setup("demo", profile="quick", device="cpu", seed=0,
                         results_dir=tmp_path / "results")


def strict_json(text: str):
    """``json.loads`` that refuses NaN / Infinity / -Infinity."""
    def refuse(token):
        raise ValueError(f"non-standard JSON constant {token}")
    return json.loads(text, parse_constant=refuse)


def assert_param_error(exc: pytest.ExceptionInfo, name: str, *allowed: str) -> None:
    msg = str(exc.value)
    assert exc.value.name == name
    assert repr(name) in msg, msg
    assert "allowed" in msg, msg
    for a in allowed:
        assert a in msg, msg


# --------------------------------------------------------------------------------------- params

def test_parameter_error_is_a_value_error():
    assert issubclass(rnnbook.ParameterError, ValueError)
    assert rnnbook.ParameterError is params.ParameterError


def test_bad_profile(tmp_path):
    with pytest.raises(rnnbook.ParameterError) as e:
        rnnbook.setup("demo", profile="fast", device="cpu", results_dir=tmp_path / "res")
    assert_param_error(e, "profile", "'fast'", "'quick'", "'full'")
    assert not (tmp_path / "res").exists()


def test_bad_device(tmp_path):
    with pytest.raises(rnnbook.ParameterError) as e:
        rnnbook.setup("demo", device="tpu", results_dir=tmp_path / "res")
    assert_param_error(e, "device", "'tpu'", "'auto'", "'cpu'", "'cuda'")
    assert not (tmp_path / "res").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_without_cuda(tmp_path):
    with pytest.raises(rnnbook.ParameterError) as e:
        rnnbook.setup("demo", device="cuda", results_dir=tmp_path / "res")
    assert_param_error(e, "device", "'auto'", "'cpu'", "no CUDA")
    assert not (tmp_path / "res").exists()


def test_auto_device_resolves():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert params.device("auto").type == expected
    assert params.device("cpu") == torch.device("cpu")


@pytest.mark.parametrize("seed", [-1, "3", 1.5, True, None, float("nan"), float("inf")])
def test_bad_seed(tmp_path, seed):
    with pytest.raises(rnnbook.ParameterError) as e:
        rnnbook.setup("demo", device="cpu", seed=seed, results_dir=tmp_path / "res")
    assert_param_error(e, "seed", "an integer", ">= 0")
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("chapter", ["Demo", "1demo", "de-mo", "", None, "../x"])
def test_bad_chapter_name(tmp_path, chapter):
    with pytest.raises(rnnbook.ParameterError) as e:
        rnnbook.setup(chapter, device="cpu", results_dir=tmp_path / "res")
    assert_param_error(e, "chapter", "snake_case")
    assert not (tmp_path / "res").exists()


def test_bad_results_dir_and_threads(tmp_path):
    with pytest.raises(rnnbook.ParameterError) as e:
        rnnbook.setup("demo", device="cpu", results_dir=3)
    assert_param_error(e, "results_dir", "directory path")
    with pytest.raises(rnnbook.ParameterError) as e:
        rnnbook.setup("demo", device="cpu", threads=0, results_dir=tmp_path / "res")
    assert_param_error(e, "threads", "an integer", ">= 1")
    assert not (tmp_path / "res").exists()


def test_integer():
    assert params.integer("n", 5e4) == 50000
    assert type(params.integer("n", 5e4)) is int
    assert params.integer("n", np.int64(7), lo=0, hi=7) == 7
    assert params.integer("n", 3, lo=3) == 3
    for bad, allowed in [(2, "an integer in [3, 10]"), (11, "an integer in [3, 10]"),
                         (3.5, "an integer in [3, 10]"), ("5", "an integer in [3, 10]"),
                         (True, "an integer in [3, 10]"), (float("inf"), "an integer in [3, 10]"),
                         (float("nan"), "an integer in [3, 10]")]:
        with pytest.raises(rnnbook.ParameterError) as e:
            params.integer("n", bad, lo=3, hi=10)
        assert_param_error(e, "n", allowed)
    with pytest.raises(rnnbook.ParameterError) as e:
        params.integer("steps", 101, hi=100)
    assert_param_error(e, "steps", "<= 100")


def test_real():
    assert params.real("lr", 1e-3, lo=0, lo_open=True) == 1e-3
    assert params.real("lr", 1, lo=0, hi=1) == 1.0
    assert type(params.real("lr", np.float32(0.5))) is float
    assert params.real("x", 0.0, lo=0) == 0.0
    with pytest.raises(rnnbook.ParameterError) as e:
        params.real("lr", 0.0, lo=0, hi=1, lo_open=True)
    assert_param_error(e, "lr", "a finite number in (0, 1]")
    with pytest.raises(rnnbook.ParameterError) as e:
        params.real("lr", 0.0, lo=0, lo_open=True)
    assert_param_error(e, "lr", "> 0")
    for bad in [1.5, -0.1, float("nan"), float("inf"), "0.1", True, None]:
        with pytest.raises(rnnbook.ParameterError) as e:
            params.real("p", bad, lo=0, hi=1)
        assert_param_error(e, "p", "a finite number in [0, 1]")


def test_sequence():
    assert params.sequence("sizes", (1, 2)) == [1, 2]
    assert params.sequence("sizes", [3]) == [3]
    assert params.sequence("sizes", [], min_len=0) == []
    for bad in [[], "ab", b"ab", 3, None, {"a": 1}]:
        with pytest.raises(rnnbook.ParameterError) as e:
            params.sequence("sizes", bad)
        assert_param_error(e, "sizes", "a list of at least 1 item(s)")
    with pytest.raises(rnnbook.ParameterError) as e:
        params.sequence("sizes", [1], min_len=2)
    assert_param_error(e, "sizes", "at least 2 item(s)")


def test_choice():
    assert params.choice("mode", "a", ("a", "b")) == "a"
    with pytest.raises(rnnbook.ParameterError) as e:
        params.choice("mode", "c", ("a", "b"))
    assert_param_error(e, "mode", "one of 'a', 'b'")


def test_setup_good_values(tmp_path):
    r = rnnbook.setup("demo_2", profile="full", device="cpu", seed=5e0,
                      results_dir=tmp_path / "res")
    assert isinstance(r, rnnbook.Run)
    assert (r.chapter, r.profile, r.device.type, r.seed) == ("demo_2", "full", "cpu", 5)
    assert type(r.seed) is int
    assert r.dir == (tmp_path / "res" / "demo_2").resolve()
    assert strict_json((r.dir / "claims.json").read_text()) == []
    assert r.pick(quick=1, full=2) == 2
    q = rnnbook.setup("demo", device="cpu", results_dir=tmp_path / "res")
    assert q.pick(quick=1, full=2) == 1


def test_default_results_dir_honours_env(tmp_path, monkeypatch):
    monkeypatch.setenv("RNNBOOK_RESULTS", str(tmp_path / "env-res"))
    assert paths.default_results_dir("quick") == tmp_path / "env-res"
    r = rnnbook.setup("demo", device="cpu")
    assert r.dir == (tmp_path / "env-res" / "demo").resolve()
    monkeypatch.delenv("RNNBOOK_RESULTS")
    assert paths.default_results_dir("full") == paths.BUILD_DIR / "results" / "full"


@pytest.mark.parametrize("value, quiet", [("", False), ("0", False), ("1", True), ("yes", True)])
def test_quiet_progress(run, monkeypatch, value, quiet):
    monkeypatch.setenv("RNNBOOK_QUIET", value)
    from rnnbook.paths import quiet as is_quiet
    assert is_quiet() is quiet
    bar = run.progress(range(3), file=io.StringIO())
    assert bar.disable is quiet  # (tqdm sets disable once the bar is closed)
    assert list(bar) == [0, 1, 2]


# -------------------------------------------------------------------------------------- seeding

def _draw():
    return torch.randn(5), np.random.rand(3), random.random()


def test_seeding_is_reproducible(tmp_path):
    rnnbook.setup("demo", device="cpu", seed=3, results_dir=tmp_path)
    a = _draw()
    rnnbook.setup("demo", device="cpu", seed=3, results_dir=tmp_path)
    b = _draw()
    assert torch.equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert a[2] == b[2]
    rnnbook.setup("demo", device="cpu", seed=4, results_dir=tmp_path)
    c = _draw()
    assert not torch.equal(a[0], c[0])
    assert not np.array_equal(a[1], c[1])
    assert a[2] != c[2]


# --------------------------------------------------------------------------------------- claims

EV = {"kind": "evidence", "paper": "Fig. 1: 0.3", "ours": "0.31"}  # an evidence claim's fields

def test_claims_written_after_each_claim(run):
    path = run.dir / "claims.json"
    run.claim("C1", "loss falls", "Sec. 2", 0.25, "< 0.5", passed=True, **EV)
    first = strict_json(path.read_text())
    assert len(first) == 1
    assert tuple(first[0]) == claims_mod.FIELDS
    assert first[0] == {"id": "C1", "statement": "loss falls", "source": "Sec. 2", "value": 0.25,
                        "tolerance": "< 0.5", "verdict": "reproduced", "passed": True,
                        "kind": "evidence", "paper": "Fig. 1: 0.3", "ours": "0.31", "reason": None}
    run.claim("C2", "it diverges", "Fig. 3", 7, "> 10", passed=False, **EV, reason="differs")
    second = strict_json(path.read_text())
    assert [c["id"] for c in second] == ["C1", "C2"]
    assert second[1]["verdict"] == "not reproduced" and second[1]["passed"] is False
    run.claim("C3", "x", "y", 1, "z", passed=True, verdict="partly", **EV, reason="setting")
    run.claim("C4", "x", "y", 1, "z", passed=False, verdict="inconclusive", **EV, reason="not-run")
    run.claim("C5", "x", "y", 1, "z", passed=True, verdict="not reproduced", **EV,
              reason="differs")  # pinned
    got = strict_json(path.read_text())
    assert [(c["verdict"], c["passed"]) for c in got[2:]] == [
        ("partly", True), ("inconclusive", False), ("not reproduced", True)]
    assert not list(run.dir.glob(".claims.json.*"))  # no temp files left behind


def test_claim_values_become_strict_json(run):
    value = {
        "f32": np.float32(0.5),
        "i64": np.int64(3),
        "b": np.bool_(True),
        "t": torch.tensor([1.0, 2.0]),
        "t0": torch.tensor(2.5),
        "arr": np.array([[1, 2], [3, 4]]),
        "inf": float("inf"),
        "ninf": -np.inf,
        "nan": float("nan"),
        "nonfinite": np.array([np.nan, np.inf, 1.0]),
        "tup": (1, 2.0),
        1: "int key",
    }
    c = run.claim("C1", "s", "src", value, "tol", passed=np.bool_(True), kind="check")
    text = (run.dir / "claims.json").read_text()
    got = strict_json(text)[0]
    assert got["passed"] is True
    assert got["value"] == {
        "f32": 0.5, "i64": 3, "b": True, "t": [1.0, 2.0], "t0": 2.5, "arr": [[1, 2], [3, 4]],
        "inf": "inf", "ninf": "-inf", "nan": "nan", "nonfinite": ["nan", "inf", 1.0],
        "tup": [1, 2.0], "1": "int key"}
    assert c.value == got["value"]
    assert isinstance(c.passed, bool)
    run.claim("C2", "s", "src", torch.tensor(float("inf")), "tol", passed=False, kind="check")
    assert strict_json((run.dir / "claims.json").read_text())[1]["value"] == "inf"


def test_duplicate_id_and_unknown_verdict(run):
    run.claim("C1", "s", "src", 1, "tol", passed=True, kind="check")
    with pytest.raises(ValueError, match="C1"):
        run.claim("C1", "again", "src", 2, "tol", passed=True, kind="check")
    with pytest.raises(ValueError, match="verdict"):
        run.claim("C2", "s", "src", 1, "tol", passed=True, verdict="sort of", **EV)
    got = strict_json((run.dir / "claims.json").read_text())
    assert [c["id"] for c in got] == ["C1"]
    assert got[0]["statement"] == "s"


def test_claims_load_round_trip_and_table(run):
    run.claim("C1", "a < b", "Thm. 1", {"x": np.float64(1 / 3), "n": 4}, "±1%", passed=True, **EV)
    run.claim("C2", "rate", "Eq. (5)", [float("inf"), 2.0], "finite", passed=False, **EV,
              reason="differs")
    run.claim("C3", "<script>", "App. A", "text", "exact", passed=True, verdict="partly", **EV,
              reason="setting")
    loaded = claims_mod.load(run.dir / "claims.json")
    assert loaded == run.claims.items
    assert all(isinstance(c, claims_mod.Claim) for c in loaded)
    html = run.claims.table_html()
    for c in loaded:
        assert f'<td><a href="#claim-{c.id}">{c.id}</a></td>' in html  # to the claim's callout
    for h in claims_mod.TABLE_HEAD:
        assert f"<th>{h}</th>" in html
    assert '<span class="claim-source">Thm. 1</span>' in html and "our check ✗ FAILED" in html
    assert 'verdict-badge verdict-partly">partly<' in html  # summary row:
    assert "3 claims of the paper tested (quick profile)" in html
    assert "<script>" not in html and "&lt;script&gt;" in html  # escaped
    assert html.count('class="claim-pass claim-kind-evidence"') == 2
    assert html.count('class="claim-fail claim-kind-evidence"') == 1
    assert "x: 0.333<br>n: 4" in html  # 3 significant digits, one entry per line
    assert "<td>Fig. 1: 0.3</td>" in html and "reason: differs" in html  # the paper's beside ours
    assert "survey" not in html  # no seed survey given: no stability mark
    assert "Sources:" not in html  # only the paper's sections: no legend
    run.claim("C4", "x", "Fig. 2; Rv3", 1, "t", passed=True, kind="check")
    assert "Rv1, Rv2, ...: the paper's OpenReview reviews" in run.claims.table_html()
    runs = {f"seed {s}": {"C1": {"verdict": "reproduced", "passed": True, "value": 1},
                          "C2": {"verdict": "not reproduced" if s else "partly", "passed": False, "value": 2}}
            for s in range(3)}
    marked = run.claims.table_html(runs)
    assert "same in all 3 survey runs" in marked and "⚠ verdict moves in the seed survey (3 runs)" in marked
    assert "not in the seed survey" in marked  # C3
    long = claims_mod.value_html({f"key{i}": 1.0 / 3 for i in range(20)})
    assert long.startswith("<details><summary>key0: 0.333, key1: 0.333") and "key19: 0.333" in long


def test_claims_table_cells_show_at_most_long_characters(run):
    """Issue 25: no claims-table cell shows more than LONG characters outside a collapsed <details>
    (its summary counts): a long statement leaves room for its source."""
    import re
    run.claim("C1", "word " * 40, "Proca et al. Lemma 3.2, eq. (ld-split), E1; Zucchet & Orvieto Fig. 1",
              {f"k{i}": 1.0 for i in range(30)}, "tolerance " * 20, passed=True, kind="check")
    for td in re.findall(r"<td[^>]*>(.*?)</td>", run.claims.table_html(), re.S):
        shown = re.sub(r"<details><summary>(.*?)</summary>.*?</details>", r"\1", td, flags=re.S)
        text = re.sub(r"<[^>]+>", "", shown).replace("&amp;", "&")
        assert len(text) <= claims_mod.LONG, text


def test_format_value():
    assert claims_mod.format_value(0.123456) == "0.123"
    assert claims_mod.format_value({"a": 1.0, "b": [2.5e-7, 3]}) == "a: 1, b: [2.5e-07, 3]"
    assert claims_mod.format_value("inf") == "inf"


def test_show_claims_outside_ipython(run, capsys):
    run.claim("C1", "s", "src", 1, "tol", passed=True, kind="check")
    run.show_claims()
    run.banner()
    assert capsys.readouterr().out  # IPython's display falls back to printing a repr


def test_unserialisable_value_does_not_poison_claims(run):
    with pytest.raises(TypeError):
        run.claim("C1", "s", "src", {1, 2}, "tol", passed=True, kind="check")
    run.claim("C2", "s", "src", 1.0, "tol", passed=True, kind="check")
    run.claim("C1", "s", "src", [1, 2], "tol", passed=True, kind="check")
    assert [c["id"] for c in strict_json((run.dir / "claims.json").read_text())] == ["C2", "C1"]


# -------------------------------------------------------------------------------------- figures

def _figure(figsize=None):
    fig, ax = plt.subplots(figsize=figsize)
    ax.plot([0, 1, 2], [1, 0, 1], "o-", label="$x^2$")
    ax.legend()
    return fig


def test_save_figure_caption_starts_with_its_name(run, monkeypatch):
    import IPython.display
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj.data))
    run.save_figure(_figure(), "F7", "Loss against steps.")
    assert "\n**F7.** Loss against steps.\n" in shown[0]
    manifest = json.loads((run.dir / "figures" / "figures.json").read_text())
    assert manifest["F7"]["caption"] == "Loss against steps."  # the file record: the caption alone


def test_save_figure(run, capsys):
    fig = _figure()
    width_in = fig.get_figwidth()
    run.save_figure(fig, "F1", "A caption with $x^2$")
    fdir = run.dir / "figures"
    png, svg = fdir / "F1.png", fdir / "F1.svg"
    assert png.stat().st_size > 0 and svg.stat().st_size > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert svg.read_text().lstrip().startswith("<?xml")
    height_px, width_px = mpimg.imread(png).shape[:2]
    assert width_px >= 200 * width_in - 2
    assert abs(width_px - figures.DPI * width_in) <= 2
    assert width_in == 6.4  # the house style's figure size
    try:
        from PIL import Image
    except ImportError:
        pass
    else:
        with Image.open(png) as im:
            assert im.info["dpi"][0] == pytest.approx(figures.DPI, abs=0.5)
            assert im.size == (width_px, height_px)
            assert im.info["Title"] == "demo F1 (rnn-theory-book)"
            assert im.info["Description"] == "A caption with $x^2$"
            assert im.info["Source"].startswith("profile quick, commit ")
    manifest = json.loads((fdir / "figures.json").read_text())
    assert manifest["F1"]["caption"] == "A caption with $x^2$"
    assert manifest["F1"]["chapter"] == "demo"
    assert manifest["F1"]["files"] == ["F1.png", "F1.svg", "F1.outline.svg"]
    outline = (fdir / "F1.outline.svg").read_text()
    assert "<text" in svg.read_text() and "<text" not in outline  # text drawn as paths: no font needed
    assert "<dc:title>demo F1 (rnn-theory-book)</dc:title>" in outline
    assert "<dc:description>A caption with $x^2$</dc:description>" in svg.read_text()
    assert manifest["F1"]["smallest_text_px"] == pytest.approx(
        plt.rcParams["xtick.labelsize"] * figures.COLUMN_PX / (72 * width_in), abs=0.05)
    assert not plt.fignum_exists(fig.number)  # closed after export
    out = capsys.readouterr().out
    assert "Markdown" in out  # outside IPython display() prints a repr, and does not raise
    run.save_figure(_figure((2, 1.5)), "F2", "second")
    manifest = json.loads((fdir / "figures.json").read_text())
    assert set(manifest) == {"F1", "F2"}


def test_svg_keeps_the_layout_the_png_solved(tmp_path):
    """The SVGs reuse the constrained layout of the PNG's draw (not solved again): the axes sit
    where a fresh constrained-layout draw puts them, and a smoke run writes no outline SVG."""
    fig = _figure()
    fig.canvas.draw()  # a draw with the layout engine: where the axes belong
    solved = fig.axes[0].get_position().bounds
    paths = figures.save_figure(fig, "F1", "c", tmp_path, "demo", show=False, outline=False)
    assert fig.axes[0].get_position().bounds == pytest.approx(solved, abs=1e-3)
    assert sorted(paths) == ["png", "svg"] and not (tmp_path / "F1.outline.svg").exists()
    assert json.loads((tmp_path / "figures.json").read_text())["F1"]["files"] == ["F1.png", "F1.svg"]
    smoke = rnnbook.setup("demo", profile="full", device="cpu", seed=0, smoke=True,
                          results_dir=tmp_path / "results")
    smoke.save_figure(_figure(), "F2", "c")
    assert sorted(p.name for p in (smoke.dir / "figures").glob("F2.*")) == ["F2.png", "F2.svg"]


def test_figure_export_is_stable(run):
    fdir = run.dir / "figures"
    run.save_figure(_figure((2, 1.5)), "F1", "c")
    svg1, png1 = (fdir / "F1.svg").read_bytes(), (fdir / "F1.png").read_bytes()
    run.save_figure(_figure((2, 1.5)), "F1", "c")
    assert (fdir / "F1.svg").read_bytes() == svg1
    assert (fdir / "F1.png").read_bytes() == png1
    assert b"<dc:date>" not in svg1  # no timestamp


@pytest.mark.parametrize("name", ["bad name!", "", "-x", "a/b", "../F1", "F1.png"])
def test_invalid_figure_name(run, name):
    fig = plt.figure()
    with pytest.raises(ValueError, match="figure name"):
        run.save_figure(fig, name, "c")
    plt.close(fig)
    assert not (run.dir / "figures").exists()


def test_figure_myst(tmp_path):  # without a key: no figure class
    png = tmp_path / "F1.png"
    png.write_bytes(b"\x89PNG fake")
    text = figures.figure_myst(png, figures.label("ch", "F1"), "Caption `code` {x} $y$")
    uri = "data:image/png;base64," + base64.b64encode(b"\x89PNG fake").decode()
    assert text.startswith(f"````{{figure}} {uri}\n")
    assert ":name: fig-ch-F1\n" in text
    assert ":alt: Caption code x y\n" in text
    assert text.rstrip().endswith("````")
    roles = figures.figure_myst(png, "fig-ch-F1", "Loss (Eq. {eq}`cm-h2`), see {numref}`fig-ch-F2`.")
    assert ":alt: Loss (Eq. ), see .\n" in roles  # no role syntax read as words


@pytest.mark.parametrize("caption", ["$\\|W_{hh}\\|_2$ of every model", "> quoted # not a comment",
                                     "- (A) left: *x*, [y] | z & 'w'"])
def test_figure_alt_text_parses_as_an_option(tmp_path, caption):
    from myst_parser.parsers.options import options_to_items
    png = tmp_path / "F1.png"
    png.write_bytes(b"\x89PNG fake")
    text = figures.figure_myst(png, "fig-ch-F1", caption)
    alt_line = next(line for line in text.splitlines() if line.startswith(":alt:"))
    items, state = options_to_items(alt_line[1:])
    assert not state.has_comments and items[0][1] == alt_line.split(": ", 1)[1]


# ---------------------------------------------------------------------------------------- cache

class Counter:
    """A batched compute function that records what it computed."""

    def __init__(self, fail_on_call: int | None = None):
        self.calls = 0
        self.computed: list[dict] = []
        self.fail_on_call = fail_on_call

    def __call__(self, cfgs):
        self.calls += 1
        if self.fail_on_call == self.calls:
            raise RuntimeError("interrupted")
        self.computed += cfgs
        return [{"sq": np.arange(c["n"]) ** 2, "n": c["n"], "half": c["n"] / 2} for c in cfgs]


CONFIGS = [{"n": n, "lr": 0.1} for n in (1, 2, 3, 4)]


def _check(results, configs=CONFIGS):
    for cfg, r in zip(configs, results, strict=True):
        np.testing.assert_array_equal(r["sq"], np.arange(cfg["n"]) ** 2)
        assert r["n"] == cfg["n"] and type(r["n"]) is int
        assert r["half"] == cfg["n"] / 2 and type(r["half"]) is float


def test_cached_batch_hits_and_misses(tmp_path):
    c = Cache(tmp_path / "cache")
    f = Counter()
    _check(c.cached_batch("sweep", CONFIGS, f))
    assert (c.hits, c.misses, f.calls, len(f.computed)) == (0, 4, 1, 4)
    assert len(list((tmp_path / "cache").glob("sweep-*.npz"))) == 4
    _check(c.cached_batch("sweep", CONFIGS, f))
    assert (c.hits, c.misses, f.calls) == (4, 4, 1)
    # a fresh Cache object on the same directory (a new session) hits too
    c2 = Cache(tmp_path / "cache")
    _check(c2.cached_batch("sweep", CONFIGS[::-1], f), CONFIGS[::-1])
    assert (c2.hits, c2.misses, f.calls) == (4, 0, 1)


def test_cache_sidecar(tmp_path):
    c = Cache(tmp_path)
    c.put("x", {"a": np.float32(0.5), "b": [1, 2]}, {"v": 1}, seconds=2.5)
    entry = c.path("x", {"a": 0.5, "b": [1, 2]})
    side = json.loads(entry.with_suffix(".json").read_text())
    made = side.pop("made")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", made)
    assert side == {"name": "x", "config": {"a": 0.5, "b": [1, 2]},
                    "code_version": paths.results_version(), "seconds": 2.5,
                    "sha256": hashlib.sha256(entry.read_bytes()).hexdigest()}


def _entry_files(c: Cache, config: dict) -> tuple[Path, Path]:
    entry = c.path("sweep", config)
    return entry, entry.with_suffix(".json")


def test_a_corrupted_piece_is_refused_naming_its_file(tmp_path):
    c = Cache(tmp_path)
    c.cached_batch("sweep", CONFIGS, Counter())
    entry, _ = _entry_files(c, CONFIGS[1])
    data = bytearray(entry.read_bytes())
    data[-3] ^= 0xFF  # one flipped byte in the last array
    entry.write_bytes(bytes(data))
    with pytest.raises(cache_mod.PieceError, match=re.escape(str(entry)) + ".*corrupted"):
        c.cached_batch("sweep", CONFIGS, Counter())
    assert c.get("sweep", CONFIGS[0]) is not None  # the intact pieces stay usable


def test_a_foreign_piece_is_refused_naming_its_file(tmp_path):
    """An entry copied over another one's name (with its sidecar), an entry without sidecar and a
    sidecar that is not JSON are each refused, never used."""
    c = Cache(tmp_path)
    c.cached_batch("sweep", CONFIGS, Counter())
    (a, a_side), (b, b_side) = _entry_files(c, CONFIGS[0]), _entry_files(c, CONFIGS[1])
    b.write_bytes(a.read_bytes())
    b_side.write_text(a_side.read_text())
    with pytest.raises(cache_mod.PieceError, match=re.escape(str(b)) + ".*another entry \\(config"):
        c.get("sweep", CONFIGS[1])
    a_side.unlink()
    with pytest.raises(cache_mod.PieceError, match=re.escape(str(a)) + ".*no sidecar"):
        c.get("sweep", CONFIGS[0])
    a_side.write_text("{not json")
    with pytest.raises(cache_mod.PieceError, match="not JSON"):
        c.get("sweep", CONFIGS[0])


def test_progress_of_a_planned_sweep(tmp_path):
    """The plan a sweep writes first lets progress() (``python -m rnnbook status``) count the
    finished pieces of an interrupted sweep, their measured time and what is left."""
    c = Cache(tmp_path)
    with pytest.raises(RuntimeError, match="interrupted"):
        c.cached_batch("sweep", CONFIGS, Counter(fail_on_call=3), chunk_size=1)
    (p,) = cache_mod.progress(tmp_path, c.code)
    assert (p.name, p.current, p.done, p.total, p.timed) == ("sweep", True, 2, 4, 2)
    assert p.seconds >= 0 and p.left == pytest.approx(p.per_piece * 2)
    assert p.size == sum(f.stat().st_size for f in tmp_path.glob("sweep-*"))
    (other,) = cache_mod.progress(tmp_path, "0123456789abcdef")
    assert not other.current
    c.cached_batch("sweep", CONFIGS, Counter(), chunk_size=1)
    (p,) = cache_mod.progress(tmp_path, c.code)
    assert (p.done, p.total, p.left) == (4, 4, 0)


def test_status_command(tmp_path, capsys):
    main = cli.main
    c = Cache(tmp_path / "extrapolation" / "cache", paths.results_version("extrapolation"))
    c.cached_batch("linear", CONFIGS[:3], Counter())
    Cache(c.directory, "0123456789abcdef").plan("linear", CONFIGS)
    assert main(["status", "extrapolation", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"linear +3/3 +done, [\d.]+ s per piece \(measured\), nothing left", out)
    assert "1 plans of other code versions (0 pieces): never used" in out
    with pytest.raises(SystemExit):
        main(["status", "nope"])
    assert "unknown chapters ['nope']" in capsys.readouterr().err


def test_collect_copies_this_codes_small_pieces_and_prune_drops_the_rest(tmp_path):
    """Issue 47: what a finished piece needs to be committed: this code's entries (and plans) the
    committed cache lacks, none over the size limit and no model weights; prune drops other versions'."""
    run, committed = tmp_path / "run", tmp_path / "committed"
    c = Cache(run, "v")
    c.cached_batch("linear", CONFIGS[:2], Counter())
    c.put("big", {"a": 1}, {"x": np.zeros(1000)})
    c.put("net-weights", {"a": 1}, {"x": np.zeros(2)})
    Cache(run, "old").put("linear", {"a": 2}, {"x": np.zeros(2)})
    got = cache_mod.collect(run, committed, "v", limit=4000)
    assert sorted(got["added"]) == sorted([c.path("linear", x).name for x in CONFIGS[:2]]
                                          + [f"plans/{p.name}" for p in (run / "plans").glob("*.json")])
    assert {n for n, _ in got["too large"]} == {c.path("big", {"a": 1}).name, c.path("net-weights", {"a": 1}).name}
    assert Cache(committed, "v").get("linear", CONFIGS[0]) is not None
    assert cache_mod.collect(run, committed, "v", limit=4000)["added"] == []  # nothing twice
    Cache(committed, "old").put("linear", {"a": 2}, {"x": np.zeros(2)})
    assert cache_mod.prune(committed, "v") == [Cache(committed, "old").path("linear", {"a": 2}).name]
    assert len(list(committed.glob("*.npz"))) == 2 and cache_mod.prune(committed, "v") == []


def test_collect_command_takes_results_of_the_default_full_run_only(tmp_path, capsys):
    """``collect`` copies the run record, claims and figures only of a full run of this code with
    default parameters (pieces always), and refuses a smoke run before copying anything."""
    source, into = tmp_path / "run" / "synthesis", tmp_path / "full"
    Cache(source / "cache", paths.results_version("synthesis")).put("S9", {"a": 1}, {"x": np.zeros(2)})
    (source / "figures").mkdir()
    (source / "figures" / "S1.png").write_bytes(b"png")
    (source / "claims.json").write_text("[]")
    record = {"chapter": "synthesis", "profile": "full", "parameters": {"profile": "full", "d": [20]},
              "versions": {"rnnbook_results": paths.results_version("synthesis")}, "commit": "abc",
              "claims": {"total": 0, "passed": 0}}
    (source / "run.json").write_text(json.dumps(record))
    args = ["collect", "synthesis", "--results-dir", str(tmp_path / "run"), "--into", str(into)]
    assert cli.main(args) == 0 and "its results stay out: parameters d" in capsys.readouterr().out
    assert len(list((into / "synthesis" / "cache").glob("*.npz"))) == 1
    assert not (into / "synthesis" / "run.json").exists()
    (source / "run.json").write_text(json.dumps({**record, "parameters": {"profile": "full"}}))
    assert cli.main(args) == 0 and (into / "synthesis" / "figures" / "S1.png").read_bytes() == b"png"
    (source / "run.json").write_text(json.dumps({**record, "smoke": True}))
    assert cli.main(args[:-1] + [str(tmp_path / "other")]) == 2
    assert "smoke run" in capsys.readouterr().err and not (tmp_path / "other").exists()


def test_a_declared_subset_is_committed_labelled_and_never_counts_as_finished(tmp_path, capsys):
    """Issue 47: a full run given a subset parameter (``tasks``: the tasks a CPU can train at the
    paper's sizes) is collected and shown as a paper-scale subset, leaves the chapter's full profile
    unfinished, and does not replace a finished whole run's results; a partial run does not replace
    the subset's."""
    source, into = tmp_path / "run" / "synthesis", tmp_path / "full"
    (source / "figures").mkdir(parents=True)
    rnnbook.claims.Claims(source / "claims.json").add("C1", "s", "§1", 1.0, "t", True, kind="check")
    record = {"chapter": "synthesis", "profile": "full", "commit": "abc", "claims": {"total": 1},
              "parameters": {"profile": "full", "tasks": ["jsb", "atis"]},
              "versions": {"rnnbook_results": paths.results_version("synthesis")}}
    args = ["collect", "synthesis", "--results-dir", str(tmp_path / "run"), "--into", str(into)]

    def collect(**changes) -> str:
        (source / "run.json").write_text(json.dumps({**record, **changes}))
        assert cli.main(args) == 0
        return capsys.readouterr().out
    assert "a finished run" in collect()
    assert not rnnbook.display.full_run_finished("synthesis", into)
    label = rnnbook.display.full_results_html("synthesis", [], into)
    assert "Full-profile results of a paper-scale subset (tasks = jsb, atis;" in label
    assert "stay out" in collect(partial={"cells": 9, "cells_completed": 3}, commit="partial")
    assert json.loads((into / "synthesis" / "run.json").read_text())["commit"] == "abc"
    (into / "synthesis" / "run.json").unlink()
    assert "a partial run" in collect(partial={"cells": 9, "cells_completed": 3}, commit="partial")
    label = rnnbook.display.full_results_html("synthesis", [], into)
    assert "the claims of a full run of a paper-scale subset (tasks = jsb, atis;" in label
    assert "a finished run" in collect()  # the finished subset replaces its partial record
    assert "a finished run" in collect(parameters={"profile": "full"}, commit="whole")
    assert rnnbook.display.full_run_finished("synthesis", into)
    assert "stay out" in collect(commit="subset again")
    assert json.loads((into / "synthesis" / "run.json").read_text())["commit"] == "whole"


def test_changed_config_misses(tmp_path):
    c = Cache(tmp_path)
    f = Counter()
    c.cached_batch("sweep", CONFIGS, f)
    changed = [dict(cfg, lr=0.2) for cfg in CONFIGS[:2]] + CONFIGS[2:]
    _check(c.cached_batch("sweep", changed, f), changed)
    assert [cfg["lr"] for cfg in f.computed[4:]] == [0.2, 0.2]
    assert (c.hits, c.misses) == (2, 6)
    # a different name is a different entry too; key order does not matter
    assert c.get("other", CONFIGS[0]) is None
    assert c.get("sweep", {"lr": 0.1, "n": 1}) is not None


def test_changed_code_version_misses(tmp_path):
    c = Cache(tmp_path)
    f = Counter()
    c.cached_batch("sweep", CONFIGS, f)
    other = Cache(tmp_path, "0123456789abcdef")
    _check(other.cached_batch("sweep", CONFIGS, f))
    assert (f.calls, len(f.computed), other.hits, other.misses) == (2, 8, 0, 4)
    Cache(tmp_path).cached_batch("sweep", CONFIGS, f)
    assert f.calls == 2  # the original entries are still there


def test_cached_single(tmp_path):
    c = Cache(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"w": np.eye(2), "loss": 0.5}

    r1 = c.cached("one", {"seed": 1}, compute)
    r2 = c.cached("one", {"seed": 1}, compute)
    assert len(calls) == 1
    np.testing.assert_array_equal(r2["w"], np.eye(2))
    assert r1["loss"] == r2["loss"] == 0.5


def test_cache_round_trip(tmp_path):
    c = Cache(tmp_path)
    result = {
        "f64": np.linspace(0, 1, 7),
        "f32": np.ones((2, 3), dtype=np.float32),
        "i": np.arange(5, dtype=np.int16),
        "b": np.array([True, False]),
        "t": torch.arange(3.0).numpy(),
        "int": 3,
        "float": 2.5,
        "nan": float("nan"),
        "bool": True,
        "str": "tanh",
        "np_scalar": np.float32(1.5),
        "list": [1.0, 2.0],
        "strs": np.array(["a", "bc"]),
    }
    c.put("rt", {"k": 1}, result)
    got = c.get("rt", {"k": 1})
    assert set(got) == set(result)
    for k in ("f64", "f32", "i", "b", "t", "strs"):
        np.testing.assert_array_equal(got[k], result[k])
        assert got[k].dtype == np.asarray(result[k]).dtype
    assert got["int"] == 3 and type(got["int"]) is int
    assert got["float"] == 2.5 and type(got["float"]) is float
    assert np.isnan(got["nan"])
    assert got["bool"] is True
    assert got["str"] == "tanh" and type(got["str"]) is str
    assert got["np_scalar"] == 1.5
    np.testing.assert_array_equal(got["list"], [1.0, 2.0])
    assert c.get("rt", {"k": 2}) is None


def test_interrupted_sweep_resumes(tmp_path):
    c = Cache(tmp_path / "a")
    f = Counter(fail_on_call=2)
    with pytest.raises(RuntimeError, match="interrupted"):
        c.cached_batch("sweep", CONFIGS, f, chunk_size=1)
    assert f.computed == CONFIGS[:1]
    assert c.get("sweep", CONFIGS[0]) is not None
    assert all(c.get("sweep", cfg) is None for cfg in CONFIGS[1:])
    assert not list((tmp_path / "a").glob(".*.tmp"))  # no half-written entries

    g = Counter()
    chunks = []

    def progress(it):
        chunks.append(list(it))
        return chunks[-1]

    resumed = Cache(tmp_path / "a").cached_batch("sweep", CONFIGS, g, chunk_size=1,
                                                 progress=progress)
    assert g.computed == CONFIGS[1:]  # only the remaining configs
    assert g.calls == 3 and chunks == [[0, 1, 2]]  # 3 chunks of the 3 missing configs

    fresh = Cache(tmp_path / "b").cached_batch("sweep", CONFIGS, Counter())
    assert len(resumed) == len(fresh) == len(CONFIGS)
    for r, s in zip(resumed, fresh, strict=True):
        assert r.keys() == s.keys()
        for k in r:
            np.testing.assert_array_equal(r[k], s[k])
    _check(resumed)


def test_chunked_compute_gets_chunks(tmp_path):
    c = Cache(tmp_path)
    f = Counter()
    c.cached_batch("sweep", CONFIGS, f, chunk_size=3)
    assert f.calls == 2
    # a compute that returns the wrong number of results is an error
    with pytest.raises(ValueError):
        c.cached_batch("other", CONFIGS, lambda cfgs: [])


def test_object_array_is_refused_at_load(tmp_path):
    """Current behaviour: put() stores an object array (np.savez pickles it), get() refuses it
    because entries are loaded with allow_pickle=False -- the pickle is never executed."""
    c = Cache(tmp_path)
    try:
        c.put("obj", {"k": 1}, {"x": np.array([object()], dtype=object)})
    except (ValueError, TypeError):
        return  # refused at store time: also fine
    with pytest.raises(ValueError, match="allow_pickle"):
        c.get("obj", {"k": 1})


def test_object_array_is_refused_at_store(tmp_path):
    c = Cache(tmp_path)
    with pytest.raises((ValueError, TypeError)):
        c.put("obj", {"k": 1}, {"x": np.array([object()], dtype=object)})
    assert not list(tmp_path.glob("*.npz"))


@pytest.mark.parametrize("key", ["allow_pickle", "file"])
def test_result_keys_that_are_savez_arguments_are_refused(tmp_path, key):
    c = Cache(tmp_path)
    with pytest.raises(TypeError, match=key):
        c.put("k", {"k": 1}, {key: 1})


# ----------------------------------------------------------------------------------------- data

def _copy_real(data_dir: Path) -> Path:
    target = data_dir / JSB / JSB_FILE
    target.parent.mkdir(parents=True)
    shutil.copyfile(REAL_JSB, target)  # copyfile: not the read-only mode of the shared copy
    return target


def _with_url(monkeypatch, url: str) -> None:
    entry = data.REGISTRY[JSB][JSB_FILE]
    monkeypatch.setitem(data.REGISTRY[JSB], JSB_FILE, dataclasses.replace(entry, url=url))


def _no_download(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("no download expected")
    monkeypatch.setattr(data.urllib.request, "urlopen", refuse)


def test_registry_checksum_matches_shared_copy():
    e = data.entry(JSB, JSB_FILE)
    assert re.fullmatch(r"[0-9a-f]{64}", e.sha256)
    if REAL_JSB.exists():
        assert data.sha256(REAL_JSB) == e.sha256


@needs_jsb
def test_fetch_and_load_json(tmp_path, monkeypatch):
    _no_download(monkeypatch)
    target = _copy_real(tmp_path)
    assert data.fetch(JSB, JSB_FILE, data_dir=tmp_path) == target
    d = data.load_json(JSB, JSB_FILE, data_dir=tmp_path)
    assert isinstance(d, dict)
    assert set(d) == {"train", "valid", "test"}
    assert {k: len(v) for k, v in d.items()} == {"train": 229, "valid": 76, "test": 77}
    assert data.fetch(JSB, JSB_FILE, data_dir=str(tmp_path), download=False) == target


@needs_jsb
def test_corrupted_copy(tmp_path, monkeypatch):
    _no_download(monkeypatch)
    target = _copy_real(tmp_path)
    raw = bytearray(target.read_bytes())
    raw[1000] ^= 0x01
    target.write_bytes(bytes(raw))
    with pytest.raises(DataError, match="checksum") as e:
        data.fetch(JSB, JSB_FILE, data_dir=tmp_path)
    assert str(target) in str(e.value)
    with pytest.raises(DataError, match="checksum"):
        data.load_json(JSB, JSB_FILE, data_dir=tmp_path)
    assert target.read_bytes() == bytes(raw)  # a corrupted file is reported, not replaced


@needs_jsb
def test_download_from_file_url(tmp_path, monkeypatch):
    _with_url(monkeypatch, REAL_JSB.as_uri())
    got = data.fetch(JSB, JSB_FILE, data_dir=tmp_path)
    assert got == tmp_path / JSB / JSB_FILE
    assert data.sha256(got) == data.entry(JSB, JSB_FILE).sha256
    assert sorted(p.name for p in got.parent.iterdir()) == [JSB_FILE]  # no .part left
    assert len(data.load_json(JSB, JSB_FILE, data_dir=tmp_path)["train"]) == 229


def test_download_connection_refused(tmp_path, monkeypatch):
    _with_url(monkeypatch, "http://127.0.0.1:9/nothing")
    with pytest.raises(DataError) as e:
        data.fetch(JSB, JSB_FILE, data_dir=tmp_path)
    msg = str(e.value)
    target = tmp_path / JSB / JSB_FILE
    assert str(target) in msg  # where to put the file
    assert "RNNBOOK_DATA" in msg
    assert "http://127.0.0.1:9/nothing" in msg
    assert data.entry(JSB, JSB_FILE).sha256 in msg
    assert isinstance(e.value.__cause__, OSError)
    assert not target.exists()
    assert not list((tmp_path / JSB).iterdir())  # no partial download


def test_download_disabled(tmp_path, monkeypatch):
    _no_download(monkeypatch)
    with pytest.raises(DataError) as e:
        data.fetch(JSB, JSB_FILE, data_dir=tmp_path, download=False)
    msg = str(e.value)
    assert str(tmp_path / JSB / JSB_FILE) in msg and "RNNBOOK_DATA" in msg
    assert not (tmp_path / JSB).exists()


def test_download_with_wrong_checksum_is_refused(tmp_path, monkeypatch):
    wrong = tmp_path / "upstream.json"
    wrong.write_text('{"train": [], "valid": [], "test": []}')
    _with_url(monkeypatch, wrong.as_uri())
    data_dir = tmp_path / "data"
    with pytest.raises(DataError, match="checksum"):
        data.fetch(JSB, JSB_FILE, data_dir=data_dir)
    assert not (data_dir / JSB / JSB_FILE).exists()
    assert list((data_dir / JSB).iterdir()) == []  # nor a .part file


@needs_jsb
def test_rnnbook_data_env(tmp_path, monkeypatch):
    _no_download(monkeypatch)
    monkeypatch.setenv("RNNBOOK_DATA", str(tmp_path / "envdata"))
    assert data.data_dirs() == [tmp_path / "envdata"]
    assert data.data_dirs(tmp_path / "arg") == [tmp_path / "arg"]  # an argument wins
    target = _copy_real(tmp_path / "envdata")
    assert data.fetch(JSB, JSB_FILE) == target
    monkeypatch.setenv("RNNBOOK_DATA", "~/somewhere")
    assert data.data_dirs() == [Path("~/somewhere").expanduser()]
    monkeypatch.delenv("RNNBOOK_DATA")
    dirs = data.data_dirs()
    assert dirs[-1] == data.EXTERNAL_DATA
    assert (data.SHARED_DATA in dirs) == data.SHARED_DATA.is_dir()


def test_unknown_names():
    with pytest.raises(DataError) as e:
        data.fetch("nosuch", JSB_FILE)
    assert "nosuch" in str(e.value) and "jsb-chorales" in str(e.value)
    with pytest.raises(DataError) as e:
        data.load_json(JSB, "nosuch.json")
    assert "nosuch.json" in str(e.value) and JSB_FILE in str(e.value)


# ------------------------------------------------------------------------------ command line

def test_cli_unknown_chapter_subprocess(cli_subprocess):
    try:
        out, err = cli_subprocess.communicate(timeout=60)
    finally:
        cli_subprocess.kill()
    assert cli_subprocess.returncode == 2, err
    assert "invalid choice" in err and "nosuchchapter" in err


def test_cli_help_and_errors(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "--help"])
    assert e.value.code == 0
    assert "-p NAME VALUE" in capsys.readouterr().out
    for argv in ([], ["run"], ["nosuchcommand"], ["run", "nosuchchapter"]):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        assert e.value.code == 2


@pytest.fixture
def fake_execute(monkeypatch, tmp_path):
    """``main`` with a chapter 'demo' and an ``execute_chapter`` that records its call."""
    calls = []
    outcome = {"claims": [claims_mod.Claim("C1", "s", "src", 0.5, "t", "reproduced", True)]}

    def execute_chapter(chapter, parameters, results_dir, quiet=False, executor=None):
        calls.append({"chapter": chapter, "parameters": parameters, "results_dir": results_dir,
                      "quiet": quiet, "executor": executor})
        return outcome["claims"], tmp_path / "demo.ipynb"

    monkeypatch.setattr(cli, "chapters", lambda: ["demo"])
    monkeypatch.setattr(cli, "execute_chapter", execute_chapter)
    return calls, outcome


def test_cli_parameters_are_yaml(fake_execute, capsys):
    calls, _ = fake_execute
    argv = ["run", "demo", "--profile", "full", "--device", "cpu", "--results-dir", "R",
            "--quiet", "-p", "n", "3", "-p", "lr", "0.5", "-p", "sizes", "[1, 2]",
            "-p", "x", "null", "-p", "name", "tanh", "-p", "flag", "true"]
    assert cli.main(argv) == 0
    (call,) = calls
    assert call["chapter"] == "demo" and call["results_dir"] == "R" and call["quiet"] is True
    assert call["executor"] == engine.Executor()  # inline unless --executor says otherwise
    assert call["parameters"] == {"profile": "full", "device": "cpu", "n": 3, "lr": 0.5,
                                  "sizes": [1, 2], "x": None, "name": "tanh", "flag": True}
    for name, value in [("n", "3"), ("lr", "0.5"), ("sizes", "[1, 2]"), ("x", "null")]:
        assert call["parameters"][name] == yaml.safe_load(value)
    out = capsys.readouterr().out
    assert "PASS  C1" in out and "1 of 1 claims passed" in out


def test_cli_defaults_and_exit_codes(fake_execute, capsys):
    calls, outcome = fake_execute
    assert cli.main(["run", "demo"]) == 0
    assert calls[-1]["parameters"] == {"profile": "quick", "device": "auto"}
    assert calls[-1]["results_dir"] is None and calls[-1]["quiet"] is False
    outcome["claims"] = [claims_mod.Claim("C1", "s", "src", 1, "t", "not reproduced", False)]
    assert cli.main(["run", "demo"]) == 1
    assert "FAIL  C1" in capsys.readouterr().out
    outcome["claims"] = []
    assert cli.main(["run", "demo"]) == 1
    assert "no claims were recorded" in capsys.readouterr().out


def test_cli_exponent_parameters_are_numbers(fake_execute):
    calls, _ = fake_execute
    assert cli.main(["run", "demo", "-p", "lr", "1e-3", "-p", "steps", "5e4"]) == 0
    p = calls[-1]["parameters"]
    assert p["lr"] == 1e-3
    assert params.integer("steps", p["steps"]) == 50000


# ------------------------------------------------------------------------------ paths, execute

def test_code_version():
    v = paths.code_version()
    assert re.fullmatch(r"[0-9a-f]{16}", v)
    assert paths.code_version() == v
    assert cache_mod.results_version() == paths.results_version() != v
    assert paths.LIB_DIR == Path(rnnbook.__file__).resolve().parent


def _rel(files) -> set[str]:
    return {p.relative_to(paths.LIB_DIR).as_posix() for p in files}


def test_chapter_code_version_leaves_out_the_other_chapters():
    files = {c: _rel(paths.version_files(c)) for c in paths.chapters()}
    everything = _rel(paths.version_files())
    for c, own in files.items():
        used = set(paths.USES.get(c, ()))
        assert {"cache.py", "params.py", "data.py", "gru.py"} <= own <= everything
        assert own < everything or used == set(paths.chapters()) - {c}  # synthesis uses all four
        assert f"{c}/__init__.py" in own and any(_plots(f) for f in own if f.startswith(f"{c}/"))
        assert not any(f.startswith(f"{o}/") for o in set(paths.chapters()) - {c} - used for f in own)
        assert all(f"{u}/__init__.py" in own for u in used)
    assert "stable_models/train.py" in files["stable_models"]
    assert "extrapolation/train.py" in files["synthesis"]  # the synthesis chapter trains with it
    assert len({paths.code_version(c) for c in paths.chapters()}) == len(files)


def _fake_library(tmp_path, monkeypatch) -> Path:
    """A library with one chapter "ch": models (piece "train") on theory, curvature (piece "hess") on
    models, experiments imported by models for annotations only, and figures."""
    lib = tmp_path / "lib" / "rnnbook"
    files = {"__init__.py": "", "claims.py": "X = 1\n", "ch/__init__.py": "",
             "ch/theory.py": "T = 1\n", "ch/experiments.py": "E = 1\n", "ch/plots.py": "P = 1\n",
             "ch/models.py": "from typing import TYPE_CHECKING\nfrom rnnbook.ch.theory import T\n"
                             "if TYPE_CHECKING:\n    from rnnbook.ch.experiments import E\n"
                             "PIECES = ('train',)\n",
             "ch/curvature.py": "from rnnbook.ch import models\nPIECES = ('hess', 'f7')\n"}
    for rel, text in files.items():
        (lib / rel).parent.mkdir(parents=True, exist_ok=True)
        (lib / rel).write_text(text)
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "ch.md").write_text("")
    monkeypatch.setattr(paths, "LIB_DIR", lib)
    monkeypatch.setattr(paths, "CHAPTERS_DIR", tmp_path / "chapters")
    return lib


def _versions() -> tuple[str, dict[str, str]]:
    for f in (paths.results_version, paths.piece_versions):
        f.cache_clear()
    return paths.results_version("ch"), paths.piece_versions("ch")


def test_piece_versions_follow_the_modules_that_compute_them(tmp_path, monkeypatch):
    """Issue 46/47: a piece a module declares (``PIECES``) is keyed by the modules it runs, so a change
    to another module of the chapter keeps it (C6's or F8's code without the 4 h of training)."""
    lib = _fake_library(tmp_path, monkeypatch)
    try:
        chapter, pieces = _versions()
        assert set(pieces) == {"train", "hess", "f7"} and pieces["hess"] == pieces["f7"] != pieces["train"]
        assert chapter not in pieces.values()
        for rel, moved in (("ch/curvature.py", {"hess", "f7"}), ("ch/experiments.py", set()),
                           ("ch/plots.py", set()), ("ch/theory.py", {"train", "hess", "f7"}),
                           ("claims.py", {"train", "hess", "f7"})):
            before = _versions()
            (lib / rel).write_text((lib / rel).read_text() + "# changed\n")
            after = _versions()
            assert {n for n in pieces if after[1][n] != before[1][n]} == moved, rel
            assert (after[0] != before[0]) == (rel != "ch/plots.py"), rel  # the chapter's version moves
    finally:
        for f in (paths.results_version, paths.piece_versions):
            f.cache_clear()


def test_a_chapter_cache_keys_declared_pieces_by_their_version(tmp_path):
    pieces = paths.piece_versions("curse_of_memory")
    assert {"teacher_student", "ladder", "e1", "f6", "f12", "hessians", "f7", "learn_theta"} <= set(pieces)
    code = paths.results_version("curse_of_memory")
    c = cache_mod.Cache(tmp_path, code)  # as a chapter's run opens it
    assert c.code_for("hessians") == pieces["hessians"] != code and c.code_for("other") == code
    c.put("hessians", {"a": 1}, {"x": np.ones(2)})
    assert json.loads(c.path("hessians", {"a": 1}).with_suffix(".json").read_text())["code_version"] == \
        pieces["hessians"]
    assert cache_mod.Cache(tmp_path, "elsewhere").pieces == {}
    assert [p.current for p in cache_mod.progress(tmp_path, code)] == []  # no plan yet
    c.plan("hessians", [{"a": 1}])
    assert [p.current for p in cache_mod.progress(tmp_path, code, pieces)] == [True]
    assert [p.current for p in cache_mod.progress(tmp_path, code)] == [False]


def _plots(rel: str) -> bool:
    """Whether the library file ``rel`` (relative to lib/rnnbook) is a chapter's figures module."""
    return paths.presentation_only(paths.LIB_DIR / rel) and "/" in rel


def test_chapters_have_packages():
    """One package per chapter, ``lib/rnnbook/<chapter>/``, and no chapter module at the top level."""
    for c in paths.chapters():
        assert (paths.LIB_DIR / c / "__init__.py").is_file()
        assert not any(p.name.startswith(c) for p in paths.LIB_DIR.glob("*.py"))


def _module(path: Path) -> str:
    rel = path.relative_to(paths.LIB_DIR.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The library modules ``path`` imports when it runs, at the top or inside a function (not
    those under ``if TYPE_CHECKING:``, which annotations alone need)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for n in ast.walk(block)}
    out = set()
    for n in ast.walk(tree):
        if id(n) in typing_only:
            continue
        if isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "rnnbook":
            out |= {f"{n.module}.{a.name}" if f"{n.module}.{a.name}" in modules else n.module
                    for a in n.names}
        elif isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name in modules}
    return out - {_module(path)}


def test_no_import_cycle_and_plots_imported_by_sections_only():
    """No import cycle anywhere in lib/ (a cycle once tied a chapter's model and figure modules
    together), and within a chapter's package only ``sections.py`` imports ``plots.py``: plots
    import models and theory, never the reverse."""
    files = {_module(p): p for p in paths.LIB_DIR.rglob("*.py")}
    graph = {m: _imports(p, set(files)) for m, p in files.items()}
    assert graph["rnnbook.stable_models.sections"] >= {"rnnbook.stable_models.plots"}  # it sees them

    acyclic: set[str] = set()

    def cycle_from(m: str, path: list[str]) -> list[str] | None:
        if m in path:
            return path[path.index(m):] + [m]
        if m not in acyclic:
            for n in graph.get(m, ()):
                if found := cycle_from(n, path + [m]):
                    return found
            acyclic.add(m)
        return None
    for m in graph:
        assert (found := cycle_from(m, [])) is None, " -> ".join(found)
    plots = {m for m, p in files.items() if paths.presentation_only(p) and p.parent != paths.LIB_DIR}
    assert "rnnbook.synthesis.plots_regulariser" in plots
    for m, deps in graph.items():
        for dep in deps & plots:
            assert m == dep.rsplit(".", 1)[0] + ".sections", f"{m} imports {dep}"


def test_results_version_leaves_out_presentation_only():
    """A fix to how results are shown keeps a chapter's results cache; code that computes does not."""
    for c in paths.chapters():
        code = _rel(paths.version_files(c))
        results = _rel(paths.version_files(c, results=True))
        assert code - results == (set(paths.PRESENTATION) | set(paths.INFRASTRUCTURE)
                                  | {f for f in code if _plots(f)})
        assert {f for f in code if _plots(f)} >= {f"{u}/plots.py" for u in paths.USES.get(c, ())}
        assert {"params.py", "run.py", "claims.py", "data.py", f"{c}/__init__.py"} <= results
        assert paths.results_version(c) != paths.code_version(c)
        assert rnnbook.setup(c, results_dir="/nonexistent").cache.code == paths.results_version(c)
    assert paths.presentation_only(paths.LIB_DIR / "extrapolation" / "plots.py")
    assert paths.presentation_only(paths.LIB_DIR / "synthesis" / "plots_regulariser.py")
    assert not paths.presentation_only(paths.LIB_DIR / "synthesis" / "regulariser.py")
    assert not paths.presentation_only(paths.LIB_DIR / "plots.py")  # not a chapter's
    assert not paths.presentation_only(paths.LIB_DIR / "stable_models" / "figures.py")


def test_chapter_source_unknown():
    with pytest.raises(ValueError, match="unknown chapter 'nosuchchapter'"):
        execute.chapter_source("nosuchchapter")
    assert paths.chapters() == sorted(paths.chapters())


def test_atomic_write(tmp_path):
    p = tmp_path / "sub" / "f.bin"
    claims_mod.atomic_write(p, b"abc")
    claims_mod.atomic_write(p, b"de")
    assert p.read_bytes() == b"de"
    assert sorted(x.name for x in p.parent.iterdir()) == ["f.bin"]
    assert hashlib.sha256(p.read_bytes()).hexdigest() == hashlib.sha256(b"de").hexdigest()
    assert p.stat().st_mode & 0o777 == 0o644  # readable by anyone (figures.json, results)


# ------------------------------------------------------------------- reuse of test executions

def _fake_execution(chapter: str, path: Path, **stamp_changes) -> None:
    """A notebook as papermill would leave it after running ``chapter`` with default parameters."""
    import jupytext
    nb = jupytext.read(paths.CHAPTERS_DIR / f"{chapter}.md")
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"out {i}\n")]
        cell.execution_count = i + 1
    nb.metadata["rnnbook"] = {**execute.execution_stamp(chapter, {}), **stamp_changes}
    nbformat.write(nb, path)


@pytest.mark.parametrize(("change", "reused"), [
    ({}, True), ({"code_version": "0" * 16}, False), ({"source_sha256": "0" * 64}, False),
    ({"parameters": {"profile": "full"}}, False), ({"full_results": "0" * 16}, False),
    ("error", False)])
def test_book_reuses_only_fresh_clean_executions(tmp_path, change, reused):
    chapter = paths.chapters()[0]
    executed = tmp_path / "executed"
    executed.mkdir()
    _fake_execution(chapter, executed / f"{chapter}.ipynb", **(change if isinstance(change, dict) else {}))
    if change == "error":
        nb = nbformat.read(executed / f"{chapter}.ipynb", as_version=4)
        nb.cells[-1].outputs = [nbformat.v4.new_output("error", ename="E", evalue="x", traceback=[])]
        nbformat.write(nb, executed / f"{chapter}.ipynb")
    config = tmp_path / "config.yml"
    seeded = execute.seed_book_cache(executed, tmp_path / "cache", config)
    assert (chapter in seeded) == reused
    assert "execute_notebooks: cache" in config.read_text()


def test_seeded_execution_keeps_its_run_time(tmp_path):
    from jupyter_cache import get_cache
    chapter = paths.chapters()[0]
    executed = tmp_path / "executed"
    executed.mkdir()
    _fake_execution(chapter, executed / f"{chapter}.ipynb")
    nb = nbformat.read(executed / f"{chapter}.ipynb", as_version=4)
    nb.metadata["papermill"] = {"duration": 12.5}
    nbformat.write(nb, executed / f"{chapter}.ipynb")
    assert execute.seed_book_cache(executed, tmp_path / "cache", tmp_path / "c.yml") == [chapter]
    (record,) = get_cache(str(tmp_path / "cache")).list_cache_records()
    assert record.data == {"execution_seconds": 12.5}  # the execution-statistics page shows it


# ------------------------------------------------------------- figure files, provenance, paper

def test_save_figure_stores_files_with_provenance(run, monkeypatch):
    shown = []
    monkeypatch.setattr(figures, "figure_myst", lambda *a: shown.append(a) or "")
    run.save_figure(_figure((2, 1.5)), "F1", "cap $x$")
    (key,) = {p.stem for p in paths.FIGURE_STORE.iterdir()}
    assert shown[0][3] == key
    files = figures.figure_files(run.dir / "figures", "F1")
    for fmt, path in files.items():
        assert (paths.FIGURE_STORE / f"{key}.{fmt}").read_bytes() == path.read_bytes()
    record = json.loads((paths.FIGURE_STORE / f"{key}.json").read_text())
    assert {k: record[k] for k in ("chapter", "name", "caption", "profile", "seed", "device")} == \
        {"chapter": "demo", "name": "F1", "caption": "cap $x$", "profile": "quick", "seed": 0,
         "device": "cpu"}
    assert record["code_version"] == paths.code_version()
    assert record["commit"] == paths.git_commit()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["date"])
    assert figures.store(files, record) == key  # same figure, same record: same key
    full = figures.store(files, {**record, "name": "F1-full", "profile": "full"})
    assert full != key  # a quick and a full run that draw the same figure keep their own records
    assert json.loads((paths.FIGURE_STORE / f"{key}.json").read_text())["profile"] == "quick"
    assert json.loads((paths.FIGURE_STORE / f"{full}.json").read_text())["profile"] == "full"


def test_figure_myst_names_its_files(tmp_path):
    png = tmp_path / "F1.png"
    png.write_bytes(b"\x89PNG fake")
    text = figures.figure_myst(png, "fig-ch-F1", "c", "abc123")
    assert ":figclass: rnnbook-figure rnnbook-key-abc123\n" in text


def test_git_commit():
    assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?|unknown", paths.git_commit())


def test_git_commit_ignores_committed_results(tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    (tmp_path / "data" / "results" / "full" / "x").mkdir(parents=True)
    (tmp_path / "data" / "results" / "full" / "x" / "claims.json").write_text("[]")
    (tmp_path / "book.md").write_text("a")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    monkeypatch.setattr(paths, "BOOK_ROOT", tmp_path)
    paths.git_commit.cache_clear()
    try:
        (tmp_path / "data" / "results" / "full" / "x" / "claims.json").write_text("[1]")  # a full run
        assert re.fullmatch(r"[0-9a-f]{12}", paths.git_commit())
        paths.git_commit.cache_clear()
        (tmp_path / "book.md").write_text("b")
        assert paths.git_commit().endswith("-dirty")
    finally:
        paths.git_commit.cache_clear()


def test_paper_of():
    bib = ('@article{smith2024,\n  author = {Smith, A. and Doe, B.},\n  title = {{On {RNNs}}},\n'
           '  year = {2024},\n}\n@misc{other,\n title = {X},\n}\n')
    assert figures.paper_of("This re-derives {cite:t}`smith2024`.", bib) == \
        "Smith, A. and Doe, B. (2024). On RNNs. [smith2024]"
    assert figures.paper_of("{cite:t}`missing`", bib) == "missing"
    assert figures.paper_of("no citation", bib) == ""


def test_book_figures_link_their_files(tmp_path):
    """A small Sphinx build with the extension: the figure shows its PNG from the build's
    _figures/<chapter>/ folder and links PNG and SVG there; figures.json lists it with provenance,
    its chapter-scoped number, its caption as plain text, the paper's figures it names and its URL."""
    caption = "A caption, as {numref}`fig-demo-F1` (the paper's Fig. 3A)."
    record = {"chapter": "demo", "name": "F1", "caption": caption,
              **figures.provenance("quick", 3, "cpu")}
    out = figures.save_figure(_figure((2, 1.5)), "F1", caption, tmp_path / "figures", "demo",
                              show=False)
    key = figures.store(out, record)
    src = tmp_path / "src"
    (src / "chapters").mkdir(parents=True)
    (src / "conf.py").write_text(
        "import rnnbook.paths\n"
        f"rnnbook.paths.FIGURE_STORE = rnnbook.paths.Path({str(paths.FIGURE_STORE)!r})\n"
        "extensions = ['myst_parser', 'rnnbook.figures']\nnumfig = True\n")
    (src / "index.md").write_text("# Book\n\n```{toctree}\n:numbered:\nchapters/demo\ngallery\n```\n")
    (src / "gallery.md").write_text("# Gallery\n\n```{rnnbook-gallery}\n```\n")
    (src / "chapters" / "demo.md").write_text(
        "# Demo\n\n" + figures.figure_myst(out["png"], "fig-demo-F1", caption, key))
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-W", "-q", str(src),
                           str(tmp_path / "html")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    folder = tmp_path / "html" / "_figures" / "demo"
    assert (folder / "demo-F1.png").read_bytes() == out["png"].read_bytes()  # self-named files
    assert (folder / "demo-F1.svg").read_bytes() == out["svg"].read_bytes()
    page = (tmp_path / "html" / "chapters" / "demo.html").read_text()
    assert 'src="../_figures/demo/demo-F1.png"' in page
    assert re.findall(r'class="rnnbook-figure-file reference external" href="([^"]+)"', page) == \
        ["../_figures/demo/demo-F1.png", "../_figures/demo/demo-F1.svg",
         "../_figures/demo/demo-F1.outline.svg"]
    assert "base64" not in page  # the page loads the file, it does not carry the image
    (entry,) = json.loads((folder / "figures.json").read_text())
    assert entry["name"] == "F1" and entry["chapter"] == "demo" and entry["caption"] == caption
    assert entry["profile"] == "quick" and entry["seed"] == 3 and entry["commit"] and entry["date"]
    assert entry["files"] == ["demo-F1.png", "demo-F1.svg", "demo-F1.outline.svg"]
    assert entry["label"] == "fig-demo-F1"
    assert "paper" in entry and entry["number"] == "1.1" and entry["redoes"] == ["Fig. 3A"]
    assert entry["caption_text"] == "A caption, as Fig. 1.1 (the paper’s Fig. 3A)."  # smart quotes
    assert entry["url"] == "chapters/demo.html#fig-demo-f1"  # Sphinx's id of the label: lower case
    assert 'id="fig-demo-f1"' in page
    gallery = (tmp_path / "html" / "gallery.html").read_text()
    assert ('<a class="rnnbook-card" href="chapters/demo.html#fig-demo-f1"><img '
            'src="_figures/demo/demo-F1.png" alt="F1"><span><b>Fig. 1.1</b> F1 · A caption, as '
            "Fig. 1.1 (the paper&#x27;s Fig. 3A).</span></a>") in gallery

    assert "mathjax" in gallery.lower()  # loaded on every page: the cards' math is typeset

    exported = execute.export_figures(tmp_path / "html", tmp_path / "export")
    assert [e["name"] for e in exported] == ["F1"]
    assert sorted(p.name for p in (tmp_path / "export" / "demo").iterdir()) == \
        ["demo-F1.outline.svg", "demo-F1.png", "demo-F1.svg", "figures.json"]


# ------------------------------------------------------------------ full-profile results, records

def _claims(path: Path, *items) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([dataclasses.asdict(c) for c in items]))


def test_full_results_absent_says_how_to_make_them(tmp_path):
    text = rnnbook.display.full_results_html("demo", [], tmp_path)
    assert "No full-profile results" in text and "<code>make full</code> runs every chapter" in text
    _claims(tmp_path / "demo" / "claims.json")  # an interrupted run: no run record
    assert "No full-profile results" in rnnbook.display.full_results_html("demo", [], tmp_path)


def test_full_results_beside_quick(tmp_path):
    quick = [claims_mod.Claim("C1", "s", "src", 0.123456, "t", "reproduced", True),
             claims_mod.Claim("C2", "s", "src", 2, "t", "partly", True)]
    _claims(tmp_path / "demo" / "claims.json",
            claims_mod.Claim("C1", "s", "src", 0.5, "t", "not reproduced", False))
    (tmp_path / "demo" / "run.json").write_text(json.dumps({
        "finished": "2026-12-01T10:00:00Z", "device": "cuda", "wall_seconds": 5400,
        "commit": "abc", "hardware": {"summary": "NVIDIA H200"}}))
    text = rnnbook.display.full_results_html("demo", quick, tmp_path)
    assert "Full-profile results, made 2026-12-01 on NVIDIA H200, cuda in 90 min, commit abc<" in text
    now = rnnbook.paths.results_version("demo")
    for made, stale in ((now, False), ("0123456789abcdef", True)):
        (tmp_path / "demo" / "run.json").write_text(json.dumps({
            "finished": "2026-12-01T10:00:00Z", "commit": "abc", "versions": {"rnnbook_results": made}}))
        assert (f"The code that computes them has changed since (results version 0123456789abcdef, now {now})"
                in rnnbook.display.full_results_html("demo", quick, tmp_path)) == stale
    (tmp_path / "demo" / "run.json").write_text(json.dumps({
        "finished": "2026-12-01T10:00:00Z", "device": "cpu", "wall_seconds": 600, "commit": "abc",
        "parameters": {"profile": "full", "device": "cpu", "d": [20, 50]}, "cached_at_start": 651,
        "hardware": {"summary": "2 CPU cores"}}))
    assert ("Full-profile results with d = [20, 50], made 2026-12-01 on 2 CPU cores, cpu in 10 min "
            "(the wall time of its last session, which resumed from 651 results cached by earlier "
            "ones), commit abc"
            in rnnbook.display.full_results_html("demo", quick, tmp_path))
    badge = claims_mod.verdict_badge
    assert (f"<td>C1</td><td>0.123</td><td>{badge('reproduced')}</td><td>0.5</td>"
            f"<td>{badge('not reproduced')}</td><td>✗</td>") in text
    # a record made before kinds, of a claim that is now a check: its verdict is its check's
    check = [claims_mod.Claim("C1", "s", "src", 0.1, "t", "passes", True, "check")]
    assert (f"<td>0.5</td><td>{badge('fails')}</td><td>✗</td>"
            in rnnbook.display.full_results_html("demo", check, tmp_path))
    assert f"<td>C2</td><td>2</td><td>{badge('partly')}</td><td></td><td></td><td></td>" in text
    later = [claims_mod.Claim(i, "s", "src", 1, "t", "reproduced", True) for i in ("C11", "C10")]
    text = rnnbook.display.full_results_html("demo", later, tmp_path)  # recorded C11 first
    assert text.index("<td>C1</td>") < text.index("<td>C10</td>") < text.index("<td>C11</td>")


def test_full_figures_shown_with_their_run(tmp_path):
    full = tmp_path / "full"
    assert rnnbook.display.full_figures_myst("demo", full) == ""
    figures.save_figure(_figure((2, 1.5)), "F1", "cap {eq}`x`", full / "demo" / "figures", "demo",
                        show=False)
    assert rnnbook.display.full_figures_myst("demo", full) == ""  # no run record: unfinished
    (full / "demo" / "run.json").write_text(json.dumps({
        "finished": "2026-12-01T10:00:00Z", "device": "cpu", "commit": "abc",
        "parameters": {"profile": "full", "seed": 4, "a5_hidden": 64}}))
    text = rnnbook.display.full_figures_myst("demo", full)
    assert ":name: fig-demo-F1-full" in text and "**F1, full profile.** cap {eq}`x`" in text
    key = re.search(r"rnnbook-key-(\w+)", text).group(1)
    record = json.loads((paths.FIGURE_STORE / f"{key}.json").read_text())
    assert {k: record[k] for k in ("chapter", "name", "profile", "seed", "device", "commit", "date")} \
        == {"chapter": "demo", "name": "F1-full", "profile": "full", "seed": 4, "device": "cpu",
            "commit": "abc", "date": "2026-12-01T10:00:00Z"}
    assert record["parameters"] == {"seed": 4, "a5_hidden": 64}  # traceable to the run's settings
    assert (paths.FIGURE_STORE / f"{key}.png").read_bytes() == \
        (full / "demo" / "figures" / "F1.png").read_bytes()
    quick = tmp_path / "quick"
    figures.save_figure(_figure((2, 1.5)), "F1", "other caption", quick, "demo", show=False)
    same = rnnbook.display.full_figures_myst("demo", full, quick=quick)  # same pixels, other metadata
    assert "fig-demo-F1-full" not in same and "full run's F1 is the same as this page's" in same
    figures.save_figure(_figure((3, 1.5)), "F1", "c", quick, "demo", show=False)
    assert ":name: fig-demo-F1-full" in rnnbook.display.full_figures_myst("demo", full, quick=quick)


def test_full_results_change_the_execution_stamp(tmp_path, monkeypatch):
    monkeypatch.setattr(execute, "FULL_RESULTS_DIR", tmp_path)
    chapter = paths.chapters()[0]
    before = execute.execution_stamp(chapter, {})
    _claims(tmp_path / chapter / "cache" / "x.json")  # the cache is not committed, not shown
    assert execute.execution_stamp(chapter, {}) == before
    (tmp_path / chapter / "figures").mkdir()
    (tmp_path / chapter / "figures" / "F1.png").write_bytes(b"png")
    assert execute.execution_stamp(chapter, {})["full_results"] != before["full_results"]
    with_figure = execute.execution_stamp(chapter, {})
    monkeypatch.setattr(execute, "SURVEY_DIR", tmp_path / "survey")
    (tmp_path / "survey").mkdir()
    (tmp_path / "survey" / f"{chapter}.json").write_text("{}")  # the committed seed survey too
    assert execute.execution_stamp(chapter, {})["full_results"] != with_figure["full_results"]


def test_survey_finds_moving_verdicts(tmp_path):
    for name, verdict in (("a", "reproduced"), ("b", "reproduced"), ("c", "partly")):
        _claims(tmp_path / name / "claims.json", claims_mod.Claim("C1", "s", "src", 1, "t", verdict, True),
                claims_mod.Claim("C2", "s", "src", 2, "t", "reproduced", True))
    s = claims_mod.survey({n: tmp_path / n / "claims.json" for n in "ab"})
    assert claims_mod.unstable(s) == [] and set(s) == {"a", "b"} and s["a"]["C2"]["value"] == 2
    s = claims_mod.survey({n: tmp_path / n / "claims.json" for n in "abc"})
    assert claims_mod.unstable(s) == ["C1"]
    (tmp_path / "demo.json").write_text(json.dumps({"chapter": "demo", "variations": s}))
    rows = rnnbook.survey_table("demo", root=tmp_path).records
    assert rows == [{"claim": "C1", "verdict in each run": "reproduced: a, b; partly: c", "same in all": "no"},
                    {"claim": "C2", "verdict in each run": "reproduced (all 3)", "same in all": "yes"}]
    assert "No seed survey" in rnnbook.survey_table("other", root=tmp_path)


def test_run_record(tmp_path):
    chapter = paths.chapters()[0]
    started = __import__("datetime").datetime(2026, 1, 2, 3, 4, 5)
    found = [claims_mod.Claim("C1", "s", "src", 1, "t", "reproduced", True)]
    r = execute.run_record(chapter, {"profile": "full", "device": "cpu", "n": 3}, started, 61.23, found,
                           cached_at_start=5)
    assert r["chapter"] == chapter and r["profile"] == "full" and r["device"] == "cpu"
    assert r["cached_at_start"] == 5
    assert r["parameters"]["n"] == 3 and r["wall_seconds"] == 61.2
    assert r["started"] == "2026-01-02T03:04:05Z" and r["claims"] == {"total": 1, "passed": 1}
    assert r["versions"]["torch"] == torch.__version__.split("+")[0] or r["versions"]["torch"]
    assert r["versions"]["rnnbook_code"] == paths.code_version(chapter)
    assert r["versions"]["rnnbook_results"] == paths.results_version(chapter)
    assert r["hardware"]["cpu_count"] and r["hardware"]["summary"]
    assert r["source_sha256"] == execute.source_hash(chapter)
    json.dumps(r)
    auto = {"profile": "full", "device": "auto"}  # the chapter's run says which device its auto was
    for used in ("cpu", "cuda"):  # whatever this machine has
        assert execute.run_record(chapter, auto, started, 1.0, found, device=used)["device"] == used


def _stopped_run(folder: Path, chapter: str, profile: str = "full", code: str | None = None,
                 statuses: tuple[str, str] = ("running", "pending")) -> None:
    """A full run of ``chapter`` (started at commit "abc" by results version ``code``) stopped in its
    second code cell: notebook, claims, a piece made before it and one left half-written."""
    version = code or paths.results_version(chapter)
    nb = nbformat.v4.new_notebook(metadata={
        "rnnbook": {"parameters": {"profile": profile, "device": "cpu"}, "source_sha256": "s", "code_version": "c"},
        execute.ORIGIN: {"commit": "abc", "source_sha256": "s", "rnnbook_code": "c", "rnnbook_results": version},
        "papermill": {"start_time": "2026-12-07T05:00:00.5+00:00"}})
    nb.cells = [nbformat.v4.new_markdown_cell("text"),
                nbformat.v4.new_code_cell("x = 1", metadata={"papermill": {
                    "status": "completed", "end_time": "2026-12-07T05:10:00+00:00"}}),
                nbformat.v4.new_code_cell("f6 = slow()\nmore", metadata={"papermill": {"status": statuses[0]}}),
                nbformat.v4.new_code_cell("y = 2", metadata={"papermill": {"status": statuses[1]}})]
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{chapter}.ipynb")
    _claims(folder / "claims.json", claims_mod.Claim("C1", "s", "src", 1, "t", "reproduced", True))
    (folder / "cache").mkdir()
    for name in ("f3-0", "f3-1"):  # f3-1: killed between its sidecar and its entry
        (folder / "cache" / f"{name}.json").write_text(json.dumps(
            {"code_version": version, "made": "2026-12-06T00:00:00+00:00"}))
    (folder / "cache" / "f3-0.npz").write_bytes(b"")


def test_partial_record_of_a_stopped_full_run(tmp_path, capsys):
    """Issue 47: the claims of a full run that has not finished get a run record that says so, and
    the page labels them partial; a quick, finished, failed or foreign run is refused, naming the
    file."""
    chapter = paths.chapters()[0]
    _stopped_run(tmp_path / "full" / chapter, chapter)
    r = execute.partial_record(chapter, tmp_path / "full" / chapter)
    assert r["partial"]["cells_completed"] == 1 and r["partial"]["cells"] == 3
    assert r["partial"]["stopped_in"] == "f6 = slow()" and r["source_sha256"] == "s"
    assert r["commit"] == "abc" and r["versions"]["rnnbook_code"] == "c"  # the run's, not this checkout's
    assert r["finished"] == "2026-12-07T05:10:00Z" and r["wall_seconds"] == 599.5
    assert r["cached_at_start"] == 1 and r["claims"] == {"total": 1, "passed": 1} and r["device"] == "cpu"
    assert rnnbook.display.full_claims(chapter, tmp_path / "full") == {}  # no record: not shown
    (tmp_path / "full" / chapter / "run.json").write_text(json.dumps(r))
    assert list(rnnbook.display.full_claims(chapter, tmp_path / "full")) == ["C1"]
    html = rnnbook.display.full_results_html(chapter, [], tmp_path / "full")
    assert "Partial full-profile results" in html and "code cell 2 of 3 (f6 = slow())" in html
    cli.print_status(chapter, tmp_path / "full")
    assert "results: 1 claims, partial (stopped in: f6 = slow())" in capsys.readouterr().out
    with pytest.raises(execute.PartialRunError, match="run.json: the run finished"):
        execute.partial_record(chapter, tmp_path / "full" / chapter)
    _stopped_run(tmp_path / "quick" / chapter, chapter, profile="quick")
    with pytest.raises(execute.PartialRunError, match="not a full-profile run"):
        execute.partial_record(chapter, tmp_path / "quick" / chapter)
    _stopped_run(tmp_path / "old" / chapter, chapter, code="0" * 16)
    with pytest.raises(execute.PartialRunError, match=f"{chapter}.ipynb: made by results version 0000"):
        execute.partial_record(chapter, tmp_path / "old" / chapter)
    _stopped_run(tmp_path / "failed" / chapter, chapter, statuses=("failed", "pending"))
    with pytest.raises(execute.PartialRunError, match="a cell failed"):
        execute.partial_record(chapter, tmp_path / "failed" / chapter)
    _stopped_run(tmp_path / "ended" / chapter, chapter, statuses=("completed", "completed"))
    with pytest.raises(execute.PartialRunError, match="every code cell completed but no run.json"):
        execute.partial_record(chapter, tmp_path / "ended" / chapter)


def test_unfinished_full_runs_are_the_ones_left_to_run(tmp_path, capsys):
    """Issue 47: `status --unfinished` (what bench/device_check.sh runs) names the chapters with no
    finished full run of this results version: none yet, a partial record, a smoke run or a run of
    older code; not one that finished at this version."""
    chapter, root = paths.chapters()[0], tmp_path / "full"
    def record(**changes) -> None:
        r = {"profile": "full", "claims": {"total": 1, "passed": 1}, "finished": "2026-12-07T16:17:03Z",
             "commit": "abc", "versions": {"rnnbook_results": paths.results_version(chapter)}, **changes}
        (root / chapter).mkdir(parents=True, exist_ok=True)
        (root / chapter / "run.json").write_text(json.dumps(r))
    def unfinished() -> list[str]:
        assert cli.main(["status", "--unfinished", chapter, "--results-dir", str(root)]) == 0
        return capsys.readouterr().out.split()
    assert unfinished() == [chapter]  # nothing committed
    for stale in ({"partial": {"cells": 3}}, {"smoke": True}, {"versions": {"rnnbook_results": "0" * 16}}):
        record(**stale)
        assert unfinished() == [chapter] and not rnnbook.display.full_run_finished(chapter, root)
    record()
    assert unfinished() == [] and rnnbook.display.full_run_finished(chapter, root)
    cli.print_status(chapter, root)
    assert "a finished run" in capsys.readouterr().out
    record(versions={"rnnbook_results": "0" * 16})
    cli.print_status(chapter, root)
    assert "of another results version: a run now recomputes it" in capsys.readouterr().out


def test_setup_leaves_the_device_it_resolved_for_the_run_record(tmp_path):
    run = rnnbook.setup("demo", device="cpu", results_dir=tmp_path)
    assert (tmp_path / "demo" / paths.DEVICE_FILE).read_text() == "cpu" == run.device.type


# ------------------------------------------------------------------------- book build, bench

def test_book_inputs_track_sources(tmp_path, monkeypatch):
    root = tmp_path / "book"
    (root / "chapters").mkdir(parents=True)
    (root / "intro.md").write_text("a")
    (root / "chapters" / "x.md").write_text("b")
    monkeypatch.setattr(execute, "BOOK_ROOT", root)
    monkeypatch.setattr(execute, "CHAPTERS_DIR", root / "chapters")
    monkeypatch.setattr(execute, "FULL_RESULTS_DIR", root / "data" / "results" / "full")
    monkeypatch.setattr(execute, "SURVEY_DIR", root / "data" / "results" / "survey")
    monkeypatch.setattr(execute, "BUILD_STAMP", tmp_path / "stamp.json")
    h = execute.book_inputs()
    assert execute.built_stamp() is None
    (tmp_path / "stamp.json").write_text(json.dumps({"inputs": h, "offline": True}))
    assert execute.built_stamp() == {"inputs": h, "offline": True}
    assert execute.build_book(offline=True, if_stale=True)["reused"]
    _claims(root / "data" / "results" / "full" / "x" / "claims.json")
    assert execute.book_inputs() != h  # committed full results are shown: a change rebuilds
    with_full = execute.book_inputs()
    (root / "data" / "results" / "survey").mkdir(parents=True)
    (root / "data" / "results" / "survey" / "x.json").write_text("{}")
    assert execute.book_inputs() != with_full  # and so is a committed seed survey
    h = execute.book_inputs()
    (root / "chapters" / "x.md").write_text("c")
    assert execute.book_inputs() != h and execute.built_stamp() is None


def test_bench_table(tmp_path):
    from rnnbook import bench
    assert bench.parse_ratio("a\nspeed-up: 146.3x\n\n") == 146.3
    assert bench.parse_ratio("speed-up: 8x") == 8.0 and bench.parse_ratio("no ratio") is None
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "a.py").write_text("print('timing...')\nprint('speed-up: 12.5x')\n")
    (tmp_path / "bench" / "b.py").write_text("raise SystemExit('broken')\n")
    rows = bench.run_all(tmp_path / "bench")
    assert [(r["bench"], r["ratio"], r["status"]) for r in rows] == \
        [("a", 12.5, "ok"), ("b", None, "failed (exit 1, no ratio)")]
    text = bench.table(rows)
    assert re.search(r"^a\s+12\.5x\s+\d+\.\d\s+ok$", text, re.M)
    assert re.search(r"^b\s+-\s+", text, re.M)


def test_cli_book_and_figures(monkeypatch, capsys, tmp_path):
    calls = []
    monkeypatch.setattr(cli, "build_book", lambda **kw: calls.append(kw) or
                        {"reused": False, "seeded": ["x"], "seconds": 3.0, "offline": True})
    assert cli.main(["book", "--offline", "--if-stale"]) == 0
    assert calls == [{"offline": True, "if_stale": True}]
    assert "reused executions of: x (3 s, no network)" in capsys.readouterr().out
    monkeypatch.setattr(cli, "export_figures", lambda: [{"chapter": "x"}, {"chapter": "x"}])
    assert cli.main(["figures"]) == 0
    assert "x: 2 figures" in capsys.readouterr().out
    monkeypatch.setattr(cli, "export_figures", lambda: [])
    assert cli.main(["figures"]) == 1


def test_cli_execute_reports_each_chapter(monkeypatch, capsys):
    from concurrent.futures import Future

    def execute_many(runs, report):
        done = []
        for chapter, parameters, _, output in runs:
            assert parameters == {} and output.name == f"{chapter}.ipynb"
            f = Future()
            f.set_exception(RuntimeError("cell 3 failed")) if chapter == "b" else f.set_result(([], output))
            report(chapter, 90.0, f.exception())
            done.append(f)
        return done
    monkeypatch.setattr(cli, "chapters", lambda: ["a", "b"])
    monkeypatch.setattr(cli, "execute_many", execute_many)
    assert cli.main(["execute", "a"]) == 0
    assert "a: executed (1.5 min in)" in capsys.readouterr().out
    assert cli.main(["execute"]) == 1
    out, err = capsys.readouterr()
    assert "executing a, b" in out and "b: FAILED" in out and "cell 3 failed" in err
    with pytest.raises(SystemExit):
        cli.main(["execute", "c"])
    assert "unknown chapters ['c']" in capsys.readouterr().err


def test_book_executes_stale_chapters_first(monkeypatch, tmp_path):
    commands = []
    monkeypatch.setattr(execute, "chapters", lambda: ["a", "b"])
    monkeypatch.setattr(execute, "reusable_execution", lambda c: None if c == "b" else object())
    monkeypatch.setattr(execute, "seed_book_cache", lambda: ["a", "b"])
    monkeypatch.setattr(execute, "book_inputs", lambda: "h")
    monkeypatch.setattr(execute, "git_commit", lambda: "c")
    monkeypatch.setattr(execute, "BUILD_STAMP", tmp_path / "stamp.json")
    monkeypatch.setattr(execute.subprocess, "run", lambda cmd, **kw: commands.append(cmd))
    assert execute.build_book()["seeded"] == ["a", "b"]
    assert commands[0][1:] == ["-m", "rnnbook", "execute", "b"]
    assert commands[1][0].endswith("jupyter-book") and len(commands) == 2


def test_numpy_scalars_shown_as_plain_numbers():
    # a glued np.float64 must be parseable by {glue:text}`name:.2f` (numpy 2 reprs np.float64(x))
    from IPython.core.interactiveshell import InteractiveShell

    from rnnbook.run import plain_numpy_scalars
    shell = InteractiveShell.instance()
    plain_numpy_scalars(shell)
    text = shell.display_formatter.formatters["text/plain"]
    assert (text(np.float64(3.05)), text(np.float32(1.5)), text(np.int64(3))) == ("3.05", "1.5", "3")


def test_survey_chapter_collects_each_seeds_verdicts(tmp_path):
    """`python -m rnnbook survey`: one run per seed into seed-<n>/, their claims, commands and
    commits in the committed survey's format; a claim whose verdict moves is found."""
    def fake_run(chapter, parameters, folder, quiet=True):
        seed = parameters["seed"]
        out = folder / chapter
        out.mkdir(parents=True)
        found = [claims_mod.Claim("C1", "s", "§1", 1.0 + seed, "tol", verdict="reproduced", passed=True),
                 claims_mod.Claim("C2", "s", "§2", seed, "tol", verdict="partly" if seed < 2 else "not reproduced",
                               passed=seed < 2)]
        (out / "claims.json").write_text(json.dumps([c.__dict__ for c in found]))
        (out / "run.json").write_text(json.dumps({"wall_seconds": 10.0 + seed, "commit": "abc"}))

    record = execute.survey_chapter("extrapolation", cli.parse_seeds("0-2"), {"profile": "quick", "d": [20]},
                                    tmp_path, run=fake_run)
    assert list(record["variations"]) == ["seed 0", "seed 1", "seed 2"]
    assert record["commands"]["seed 2"] == ("python -m rnnbook run extrapolation --profile quick -p seed 2"
                                            " -p d '[20]'")
    assert record["wall_seconds"]["seed 1"] == 11.0 and "abc" in record["made"]
    assert claims_mod.unstable(record["variations"]) == ["C2"]
    assert cli.parse_seeds("0-2,7") == [0, 1, 2, 7]
    with pytest.raises(argparse.ArgumentTypeError, match="allowed"):
        cli.parse_seeds("0,0")


def test_smoke_runs_are_full_profile_only_and_never_full_results(tmp_path):
    """`--smoke` (the full profile's code at toy sizes) needs the full profile, cannot write into
    data/results/full/, and the book refuses to show a smoke run's record as full results."""
    from rnnbook.display import SmokeResults, full_results_html
    assert params.smoke(True, "full") is True and params.smoke(False, "quick") is False
    for value, profile in ((True, "quick"), ("yes", "full"), (1, "full")):
        with pytest.raises(params.ParameterError, match="'smoke'"):
            params.smoke(value, profile)
    with pytest.raises(params.ParameterError, match="'smoke'"):
        rnnbook.setup("demo", profile="quick", smoke=True, results_dir=tmp_path)
    assert rnnbook.setup("demo", profile="full", smoke=True, results_dir=tmp_path).label == "full (smoke)"
    with pytest.raises(SmokeResults, match="cannot write into"):
        execute.execute_chapter("extrapolation", {"profile": "full", "smoke": True},
                                paths.FULL_RESULTS_DIR)
    with pytest.raises(SystemExit):
        cli.main(["run", "extrapolation", "--smoke"])
    folder = tmp_path / "full" / "demo"
    folder.mkdir(parents=True)
    (folder / "claims.json").write_text("[]")
    (folder / "run.json").write_text(json.dumps({"smoke": True, "parameters": {"smoke": True}}))
    with pytest.raises(SmokeResults, match="holds a smoke run"):
        full_results_html("demo", [], tmp_path / "full")


def test_verdicts_at_a_glance_are_generated_from_the_claims():
    """The reader's layer (issues 25, 42): the verdict box, the scorecard line and the callout where
    a claim is checked say what the claims say: the evidence grouped by verdict in id order with the
    paper's value beside ours, then one line for the checks and constructions."""
    ev = {"kind": "evidence", "paper": "Fig. 2: 0.3", "ours": "0.31"}
    items = [claims_mod.Claim("C10", "ten", "§1", 1, "t", "partly", True, **ev, reason="setting"),
             claims_mod.Claim("C2", "two <b>", "§2", 1, "t", "reproduced", True, **ev),
             claims_mod.Claim("C1", "one", "§3", 1, "t", "reproduced", True, **ev),
             claims_mod.Claim("E1", "e", "§4", 1, "t", "not reproduced", False, **ev, reason="differs"),
             claims_mod.Claim("C3", "an identity", "§5", 1, "t", "passes", True, "check"),
             claims_mod.Claim("C4", "our example", "§5", 1, "t", "passes", True, "construction")]
    line = claims_mod.summary_html(items)
    text = re.sub(r"<[^>]+>", "", line)
    assert text == ("4 claims of the paper tested (quick profile): 2 reproduced (C1, C2) 1 partly (C10) "
                    "1 not reproduced (E1)2 checks and constructions pass (C3, C4)")
    box = claims_mod.verdict_box_html(items, "full")
    assert re.findall(r'verdict-badge verdict-([\w-]+)">([^<]+)<', box) == [
        ("reproduced", "reproduced (2)"), ("partly", "partly (1)"), ("not-reproduced", "not reproduced (1)")]
    assert "two &lt;b&gt;" in box and box.index("<b>C1</b>") < box.index("<b>C2</b>")
    assert "4 claims of the paper tested on our runs (full profile" in box
    assert "paper: Fig. 2: 0.3; ours: 0.31 (reason: setting)" in box
    assert "2 checks and constructions pass" in box and "<b>C3</b>" not in box
    callout = items[3].callout_html()
    assert "verdict-not-reproduced" in callout and "our check FAILED" in callout
    bad = [claims_mod.Claim("C5", "x", "§", 1, "t", "fails", False, "check")]
    assert "1 fail" in re.sub(r"<[^>]+>", "", claims_mod.summary_html(items + bad))


@pytest.mark.parametrize(("fields", "message"), [
    ({}, "claim C9: kind None is not one of"),
    ({"kind": "proof"}, "claim C9: kind 'proof' is not one of"),
    ({"kind": "evidence", "ours": "1"}, "claim C9: evidence needs 'paper'"),
    ({"kind": "evidence", "paper": "Fig. 1: 1"}, "claim C9: evidence needs 'ours'"),
    ({**EV, "verdict": "partly"}, "claim C9: verdict 'partly' needs a reason"),
    ({**EV, "verdict": "partly", "reason": "bad luck"}, "needs a reason, one of"),
    ({**EV, "reason": "differs"}, "a reproduced claim takes no reason"),
    ({"kind": "check", "verdict": "reproduced"}, "claim C9: a check passes or fails"),
    ({"kind": "construction", "reason": "setting"}, "claim C9: a construction takes no reason"),
])
def test_claim_schema_refuses_a_broken_record(run, fields, message):
    """Issue 42: a missing or unknown kind, evidence without the paper's value or ours, a verdict
    other than reproduced without a coded reason, and a check with a verdict about the paper are
    errors naming the claim, and nothing is recorded."""
    with pytest.raises(claims_mod.ClaimError, match=re.escape(message)):
        run.claim("C9", "s", "src", 1, "tol", passed=True, **fields)
    assert strict_json((run.dir / "claims.json").read_text()) == []
    run.claim("C9", "s", "src", 1, "tol", passed=False, kind="check")
    assert run.claims.items[0].verdict == "fails"


def test_every_chapter_has_its_report():
    """Issue 42: each chapter's package holds its findings (one row per figure, table or number of
    the paper, an outcome of OUTCOMES) and its summary; a finding names ours or is 'not run'."""
    from rnnbook import report
    for chapter in paths.chapters():
        module = report.chapter_report(chapter)
        assert all(f.item and f.shows for f in module.FINDINGS), chapter
        assert all(getattr(module.SUMMARY, k).strip() for k in ("read", "easy", "hard", "full_cost"))
    with pytest.raises(report.ReportError, match="'Fig. 9'.*not one of"):
        report.Finding("Fig. 9", "x", "F1", "roughly")
    with pytest.raises(report.ReportError, match="'not run' exactly when"):
        report.Finding("Fig. 9", "x", "", "same")


def test_findings_table_and_summary_box():
    from rnnbook import report
    findings = [report.Finding("Fig. 2", "a | b", "F2, C3", "same", "fine"),
                report.Finding("Table 1", "8.7 nats", "", "not run"),
                report.Finding("Fig. 9", "x", "F9", "shape only")]
    myst = report.findings_myst("demo", findings, {"F2"}, {"C3"})
    assert myst.startswith("::::{list-table} Findings: the paper's figures and numbers beside ours "
                           "(1 same, 1 shape only, 1 not run)\n:header-rows: 1")
    assert "{numref}`Fig. %s (F2) <fig-demo-F2>`, <a href=\"#claim-C3\">C3</a>" in myst
    assert "F9 (not made in this run)" in myst and myst.rstrip().endswith("::::")
    assert report.unknown_names(findings, {"F2"}, {"C3"}) == ["F9"]
    ev = {"kind": "evidence", "paper": "Fig. 2: 0.3", "ours": "0.31"}
    items = [claims_mod.Claim("C1", "s", "§", 1, "t", "reproduced", True, **ev),
             claims_mod.Claim("C2", "s", "§", 1, "t", "partly", True, **ev, reason="not-at-scale"),
             claims_mod.Claim("C3", "s", "§", 1, "t", "passes", True, "check")]
    box = report.summary_box_html(report.Summary("the text", "easy <b>", "hard", "about 2 h (an "
                                                 "estimate)"), items, findings, "quick", "cpu", 90)
    text = re.sub(r"<[^>]+>", " ", box)
    for part in ("Reproduction summary", "2 claims of the paper tested on our runs (C1, C2), 1 check or construction of ours",
                 "3 of the paper's figures", "1.5 min on cpu", "about 2 h (an estimate)",
                 "C2 (partly; the quick scale cannot show it (the full profile can))", "easy &lt;b&gt;"):
        assert part in text, part


def test_show_code_is_a_collapsed_listing_named_after_its_functions():
    from rnnbook.display import code_markdown
    md = code_markdown(params.choice, params.integer)
    assert md.startswith(":::::{dropdown} The code: `choice`, `integer` (`rnnbook.params`, ")
    assert "````python\ndef choice(" in md and md.rstrip().endswith(":::::")
    assert '"""' not in md and "**`choice`**: `value` if it is one of `allowed`." in md  # docstring as text


def test_show_code_typesets_docstrings():
    from rnnbook.display import doc_markdown, source_without_docstring

    def f(x):
        """Eq. (2): :math:`\\frac{1}{x}` for ``x`` > 0 via :func:`~rnnbook.params.real`, not $5."""
        return 1 / x
    assert doc_markdown(f) == f"**`{f.__qualname__}`**" + ": Eq. (2): $\\frac{1}{x}$ for `x` > 0 via `real`, not \\$5."
    assert source_without_docstring(f) == "def f(x):\n    return 1 / x"


def test_gallery_card_text_keeps_math_whole():
    """A card's words: math as MathJax spans, escaped, never cut inside $...$."""
    span = '<span class="math notranslate nohighlight">\\({}\\)</span>'
    assert figures.card_text("Error $\\epsilon_q < 1$ & more") == \
        "Error " + span.format("\\epsilon_q &lt; 1") + " &amp; more"
    text = "x" * 130 + " $\\lambda_{\\max}$ and more"
    assert figures.card_text(text) == "x" * 130 + "…"  # the cut would split the math: before it
    assert figures.card_text("short") == "short"



def test_citation_file_names_the_book():
    """Issue 42: CITATION.cff carries the book's title, version and licences, and the preface's
    "How to cite" points to it with the same version."""
    import yaml
    root = paths.BOOK_ROOT
    cff = yaml.safe_load((root / "CITATION.cff").read_text())
    config = yaml.safe_load((root / "_config.yml").read_text())
    version = re.search(r'^version = "([^"]+)"', (root / "lib" / "pyproject.toml").read_text(), re.M)[1]
    assert cff["cff-version"] == "1.2.0" and cff["title"] == config["title"]
    assert cff["version"] == version and set(cff["license"]) == {"MIT", "CC-BY-4.0"}
    assert cff["authors"] == [{"name": config["author"]}] and cff["repository-code"].startswith("https://")
    intro = (root / "intro.md").read_text()
    assert "`CITATION.cff`" in intro and f"version      = {{{version}}}" in intro


def test_the_chapter_kernel_imports_this_library(tmp_path, monkeypatch):
    """A chapter's kernel (it starts in chapters/) gets this library's folder first on PYTHONPATH, so
    a run from a git worktree whose venv holds an editable install of another checkout, or with a
    relative PYTHONPATH=lib, still computes with the worktree's code; the caller's path follows."""
    import papermill

    seen = {}

    def stop(*args, **kwargs):
        seen["PYTHONPATH"] = execute.os.environ["PYTHONPATH"]
        raise RuntimeError("stopped before the kernel")

    monkeypatch.setenv("PYTHONPATH", "lib")
    monkeypatch.setattr(papermill, "execute_notebook", stop)
    with pytest.raises(RuntimeError, match="stopped"):
        execute.execute_chapter("learning_dynamics", {"profile": "quick"}, tmp_path, quiet=True)
    first, rest = seen["PYTHONPATH"].split(execute.os.pathsep)
    assert Path(first) == Path(rnnbook.__file__).resolve().parents[1] and rest == "lib"
    assert execute.os.environ["PYTHONPATH"] == "lib"  # restored after the run


def test_a_wide_figure_keeps_its_text_legible_on_the_page():
    """A figure of three columns (12 in wide) drawn in ``wide_style`` keeps the book's smallest text
    (MIN_TEXT_PX) where the default tick labels would fall below it; the style is restored after."""
    figures.use_style()
    before = plt.rcParams["xtick.labelsize"]
    with figures.wide_style():
        fig, axs = plt.subplots(1, 3, figsize=(12, 4))
        for ax in axs:
            ax.plot([0, 1], [0, 1], label="a")
            ax.legend()
        assert figures.smallest_text_px(fig) >= figures.MIN_TEXT_PX
    plt.close(fig)
    assert plt.rcParams["xtick.labelsize"] == before
    assert before * figures.COLUMN_PX / (72 * 12) < figures.MIN_TEXT_PX  # the default would not
