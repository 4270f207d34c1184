"""The book's figure style and export (all chapters).

:func:`save_figure` writes ``<name>.png`` (200 dpi) and ``<name>.svg`` with stable names, records the
caption in ``figures.json`` beside them and shows the figure in the book as a numbered MyST figure
labelled ``fig-<chapter>-<name>`` (cite it with ``{numref}`fig-<chapter>-<name>```).
"""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

from rnnbook.claims import atomic_write

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
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def use_style() -> None:
    """Apply the house style (readable at talk size)."""
    matplotlib.rcParams.update(STYLE)


def label(chapter: str, name: str) -> str:
    """The figure's cross-reference label."""
    return f"fig-{chapter}-{name}"


def save_figure(fig: plt.Figure, name: str, caption: str, figures_dir: Path, chapter: str,
                show: bool = True) -> dict[str, Path]:
    """Export ``fig`` as PNG and SVG under ``figures_dir`` and show it with ``caption`` (MyST)."""
    if not NAME.match(name):
        raise ValueError(f"figure name {name!r} must match {NAME.pattern}")
    figures_dir.mkdir(parents=True, exist_ok=True)
    paths = {fmt: figures_dir / f"{name}.{fmt}" for fmt in ("png", "svg")}
    with matplotlib.rc_context({"svg.hashsalt": STYLE["svg.hashsalt"]}):
        fig.savefig(paths["png"], dpi=DPI, metadata={"Software": None})
        fig.savefig(paths["svg"], metadata={"Date": None})
    _record(figures_dir / "figures.json", chapter, name, caption)
    plt.close(fig)
    if show:
        from IPython.display import Markdown, display
        display(Markdown(figure_myst(paths["png"], label(chapter, name), caption)))
    return paths


def figure_myst(png: Path, name: str, caption: str) -> str:
    """A MyST ``figure`` directive embedding ``png`` (self-contained: no path to resolve)."""
    uri = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
    alt = " ".join(re.sub(r"[{}`$\\]", "", caption).split())[:200]
    fence = "`" * max(4, 1 + max((len(m) for m in re.findall(r"`+", caption)), default=0))
    return f"{fence}{{figure}} {uri}\n:name: {name}\n:alt: {alt}\n:width: 90%\n\n{caption}\n{fence}\n"


def _record(manifest: Path, chapter: str, name: str, caption: str) -> None:
    entries = json.loads(manifest.read_text()) if manifest.exists() else {}
    entries[name] = {"chapter": chapter, "name": name, "caption": caption,
                     "files": [f"{name}.png", f"{name}.svg"]}
    atomic_write(manifest, json.dumps(entries, indent=2).encode())
