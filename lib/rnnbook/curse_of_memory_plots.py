"""Figures of the curse-of-memory chapter (Zucchet & Orvieto, NeurIPS 2024): F1-F5, F8, F9, E2.

Named functions returning a matplotlib Figure; the computations they draw live in
:mod:`rnnbook.curse_of_memory`.
"""
from __future__ import annotations

import math

import numpy as np

from rnnbook.curse_of_memory import S, S_notebook, dh_dlamb, gamma_exp_dh, gamma_h2, h2, loss_1d, paper1_terms


# ============================================================================ figures
def _lam_axis(ax):
    ax.set_xlabel(r"$-\log_{10}(1-\lambda)$")


def plot_f1(rhos, mc_rows, f1c_lams) -> "plt.Figure":
    """F1: (A) K2 vs λ for each ρ, grey K1 at ρ = 1, MC dots; (B) K5 vs λ for λ* = 1 - .01·2^k;
    (C) K5 vs θ - θ* at |λ| = |λ*|."""
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 3, figsize=(15, 4.4))
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
    axs[0].legend(fontsize=9)
    for k in range(7):
        ls = 1 - 0.01 * 2 ** k
        xs = np.linspace(0.0, 3, 400)
        lam = 1 - 10 ** -xs
        axs[1].plot(xs, loss_1d(lam, ls), color=plt.cm.viridis(k / 6), label=fr"$1-\lambda^*={0.01 * 2 ** k:g}$")
    axs[1].set_yscale("log")
    _lam_axis(axs[1])
    axs[1].set_ylabel(r"loss $L(\lambda)$")
    axs[1].set_title(r"(B) real $\lambda$")
    axs[1].legend(fontsize=8, ncol=2)
    dth = np.linspace(-np.pi, np.pi, 801)
    for k, nu in enumerate(f1c_lams):
        axs[2].plot(dth, loss_1d(nu * np.exp(1j * dth), nu + 0j), color=plt.cm.viridis(k / max(len(f1c_lams) - 1, 1)),
                    label=fr"$|\lambda|=|\lambda^*|={nu:g}$")
    axs[2].set_yscale("log")
    axs[2].set_xlabel(r"$\theta-\theta^*$")
    axs[2].set_ylabel(r"loss")
    axs[2].set_title(r"(C) phase, $\theta^*=0$")
    axs[2].legend(fontsize=8)
    return fig


def plot_f2(rhos) -> "plt.Figure":
    """F2: K4: (A) γ²E[h²]; (B) γ²E[(d_{ω_ν}h)²] with the exp parametrisation; grey: without γ/exp."""
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.2))
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
    axs[0].legend(fontsize=9)
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


def plot_bars(labels, values, ylabel: str, log: bool = True, xlabel: str | None = None) -> "plt.Figure":
    """F4 / F10 / F11: one bar per configuration."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(max(6.4, 1.2 * len(labels)), 4.2))
    ax.bar(range(len(labels)), values, color=[f"C{i % 8}" for i in range(len(labels))])
    ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    return fig


def plot_f5(h: dict, eff: dict[str, dict[str, float]]) -> "plt.Figure":
    """F5: Hessians at the optimum (SymLog colours), their spectra, and Adam's effective lr per group."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import SymLogNorm
    fig, axs = plt.subplots(1, 4, figsize=(18, 4.3))
    vmax = max(abs(h["H_dense"]).max(), abs(h["H_cdiag"]).max())
    norm = SymLogNorm(linthresh=1e-2, vmin=-vmax, vmax=vmax)
    for ax, n, title in ((axs[0], "dense", "dense RNN"), (axs[1], "cdiag", "complex diagonal")):
        im = ax.imshow(h[f"H_{n}"], cmap="RdBu_r", norm=norm)
        ax.set_title(f"Hessian, {title}")
        ax.grid(False)
    ticks = [-1e6, -1e3, -1, 0, 1, 1e3, 1e6]
    cb = fig.colorbar(im, ax=axs[1], shrink=0.8, ticks=[t for t in ticks if abs(t) <= vmax])
    cb.ax.tick_params(labelsize=9)
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
    labels, vals, cols = [], [], []
    for i, (model, groups) in enumerate(eff.items()):
        for g, v in groups.items():
            labels.append(r"$\lambda$" if g == "lambda" else g)
            vals.append(v)
            cols.append(f"C{i}")
    bars = axs[3].bar(range(len(vals)), vals, color=cols)
    axs[3].set_xticks(range(len(vals)), labels)
    axs[3].set_yscale("log")
    axs[3].set_ylabel("Adam effective lr")
    axs[3].legend([bars[0], bars[-1]], list(eff), fontsize=9, loc="upper left")
    axs[3].set_title(r"effective lr, $\eta=10^{-3}$")
    return fig


def plot_f8(runs: dict[str, np.ndarray]) -> "plt.Figure":
    """F8: loss along training for the polar and exp angle parametrisations (true Adam, and the
    notebook's sign descent)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for i, (name, loss) in enumerate(runs.items()):
        ax.semilogy(np.clip(loss, 1e-15, None), color=f"C{i}", label=name, lw=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (floored at 1e-15)")
    ax.legend(fontsize=9)
    return fig


def plot_f9(rhos, n_nu: int, n_theta: int, lam0=0.99 * np.exp(1j * np.pi / 4)) -> "plt.Figure":
    """F9: |S(λ, λ0, ρ)| on the disc (as the notebook: λ0 not conjugated), rows: exact (Eq. cm-S),
    the notebook's ``estimate``, and their ratio."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import LogFormatterMathtext
    nu = np.linspace(0, 0.99, n_nu)
    th = np.linspace(-1, 1, n_theta) * np.pi
    N, TH = np.meshgrid(nu, th)
    lam = N * np.exp(1j * TH)
    fig, axs = plt.subplots(3, len(rhos), figsize=(3.1 * len(rhos), 9.0), squeeze=False)
    norm = LogNorm(vmin=1e-2, vmax=1e5)
    for j, rho in enumerate(rhos):
        Z = {}
        for i, (fn, name) in enumerate(((S, "exact"), (S_notebook, "notebook"))):
            Z[name] = np.abs(fn(lam, lam0, rho))
            cs = axs[i, j].contourf(lam.real, lam.imag, np.clip(Z[name], 1e-2, 1e5),
                                    levels=np.logspace(-2, 5, 29), norm=norm, cmap="Blues")
            axs[i, j].set_title(fr"{name}, $\rho={rho:g}$", fontsize=11)
        ratio = np.clip(Z["notebook"] / Z["exact"], 0.25, 1.75)
        cr = axs[2, j].contourf(lam.real, lam.imag, ratio, levels=np.linspace(0.25, 1.75, 31),
                                cmap="RdBu_r")
        axs[2, j].set_title(fr"notebook / exact, $\rho={rho:g}$", fontsize=11)
        for i in range(3):
            axs[i, j].set_aspect("equal")
            axs[i, j].grid(False)
            axs[i, j].tick_params(labelsize=9)
    fig.colorbar(cs, ax=axs[:2].ravel().tolist(), shrink=0.7, ticks=[1e-2, 1, 1e2, 1e4],
                 format=LogFormatterMathtext(), label=r"$|S(\lambda,\lambda_0,\rho)|$")
    fig.colorbar(cr, ax=axs[2].ravel().tolist(), shrink=0.9, ticks=[0.25, 0.5, 1, 1.5],
                 label="ratio")
    return fig


def plot_e2(T_values=(10, 100, 1000)) -> "plt.Figure":
    """E2: the learning-dynamics regulariser and its b-curvature at finite T against their T -> inf
    limits :math:`E[h^2]_{\\rho=0}` and :math:`E[(d_\\lambda h)^2]_{\\rho=0}`."""
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 2, figsize=(11, 4.2))
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
        ax.legend(fontsize=9)
    return fig
