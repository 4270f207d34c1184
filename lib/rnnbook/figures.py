"""The book's figure style and export (all chapters).

:func:`save_figure` writes ``<name>.png`` (200 dpi), ``<name>.svg`` and ``<name>.outline.svg`` (text
drawn as paths; not in a smoke run, whose figures are never shown) with stable names and metadata (title, caption, profile, commit), records the
caption in ``figures.json`` beside them and shows the figure in the book as a numbered MyST figure
labelled ``fig-<chapter>-<name>`` (cite it with ``{numref}`fig-<chapter>-<name>```). Loaded as a
Sphinx extension, this module links every figure of the book to its files.
"""
from __future__ import annotations

import base64
import datetime
import gc
import hashlib
import html
import json
import posixpath
import re
import shutil
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

from rnnbook import paths as rnnbook_paths
from rnnbook.claims import atomic_write
from rnnbook.report import findings_for

DPI = 200
# Okabe-Ito: distinguishable with colour-vision deficiencies and in greyscale print.
COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "figure.constrained_layout.use": True,
    "font.size": 13,
    "axes.titlesize": 13,
    "axes.labelsize": 13,
    "legend.fontsize": 11,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "lines.linewidth": 2.0,
    "lines.markersize": 6,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": matplotlib.cycler(color=COLORS),
    "legend.frameon": False,
    "svg.hashsalt": "rnnbook",  # stable ids inside the SVG
    "svg.fonttype": "none",  # text stays text (editable, searchable)
}
# a figure's files: format -> file suffix. "outline": the SVG with its text drawn as paths, which
# looks the same on a machine without the book's fonts (DejaVu Sans); the plain SVG keeps its text
# editable and searchable. Full results committed before the outline existed have only PNG and SVG.
FORMATS = {"png": "png", "svg": "svg", "outline": "outline.svg"}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
COLUMN_PX = 700  # the book's text column, which every figure fills (``:width: 100%``)
MIN_TEXT_PX = 9.0  # the smallest text a reader should meet in a figure on the page, in pixels


# a figure twice the default width or more (several panels across): larger tick and legend text,
# so that it keeps MIN_TEXT_PX once scaled down to the text column
WIDE = {"axes.titlesize": 14, "xtick.labelsize": 12, "ytick.labelsize": 12, "legend.fontsize": 12}


def use_style() -> None:
    """Apply the house style (readable at talk size)."""
    matplotlib.rcParams.update(STYLE)


def wide_style():
    """The house style for a wide figure (:data:`WIDE`), as a context to draw it in."""
    return matplotlib.rc_context(STYLE | WIDE)


def smallest_text_px(fig: plt.Figure, column_px: float = COLUMN_PX) -> float:
    """The height in screen pixels of the smallest visible text of ``fig`` when it fills a text
    column ``column_px`` wide: a point is ``column_px / (72 · width in inches)`` pixels there, so a
    wide figure needs larger fonts to stay legible on the page. Tick labels exist only once the
    figure has been drawn (saved, or ``fig.canvas.draw()``)."""
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
             if t.get_visible() and t.get_text().strip()]
    return min(sizes) * column_px / (72 * fig.get_figwidth()) if sizes else float("inf")


def figure_files(folder: Path, name: str) -> dict[str, Path]:
    """The files of figure ``name`` in ``folder``, by format (:data:`FORMATS`)."""
    return {fmt: folder / f"{name}.{suffix}" for fmt, suffix in FORMATS.items()}


def label(chapter: str, name: str) -> str:
    """The figure's cross-reference label."""
    return f"fig-{chapter}-{name}"


def save_figure(fig: plt.Figure, name: str, caption: str, figures_dir: Path, chapter: str,
                show: bool = True, provenance: dict | None = None, outline: bool = True
                ) -> dict[str, Path]:
    """Export ``fig`` as PNG, SVG and outline SVG (:data:`FORMATS`; without ``outline`` the last
    is skipped, as a smoke run does) under ``figures_dir`` and show it with ``caption`` (MyST),
    which the book starts with the figure's name (the specification's id: "**F4.** ..."), so that
    a figure cited by its id is found on the page.

    The files are also stored by content under :data:`rnnbook.paths.FIGURE_STORE` with
    ``provenance`` (profile, seed, commit, date, ...), where the book build's extension
    (:func:`setup`) finds them to link each figure to its files."""
    if not NAME.match(name):
        raise ValueError(f"figure name {name!r} must match {NAME.pattern}")
    figures_dir.mkdir(parents=True, exist_ok=True)
    paths = figure_files(figures_dir, name)
    if not outline:
        del paths["outline"]
    title = f"{chapter} {name} (rnn-theory-book)"
    made = ", ".join(f"{k} {provenance[k]}" for k in ("profile", "commit") if k in (provenance or {}))
    with matplotlib.rc_context({"svg.hashsalt": STYLE["svg.hashsalt"]}):
        fig.savefig(paths["png"], dpi=DPI, metadata={"Software": None, "Title": title,
                                                     "Description": caption, "Source": made})
        # the SVGs keep the layout that the PNG's draw solved, rather than solving it again each
        # (about a third of an SVG's time for a multi-panel figure; 3 December 2026)
        fig.set_layout_engine("none")
        for fmt, fonttype in (("svg", "none"), ("outline", "path")):
            if fmt not in paths:
                continue
            with matplotlib.rc_context({"svg.fonttype": fonttype}):
                fig.savefig(paths[fmt], format="svg", metadata={
                    "Date": None, "Title": title, "Description": caption, "Source": made})
    _record(figures_dir / "figures.json", chapter, name, caption, smallest_text_px(fig), paths)
    key = store(paths, {"chapter": chapter, "name": name, "caption": caption, **(provenance or {})})
    plt.close(fig)
    if show:
        from IPython.display import Markdown, display
        display(Markdown(figure_myst(paths["png"], label(chapter, name), f"**{name}.** {caption}",
                                     key)))
    return paths


def figure_myst(png: Path, name: str, caption: str, key: str | None = None) -> str:
    """A MyST ``figure`` directive embedding ``png`` (self-contained: no path to resolve); ``key``
    names the figure's stored files (see :func:`store`)."""
    uri = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
    # alt text: words and plain punctuation only, as a directive option must parse (a leading
    # "|" or ">" would start a YAML block, "#" a comment), without MyST roles ({eq}`x` -> "eqx")
    plain = re.sub(r"\{[\w:-]+\}`[^`]*`", "", caption)
    alt = " ".join(re.sub(r"[^\w\s.,;:()'/=+-]", "", plain).split())[:200].lstrip("-:.,;'/=+ ")
    fence = "`" * max(4, 1 + max((len(m) for m in re.findall(r"`+", caption)), default=0))
    figclass = f":figclass: rnnbook-figure {KEY_CLASS}{key}\n" if key else ""
    return (f"{fence}{{figure}} {uri}\n:name: {name}\n:alt: {alt}\n:width: 100%\n{figclass}\n"
            f"{caption}\n{fence}\n")


def _record(manifest: Path, chapter: str, name: str, caption: str, text_px: float,
            paths: dict[str, Path]) -> None:
    entries = json.loads(manifest.read_text()) if manifest.exists() else {}
    entries[name] = {"chapter": chapter, "name": name, "caption": caption,
                     "files": [p.name for p in paths.values()], "smallest_text_px": round(text_px, 1)}
    atomic_write(manifest, json.dumps(entries, indent=2).encode())


# ------------------------------------------------------------ figure files in the book (all chapters)

KEY_CLASS = "rnnbook-key-"  # figure class carrying the key of its stored files
FIGURES_URL = "_figures"  # the figure files' folder in the HTML build: _figures/<chapter>/<name>.*


def store(paths: dict[str, Path], record: dict) -> str:
    """Keep copies of a figure's files (those of ``paths`` that exist), and its ``record``, in the figure store under a key
    made from all three; return the key. Runs never collide, and a figure drawn the same by two
    runs (a quick and a full one) keeps each run's record."""
    blobs = {fmt: p.read_bytes() for fmt, p in paths.items() if p.exists()}
    meta = json.dumps(record, indent=2, sort_keys=True).encode()
    key = hashlib.sha256(b"\0".join([*blobs.values(), meta])).hexdigest()[:20]
    root = rnnbook_paths.FIGURE_STORE
    for fmt, blob in blobs.items():
        if not (root / f"{key}.{fmt}").exists():
            atomic_write(root / f"{key}.{fmt}", blob)
    atomic_write(root / f"{key}.json", meta)
    return key


def provenance(profile: str, seed: int, device: str) -> dict:
    """How a figure was made: the run's profile, seed and device, the book's commit, the library's
    code version and the date (UTC)."""
    return {"profile": profile, "seed": seed, "device": device,
            "commit": rnnbook_paths.git_commit(), "code_version": rnnbook_paths.code_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}


def paper_of(source: str, bib: str) -> str:
    """The paper a chapter re-derives: its first ``{cite:t}`` key, with authors, year and title
    from ``references.bib`` (the key alone if the entry is not found)."""
    m = re.search(r"\{cite:t\}`([^`]+)`", source)
    if not m:
        return ""
    key = m.group(1).split(",")[0].strip()
    entry = re.search(r"@\w+\{\s*" + re.escape(key) + r"\s*,(.*?)\n\}", bib, re.S)
    if not entry:
        return key

    def field(name: str) -> str:
        f = re.search(rf"\b{name}\s*=\s*[{{\"](.*?)[}}\"]\s*,?\s*(?:\n|$)", entry.group(1), re.S)
        return " ".join(f.group(1).replace("{", "").replace("}", "").split()) if f else ""
    return f"{field('author')} ({field('year')}). {field('title')}. [{key}]"


def _link_figures(app, doctree, docname: str) -> None:
    """Sphinx ``doctree-resolved``: copy each stored figure of ``docname`` to
    ``_figures/<chapter>/<chapter>-<name>.{png,svg,outline.svg}`` in the HTML build (self-describing names),
    show the image from that file, link both files under the caption, and write
    ``_figures/<chapter>/figures.json``."""
    from docutils import nodes
    from sphinx.util import logging

    if app.builder.format != "html":
        return
    log = logging.getLogger(__name__)
    here = posixpath.dirname(app.builder.get_target_uri(docname))
    entries, paper = [], None
    for fig in doctree.findall(nodes.figure):
        key = next((c[len(KEY_CLASS):] for c in fig["classes"] if c.startswith(KEY_CLASS)), None)
        if key is None:
            continue
        root = rnnbook_paths.FIGURE_STORE
        if not all((root / f"{key}.{x}").exists() for x in ("png", "svg", "json")):
            log.warning(f"figure files {key} of {docname} are not in {root}: execute the chapter "
                        "again (make clean book)", location=fig)
            continue
        record = json.loads((root / f"{key}.json").read_text())
        chapter, name = record["chapter"], record["name"]
        if paper is None:
            paper = paper_of(Path(app.env.doc2path(docname)).read_text(),
                             (Path(app.srcdir) / "references.bib").read_text()
                             if (Path(app.srcdir) / "references.bib").exists() else "")
        out = Path(app.outdir) / FIGURES_URL / chapter
        if not entries:
            shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True, exist_ok=True)
        urls, stem = {}, f"{chapter}-{name}"  # a downloaded file says where it comes from
        for fmt, suffix in FORMATS.items():
            if (root / f"{key}.{fmt}").exists():
                shutil.copyfile(root / f"{key}.{fmt}", out / f"{stem}.{suffix}")
                urls[fmt] = posixpath.relpath(f"{FIGURES_URL}/{chapter}/{stem}.{suffix}", here or ".")
        for image in fig.findall(nodes.image):
            image["uri"] = urls["png"]
        links = nodes.paragraph(classes=["rnnbook-figure-files"])
        links += nodes.Text("Files: ")
        links += nodes.reference("", f"PNG ({DPI} dpi)", refuri=urls["png"],
                                 classes=["rnnbook-figure-file"])
        links += nodes.Text(" · ")
        links += nodes.reference("", "SVG", refuri=urls["svg"], classes=["rnnbook-figure-file"])
        if "outline" in urls:
            links += nodes.Text(" · ")
            links += nodes.reference("", "SVG, text as outlines", refuri=urls["outline"],
                                     classes=["rnnbook-figure-file"])
        if "profile" in record:
            seed = f", seed {record['seed']}" if "seed" in record else ""
            given = ", ".join(f"{k} = {v}" for k, v in record.get("parameters", {}).items()
                              if k != "seed")
            seed += f" ({given})" if given else ""
            links += nodes.Text(f" — {record['profile']} profile{seed}, commit "
                                f"{record.get('commit')}, {record.get('date', '')[:10]}")
        legend = next(iter(fig.findall(nodes.legend)), None)
        if legend is None:
            legend = nodes.legend()
            fig += legend
        legend += links
        entries.append({**record, "paper": paper, "label": label(chapter, name),
                        "number": figure_number(app.env, docname, fig),
                        "caption_text": caption_text(fig), "redoes": papers_figures(record["caption"]),
                        "findings": findings_for(chapter, name.removesuffix("-full")),
                        "url": f"{app.builder.get_target_uri(docname)}#{anchor(fig)}",
                        "files": [posixpath.basename(u) for u in urls.values()]})
    if entries:
        atomic_write(Path(app.outdir) / FIGURES_URL / entries[0]["chapter"] / "figures.json",
                     json.dumps(entries, indent=2).encode())


def anchor(fig) -> str:
    """The HTML id of a figure node: Sphinx's normalised form of its label (lower case:
    ``fig-extrapolation-f1`` for the label ``fig-extrapolation-F1``), which links must use."""
    return fig["ids"][0]


def figure_number(env, docname: str, fig) -> str:
    """The book's number of a figure, chapter-scoped ("3.5"; ``_toc.yml`` numbers the chapters)."""
    ids = fig.get("ids") or [""]
    number = env.toc_fignumbers.get(docname, {}).get("figure", {}).get(ids[0], ())
    return ".".join(map(str, number))


def caption_text(fig) -> str:
    """A figure's caption as plain text, cross-references resolved ("Fig. 3.2", "Eq. (3.1)")."""
    from docutils import nodes
    caption = next(iter(fig.findall(nodes.caption)), None)
    return " ".join(caption.astext().split()) if caption is not None else ""


def papers_figures(caption: str) -> list[str]:
    """The paper's figures and tables a caption names ("Fig. 3A", "Table 1"): in the caption's
    MyST source, the book's own figures are ``{numref}`` roles, so a typed "Fig. X" is the paper's."""
    source = re.sub(r"\{[\w:-]+\}`[^`]*`", "", caption)
    found = re.findall(r"\b(Fig|Figure|Table)s?\.? ?([A-Z]?\d+[A-Za-z]?)\b", source)
    return list(dict.fromkeys(f"{'Table' if kind == 'Table' else 'Fig.'} {n}" for kind, n in found))


def _gallery_directive():
    """The ``rnnbook-gallery`` directive: a placeholder that :func:`_fill_gallery` replaces."""
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class Gallery(Directive):
        def run(self):
            return [nodes.container(classes=[GALLERY_CLASS])]
    return Gallery


GALLERY_CLASS = "rnnbook-gallery"


def _fill_gallery(app, doctree, docname: str) -> None:
    """Sphinx ``doctree-resolved``: fill the ``rnnbook-gallery`` placeholder with every figure of
    the numbered chapters, in the book's order: thumbnail, number, name and the caption's first
    words, each linking to the figure on its page."""
    from docutils import nodes

    holders = [n for n in doctree.findall(nodes.container) if GALLERY_CLASS in n["classes"]]
    if not holders or app.builder.format != "html":
        return
    env, here = app.env, posixpath.dirname(app.builder.get_target_uri(docname))
    chapters = sorted((d for d in env.toc_fignumbers if env.toc_fignumbers[d].get("figure")),
                      key=lambda d: min(env.toc_fignumbers[d]["figure"].values()))
    cards = []
    for doc in chapters:
        page = posixpath.relpath(app.builder.get_target_uri(doc), here or ".")
        for fig in env.get_doctree(doc).findall(nodes.figure):
            key = next((c[len(KEY_CLASS):] for c in fig["classes"] if c.startswith(KEY_CLASS)), None)
            meta = rnnbook_paths.FIGURE_STORE / f"{key}.json"
            if key is None or not meta.exists():
                continue
            record = json.loads(meta.read_text())
            chapter, name = record["chapter"], record["name"]
            png = posixpath.relpath(f"{FIGURES_URL}/{chapter}/{chapter}-{name}.png", here or ".")
            words = card_text(" ".join(_plain(env, record["caption"]).split()))
            redoes = "; ".join(f'{html.escape(f["paper"])} ({f["outcome"]})'
                               for f in findings_for(chapter, name.removesuffix("-full")))
            redoes = f'<span class="rnnbook-card-paper">the paper\'s {redoes}</span>' if redoes else ""
            cards.append(f'<a class="rnnbook-card" href="{page}#{anchor(fig)}">'
                         f'<img src="{png}" alt="{html.escape(name)}"><span><b>Fig. '
                         f'{figure_number(env, doc, fig)}</b> {html.escape(name)} · {words}</span>'
                         f'{redoes}</a>')
    for holder in holders:
        holder.replace_self(nodes.raw("", f'<div class="{GALLERY_CLASS}">{"".join(cards)}</div>',
                                      format="html"))


def card_text(caption: str, limit: int = 140) -> str:
    """A gallery card's words: the plain caption cut at ``limit`` characters (never inside
    ``$...$``), escaped, its inline math as MathJax spans (typeset as on the chapters' pages)."""
    if len(caption) > limit:
        cut = caption[:limit]
        cut = cut[:cut.rindex("$")] if cut.count("$") % 2 else cut
        caption = cut.rstrip() + "…"
    return "".join(html.escape(part) if i % 2 == 0 else
                   f'<span class="math notranslate nohighlight">\\({html.escape(part)}\\)</span>'
                   for i, part in enumerate(caption.split("$")))


def _plain(env, caption: str) -> str:
    """A caption's MyST source with its roles written out: ``{numref}`` as "Fig. 3.5", ``{cite}``
    as its key, other references (equations, pages) left out."""
    labels = env.domaindata["std"]["labels"]

    def role(m: re.Match) -> str:
        kind, target = m[1], m[2]
        if kind == "numref" and target.lower() in labels:  # Sphinx keeps labels lower-case
            target = target.lower()
            doc, ident = labels[target][:2]
            number = env.toc_fignumbers.get(doc, {}).get("figure", {}).get(ident)
            return f"Fig. {'.'.join(map(str, number))}" if number else ""
        return target if kind.startswith("cite") else ""
    return re.sub(r"\{([\w:-]+)\}`([^`]*)`", role, caption)


STATUS_WORDS = {"✅": "yes", "❌": "no"}  # myst-nb's execution-table glyphs: a box without an emoji font


def _plain_status(app, doctree, docname: str) -> None:
    """Sphinx ``doctree-resolved``: the execution-statistics table's status glyphs as words."""
    from docutils import nodes

    for text in list(doctree.findall(nodes.Text)):
        if str(text) in STATUS_WORDS:
            text.parent.replace(text, nodes.Text(STATUS_WORDS[str(text)]))


# The Sphinx build's collector thresholds (CPython's default: 700, 10, 10). Each {numref} unpickles
# its target page's whole doctree (Sphinx 7.4), and with the build's many live objects the default
# collector ran through them again and again: 101 unpickles took 8.0 s of a 24 s build; with these
# thresholds the build takes 15 s and writes the same HTML, byte for byte (4 December 2026).
SPHINX_GC = (300_000, 50, 1_000)


def setup(app) -> dict:
    """Sphinx extension (``_config.yml``: ``sphinx.extra_extensions: [rnnbook.figures]``): each
    figure of the book links to its files, copied into the HTML build; the ``rnnbook-gallery``
    directive shows all of them on one page; the execution table says "yes"/"no", not emoji.
    Also raises the build process's garbage-collection thresholds (:data:`SPHINX_GC`)."""
    gc.set_threshold(*SPHINX_GC)
    app.add_directive("rnnbook-gallery", _gallery_directive())
    app.set_html_assets_policy("always")  # MathJax on every page: the gallery's raw HTML has math
    app.connect("doctree-resolved", _link_figures)
    app.connect("doctree-resolved", _fill_gallery)
    app.connect("doctree-resolved", _plain_status)
    return {"parallel_read_safe": True, "parallel_write_safe": False}
