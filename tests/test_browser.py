"""The built book as a reader meets it: every page of ``_build/html`` opened in headless Chromium.

Asserted on every page, in the live page after MathJax has typeset it: math is typeset (every Sphinx
math element holds MathJax output, no raw ``\\(``, ``\\[``, ``$$``, ``$x_1$`` or ``$d$`` text left
(a glued Markdown value pasted as CommonMark, ``{glue:md}`key``` without ``:myst``, leaves its math
so), no MathJax error), every image has loaded and decoded with a non-zero natural size (checked by
the browser itself through the DevTools protocol, so data URIs, PNG and SVG files are all covered),
no cell shows an error, traceback or stderr, no request leaves the machine, the page does not scroll
sideways, and every link into the book resolves (the file exists, and so does the ``#anchor`` in
it). On chapter pages also: the claims table has rows, and every figure has a caption and links to
its PNG and SVG files. A screenshot of every page's first screen goes to ``_build/screenshots/`` for
people to look at; ``RNNBOOK_SCREENSHOTS=whole`` takes chapter pages whole, as 1280 x 1600 tiles
``<page>-NN.png`` (about 150 tiles: 36 s against 21 s for the whole test, 4 December 2026).

The book is built only if ``_build/html`` is not up to date with the sources
(:func:`rnnbook.execute.build_book` reusing the executions of ``tests/test_chapters.py``, which
``make test`` runs first); ``RNNBOOK_BROWSER_REUSE=1`` checks whatever build is there.
Skipped, saying why, only where no Chromium is installed (``.ci/run`` installs Debian's).
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rnnbook import execute
from rnnbook.claims import VERDICTS
from rnnbook.paths import BUILD_DIR

HTML = execute.HTML_DIR
SHOTS = BUILD_DIR / "screenshots"
WIDTH, HEIGHT = 1280, 1600
MAX_TILES = 60
SCREENSHOTS = os.environ.get("RNNBOOK_SCREENSHOTS") or "first"
if SCREENSHOTS not in ("first", "whole"):
    raise ValueError(f"RNNBOOK_SCREENSHOTS={SCREENSHOTS!r}: allowed values are 'first' (each "
                     "page's first screen, the default) and 'whole' (chapter pages whole)")
BROWSERS = 2
CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser",
                                                       "google-chrome")) if p), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
         f"--window-size={WIDTH},{HEIGHT}"]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (.ci/run installs "
                                "Debian's: apt-get install -y chromium)")

# Runs in the page once it has loaded: waits for MathJax and for every image, then reports.
CHECK_JS = r"""
(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.allSettled(imgs.map(i => i.decode()));
  const main = document.querySelector('main') || document.body;
  const skip = 'script, style, pre, code, textarea, mjx-container, .highlight';
  const raw = [];
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement.closest(skip)) continue;
    const t = n.textContent;
    if (/\\\(|\\\[|\$\$|\\begin\{|\$[^$\s](?:[^$\n]*[^$\s])?\$/.test(t)) raw.push(t.trim().slice(0, 120));
  }
  const text = e => e.textContent.trim().replace(/\s+/g, ' ').slice(0, 200);
  return {
    math: document.querySelectorAll('.math').length,
    untypeset: [...document.querySelectorAll('.math')].filter(e => !e.querySelector('mjx-container')).map(text),
    merror: [...document.querySelectorAll('mjx-merror')].map(e => e.getAttribute('data-mjx-error') || text(e)),
    raw_math: raw,
    images: imgs.length,
    bad_images: imgs.filter(i => !i.complete || !i.naturalWidth || !i.naturalHeight)
                    .map(i => (i.getAttribute('src') || '').slice(0, 100)),
    errors: [...main.querySelectorAll('.output.traceback, .output.error, .output.stderr')].map(text),
    traceback: main.innerText.includes('Traceback (most recent call last)'),
    claims_rows: document.querySelectorAll('.claims-table tbody tr').length,
    claims: [...main.querySelectorAll('.claims-table:not(.rnnbook-full-results) tbody tr:not(.claim-group)')].map(
      tr => [text(tr.cells[0]), text(tr.cells[tr.cells.length - 1].querySelector('.verdict-badge')),
             tr.classList.contains('claim-kind-evidence')]),
    long_cells: [...main.querySelectorAll('.claims-table td')].map(td => {
      const c = td.cloneNode(true);  // a collapsed <details> shows its summary, not the rest
      c.querySelectorAll('details').forEach(d => d.replaceWith(d.querySelector('summary') || ''));
      return c.textContent.trim().replace(/\s+/g, ' ');
    }).filter(t => t.length > 120).map(t => t.slice(0, 80)),
    verdict_boxes: [...main.querySelectorAll('.verdict-box')].map(
      b => [...b.querySelectorAll('.verdict-badge')].map(text)),
    scorecard: [...main.querySelectorAll('.verdict-summary')].map(
      e => [text(e.querySelector('.evidence-line')), e.querySelector('.checks-line') ? text(e.querySelector('.checks-line')) : '']),
    summary_boxes: [...main.querySelectorAll('.summary-box dt')].map(text),
    findings_rows: main.querySelectorAll('table.rnnbook-findings tbody tr').length,
    findings_first: (() => {
      const f = main.querySelector('table.rnnbook-findings');
      const c = main.querySelector('.claims-table:not(.rnnbook-full-results)');
      return !!(f && c && (f.compareDocumentPosition(c) & Node.DOCUMENT_POSITION_FOLLOWING));
    })(),
    figures: [...main.querySelectorAll('figure')].map(f => ({
      id: f.id, caption: f.querySelector('figcaption') ? text(f.querySelector('figcaption')) : '',
      files: [...f.querySelectorAll('a.rnnbook-figure-file')].map(a => a.getAttribute('href'))})),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    sideways: document.documentElement.scrollWidth - document.documentElement.clientWidth,
    wide_math: [...main.querySelectorAll('mjx-container[display="true"]')]
                 .filter(e => e.scrollWidth > e.clientWidth + 2).map(text),
    height: document.documentElement.scrollHeight,
  };
})()
"""


def _high_fd(fd: int) -> int:
    """``fd`` moved to a number above 9, clear of the 3 and 4 that Chromium's pipe uses."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Chromium:
    """Headless Chromium driven through the DevTools protocol over a pipe (no client library)."""

    def __init__(self, profile_dir: str):
        to_r, self._to_w = map(_high_fd, os.pipe())
        self._from_r, from_w = map(_high_fd, os.pipe())
        # Chromium reads commands from fd 3 and writes replies and events to fd 4.
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{to_r} 4>&{from_w} {to_r}<&- {from_w}>&-', "chromium",
             CHROMIUM, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile_dir}",
             "about:blank"], pass_fds=(to_r, from_w), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._next = 0
        self._replies: dict[int, dict] = {}
        self._events: queue.Queue = queue.Queue()
        self._cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        with os.fdopen(self._from_r, "rb", buffering=0) as f:
            while chunk := f.read(1 << 16):
                buf += chunk
                *messages, buf = buf.split(b"\0")
                for raw in messages:
                    msg = json.loads(raw)
                    if "id" in msg:
                        with self._cv:
                            self._replies[msg["id"]] = msg
                            self._cv.notify_all()
                    else:
                        self._events.put(msg)

    def send(self, method: str, session: str | None = None, timeout: float = 120, **params):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        with self._cv:
            if not self._cv.wait_for(lambda: self._next in self._replies, timeout):
                raise TimeoutError(f"Chromium did not answer {method} in {timeout} s")
            reply = self._replies.pop(self._next)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def events(self):
        while True:
            try:
                yield self._events.get_nowait()
            except queue.Empty:
                return

    def wait_event(self, method: str, session: str, timeout: float = 120) -> list[dict]:
        """Wait for ``method`` on ``session``; return it and every event before it."""
        seen, end = [], time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                msg = self._events.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(msg)
            if msg.get("method") == method and msg.get("sessionId") == session:
                return seen
        raise TimeoutError(f"no {method} in {timeout} s")

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except Exception:  # noqa: BLE001 -- closing anyway
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)


class Page:
    """One tab: load a URL, run :data:`CHECK_JS`, take screenshots."""

    def __init__(self, browser: Chromium):
        self.b = browser
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        self.s = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for method in ("Page.enable", "Network.enable", "Runtime.enable"):
            browser.send(method, self.s)
        browser.send("Emulation.setDeviceMetricsOverride", self.s, width=WIDTH, height=HEIGHT,
                     deviceScaleFactor=1, mobile=False)

    def load(self, url: str) -> tuple[dict, list[str]]:
        """Open ``url``; return the page report and the URLs it requested off the machine."""
        list(self.b.events())
        self.b.send("Page.navigate", self.s, url=url)
        seen = self.b.wait_event("Page.loadEventFired", self.s)
        report = self.b.send("Runtime.evaluate", self.s, expression=CHECK_JS, awaitPromise=True,
                             returnByValue=True, timeout=120)
        if "exceptionDetails" in report:
            raise RuntimeError(f"{url}: {report['exceptionDetails']}")
        seen += list(self.b.events())
        remote = [m["params"]["request"]["url"] for m in seen
                  if m.get("method") == "Network.requestWillBeSent" and m.get("sessionId") == self.s
                  and urllib.parse.urlsplit(m["params"]["request"]["url"]).scheme
                  not in ("file", "data", "blob", "about")]
        return report["result"]["value"], remote

    def screenshot(self, path: Path, y: int = 0) -> None:
        """The window scrolled to ``y`` (the last tile of a page ends at the page's end)."""
        self.b.send("Runtime.evaluate", self.s, expression=f"window.scrollTo(0, {y})")
        shot = self.b.send("Page.captureScreenshot", self.s, format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(v for k, v in attrs if k in ("id", "name") and v)


def ids_of(path: Path, _cache: dict = {}) -> set[str]:  # noqa: B006 -- a per-run memo
    if path not in _cache:
        parser = _Ids()
        parser.feed(path.read_text(errors="replace"))
        _cache[path] = parser.ids
    return _cache[path]


def broken_links(links: list[str]) -> list[str]:
    """The links into the book (file URLs) whose file or ``#anchor`` does not exist."""
    broken = []
    for href in links:
        url = urllib.parse.urlsplit(href)
        if url.scheme != "file":
            continue
        path = Path(urllib.parse.unquote(url.path))
        if not path.exists():
            broken.append(href)
        elif url.fragment and path.suffix == ".html" \
                and urllib.parse.unquote(url.fragment) not in ids_of(path):
            broken.append(href)
    return broken


def pages() -> list[Path]:
    """Every page of the build, less redirect stubs (``index.html``: its target is a page too)."""
    return sorted(p for p in HTML.rglob("*.html")
                  if not {"_static", "_sources", "_images", "_figures"} & set(p.relative_to(HTML).parts)
                  and 'http-equiv="Refresh"' not in p.read_text(errors="replace")[:2000])


@pytest.fixture(scope="module")
def book():
    """``_build/html`` up to date with the sources (built with no network where possible)."""
    if os.environ.get("RNNBOOK_BROWSER_REUSE") not in (None, "", "0"):
        assert (HTML / "index.html").exists(), "RNNBOOK_BROWSER_REUSE=1 but _build/html is empty"
        return
    execute.build_book(offline=execute.offline_prefix() is not None, if_stale=True)


def visit(browser: Chromium, paths: list[Path]) -> dict[str, tuple[dict, list[str]]]:
    """Open ``paths`` one after another in one tab of ``browser``: their reports and screenshots."""
    page, out = Page(browser), {}
    for path in paths:
        rel = path.relative_to(HTML).as_posix()
        report, remote = page.load(path.as_uri())
        out[rel] = (report, remote)
        stem = rel.removesuffix(".html").replace("/", "-")
        if rel.startswith("chapters/") and SCREENSHOTS == "whole":
            tiles = min(MAX_TILES, -(-report["height"] // HEIGHT))
            for i in range(tiles):
                page.screenshot(SHOTS / f"{stem}-{i + 1:02d}.png", i * HEIGHT)
        else:
            page.screenshot(SHOTS / f"{stem}.png")
    return out


@pytest.fixture(scope="module")
def reports(book):
    """Every page opened once: {page path relative to the build: (report, off-machine requests)}.
    Two browsers share the pages (largest first, alternately), each in its own thread: one
    Chromium renders on about one core."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for old in SHOTS.glob("*.png"):
        old.unlink()
    by_size = sorted(pages(), key=lambda p: -p.stat().st_size)
    groups = [by_size[i::BROWSERS] for i in range(BROWSERS)]
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="rnnbook-chromium-") as profile, \
            ThreadPoolExecutor(BROWSERS) as pool:
        browsers = [Chromium(f"{profile}/{i}") for i in range(BROWSERS)]
        try:
            for part in pool.map(visit, browsers, groups):
                out.update(part)
        finally:
            for browser in browsers:
                browser.close()
    return dict(sorted(out.items()))


def test_every_page_opened(reports):
    names = set(reports)
    assert "intro.html" in names
    assert any(n.startswith("chapters/") for n in names), "no chapter page was built"


def test_math_is_typeset(reports):
    for page, (r, _) in reports.items():
        assert not r["untypeset"], f"{page}: math left untypeset: {r['untypeset'][:3]}"
        assert not r["merror"], f"{page}: MathJax errors: {r['merror'][:3]}"
        assert not r["raw_math"], f"{page}: raw TeX shown as text: {r['raw_math'][:3]}"
    assert any(r["math"] for r, _ in reports.values()), "no page has any math: is MathJax loaded?"


def test_every_image_loads(reports):
    for page, (r, _) in reports.items():
        assert not r["bad_images"], f"{page}: images that did not load: {r['bad_images']}"
    for page, (r, _) in reports.items():
        if page.startswith("chapters/"):
            assert r["images"] > 0, f"{page} shows no image"


def test_no_cell_shows_an_error(reports):
    for page, (r, _) in reports.items():
        assert not r["errors"], f"{page}: error or stderr output: {r['errors'][:2]}"
        assert not r["traceback"], f"{page} shows a traceback"


def test_claims_table_on_every_chapter(reports):
    for page, (r, _) in reports.items():
        if page.startswith("chapters/"):
            assert r["claims_rows"] > 0, f"{page}: no claims table"




def verdict_groups(claims: list[list], evidence: bool = True) -> dict[str, list[str]]:
    """The ids of a page's evidence (or other) claims under each verdict (the badge of its last
    cell), in the table's order."""
    groups = {v: [cid for cid, badge, ev in claims if badge == v and ev == evidence] for v in VERDICTS}
    return {v: ids for v, ids in groups.items() if ids}


def test_every_chapter_opens_with_its_verdicts(reports):
    """The verdict box at the top of each chapter says what its claims table says of the evidence
    (a failed check or construction adds its own badge)."""
    for page, (r, _) in reports.items():
        if page.startswith("chapters/"):
            groups = verdict_groups(r["claims"])
            fails = verdict_groups(r["claims"], evidence=False).get("fails", [])
            assert r["verdict_boxes"] == [[f"{v} ({len(ids)})" for v, ids in groups.items()]
                                          + ([f"{len(fails)} fail"] if fails else [])], page


def test_every_chapter_shows_its_summary_and_findings(reports):
    """Issue 42: a reproduction summary near the top of each chapter, and its findings table (the
    paper's figures and numbers beside ours) before its claims table."""
    for page, (r, _) in reports.items():
        if page.startswith("chapters/"):
            assert r["summary_boxes"] == ["Scope", "What we read", "What was easy", "What was hard",
                                          "Compute", "What differs, and why"], page
            assert r["findings_rows"] > 0 and r["findings_first"], page


def test_claims_tables_show_short_cells(reports):
    """A claims-table cell shows at most a headline; a long record sits in a collapsed
    <details> (statements and tolerances may take two or three lines)."""
    for page, (r, _) in reports.items():
        assert not r["long_cells"], f"{page}: long claims-table cells: {r['long_cells'][:3]}"


def test_preface_scorecard_agrees_with_every_chapter(reports):
    """The preface's scorecard has one line per chapter, generated from the same claims."""
    chapters = sorted(p for p in reports if p.startswith("chapters/"))
    (intro,) = [r for p, (r, _) in reports.items() if p in ("intro.html", "index.html") and r["scorecard"]]
    assert len(intro["scorecard"]) == len(chapters)
    for line, page in zip(intro["scorecard"], ("extrapolation", "learning_dynamics", "stable_models",
                                                "curse_of_memory", "synthesis")):
        claims = reports[f"chapters/{page}.html"][0]["claims"]
        badges = " ".join(f"{len(ids)} {v} ({', '.join(ids)})" for v, ids in verdict_groups(claims).items())
        evidence = sum(ev for _, _, ev in claims)
        assert line[0] == f"{evidence} claims of the paper tested (quick profile): {badges}", page
        passing = verdict_groups(claims, evidence=False).get("passes", [])
        assert not passing or line[1].startswith(f"{len(passing)} check"), page


def test_figures_have_captions_and_files(reports):
    for page, (r, _) in reports.items():
        if not page.startswith("chapters/"):
            continue
        assert r["figures"], f"{page} has no figure"
        for fig in r["figures"]:
            assert fig["caption"], f"{page}: figure {fig['id']} has no caption"
            exts = sorted("".join(Path(h).suffixes[-2:]) for h in fig["files"])
            assert exts in ([".outline.svg", ".png", ".svg"], [".png", ".svg"]), \
                f"{page}: figure {fig['id']} links files {fig['files']}"
        files = [h for fig in r["figures"] for h in fig["files"]]
        shared = sorted({h for h in files if files.count(h) > 1})
        assert not shared, f"{page}: two figures link the same files {shared}"


def test_internal_links_resolve(reports):
    for page, (r, _) in reports.items():
        broken = broken_links(r["links"])
        assert not broken, f"{page}: broken links: {broken[:5]}"


def test_nothing_requested_off_the_machine(reports):
    for page, (_, remote) in reports.items():
        assert not remote, f"{page} requests {remote[:3]}: it would not render offline"


def test_no_page_scrolls_sideways(reports):
    for page, (r, _) in reports.items():
        assert r["sideways"] <= 1, f"{page} is {r['sideways']} px wider than the window"


def test_display_math_fits(reports):
    """No display equation is wider than the text column (it would be cut off or scroll)."""
    for page, (r, _) in reports.items():
        assert not r["wide_math"], f"{page}: equations wider than the column: {r['wide_math'][:3]}"


def test_screenshots_saved(reports):
    for page in reports:
        stem = page.removesuffix(".html").replace("/", "-")
        shots = list(SHOTS.glob(f"{stem}*.png"))
        assert shots and all(s.stat().st_size > 1000 for s in shots), f"no screenshot of {page}"


def test_broken_links_are_found(tmp_path):
    """The link checker itself: a missing file and a missing anchor are reported."""
    page = tmp_path / "a.html"
    page.write_text('<h1 id="top">x</h1>')
    links = [page.as_uri() + "#top", page.as_uri() + "#nowhere", (tmp_path / "b.html").as_uri(),
             "https://example.org/x"]
    assert broken_links(links) == links[1:3]


def test_execution_table_says_yes_not_emoji(reports):
    """The execution-statistics table's status reads as a word (an emoji glyph shows as an empty
    box where no emoji font is installed)."""
    page = (HTML / "execution_statistics.html").read_text()
    assert "✅" not in page and "❌" not in page and ">yes<" in page


# The contrast (WCAG 2) of every text of the verdict box, the summary box and the claims table
# against the background it is drawn on, in the theme the page is switched to.
CONTRAST_JS = r"""
((theme) => {
  document.documentElement.dataset.theme = theme;
  document.documentElement.dataset.mode = theme;
  const rgb = c => c.match(/[\d.]+/g).map(Number);
  const lum = c => { const [r, g, b] = rgb(c).slice(0, 3).map(x => { x /= 255;
    return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const back = e => { for (; e; e = e.parentElement) { const c = getComputedStyle(e).backgroundColor;
    const v = rgb(c); if (v.length < 4 || v[3] > 0.5) return c; }
    return theme === 'dark' ? 'rgb(0, 0, 0)' : 'rgb(255, 255, 255)'; };
  const ratio = e => { const a = lum(getComputedStyle(e).color), b = lum(back(e));
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); };
  const out = [];
  for (const e of document.querySelectorAll('.verdict-box *, .summary-box *, .claims-table *')) {
    const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (own && e.getClientRects().length) out.push([ratio(e), e.className || e.tagName, e.textContent.trim().slice(0, 40)]);
  }
  return {background: getComputedStyle(document.body).backgroundColor, texts: out};
})
"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_verdict_box_and_claims_table_readable_in_both_themes(book, theme):
    """Issue 42: under the theme's dark toggle (html[data-theme=dark]) as in the light theme, every
    text of a chapter's verdict box, summary box and claims table keeps a contrast of at least
    4.5:1 (WCAG AA) against its background."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rnnbook-chromium-") as profile:
        browser = Chromium(profile)
        try:
            page = Page(browser)
            page.load((HTML / "chapters" / "extrapolation.html").as_uri())
            got = browser.send("Runtime.evaluate", page.s, expression=f"{CONTRAST_JS}({theme!r})",
                               returnByValue=True)["result"]["value"]
            page.screenshot(SHOTS / f"theme-{theme}-extrapolation.png")
        finally:
            browser.close()
    dark = sum(map(int, got["background"].strip("rgba()").split(",")[:3])) < 3 * 80
    assert dark == (theme == "dark"), got["background"]  # the toggle took
    assert len(got["texts"]) > 20
    low = [t for t in got["texts"] if t[0] < 4.5]
    assert not low, f"{theme}: low-contrast texts (ratio, class, text): {low[:5]}"
