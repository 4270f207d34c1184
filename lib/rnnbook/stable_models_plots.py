"""Figures of the stable-models chapter (Miller & Hardt 2019): F2–F5, E1, E2.

Named functions returning a matplotlib Figure; the computations they draw live in
:mod:`rnnbook.stable_models_train`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


def plot_f2(ks: list[int], nll: dict[str, list[float]], w_norm: list[float],
            w_train: dict[int, list[np.ndarray]], epochs: int):
    """F2 (§4.3): JSB test NLL of the unstable and stable RNN and the unstable RNN's
    :math:`\\|W\\|_2` against the training truncation k; and C9's runs: :math:`\\|W\\|_2` per
    epoch at each k of ``w_train`` (one line per seed), with a dotted line at the left panels
    ``epochs``."""
    import matplotlib.pyplot as plt
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(11, 3.5))
    for name, v in nll.items():
        a.plot(ks, v, "o-", label=name)
    a.set_ylabel("test NLL per frame (nats)")
    a.legend()
    b.plot(ks, w_norm, "o-", color="C0")
    b.set_ylabel(r"$\|W\|_2$ of the unstable RNN")
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_xlabel("training truncation k")
    for i, (k, runs) in enumerate(w_train.items()):
        for j, w in enumerate(runs):
            c.plot(np.arange(1, len(w) + 1), w, color=f"C{i + 2}", lw=1.2,
                   label=f"k = {k}" if j == 0 else None)
    c.axvline(epochs, color="0.4", ls=":", lw=1, label=f"{epochs} epochs (left, middle)")
    c.set_xlabel("epoch")
    c.set_ylabel(r"$\|W\|_2$ of the unstable RNN")
    c.legend()
    for ax in (b, c):
        ax.axhline(1, color="0.6", ls="--", lw=1)
    return fig


def plot_f3(g: dict[str, np.ndarray]):
    """F3 (Fig. 3): mean gradient norm :math:`\\|\\partial\\ell_t/\\partial x_{t-i}\\|` against i."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name, v in g.items():
        ax.plot(np.arange(len(v)), v, label=name)
    ax.set_yscale("log")
    ax.set_xlabel("distance i into the past")
    ax.set_ylabel(r"mean $\|\partial \ell_t / \partial x_{t-i}\|$")
    ax.legend()
    return fig


class F4Panel(NamedTuple):
    """One task of F4: the test metric of truncated models against k, and of the recurrent ones."""

    title: str
    ylabel: str
    ks: list[int]
    curves: dict[str, list[float]]
    recurrent: dict[str, float]


def plot_f4(panels: list[F4Panel]):
    """F4 (Fig. 4): the test metric against the truncation k, one panel per task (two per row);
    dashed: the recurrent model. Several panels share one legend, below them."""
    import matplotlib.pyplot as plt
    ncols = min(len(panels), 2)
    nrows = -(-len(panels) // ncols)
    fig, axs = plt.subplots(nrows, ncols, squeeze=False,
                            figsize=(6, 3.8) if len(panels) == 1 else (8.5, 3.3 * nrows + 0.5))
    for ax, p in zip(axs.flat, panels):
        for i, (name, v) in enumerate(p.curves.items()):
            ax.plot(p.ks, v, "o-", color=f"C{i}", label=f"{name}, truncated")
            ax.axhline(p.recurrent[name], color=f"C{i}", ls="--", lw=1, label=f"{name}, recurrent")
        ax.set_xscale("log", base=2)
        ax.set_xticks(p.ks, [str(k) for k in p.ks], minor=False)
        ax.minorticks_off()
        ax.set_xlabel("truncation k")
        ax.set_ylabel(p.ylabel)
        if len(panels) > 1:
            ax.set_title(p.title)
    for ax in list(axs.flat)[len(panels):]:
        ax.set_visible(False)
    if len(panels) == 1:
        axs[0][0].legend(fontsize=9)
    else:
        fig.legend(handles=axs[0][0].get_lines(), loc="outside lower center", ncol=2)
    return fig


def plot_f5(gaps: dict[str, dict[int, list[float]]], ref: int):
    """F5 (Fig. 5): :math:`\\|w_k - w_{ref}\\|` after each epoch, same init and data order, per
    model (``gaps[name][k]``); linear (left) and, from epoch 1, logarithmic (right), where the
    small gaps' growth shows. Colour: k; with several models, marker and line style: the model,
    keyed in one legend below the panels."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    fig, axs = plt.subplots(1, 2, figsize=(8, 3.6 if len(gaps) == 1 else 4.2))
    styles = ["o-", "s--"]
    for (name, by_k), style in zip(gaps.items(), styles):
        for i, (k, v) in enumerate(by_k.items()):
            label = f"k = {k}" if len(gaps) == 1 else f"{name}, k = {k}"
            axs[0].plot(np.arange(len(v)), v, style, color=f"C{i}", label=label)
            axs[1].semilogy(np.arange(1, len(v)), v[1:], style, color=f"C{i}")
    for ax in axs:
        ax.set_xlabel("epoch")
    axs[0].set_ylabel(rf"$\|w_k - w_{{{ref}}}\|_2$")
    if len(gaps) == 1:
        axs[0].legend()
    else:
        ks = list(dict.fromkeys(k for by_k in gaps.values() for k in by_k))
        handles = [Line2D([], [], color=f"C{i}", label=f"k = {k}") for i, k in enumerate(ks)]
        handles += [Line2D([], [], color="0.3", marker=st[0], ls=st[1:], label=name)
                    for name, st in zip(gaps, styles)]
        fig.legend(handles=handles, loc="outside lower center", ncol=-(-len(handles) // 2))
    return fig


def plot_e1(norms: dict[str, list[float]]):
    """E1: :math:`\\|W_{hh}\\|_2` during training of every unconstrained model."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for name, v in norms.items():
        ax.plot(np.arange(1, len(v) + 1) / len(v), v, label=name)  # logged after each 1/n
    ax.axhline(1, color="0.6", ls="--", lw=1)
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("fraction of training done")
    ax.set_ylabel(r"$\|W_{hh}\|_2$")
    ax.legend(fontsize=8, ncol=2)
    return fig


E2_FLOOR = 1e-8  # E2: smaller estimates (or an exact 0) are drawn here
E2_ROUNDING = 1e-5  # E2: below this the two trajectories agree to float32 rounding


def plot_e2(S_hat: dict[str, dict[int, float]], floor: float = E2_FLOOR,
            rounding: float = E2_ROUNDING):
    """E2: contraction estimates :math:`\\hat S_r` against r for every model: colour by task and
    cell, line style by constraint (solid unconstrained, dashed stable); the fork's LSTM in black,
    dotted, with diamonds. Values below ``floor`` (down to an exact 0, a difference lost to float32)
    are drawn at it as open triangles; the grey band below ``rounding`` marks where the two
    trajectories agree to float32 rounding, so that an estimate there is no contraction rate."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    fig, ax = plt.subplots(figsize=(8, 4.6))
    ax.axhspan(floor / 3, rounding, color="0.92", lw=0, zorder=0)
    colours, kinds, forks, clipped = {}, set(), [], False
    for name, d in S_hat.items():
        task, cell, kind = name.split("/", 2)
        fork = kind not in ("unstable", "stable")
        colour = "k" if fork else colours.setdefault((task, cell), f"C{len(colours)}")
        style = ":" if fork else "-" if kind == "unstable" else "--"
        marker = "D" if fork else "o"
        rs = sorted(d)
        ys = np.array([max(d[r], floor) for r in rs])
        low = np.array([d[r] < floor for r in rs])
        line, = ax.plot(rs, ys, marker=marker, markevery=[i for i, x in enumerate(low) if not x],
                        ls=style, color=colour, lw=2.2 if fork else None, label=name)
        if fork:
            forks.append(line)
        else:
            kinds.add(kind)
        if low.any():
            clipped = True
            ax.plot(np.array(rs)[low], ys[low], "v", ls="none", mfc="white", mec=colour, mew=1.5,
                    ms=8)
    ax.axhline(1, color="0.6", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(floor / 3, None)
    ax.set_xlabel("r (steps of the map)")
    ax.set_ylabel(r"$\hat S_r$")
    # the legend keys colour (task and cell) and line style (constraint) apart: shorter than one
    # entry per model, so that it stays legible beside the axes
    handles = [Line2D([], [], color=c, marker="o", label=f"{task}/{cell}")
               for (task, cell), c in colours.items()]
    handles += [Line2D([], [], color="0.3", ls=ls, label=kind)
                for kind, ls in (("unstable", "-"), ("stable", "--")) if kind in kinds]
    handles += forks
    handles.append(plt.Rectangle((0, 0), 1, 1, color="0.92",
                                 label=rf"float32 rounding level ($< 10^{{{np.log10(rounding):.0f}}}$)"))
    if clipped:
        handles.append(Line2D([], [], marker="v", ls="none", mfc="white", mec="0.3", mew=1.5, ms=8,
                              label=rf"below $10^{{{np.log10(floor):.0f}}}$ (or 0), drawn there"))
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig
