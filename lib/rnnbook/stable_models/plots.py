"""Figures of the stable-models chapter (Miller & Hardt 2019): F2-F8, E1, E2.

Named functions returning a matplotlib Figure; the computations they draw live in
:mod:`rnnbook.stable_models.theory` (F6-F8), :mod:`~rnnbook.stable_models.train` and
:mod:`~rnnbook.stable_models.experiments`. Presentation only: the results cache's version leaves
this module out, so a change here keeps finished runs.
"""
from __future__ import annotations

from typing import NamedTuple, TYPE_CHECKING

import numpy as np

from rnnbook.stable_models.theory import divergence_step, gd_A1, grad_A1

if TYPE_CHECKING:
    from rnnbook.stable_models.theory import TheorySettings


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


# ============================================================================ F6-F8: the theory half
def plot_f6(S: TheorySettings, res: dict[str, np.ndarray]) -> "plt.Figure":
    """F6: the median weight gap (A) against k at N = N_k with a λ^k guide, (B) against N at
    k ∈ {4, 8}, one colour per step-size schedule (one legend for both panels, below them)."""
    import matplotlib.pyplot as plt
    gap = np.median(res["gap"], axis=0)
    ks, N = res["ks"], res["N"]
    j = list(N).index(S.c4_N_k)
    fig, axs = plt.subplots(1, 2, figsize=(8.2, 4.6))
    for i, s in enumerate(S.c4_schedules):
        style = dict(color=f"C{i}", label=fr"$\alpha={s.name}$")
        axs[0].plot(ks, gap[i, :, j], "o-", **style)
        for kk, ls in zip(S.c4_k_N, ("-", "--")):
            axs[1].plot(N, gap[i, list(ks).index(kk)], ls=ls, color=f"C{i}")
    k4 = list(ks).index(4)
    guide, = axs[0].plot(ks, gap[0, k4, j] * S.c4_lam ** (ks - 4.0), color="0.5", ls=":",
                         label=fr"$\lambda^k$, $\lambda={S.c4_lam:g}$")
    axs[0].set(yscale="log", xlabel="truncation $k$", ylabel=r"$\|w_k - w_{\rm rec}\|$",
               title=f"(A) after N = {S.c4_N_k} steps")
    axs[1].set(xscale="log", yscale="log", xlabel="SGD steps $N$", ylabel=r"$\|w_k - w_{\rm rec}\|$",
               title=f"(B) k = {S.c4_k_N[0]} (solid), {S.c4_k_N[1]} (dashed)")
    axs[0].legend(handles=[guide], loc="lower left")  # below the curves, which start high
    fig.legend(handles=axs[0].get_lines()[:len(S.c4_schedules)], loc="outside lower center",
               ncol=len(S.c4_schedules))
    return fig


def plot_f7(S: TheorySettings, a_grid: np.ndarray = np.linspace(-2, 2, 801)) -> "plt.Figure":
    """F7: (A) :math:`|\\partial L/\\partial a|` against a for each T; (B, C) GD paths from ``S.f7_a0``
    at the smallest and the second-largest T (× marks divergence)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import SymmetricalLogLocator
    fig = plt.figure(figsize=(8, 7.2))
    grid = fig.add_gridspec(2, 2)
    axs = [fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])]
    for T in S.f7_T:
        with np.errstate(all="ignore"):
            axs[0].plot(a_grid, np.abs(grad_A1(a_grid, T)), label=f"T = {T}")
    axs[0].axvspan(-2, -1, color="0.9", zorder=0)
    axs[0].axvspan(1, 2, color="0.9", zorder=0)
    axs[0].set(yscale="log", xlabel="$a$", ylabel=r"$|\partial L/\partial a|$", title="(A) gradient")
    axs[0].legend()
    for ax, T in zip(axs[1:], (S.f7_T[0], S.f7_T[-2])):
        paths = gd_A1(np.array(S.f7_a0), T, S.c2_steps)
        for i, (a0, p) in enumerate(zip(S.f7_a0, paths)):
            ax.plot(np.arange(p.size), p, color=f"C{i}", label=f"$a_0 = {a0:g}$")
            d = divergence_step(p)
            if d >= 0:
                ax.plot(d - 1, p[d - 1], "x", color=f"C{i}", ms=10, mew=2)
        ax.set(xscale="symlog", xlabel="GD step $i$", ylabel="$a_i$",
               title=f"({'BC'[ax is axs[2]]}) GD, $\\alpha_i = 1/i$, T = {T}")
        ax.set_yscale("symlog", linthresh=1)
        ax.yaxis.set_major_locator(SymmetricalLogLocator(base=100, linthresh=1))  # every 2 decades
    # the starts are coloured alike in (B) and (C): one legend, below both, off their data
    starts = [ln for ln in axs[1].get_lines() if not ln.get_label().startswith("_")]
    ncol = (len(starts) + 1) // 2  # two rows, read left to right (legends fill columns first)
    fig.legend(handles=[starts[i + ncol * r] for i in range(ncol) for r in range(2)
                        if i + ncol * r < len(starts)], loc="outside lower center", ncol=ncol)
    return fig


def plot_f8(res: dict[str, np.ndarray], floor: float = 1e-13) -> "plt.Figure":
    """F8: :math:`\\|h_T - h^k_T\\|` against k (median, band = min..max over instances) and the
    Prop. 3 bound (median over instances, dashed), one panel per λ; dotted: C3's rounding floor."""
    import matplotlib.pyplot as plt
    lams, k = res["lams"], res["k"]
    fig, axs = plt.subplots(1, len(lams), figsize=(8.2, 4.0), sharey=True)
    for i, (ax, lam) in enumerate(zip(axs, lams)):
        e = np.where(res["err"][i] > 0, res["err"][i], np.nan)
        ax.fill_between(k, np.nanmin(e, 0), np.nanmax(e, 0), color="C0", alpha=0.25, lw=0)
        ax.plot(k, np.nanmedian(e, 0), color="C0", label=r"$\|h_T - h^k_T\|$")
        ax.plot(k, np.median(res["bound"][i], 0), color="C1", ls="--", label="bound (Prop. 3)")
        ax.axhline(floor, color="0.6", ls=":", lw=1, label=f"C3 ignores < {floor:g}")
        ax.set(yscale="log", xlabel="truncation $k$", title=fr"$\lambda = {lam:g}$")
    axs[0].set_ylim(bottom=1e-17)
    axs[0].set_ylabel("distance of final states")
    fig.legend(handles=axs[0].get_lines(), loc="outside lower center", ncol=3)
    return fig
