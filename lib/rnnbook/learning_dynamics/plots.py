"""Figures of the learning-dynamics chapter (Proca et al., ICML 2025): F1-F10, E1, E2 and the full
profile's F6 panels, drawn from results computed by :mod:`rnnbook.learning_dynamics.theory`,
:mod:`~rnnbook.learning_dynamics.experiments` and :mod:`~rnnbook.learning_dynamics.networks`.
Presentation only: the results cache's version leaves this module out, so a change here keeps
finished runs.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.ticker import MaxNLocator, NullFormatter

from rnnbook.learning_dynamics import experiments, theory


def _plt():
    import matplotlib.pyplot as plt
    return plt


def plot_f1(f1s: Sequence[dict]):
    """F1 (App. E, Fig. A1): ac and b against the GD step, one row per T; decoupled GD solid, theory
    dashed (eq. 47 with b frozen at λ; Taylor b-flow with u frozen at δ), joint GD dotted; one
    legend below the panels."""
    plt = _plt()
    fig, axes = plt.subplots(len(f1s), 2, figsize=(10, 4.4 * len(f1s) + 0.8), squeeze=False)
    for row, f1 in zip(axes, f1s):
        for r in range(len(f1["delta"])):
            lab = f"$(\\delta,\\lambda)=({f1['delta'][r]:g},{f1['lam'][r]:g})$"
            col = f"C{r}"
            for ax, gd, th, jt in ((row[0], "u_gd", "u_theory", "u_joint"),
                                   (row[1], "b_gd", "b_theory", "b_joint")):
                ax.plot(f1["step"], f1[gd][r], color=col, label=lab + " GD")
                ax.plot(f1["step"], f1[th][r], "--", color="k", lw=1.2, label="theory" if r == 0 else None)
                ax.plot(f1["step"], f1[jt][r], ":", color=col, label=lab + " joint GD")
        T = int(f1["T"])
        row[0].set(xlabel="GD step", ylabel="$ac$", title=f"$ac$ (b frozen at $\\lambda$), T = {T}")
        row[1].set(xlabel="GD step", ylabel="$b$", title=f"$b$ (ac frozen at $\\delta$), T = {T}")
        for ax in row:  # at most five step labels: the full profile runs 160000 steps
            ax.xaxis.set_major_locator(MaxNLocator(5))
    fig.legend(*axes[0, 1].get_legend_handles_labels(), loc="outside lower center", ncol=3)
    return fig


def plot_f2(f2: dict):
    """F2 (Fig. 3): learned b and ac against δ (constant) or λ (inv_exp, exp): K5 lines, GD dots;
    shading where b* > 1."""
    plt = _plt()
    fig, axes = plt.subplots(2, 3, figsize=(10, 7), sharex="col")
    xl = {"constant": "$\\delta$", "inv_exp": "$\\lambda$", "exp": "$\\lambda$"}
    for j, fam in enumerate(experiments.F2_GRIDS):
        for iT, T in enumerate(np.unique(f2["T"])):
            m = (f2["family"] == j) & (f2["T"] == T)
            x = f2["x"][m]
            for i, (key, th) in enumerate((("b", "b_theory"), ("u", "u_theory"))):
                ax = axes[i, j]
                ax.plot(x, f2[th][m], "-", color=f"C{iT}", lw=1.5, label=f"K5, T={T}")
                ax.plot(x, f2[key][m], "o", color=f"C{iT}", ms=4, label=f"GD, T={T}")
                big = f2["b_theory"][m] > 1
                if big.any():
                    ax.axvspan(x[big].min(), x[big].max(), color="0.9", zorder=0)
        axes[0, j].set_title(fam)
        axes[1, j].set_xlabel(xl[fam])
        for ax in axes[:, j]:
            ax.ticklabel_format(axis="y", useOffset=False)
            lo, hi = ax.get_ylim()
            if hi - lo < 0.2:  # a constant line: show it with a readable range
                mid = 0.5 * (lo + hi)
                ax.set_ylim(mid - 0.5, mid + 0.5)
    axes[0, 0].set_ylabel("$b$")
    axes[1, 0].set_ylabel("$ac$")
    axes[0, 0].legend()
    return fig


def plot_f3(f3: dict):
    """F3 (Fig. 4): learned b and ac against δ (constant), λ (exp), β (Dirac), coloured by κ, for
    each T; dotted: the unmodified task's zero-loss solution."""
    plt = _plt()
    nT = len(f3["T"])
    fig, axes = plt.subplots(2 * nT, 3, figsize=(10, 3.0 * 2 * nT), sharex="col")
    xl = {"constant": "$\\delta$", "exp": "$\\lambda$", "dirac": "$\\beta$"}
    cmap = plt.get_cmap("viridis")
    for it, T in enumerate(f3["T"]):
        for j, fam in enumerate(experiments.F3_GRIDS):
            x = f3["x"][j]
            for ik, kap in enumerate(f3["kappa"]):
                col = cmap(ik / max(len(f3["kappa"]) - 1, 1))
                axes[2 * it, j].plot(x, f3["b"][it, j, ik], color=col, label=f"$\\kappa$={kap:g}")
                axes[2 * it + 1, j].plot(x, f3["u"][it, j, ik], color=col)
            if fam != "dirac":
                with np.errstate(divide="ignore"):  # exp at λ = 0: b* = 1/λ is off the axes
                    b0, u0 = theory.zero_loss_solution(fam, int(T), x if fam == "constant" else 1.0,
                                                       1.0 if fam == "constant" else x)
                axes[2 * it, j].plot(x, b0 * np.ones_like(x), ":k", lw=1.2)
                axes[2 * it + 1, j].plot(x, u0 * np.ones_like(x), ":k", lw=1.2)
            axes[2 * it, j].set_ylim(-0.1, 3)
            axes[2 * it + 1, j].set_ylim(-0.1, 4)
            axes[2 * it, j].set_title(f"{fam}, T={T}")
            axes[-1, j].set_xlabel(xl[fam])
        axes[2 * it, 0].set_ylabel("$b$")
        axes[2 * it + 1, 0].set_ylabel("$ac$")
    # one legend above the panels (inside, it would cover the curves)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside upper center",
               ncol=len(f3["kappa"]))
    return fig


def plot_f4(T: int, s1s=(0.5, 1.5, 2.5), n: int = 200):
    """F4: contour maps of :func:`~rnnbook.learning_dynamics.theory.landscape` for each s_1 (rows): data
    term, regulariser, E. The filled contours are rasterised in the SVG (as vectors, the full
    profile's 500 x 500 grids made a 15 MB file); axes, labels and the minimum stay vector."""
    plt = _plt()
    fig, axes = plt.subplots(len(s1s), 3, figsize=(10, 3.4 * len(s1s)), sharex=True, sharey=True)
    b, u = np.linspace(-2, 2, n), np.linspace(-2, 2, n)
    for i, s1 in enumerate(s1s):
        L = theory.landscape(T, s1, b, u)
        for j, key in enumerate(("data", "reg", "E")):
            ax = axes[i, j]
            Z = np.clip(L[key], -10, 10)
            cs = ax.contourf(L["b"], L["u"], Z, levels=30, cmap="RdBu_r", rasterized=True)
            fig.colorbar(cs, ax=ax, shrink=0.8)
            if key == "E":
                k = np.unravel_index(np.argmin(L["E"]), L["E"].shape)
                ax.plot(L["b"][k[1]], L["u"][k[0]], "k*", ms=12)
            ax.set_title(f"{ {'data': 'data term', 'reg': 'regulariser', 'E': 'E'}[key]}, $s_1$={s1:g}")
            ax.grid(False)
        axes[i, 0].set_ylabel("$ac$")
    for ax in axes[-1]:
        ax.set_xlabel("$b$")
    return fig


def plot_f5(phase: dict[int, dict], B: float):
    """F5 (Fig. A3): b*, u*, E* against β for each T (grid minimiser on [-B, B]); lines at
    :math:`1/\\sqrt2` and 1; dashed: the trivial branch u = 1/β, E = β²."""
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(10, 4.2))
    for i, (T, ph) in enumerate(sorted(phase.items())):
        for ax, key in zip(axes, ("b", "u", "E")):
            y = np.abs(ph[key]) if key == "b" else ph[key]
            ax.plot(ph["beta"], y, color=f"C{i}", label=f"T={T}")
    beta = next(iter(phase.values()))["beta"]
    axes[1].plot(beta, 1 / beta, "--k", lw=1, label="trivial")
    axes[2].plot(beta, beta ** 2, "--k", lw=1, label="trivial")
    for ax, lab in zip(axes, ("$|b^*|$", "$u^*$", "$E^*$")):
        ax.axvline(1 / math.sqrt(2), color="0.5", lw=1)
        ax.axvline(1, color="0.5", lw=1, ls="-.")
        ax.set(xlabel="$\\beta$", ylabel=lab)
    axes[0].set_title(f"b in [-{B:g}, {B:g}]")
    axes[0].legend()
    axes[2].set_ylim(0, 3)
    return fig


def plot_f9(f9: dict):
    """F9 (Figs. A9-A11): radius and angle of b and ac against the GD step (logarithmic beyond 100
    steps), one row per group (its legend right of the row); dotted: the K8 solution."""
    plt = _plt()
    groups = ["A9", "A10", "A11"]
    fig, axes = plt.subplots(3, 4, figsize=(10, 8.5), sharex=True)
    for ig, g in enumerate(groups):
        rows = np.nonzero(f9["group"] == g)[0]
        for n, r in enumerate(rows):
            lab = (f"{f9['family'][r]}" if g == "A9" else
                   f"$\\varphi$={np.angle(f9['lam'][r]) / math.pi:+.3g}$\\pi$" if g == "A10" else
                   f"R={abs(f9['lam'][r]):g}")
            for j, (key, fn) in enumerate((("b", np.abs), ("b", np.angle), ("u", np.abs), ("u", np.angle))):
                ax = axes[ig, j]
                ax.plot(f9["step"], fn(f9[key][r]), color=f"C{n}", label=lab)
                ax.axhline(fn(f9[key + "_star"][r]), color=f"C{n}", ls=":", lw=1)
        axes[ig, 0].set_ylabel(g)
        axes[ig, -1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5))
    for j, t in enumerate(("|b|", "arg b", "|ac|", "arg ac")):
        axes[0, j].set_title(t)
        axes[-1, j].set_xlabel("GD step")
    axes[0, 0].set_xscale("symlog", linthresh=100)  # shared: the dynamics end early in the run
    axes[0, 0].set_xlim(0, f9["step"].max())
    return fig


def plot_f10(f10: dict[str, dict]):
    """F10 (rebuttal; App. M's loss): learned b on the T-output tasks, one colour per T: GD (dots)
    and the exact global minimiser (line). Left: the lag-consistent construction against
    (β/κ)/r_c, with C10's bounds r_c/3 and 3 r_c dotted. Right: the first-input variant against β/κ,
    with its feedforward branch :func:`~rnnbook.learning_dynamics.theory.feedforward_b` (thick dashed,
    where it is below 0.5)."""
    plt = _plt()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    lag, var = f10["lag"], f10["first_input"]
    for i, T in enumerate(lag["T"]):
        r_c = lag["r_c"][i]
        ax.plot(lag["ratio"][i] / r_c, lag["b"][i], "o", ms=6, mfc="none", color=f"C{i}", label=f"T={T}")
        ax.plot(lag["fine"][i] / r_c, lag["b_star"][i], "-", lw=1, color=f"C{i}")
        bx.plot(var["ratio"][i], var["b"][i], "o", ms=6, mfc="none", color=f"C{i}", label=f"T={T}")
        bx.plot(var["fine"][i], var["b_star"][i], "-", lw=1, color=f"C{i}")
        r = var["fine"][i][var["fine"][i] <= (int(T) - 1) / 4]  # there the branch is <= 0.5
        bx.plot(r, theory.feedforward_b(r, int(T)), "--", color=f"C{i}", lw=3, alpha=0.6, zorder=5)
    for x in (1 / 3, 3):
        ax.axvline(x, color="0.6", lw=1, ls=":")
    ax.plot([], [], "-k", lw=1, label="global minimiser")
    bx.plot([], [], "--k", lw=3, alpha=0.6, label="feedforward branch")
    ax.set(xscale="log", xlabel="$(\\beta/\\kappa)\\,/\\,r_c$", ylabel="learned $b$",
           title="lag-consistent ($s_{T,1}=\\beta$)")
    ax.set_xticks([0.2, 0.5, 1, 2, 5], ["0.2", "0.5", "1", "2", "5"])
    ax.xaxis.set_minor_formatter(NullFormatter())
    bx.set(xscale="log", xlabel="$\\beta/\\kappa$", title="first-input variant ($s_{t,1}=\\beta$)")
    ax.legend(), bx.legend()
    return fig


def plot_e1(Ts=(5, 10, 20, 50)):
    """E1: finite-T curvature and regulariser against their T -> inf limits, log scale."""
    plt = _plt()
    b = np.linspace(0, 0.98, 300)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for i, T in enumerate(Ts):
        gn, reg, _, _ = theory.curvature(b, T)
        axes[0].plot(b, gn, color=f"C{i}", label=f"T={T}")
        axes[1].plot(b, reg, color=f"C{i}", label=f"T={T}")
    _, _, gl, rl = theory.curvature(b, 2)
    axes[0].plot(b, gl, "--k", label="$(1+b^2)/(1-b^2)^3$")
    axes[1].plot(b, rl, "--k", label="$1/(1-b^2)$")
    axes[0].set(yscale="log", xlabel="$b$", ylabel="$\\sum_k k^2 b^{2(k-1)}$",
                title="curvature in $b$ (u = 1)")
    axes[1].set(yscale="log", xlabel="$b$", ylabel="$\\sum_k b^{2k}$", title="regulariser / $u^2$")
    axes[0].legend()
    return fig


def plot_e2(tab: dict, gd: dict):
    """E2: (a) exact onset β against the box bound B for each T, its T -> inf limit
    :func:`~rnnbook.learning_dynamics.theory.onset_limit` (dashed), β = 1 and the paper's 1.08
    (dotted); (b) final |b| of GD on the Dirac task (T = 6) against s_1/s_T for each b0."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for i, T in enumerate(tab["T"]):
        axes[0].plot(tab["B"], tab["onset"][i], "o-", color=f"C{i}", label=f"T={T}", zorder=3)
    B = np.geomspace(tab["B"].min(), tab["B"].max(), 200)
    axes[0].plot(B, theory.onset_limit(B), "--k", lw=1.2, label="$T\\to\\infty$", zorder=4)
    for y in (1, 1.08):  # behind the T = 4 line
        axes[0].axhline(y, color="0.4", lw=0.8, ls=":", zorder=1)
    axes[0].set(xscale="log", xlabel="box bound $B$ on $b$", ylabel="onset $\\beta$", title="(a)")
    axes[0].set_xticks(tab["B"], [f"{b:g}" for b in tab["B"]])
    axes[0].minorticks_off()
    axes[0].legend()
    for i, b0 in enumerate(gd["b0"]):
        axes[1].plot(gd["ratio"], gd["b"][i], "o-", ms=3, color=f"C{i}", label=f"$b_0$={b0:g}")
    axes[1].set(xlabel="$s_1/s_T$", ylabel="final $|b|$ (GD)", title="(b)")
    axes[1].legend()
    return fig


def _heat(ax, D: np.ndarray, xt, yt, xlabel: str, ylabel: str, title: str):
    """One kernel-distance heat map (rows: y, columns: x), numbers in the cells, nan cells white."""
    im = ax.imshow(D.T, origin="lower", cmap="magma", vmin=0, vmax=1, aspect="auto")
    for i in range(D.shape[0]):
        for j in range(D.shape[1]):
            if np.isfinite(D[i, j]):
                ax.text(i, j, f"{abs(D[i, j]) if abs(D[i, j]) < 5e-3 else D[i, j]:.2f}", ha="center",
                        va="center", fontsize=11, color="w" if D[i, j] < 0.6 else "k")
    ax.set_xticks(range(len(xt)), [f"{x:g}" for x in xt])
    ax.set_yticks(range(len(yt)), [f"{y:g}" for y in yt])
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(False)
    return im


def _converged(ntk: dict, gate: float) -> np.ndarray:
    """D where the final loss is below ``gate`` × the zero network's, else nan; mean over seeds."""
    return np.where(ntk["loss_ratio"] <= gate, ntk["D"], np.nan).mean(-1)


def plot_f6(ntk: dict, gate: float = 1e-3):
    """F6 (Figs. 5, A6): heat maps of the kernel distance D over (T, σ), aligned and unaligned init,
    mean over seeds; unconverged cells (final loss > ``gate`` × the zero network's) are white."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    D = _converged(ntk, gate)
    for ax, init, name in zip(axes, (0, 1), ("aligned", "unaligned")):
        im = _heat(ax, D[:, init], ntk["T"], ntk["sigma"], "T", "initial scale $\\sigma$", name)
    fig.colorbar(im, ax=axes, label="kernel distance D")
    return fig


def plot_f6_extra(wide: dict, sep: dict, gate: float = 1e-3):
    """F6, full profile: A5 (unaligned, wide hidden layer) over (T, σ), and A7 (separate initial
    b = σ_b and a = c = σ; aligned and unaligned rows) over (σ_b, σ) for each T of ``sep``."""
    import matplotlib.pyplot as plt
    Ds = _converged(sep, gate)  # (T, init, σ_b, σ)
    panels = [(init, it) for init in range(Ds.shape[1]) for it in range(len(sep["T"]))]
    rows = math.ceil((1 + len(panels)) / 2)
    fig, axes = plt.subplots(rows, 2, figsize=(10, 4.4 * rows))
    axes = axes.ravel()
    for ax in axes[1 + len(panels):]:
        ax.remove()
    im = _heat(axes[0], _converged(wide, gate)[:, 0], wide["T"], wide["sigma"], "T",
               "initial scale $\\sigma$", f"A5: unaligned, $N_h$ = {int(wide['N_h'])}")
    for ax, (init, it) in zip(axes[1:], panels):
        _heat(ax, Ds[it, init], sep["sigma_b"], sep["sigma"], "initial $W_h$ scale ($\\sigma_b$)",
              "initial $W_x, W_y$ scale ($\\sigma$)", f"A7: {sep['inits'][init]}, T = {sep['T'][it]}")
    fig.colorbar(im, ax=axes[:1 + len(panels)].tolist(), label="kernel distance D")
    return fig


def plot_f7(sens: dict):
    """F7 (Fig. 6): singular values of W_h and W_yW_x over training for the sum and mean targets
    (first seed) with the theory's values; the relative MSE over training at Fig. 6's lengths
    (median over seeds); and the relative MSE after training against T_test."""
    import matplotlib.pyplot as plt
    T = int(sens["T"])
    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    axes = axes.ravel()
    for ax, rule, target, name in ((axes[0], "sum", 1.0, "(a) sum"), (axes[1], "mean", 1.0 / T, "(b) mean")):
        r = int(np.nonzero(sens["rule"] == rule)[0][0])
        ax.plot(sens["step"], sens["sv_h"][:, r], "-", color="C0")
        ax.plot(sens["step"], sens["sv_yx"][:, r], "--", color="C1")
        ax.axhline(1, color="k", ls=":", lw=1)
        ax.axhline(target, color="C1", ls=":", lw=1)
        ax.plot([], [], "-", color="C0", label="$W_h$")
        ax.plot([], [], "--", color="C1", label="$W_yW_x$")
        ax.set(xlabel="GD step", ylabel="singular values", title=name)
        ax.legend(loc="center right")  # clear of the lines at 1 and 1/T
    for j, Tt in enumerate(sens["T_track"]):
        for rule, ls in (("sum", "-"), ("mean", "--")):
            mse = np.median(sens["rel_mse_track"][:, j][:, sens["rule"] == rule], 1)
            axes[2].plot(sens["step"], mse, ls, color=f"C{j}", label=f"T = {Tt}" if rule == "sum" else None)
    axes[2].set(yscale="log", xlabel="GD step", ylabel="relative MSE", title="(c) during training")
    axes[2].legend()
    for rule, col in (("sum", "C0"), ("mean", "C1")):
        mse = sens["rel_mse"][sens["rule"] == rule]
        axes[3].plot(sens["T_test"], np.median(mse, 0), "o-", color=col, ms=4, label=rule)
    axes[3].axvline(T, color="0.6", lw=1, ls="--")
    axes[3].set(yscale="log", xlabel="$T_\\mathrm{test}$", ylabel="relative MSE", title="(d) after training")
    axes[3].legend()
    return fig


def plot_f8(stab: dict, sweep: dict):
    """F8 (Fig. A8): at our rate, singular values of W_h over training and App. L's
    :math:`dH_T/dt_\\theta` with the reported :math:`\\lVert\\partial L/\\partial h_{T+1}\\rVert`, late vs
    early importance (first seed); and C9's rate sweep (:func:`~rnnbook.learning_dynamics.networks.rate_sweep_check`):
    the final dH_T/dt against the rate, with 2/λ_max of each minimum reached at the smallest rate."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    axes = axes.ravel()
    axes[3].axis("off")
    rows = sweep["table"]
    rate = [r["rate"] for r in rows]
    for rule, col in (("late", "C0"), ("early", "C3")):
        r = int(np.nonzero(stab["rule"] == rule)[0][0])
        axes[0].plot(stab["step"], stab["sv_h"][:, r], color=col)
        axes[0].plot([], [], color=col, label=rule)
        axes[1].plot(stab["step"], stab["dH_dt"][:, r], color=col, label=f"{rule}: $dH_T/dt_\\theta$")
        axes[1].plot(stab["step"], stab["grad_h"][:, r], ":", color=col,
                     label=f"{rule}: $\\Vert\\partial L/\\partial h_{{T+1}}\\Vert$")
        d = np.array([row[f"{rule} dH/dt"] for row in rows])
        axes[2].plot(rate, np.where(np.isfinite(d), np.maximum(d, 1e-20), 1e3), "o-", color=col, label=rule)
        axes[2].axvline(2 / rows[0][f"{rule} sharpness"], color=col, ls=":", lw=1.2)
    axes[2].axvline(float(stab["lr"][0]), color="0.6", lw=3, alpha=0.4)
    axes[2].axhline(1e-3, color="k", ls="--", lw=0.8)
    axes[0].set(xlabel="GD step", ylabel="singular values of $W_h$")
    axes[0].legend()
    axes[1].set(yscale="log", xlabel="GD step", ylabel="norm")
    axes[1].legend()
    axes[2].set(xscale="log", yscale="log", xlabel="GD rate", ylabel="final $dH_T/dt_\\theta$ (1e3: diverged)")
    axes[2].legend()
    for ax in axes[:2]:
        ax.xaxis.set_major_locator(MaxNLocator(5))
    return fig


def plot_f11(f11: dict):
    """F11 (Fig. 2): left, ac against the GD step for each δ with b frozen at 1 (GD solid, eq. 47
    dashed); right, b for f = 1, 0.7^(T-t), 0.7^t with ac frozen at K5's value (GD solid, Taylor
    dashed) and at δ = 1 (dotted)."""
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(10, 8))
    for r, d in enumerate(f11["delta"]):
        axes[0].plot(f11["step"], f11["u_gd"][r], color=f"C{r}", label=f"$\\delta = {d:g}$")
        axes[0].plot(f11["step"], f11["u_theory"][r], "--", color="k", lw=1, label="theory" if r == 0 else None)
    labels = ["$f = 1$", "$f = 0.7^{T-t}$", "$f = 0.7^t$"]
    for r, lab in enumerate(labels):
        axes[1].plot(f11["step"], f11["b_gd_k5"][r], color=f"C{r}", label=lab)
        axes[1].plot(f11["step"], f11["b_theory_k5"][r], "--", color="k", lw=1, label="theory" if r == 0 else None)
        axes[1].plot(f11["step"], f11["b_gd_delta"][r], ":", color=f"C{r}", label=f"{lab}, $ac = 1$")
    T = int(f11["T"])
    axes[0].set(xlabel="GD step", ylabel="$ac$", title=f"$ac$, $b$ frozen at 1, T = {T}")
    axes[1].set(xlabel="GD step", ylabel="$b$", title=f"$b$, $ac$ frozen, T = {T}")
    for ax in axes:
        ax.set_xscale("symlog", linthresh=100)
        ax.legend(ncol=2 if ax is axes[1] else 1)
    return fig
