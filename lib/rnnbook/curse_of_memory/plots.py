"""Figures of the curse-of-memory chapter (Zucchet & Orvieto, NeurIPS 2024): F1-F12, F5V, F6L, E1, E2.

Named functions returning a matplotlib Figure; the computations they draw live in the chapter's
other modules. Presentation only: the results cache's version leaves this module out, so a change
here keeps finished runs.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rnnbook import figures
from rnnbook.curse_of_memory.experiments import f9_grid
from rnnbook.curse_of_memory.theory import (S, S_notebook, dh_dlamb, gamma_exp_dh, gamma_h2, h2, loss_1d,
                                            paper1_terms)


# ============================================================================ figures
def _lam_axis(ax):
    ax.set_xlabel(r"$-\log_{10}(1-\lambda)$")


def plot_f1(rhos, mc_rows, f1c_lams) -> "plt.Figure":
    """F1: (A) K2 vs λ for each ρ, grey K1 at ρ = 1, MC dots; (B) K5 vs λ for λ* = 1 - .01·2^k;
    (C) K5 vs θ - θ* at |λ| = |λ*|."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplot_mosaic([["A", "B"], ["C", "C"]], figsize=(9.4, 8.4))
    axs = [ax["A"], ax["B"], ax["C"]]
    x = np.linspace(0.05, 4, 300)
    lam = 1 - 10 ** -x
    for i, rho in enumerate(rhos):
        axs[0].plot(x, dh_dlamb(lam, rho), color=f"C{i}", label=fr"$\rho={rho:g}$")
        pts = [r for r in mc_rows if r["rho"] == rho]
        axs[0].plot([-math.log10(1 - r["lambda"]) for r in pts], [r["E[(dh)^2] MC"] for r in pts],
                    "o", color=f"C{i}", mfc="none")
    axs[0].plot(x, h2(lam, 1.0), color="0.6", ls="--", label=r"$E[h^2]$, $\rho=1$")
    axs[0].set_yscale("log")
    _lam_axis(axs[0])
    axs[0].set_ylabel(r"$E[(d_\lambda h)^2]$")
    axs[0].set_title("(A) sensitivity; circles: Monte-Carlo")
    axs[0].legend()
    for k in range(7):
        ls = 1 - 0.01 * 2 ** k
        xs = np.linspace(0.0, 3, 400)
        lam = 1 - 10 ** -xs
        axs[1].plot(xs, loss_1d(lam, ls), color=plt.cm.viridis(k / 6), label=f"{0.01 * 2 ** k:g}")
    axs[1].set_yscale("log")
    _lam_axis(axs[1])
    axs[1].set_ylabel(r"loss $L(\lambda)$")
    axs[1].set_title(r"(B) real $\lambda$")
    axs[1].legend(title=r"$1-\lambda^*$", title_fontsize=12, loc="center left",
                  bbox_to_anchor=(1.0, 0.5))  # outside: inside it would cover the minima
    dth = np.linspace(-np.pi, np.pi, 801)
    for k, nu in enumerate(f1c_lams):
        axs[2].plot(dth, loss_1d(nu * np.exp(1j * dth), nu + 0j), color=plt.cm.viridis(k / max(len(f1c_lams) - 1, 1)),
                    label=fr"$|\lambda|=|\lambda^*|={nu:g}$")
    axs[2].set_yscale("log")
    axs[2].set_xlabel(r"$\theta-\theta^*$")
    axs[2].set_ylabel(r"loss")
    axs[2].set_title(r"(C) phase, $\theta^*=0$")
    axs[2].legend()
    return fig


def plot_f2(rhos) -> "plt.Figure":
    """F2: K4: (A) γ²E[h²]; (B) γ²E[(d_{ω_ν}h)²] with the exp parametrisation; grey: without γ/exp."""
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 2, figsize=(9.4, 4.4))
    x = np.linspace(0.05, 4, 300)
    lam = 1 - 10 ** -x
    for i, rho in enumerate(rhos):
        axs[0].plot(x, gamma_h2(lam, rho), color=f"C{i}", label=fr"$\rho={rho:g}$")
        axs[0].plot(x, h2(lam, rho), color=f"C{i}", alpha=0.3, lw=1)
        axs[1].plot(x, gamma_exp_dh(lam, rho), color=f"C{i}", label=fr"$\rho={rho:g}$")
        axs[1].plot(x, dh_dlamb(lam, rho), color=f"C{i}", alpha=0.3, lw=1)
    for ax in axs:
        ax.set_yscale("log")
        _lam_axis(ax)
    axs[0].set_ylabel(r"$\gamma^2E[h^2]$ (faint: $E[h^2]$)")
    axs[1].set_ylabel(r"$\gamma^2E[(d_{\omega_\nu}h)^2]$ (faint: $E[(d_\lambda h)^2]$)")
    axs[0].set_title("(A)")
    axs[1].set_title("(B)")
    axs[0].legend()
    return fig


def plot_f3(table: dict[str, dict[float, dict]]) -> "plt.Figure":
    """F3: final loss (best lr) against ν0, RNN vs LRU, ± s.e.m."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (m, t) in enumerate(table.items()):
        nus = sorted(t)
        y = np.array([t[n]["loss"] for n in nus])
        e = np.array([t[n]["sem"] for n in nus])
        ax.errorbar(nus, y, yerr=e, marker="o", color=f"C{i}", label=m, capsize=3)
    ax.set_yscale("log")
    ax.set_xlabel(r"teacher $\nu_0$ (smallest eigenvalue modulus)")
    ax.set_ylabel("final loss (best lr)")
    ax.legend()
    return fig


def plot_bars(labels, values, ylabel: str, log: bool = True, xlabel: str | None = None,
              per_seed: Sequence[Sequence[float]] | None = None) -> "plt.Figure":
    """F4 / F10: one bar per configuration (with ``per_seed``, each seed's value as a dot)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * len(labels)), 4.2))
    ax.bar(range(len(labels)), values, color=[f"C{i % 8}" for i in range(len(labels))])
    _seed_dots(ax, per_seed)
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    return fig


def plot_f5(h: dict, eff: dict[str, dict[str, float]], ceiling: float) -> "plt.Figure":
    """F5 (Fig. 4) and Fig. 9's LRU: Hessians at the optimum (SymLog colours), their spectra, and
    Adam's effective lr per model and group against its ``ceiling``."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import SymLogNorm
    fig, axs = plt.subplots(2, 2, figsize=(9.4, 8.6))
    axs = axs.ravel()
    vmax = max(abs(h["H_dense"]).max(), abs(h["H_cdiag"]).max())
    norm = SymLogNorm(linthresh=1e-2, vmin=-vmax, vmax=vmax)
    for ax, n, title in ((axs[0], "dense", "dense RNN"), (axs[1], "cdiag", "complex diagonal")):
        im = ax.imshow(h[f"H_{n}"], cmap="RdBu_r", norm=norm)
        ax.set_title(f"Hessian, {title}")
        ax.grid(False)
    ticks = [-1e6, -1e3, -1, 0, 1, 1e3, 1e6]
    fig.colorbar(im, ax=axs[:2].tolist(), shrink=0.8, ticks=[t for t in ticks if abs(t) <= vmax])
    axs[0].set_xlabel("A (16) | B (4) | C (4) | D")
    axs[1].set_xlabel(r"$\lambda_{re},\lambda_{im}$ | B | C | D")
    for i, n in enumerate(("dense", "cdiag")):
        axs[2].semilogy(np.arange(1, 26), np.abs(h[f"eig_{n}"]) + 1e-300, "o-", color=f"C{i}",
                        label=n, ms=4)
    axs[2].axvline(9.5, color="0.5", ls=":")
    axs[2].set_ylim(1e-14, None)
    axs[2].set_xlabel("eigenvalue rank")
    axs[2].set_ylabel("|eigenvalue|")
    axs[2].set_title("spectra (dotted: 2n+1 = 9)")
    axs[2].legend()
    names = {"lambda": r"$\lambda$", "omega_nu": r"$\omega_\nu$", "omega_theta": r"$\omega_\theta$",
             "gamma": r"$\omega_\gamma$"}
    labels, vals, cols, first = [], [], [], []
    for i, (model, groups) in enumerate(eff.items()):
        first.append(len(vals))
        for g, v in groups.items():
            labels.append(names.get(g, g))
            vals.append(v)
            cols.append(f"C{i}")
    bars = axs[3].bar(range(len(vals)), vals, color=cols)
    axs[3].axhline(ceiling, color="0.6", ls=":", label="Adam's ceiling")
    axs[3].set_xticks(range(len(vals)), labels, rotation=60)
    axs[3].set_yscale("log")
    axs[3].set_ylabel("Adam effective lr")
    axs[3].legend([bars[j] for j in first], list(eff), loc="lower right")
    axs[3].set_title(r"effective lr, $\eta=10^{-3}$ (dotted: Adam's ceiling)")
    return fig


def _tex(name: str) -> str:
    """A parameter name of :data:`~rnnbook.curse_of_memory.curvature.PARAM_GROUPS` as mathtext."""
    base, _, sub = name.partition("_")
    tex = base.replace("λ", r"\lambda") + (f"_{{{sub}}}" if sub else "")
    return f"${tex}$"


def plot_f5v(h: dict, k: int = 9) -> "plt.Figure":
    """F5V (Fig. 4's eigenvector panels): the top ``k`` unit eigenvectors (rows, by |eigenvalue|) of
    the dense and complex diagonal Hessians of one :func:`~rnnbook.curse_of_memory.curvature.hessians`
    dict, one column per parameter, the groups of
    :data:`~rnnbook.curse_of_memory.curvature.PARAM_GROUPS` apart; each row's sign set so that its
    largest entry is positive; right: its participation number :math:`1/\\sum_iv_i^4`."""
    import matplotlib.pyplot as plt
    from rnnbook.curse_of_memory.curvature import PARAM_GROUPS, ipr
    fig, axs = plt.subplots(2, 1, figsize=(9.4, 7.4))
    for ax, (n, title) in zip(axs, (("dense", "dense RNN"), ("cdiag", "complex diagonal"))):
        v = h[f"vec_{n}"][:, :k] / np.linalg.norm(h[f"vec_{n}"][:, :k], axis=0)
        v = v * np.sign(v[np.abs(v).argmax(0), np.arange(k)])
        blocks, centres, start, x0 = [], [], 0, 0
        for _, size in PARAM_GROUPS[n]:
            blocks += [v[start:start + size].T, np.full((k, 1), np.nan)]
            centres.append(x0 + (size - 1) / 2)
            start, x0 = start + size, x0 + size + 1
        im = ax.imshow(np.hstack(blocks[:-1]), cmap="PRGn", vmin=-1, vmax=1, aspect="auto")
        ax.set_xticks(centres, [_tex(g) for g, _ in PARAM_GROUPS[n]])
        ax.set_yticks(range(k), range(1, k + 1))
        ax.set_ylabel("eigenvector rank")
        ax.set_title(f"top {k} eigenvectors, {title}")
        ax.grid(False)
        right = ax.secondary_yaxis("right")
        right.set_yticks(range(k), [f"{p:.1f}" for p in 1 / ipr(v)])
        right.set_ylabel("1/IPR")
    fig.colorbar(im, ax=axs.tolist(), orientation="horizontal", shrink=0.6, pad=0.08, ticks=[-1, 0, 1])
    return fig


# Fig. 7's contour windows in (omega_nu, omega_theta), as figures/learn_theta.ipynb draws them
F8_WINDOWS = {"polar": ((1.5, 3.0), (-0.2, 1.2)), "exp": ((0.5, 3.0), (-5.0, 1.0)),
              "opt": ((0.5, 3.0), (-20.0, 80.0))}


def plot_f8(traj: dict[str, np.ndarray], loss: dict[str, np.ndarray], star: dict[str, tuple[float, float]],
            loss_grid) -> "plt.Figure":
    """F8 (Fig. 7): per parametrisation (columns), the loss over :math:`(\\omega_\\nu,\\omega_\\theta)` with
    the trajectories (top; the notebook's window, widened to hold them) and the loss along training
    (bottom), for the notebook's sign descent (black) and true Adam (orange, dashed). ``traj`` and
    ``loss`` are keyed "<name>, <optimiser>"; ``loss_grid(name, W_nu, W_theta)`` is the loss there."""
    with figures.wide_style():  # three columns: >= 9 px at the column's width
        return _plot_f8(traj, loss, star, loss_grid)


def _plot_f8(traj, loss, star, loss_grid) -> "plt.Figure":
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    names = list(F8_WINDOWS)
    fig, axs = plt.subplots(2, 3, figsize=(12, 6.6), gridspec_kw={"height_ratios": [1, 0.7]})
    styles = {"as in notebook": dict(color="black", lw=1.4, label="sign descent (the notebook's)"),
              "Adam": dict(color="C1", lw=1.2, ls="--", label="true Adam")}
    norm = LogNorm(1e-2, 1e2)
    for j, name in enumerate(names):
        runs = {k.split(", ")[1]: k for k in traj if k.split(", ")[0] == name}
        pts = np.concatenate([traj[k] for k in runs.values()] + [np.array([star[name]])])
        (x0, x1), (y0, y1) = F8_WINDOWS[name]
        x0, x1 = min(x0, pts[:, 0].min()), max(x1, pts[:, 0].max())
        y0, y1 = min(y0, pts[:, 1].min()), max(y1, pts[:, 1].max())
        X, Y = np.meshgrid(np.linspace(x0, x1, 300), np.linspace(y0, y1, 300))
        c = axs[0, j].contourf(X, Y, np.clip(loss_grid(name, X, Y), 1e-2, 1e2), levels=np.logspace(-2, 2, 41),
                               cmap="Blues_r", norm=norm)
        c.set_rasterized(True)  # as pixels in the SVG too: 40 filled levels on a 300 x 300 grid are 1.5 MB of paths
        for opt, k in runs.items():
            axs[0, j].plot(traj[k][:, 0], traj[k][:, 1], **styles[opt])
            axs[1, j].semilogy(np.clip(loss[k], 1e-15, None), **styles[opt])
        axs[0, j].plot(*star[name], marker="*", color="gold", ms=12, mec="black", zorder=5)
        axs[0, j].set(title=name, xlabel=r"$\omega_\nu$", ylabel=r"$\omega_\theta$")
        axs[1, j].set(xlabel="step", ylabel="loss (floored at 1e-15)", ylim=(1e-16, 1e3))
    fig.colorbar(c, ax=axs[0, :], ticks=[1e-2, 1e-1, 1, 10, 100], label="loss")
    axs[1, 0].legend()
    return fig


def plot_f9(rhos, n_nu: int, n_theta: int, lam0=0.99 * np.exp(1j * np.pi / 4)) -> "plt.Figure":
    """F9: |S(λ, λ0, ρ)| on the disc (as the notebook: λ0 not conjugated), one row per ρ; columns:
    exact (Eq. cm-S), the notebook's ``estimate``, and their ratio on a log scale centred on 1 (the
    middle colour band, white, holds ratios within 3.5% of 1)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import LogFormatterMathtext
    lam = f9_grid(n_nu, n_theta)
    fs = 15  # tick, title and colour-bar labels: >= 10 pt with the figure shrunk to a page's width
    fig, axs = plt.subplots(len(rhos), 3, figsize=(9.6, 2.9 * len(rhos) + 1.2), squeeze=False,
                            sharex=True, sharey=True)
    norm = LogNorm(vmin=1e-2, vmax=1e5)
    from matplotlib.colors import ListedColormap
    step = 0.1  # log2 ratio per colour band; bands centred on 0, i.e. ratio 1
    levels = step * (np.arange(-20, 22) - 0.5)
    bands = plt.get_cmap("RdBu_r")(np.linspace(0, 1, len(levels) - 1))
    bands[len(bands) // 2] = (1, 1, 1, 1)  # the band holding ratio 1 is white
    ratio_cmap = ListedColormap(bands)
    for j, rho in enumerate(rhos):
        Z = {}
        for i, (fn, name) in enumerate(((S, "exact"), (S_notebook, "notebook"))):
            Z[name] = np.abs(fn(lam, lam0, rho))
            cs = axs[j, i].contourf(lam.real, lam.imag, np.clip(Z[name], 1e-2, 1e5),
                                    levels=np.logspace(-2, 5, 29), norm=norm, cmap="Blues",
                                    rasterized=True)  # a small SVG; axes and labels stay vector
        ratio = np.clip(np.log2(Z["notebook"] / Z["exact"]), levels[0], levels[-1])
        cr = axs[j, 2].contourf(lam.real, lam.imag, ratio, levels=levels, cmap=ratio_cmap,
                                vmin=levels[0], vmax=levels[-1], rasterized=True)
        axs[j, 0].set_ylabel(fr"$\rho={rho:g}$", fontsize=fs)
        axs[j, 2].add_patch(plt.Circle((0, 0), 0.99, fill=False, lw=0.8, color="0.5"))  # the disc's edge
        for ax in axs[j]:
            ax.set_aspect("equal")
            ax.grid(False)
            ax.set_xticks([-0.9, 0, 0.9])
            ax.set_yticks([-0.9, 0, 0.9])
            ax.tick_params(labelsize=fs)
    for ax, name in zip(axs[0], ("exact", "notebook", "notebook / exact")):
        ax.set_title(name, fontsize=fs)
    cb = fig.colorbar(cs, ax=axs[:, :2].ravel().tolist(), orientation="horizontal", shrink=0.8,
                      aspect=30, ticks=[1e-2, 1, 1e2, 1e4], format=LogFormatterMathtext())
    cb.set_label(r"$|S(\lambda,\lambda_0,\rho)|$", fontsize=fs)
    cb.ax.tick_params(labelsize=fs)
    cb2 = fig.colorbar(cr, ax=axs[:, 2].tolist(), orientation="horizontal", shrink=0.95, aspect=15,
                       ticks=[-2, -1, 0, 1, 2])
    cb2.ax.set_xticklabels(["¼", "½", "1", "2", "4"])
    cb2.set_label("ratio (log scale)", fontsize=fs)
    cb2.ax.tick_params(labelsize=fs)
    return fig


def plot_e2(T_values=(10, 100, 1000)) -> "plt.Figure":
    """E2: the learning-dynamics regulariser and its b-curvature at finite T against their T -> inf
    limits :math:`E[h^2]_{\\rho=0}` and :math:`E[(d_\\lambda h)^2]_{\\rho=0}`."""
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 2, figsize=(9.4, 4.4))
    x = np.linspace(0.05, 3.5, 200)
    b = 1 - 10 ** -x
    axs[0].plot(x, h2(b, 0.0), color="k", label=r"$E[h^2]_{\rho=0}$")
    axs[1].plot(x, dh_dlamb(b, 0.0), color="k", label=r"$E[(d_\lambda h)^2]_{\rho=0}$")
    for i, T in enumerate(T_values):
        r, c = paper1_terms(b, T)
        axs[0].plot(x, r, ls="--", color=f"C{i}", label=f"T = {T}")
        axs[1].plot(x, c, ls="--", color=f"C{i}", label=f"T = {T}")
    axs[0].set_ylabel(r"$(1-b^{2T})/(1-b^2)$")
    axs[1].set_ylabel(r"$\sum_k k^2 b^{2(k-1)}$")
    for ax in axs:
        ax.set_yscale("log")
        ax.set_xlabel(r"$-\log_{10}(1-b)$")
        ax.legend()
    return fig


def plot_f6(taus, act: dict[str, np.ndarray], g2: dict[str, dict[str, np.ndarray]],
            g2_norm: dict[str, np.ndarray], g2_norm_rest: dict[str, np.ndarray]) -> "plt.Figure":
    """F6 (Fig. 5): (A) mean squared output of blocks 1 and 4 against τ per model; (B) second
    moment of the gradients per model and parameter group (c-diag λ, LRU ω_ν and ω_θ, the GRU's
    recurrent layer, and all others; no normalisation); (C) c-diag gradient second moment of λ (solid)
    and of all other parameters (dashed, the notebook's "all but lambda") per normalisation."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplot_mosaic([["A", "B"], ["C", "C"]], figsize=(9.4, 8.8))
    axs = [ax["A"], ax["B"], ax["C"]]
    for i, (m, a) in enumerate(act.items()):
        axs[0].loglog(taus, a[:, 0], "o--", color=f"C{i}", alpha=0.6, label=f"{m}, block 1")
        axs[0].loglog(taus, a[:, -1], "o-", color=f"C{i}", label=f"{m}, block 4")
    axs[0].set_ylabel("mean squared block output")
    axs[0].set_title("(A) forward, no normalisation")
    names = {"lambda": r"$\lambda$", "nu": r"$\omega_\nu$", "theta": r"$\omega_\theta$",
             "GRU layer": "recurrent layer", "rest": "others"}
    for i, (m, g) in enumerate(g2.items()):
        for j, (k, v) in enumerate(g.items()):
            rest = k == "rest"
            axs[1].loglog(taus, v, "s--" if rest else "o^"[j % 2] + "-", color=f"C{i}",
                          alpha=0.6 if rest else 1.0, label=f"{m}, {names[k]}")
    axs[1].set_ylabel("gradient second moment")
    axs[1].set_title("(B) backward, no normalisation")
    for i, (n, g) in enumerate(g2_norm.items()):
        axs[2].loglog(taus, g, "o-", color=f"C{i + 3}", label=f"{n}, $\\lambda$")
        axs[2].loglog(taus, g2_norm_rest[n], "s--", color=f"C{i + 3}", alpha=0.6, label=f"{n}, all but $\\lambda$")
    axs[2].set_ylabel("c-diag gradient second moment")
    axs[2].set_title("(C) normalisation")
    for ax in axs:
        ax.set_xlabel(r"characteristic time $\tau$")
        ax.legend()
    return fig


def plot_f6l(taus, g2_layer: dict[str, dict[str, np.ndarray]]) -> "plt.Figure":
    """F6L (Fig. 13, Fig. 5B block by block): per model, the gradient second moment of each group
    against τ, one line per block (light: block 1, dark: block 4), no normalisation; "others": the
    block's other parameters."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb
    names = {"lambda": r"$\lambda$", "nu": r"$\omega_\nu$", "theta": r"$\omega_\theta$",
             "GRU layer": "recurrent layer", "rest": "others"}
    fig, axs = plt.subplots(1, 3, figsize=(9.4, 4.0), sharey=True)
    for ax, (m, groups) in zip(axs, g2_layer.items()):
        for j, (k, v) in enumerate(groups.items()):
            blocks = v.shape[1]
            for b in range(blocks):
                w = (blocks - 1 - b) / (blocks + 1)  # white share: block 1 lightest
                ax.loglog(taus, v[:, b], "-", color=tuple(w + (1 - w) * c for c in to_rgb(f"C{j}")),
                          label=names[k] if b == blocks - 1 else None)
        ax.set_title(m)
        ax.set_xlabel(r"$\tau$")
        ax.legend(fontsize=11)
    axs[0].set_ylabel("gradient second moment")
    return fig


def plot_f7(nus, curv: dict[str, np.ndarray], slices: dict[str, dict[str, np.ndarray]]) -> "plt.Figure":
    """F7 (Fig. 6): γ-loss along ω_ν and ω_θ around the optimum, and its curvatures at the optimum
    against ν*, for the polar, exp and opt parametrisations."""
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(2, 2, figsize=(9.4, 8.4))
    axs = axs.ravel()
    x = -np.log10(1 - np.asarray(nus))
    for i, (name, sl) in enumerate(slices.items()):
        axs[0].plot(sl["offset"], sl["nu"], color=f"C{i}", label=name)
        axs[1].plot(sl["offset"], sl["theta"], color=f"C{i}", label=name)
        axs[2].semilogy(x, curv[name][:, 0], color=f"C{i}", label=name)
        axs[3].semilogy(x, curv[name][:, 1], color=f"C{i}", label=name)
    for ax, t in zip(axs[:2], (r"$\omega_\nu$", r"$\omega_\theta$")):
        ax.set_yscale("symlog", linthresh=1e-4)
        ax.set_xlabel(f"offset of {t} from the optimum")
        ax.set_ylabel(r"$\gamma$-loss")
    axs[0].set_title(r"(A) loss along $\omega_\nu$, $\nu^*=0.99$")
    axs[1].set_title(r"(B) loss along $\omega_\theta$, $\nu^*=0.99$")
    for ax, t in zip(axs[2:], (r"$\partial^2_{\omega_\nu}L$", r"$\partial^2_{\omega_\theta}L$")):
        ax.set_xlabel(r"$-\log_{10}(1-\nu^*)$")
        ax.set_ylabel(t + " at the optimum")
    axs[2].set_title("(C) curvature in $\\omega_\\nu$")
    axs[3].set_title("(D) curvature in $\\omega_\\theta$")
    axs[0].legend()
    return fig


def plot_f10(hessians: dict[str, np.ndarray], losses: dict[str, dict[str, float]]) -> "plt.Figure":
    """F10 (Fig. 10): |theory Hessian| (K7) for each θ0, each relative to its largest entry, and the
    final loss against θ0 per model."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    n = len(hessians)
    rows = math.ceil((n + 1) / 2)
    fig, axs = plt.subplots(rows, 2, figsize=(9.6, 4.2 * rows))
    axs = axs.ravel()
    for ax in axs[n + 1:]:
        ax.remove()
    for ax, (label, H) in zip(axs, hessians.items()):
        im = ax.imshow(np.abs(H) / np.abs(H).max() + 1e-300, norm=LogNorm(vmin=1e-6, vmax=1), cmap="Blues")
        ax.set_title(fr"|H| / max|H|, $\theta_0$ = {label}")
        modes = np.arange(0, H.shape[0], 2)  # parameters interleaved (λ_re, λ_im) per mode
        ax.set_xticks(modes, [str(i // 2 + 1) for i in modes])
        ax.set_yticks(modes, [str(i // 2 + 1) for i in modes])
        ax.set(xlabel=r"mode $i$ ($\lambda_{re}$, $\lambda_{im}$)", ylabel="mode $j$")
        ax.grid(False)
    fig.colorbar(im, ax=axs[:2].tolist(), shrink=0.8)
    for i, (m, t) in enumerate(losses.items()):
        axs[n].plot(range(len(t)), list(t.values()), "o-", color=f"C{i}", label=m)
    axs[n].set_xticks(range(len(t)), list(t))
    axs[n].set_yscale("log")
    axs[n].set_xlabel(r"$\theta_0$ (teacher = student)")
    axs[n].set_ylabel("final loss")
    axs[n].set_title("final loss")
    axs[n].legend()
    return fig


def _seed_dots(ax, per_seed: Sequence[Sequence[float]] | None) -> None:
    """Each seed's value over its bar (C4, C11 decide on the median the bar shows)."""
    for i, v in enumerate(per_seed or []):
        ax.plot(np.full(len(v), i) + np.linspace(-0.2, 0.2, len(v)), v, "k.", ms=4, zorder=3)


def plot_f11(heads, losses, steps, hist: dict[int, np.ndarray],
             per_seed: Sequence[Sequence[float]] | None = None) -> "plt.Figure":
    """F11 (Fig. 11): final loss against the number of heads (median bars, seeds as dots); Adam's
    effective lr of A per unit learning rate along training."""
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 2, figsize=(9.4, 4.4))
    axs[0].bar(range(len(heads)), losses, color=[f"C{i}" for i in range(len(heads))])
    _seed_dots(axs[0], per_seed)
    axs[0].set_xticks(range(len(heads)), [str(h) for h in heads])
    axs[0].set_yscale("log")
    axs[0].set_xlabel("number of heads (blocks of $A$)")
    axs[0].set_ylabel("final loss")
    for i, h in enumerate(heads):
        if h in hist:
            axs[1].semilogy(steps, hist[h], color=f"C{i}", label=f"{h} heads")
    axs[1].set_xlabel("step")
    axs[1].set_ylabel("effective lr of $A$ per unit lr,\n" r"$\eta_{eff}/\eta$")
    axs[1].legend()
    return fig


def plot_f12(fit: dict, acf: np.ndarray, jac: dict[str, np.ndarray], T: np.ndarray,
             moments: dict[str, dict[str, np.ndarray]], theory: dict[str, np.ndarray]) -> "plt.Figure":
    """F12 (Figs. 12, 14, 15): (A) autocorrelation of the substitute inputs and its fit; (B) mean
    |diagonal| and |off-diagonal| entries of dh_t/dh_0 (GRU); (C, D) Var h and Var d_b h per neuron
    against T = 1/(1-σ(b)) for the three gate types, with the K10 theory (lines)."""
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(2, 2, figsize=(9.4, 8.8))
    axs = axs.ravel()
    lag = np.arange(len(acf))
    axs[0].plot(lag[1:], acf[1:], ".", ms=3, color="0.4", label="empirical")
    axs[0].plot(lag[1:], fit["a1"] * fit["rho"] ** lag[1:], color="C3",
                label=fr"fit: ${fit['a0']:.3f}\delta + {fit['a1']:.4f}\cdot{fit['rho']:.4f}^\Delta$")
    axs[0].set_xlabel(r"lag $\Delta$")
    axs[0].set_ylabel(r"$E[x_tx_{t-\Delta}]$ ($\Delta\geq1$)")
    axs[0].set_title("(A) substitute inputs")
    axs[0].legend()
    from matplotlib.lines import Line2D
    t_maxs, sigmas = (list(dict.fromkeys(jac[k])) for k in ("T_max", "sigma_h"))
    for i in range(len(jac["T_max"])):  # colour: T_max; marker: sigma_h (no colour repeats)
        st = np.arange(1, jac["diag"].shape[1] + 1)
        style = dict(color=f"C{t_maxs.index(jac['T_max'][i])}", markevery=8, ms=5,
                     marker="osv^D"[sigmas.index(jac["sigma_h"][i]) % 5])
        axs[1].semilogy(st, jac["diag"][i], **style)
        axs[1].semilogy(st, np.clip(jac["off"][i], 1e-30, None), "--", **style)
    # one legend entry per colour (T_max) and per marker (sigma_h), not per curve: readable size
    keys = ([Line2D([], [], color=f"C{k}", label=fr"$T_{{max}}$={t:g}") for k, t in enumerate(t_maxs)]
            + [Line2D([], [], color="0.3", ls="none", marker="osv^D"[k % 5], ms=6,
                      label=fr"$\sigma_h$={s:g}") for k, s in enumerate(sigmas)])
    axs[1].set_ylim(1e-12, 2)
    axs[1].set_xlabel(r"$\Delta t$")
    axs[1].set_ylabel(r"mean $|\partial h_{\Delta t}/\partial h_0|$")
    axs[1].set_title("(B) GRU: diagonal (solid),\noff-diagonal (dashed)")
    axs[1].legend(handles=keys, ncol=2, loc="lower left", handlelength=1.6, columnspacing=1.0)
    order = np.argsort(T)
    for ax, key, title in ((axs[2], "var_h", "(C) Var $h$"), (axs[3], "var_dbh", "(D) Var $d_bh$")):
        for i, (g, m) in enumerate(moments.items()):
            ax.loglog(T, m[key], "o", ms=3, color=f"C{i}", alpha=0.6, label=f"gates: {g}")
        ax.loglog(T[order], theory[key][order], "k-", label="theory (K10)")
        if key == "var_dbh":
            ax.loglog(T[order], theory["var_dbh_notebook"][order], "k:", label="notebook's formula")
        ax.set_xlabel(r"$T = 1/(1-\sigma(b))$")
        ax.set_title(title + r" per neuron (/$\|W_{n,i}\|^2$)")
        ax.legend()
    return fig


def plot_e1(curves: dict[str, np.ndarray], steps: int, sens: dict[str, dict[float, float]]) -> "plt.Figure":
    """E1: loss curves at each optimiser's best lr (one panel per ν0) and final loss against lr, per
    (model, ν0, optimiser) (keys ``"<model>, nu0=<ν0>, <optimiser>"``): colour by model and ν0, line
    style and marker by optimiser (AdamW hollow and drawn at 1.15 x its lr, so that it does not hide
    Adam's marker); one legend above the panels."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    groups = list(dict.fromkeys(k.rsplit(", ", 1)[0] for k in sens))
    nus = list(dict.fromkeys(g.split("nu0=")[1] for g in groups))
    look = {"Adam": ("-", "o", "full"), "SGD+m": ("--", "s", "full"), "SGD": ("-.", "D", "full"),
            "AdamW": (":", "^", "none")}
    names = {"Adam": "Adam", "SGD+m": "SGD, momentum .9", "SGD": "SGD, no momentum",
             "AdamW": "AdamW, decay .01"}

    def style(k: str) -> dict:
        group, opt = k.rsplit(", ", 1)
        ls, marker, fill = look[opt]
        return dict(color=f"C{groups.index(group)}", ls=ls, marker=marker, ms=7,
                    mfc="none" if fill == "none" else f"C{groups.index(group)}", mew=1.6)
    fig, ax = plt.subplot_mosaic([["a", "b"], ["c", "c"]], figsize=(10, 9.2), layout="constrained")
    panels = {nu: ax[n] for nu, n in zip(nus, "ab")}
    for k, c in curves.items():
        st = style(k)
        st.pop("marker")
        panels[k.split("nu0=")[1].split(", ")[0]].semilogy(np.linspace(0, steps, len(c)), c, **st,
                                                            lw=1.6)
    for nu, a in panels.items():
        a.set(xlabel="step", ylabel="training loss (best lr)", title=fr"$\nu_0 = {nu}$")
    for k, t in sens.items():
        lrs = sorted(t)
        shift = 1.15 if k.endswith("AdamW") else 1.0
        ax["c"].loglog([x * shift for x in lrs], [min(t[x], 1e6) for x in lrs], **style(k))
    ax["c"].set_xlabel("learning rate")
    ax["c"].set_ylabel("final loss (diverged: 1e6)")
    colours = [Line2D([], [], color=f"C{i}", lw=6, label=g.replace("nu0=", "ν0 = "))
               for i, g in enumerate(groups)]
    opts = [Line2D([], [], color="0.2", ls=ls, marker=m, ms=8, mew=1.6,
                   mfc="none" if fill == "none" else "0.2", label=names[o])
            for o, (ls, m, fill) in look.items() if any(k.endswith(", " + o) for k in sens)]
    ncol = max(len(colours), len(opts))
    pad = lambda h: h + [Line2D([], [], alpha=0, label=" ")] * (ncol - len(h))  # noqa: E731
    # legend columns fill top to bottom: interleave so that row 1 holds colours, row 2 optimisers
    handles = [h for pair in zip(pad(colours), pad(opts)) for h in pair]
    fig.legend(handles=handles, loc="outside upper center", ncol=ncol, fontsize=12, handlelength=2.6,
               columnspacing=1.0)
    return fig
