"""Figures of the extrapolation chapter (Cohen-Karlik et al., ICLR 2023): F1-F6, E1.

Named functions returning a matplotlib Figure; the computations they draw live in
:mod:`rnnbook.extrapolation.theory`, :mod:`~rnnbook.extrapolation.train` and
:mod:`~rnnbook.extrapolation.experiments`. Presentation only: the results cache's version leaves
this module out, so a change here keeps finished runs.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rnnbook.extrapolation import experiments, theory, train


EPS_CLIP = 1e3  # plots clip eps here; the stored values are the true ones


def plot_transition(rows: Sequence[dict], gate: float, title: str, tol: float):
    """F1/F2: median eps_q (log) against k, min-max bars over seeds, one curve per (d_hat, d)
    (shifted sideways a little so that markers do not hide each other); a dashed line at
    k = 2 d_hat; hollow markers where some seed did not reach the loss gate; C1's two lines, each
    drawn in the curve's colour only where it applies: 0.1 for 2 <= k < 2 d_hat (dotted) and the
    tolerance ``tol`` for k > 2 d_hat (dash-dot)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    groups = sorted({(r["d_hat"], r["d"]) for r in rows})
    hollow = False
    for i, (dh, d) in enumerate(groups):
        color = f"C{i % 8}"
        shift = 0.08 * (i - (len(groups) - 1) / 2)
        sub = experiments.select(rows, d_hat=dh, d=d)
        ks = sorted({r["k"] for r in sub})
        x = np.array(ks) + shift
        eps = [np.clip([r["eps"] for r in sub if r["k"] == k], 1e-6, EPS_CLIP) for k in ks]
        med = np.array([np.median(e) for e in eps])
        lo, hi = med - [e.min() for e in eps], [e.max() for e in eps] - med
        label = f"$\\hat d={dh}$" + (f", $d={d}$" if len({g[1] for g in groups}) > 1 else "")
        ax.errorbar(x, med, yerr=[lo, hi], color=color, capsize=3, label=label)
        done = np.array([all(experiments.converged(r, gate) for r in sub if r["k"] == k) for k in ks])
        ax.scatter(x[done], med[done], color=color, zorder=3)
        ax.scatter(x[~done], med[~done], facecolors="white", edgecolors=color, zorder=3)
        hollow |= bool((~done).any())
        ax.axvline(2 * dh, color=color, ls="--", lw=1)
        if 2 * dh > 2:  # (a) is judged at 2 <= k < 2 d_hat
            ax.hlines(0.1, 2 - 0.2, 2 * dh - 1 + 0.2, color=color, lw=1.2, ls=":")
        ax.hlines(tol, 2 * dh + 1 - 0.2, max(ks[-1], 2 * dh + 1) + 0.2, color=color, lw=1.2, ls="-.")
    ax.set(yscale="log", xlabel="training length $k$", ylabel=r"extrapolation error $\epsilon_q$",
           title=title)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], color="grey", ls=":", label="(a): $\\geq 0.1$ for $2\\leq k<2\\hat d$"),
                Line2D([], [], color="grey", ls="-.", label=f"(b): $\\leq {tol:g}$ for $k>2\\hat d$"),
                Line2D([], [], color="grey", ls="--", lw=1, label="$k=2\\hat d$")]
    if hollow:
        handles.append(Line2D([], [], ls="", marker="o", mfc="white", mec="grey",
                              label="a seed missed the loss gate"))
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=9)
    return fig


def plot_prop3(lam: Sequence[float], w: Sequence[float], k: int, h_gd: np.ndarray | None,
               alpha: float = 1.0, n: int = 21):
    """F6: impulse responses of the teacher, a GD student (if one was trained at this k) and the
    Prop. 3 construction, over the first ``n`` taps (fewer if the student's horizon is shorter)."""
    import matplotlib.pyplot as plt

    n = min(n, len(h_gd)) if h_gd is not None else n
    A, B, C, _ = theory.prop3_student(lam, w, k, alpha)
    h3 = theory.impulse_response(A[None], B[None], C[None], n)[0].numpy()
    fig, ax = plt.subplots()
    j = np.arange(n)
    ax.plot(j, theory.teacher_impulse(lam, w, n).numpy(), "k-", label="teacher $\\hat h_j$")
    if h_gd is not None:
        ax.plot(j, h_gd[:n], "o", mfc="none", ms=9, label="GD student")
    ax.plot(j, h3, "s-", ms=4, label=f"Prop. 3 construction ($\\alpha={alpha:g}$)")
    ax.axvline(k, color="grey", ls="--", lw=1)
    ax.set(xlabel="$j$ (dashed: $j = k$)", ylabel="impulse response $h_j$", xticks=j[::2])
    ax.legend()
    return fig


def plot_convergence(rows: Sequence[dict], example: dict, bound: float | None = None, factor: float = 2.0):
    """F4: (a) final L against eps for runs with k > 2 d_hat, with C6's bound
    :math:`\\epsilon_q = c\\sqrt L` (``bound`` = c, dashed) and ``factor`` times it (dotted);
    (b) L(t) and eps(t) of one run."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(8.2, 4.2))
    for i, variant in enumerate(sorted({r["variant"] for r in rows})):
        sub = experiments.select(rows, variant=variant)
        a.scatter([r["loss"] for r in sub], [r["eps"] for r in sub], color=f"C{i}",
                  label=train.VARIANTS[variant], alpha=0.8)
    losses = [r["loss"] for r in rows if r["loss"] > 0 and math.isfinite(r["loss"])]
    if bound is not None and math.isfinite(bound) and losses:
        L = np.geomspace(min(losses), max(losses), 50)
        a.plot(L, bound * np.sqrt(L), "k--", lw=1, label=f"C6: $\\epsilon_q = {bound:.3g}\\sqrt{{L}}$")
        a.plot(L, factor * bound * np.sqrt(L), "k:", lw=1, label=f"{factor:g} × that")
    a.set(xscale="log", yscale="log", xlabel="final loss $L$", ylabel=r"$\epsilon_q$ at the end",
          title="(a) runs with $k>2\\hat d$")
    a.legend()
    b.plot(example["ck_steps"], example["ck_loss"], "o-", label="loss $L$")
    b.plot(example["ck_steps"], example["ck_eps"], "s-", label=r"$\epsilon_q$")
    b.set(xscale="log", yscale="log", xlabel="GD step", ylabel="value at checkpoint",
          title=f"(b) $\\hat d={example['d_hat']}$, $k={example['k']}$, {train.VARIANTS[example['variant']]}")
    b.legend()
    return fig


def plot_imbalance(check: dict, d: int):
    """F5: median final imbalance against init scale sigma, with a slope-2 guide and the "no
    effect" line :math:`\\sigma\\sqrt{2d}` (slope 1: the initial :math:`\\|B-C^\\top\\|` over a
    final :math:`\\|B\\|` of order one)."""
    import matplotlib.pyplot as plt

    s = np.array(sorted(check["median_imbalance"]))
    m = np.array([check["median_imbalance"][x] for x in s])
    fig, ax = plt.subplots()
    ax.plot(s, m, "o-", label="median over runs")
    ax.plot(s, m[-1] * (s / s[-1]) ** 2, "k--", lw=1, label="slope 2")
    ax.plot(s, s * math.sqrt(2 * d), "k:", lw=1.2,
            label=f"no effect: $\\sigma\\sqrt{{2d}}$, slope 1 ($d={d}$)")
    ax.set(xscale="log", yscale="log", xlabel=r"init scale $\sigma$",
           ylabel=r"$\|B-C^\top\|/\|B\|$ at the end")
    ax.legend()
    return fig


def plot_spectra(rows: Sequence[dict], lam: Sequence[float], w: Sequence[float]):
    """E1: atoms and weights of learned students (stem plots) against the teacher's."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    ncols = min(len(rows), 2)
    nrows = math.ceil(len(rows) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.1 * ncols, 3.3 * nrows + 0.4), sharey=True,
                             squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(rows):]:
        ax.remove()
    for ax, r in zip(axes, rows):
        mu, wts = theory.spectrum(r["A"], r["B"], r["C"])
        ax.stem(mu, wts, linefmt="C1-", markerfmt="C1s", basefmt=" ", label="student")
        t = ax.stem(lam, w, linefmt="k:", markerfmt="ko", basefmt=" ", label="teacher")
        t.markerline.set(markerfacecolor="none", markersize=11)
        ax.set(title=f"$k={r['k']}$", xlabel=r"atom $\mu_i$")
        ax.xaxis.set_major_locator(MaxNLocator(5))  # few enough to stay apart at this size
    for ax in axes[::ncols]:
        ax.set_ylabel("weight $w_i$")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=2)
    return fig


def plot_gru(res: dict[str, np.ndarray]):
    """F3: GRU rel-MSE (L = 20, 40) and beyond-window rel-MSE against k: medians, per-seed dots and
    the reference of a student that copies k taps and is then silent."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8.2, 4.6))
    ks = np.unique(res["k"])
    for ax, kind in zip(axes, ("rel_mse", "beyond")):
        for i, L in enumerate(experiments.GRU_LENGTHS):
            y = res[f"{kind}_{L}"]
            ax.scatter(res["k"] + 0.1 * (i - 0.5), y, s=12, color=f"C{i}", alpha=0.5)
            ax.plot(ks, [np.median(y[res["k"] == k]) for k in ks], "o-", color=f"C{i}",
                    label=f"$L={L}$")
            if kind == "rel_mse":
                ax.plot(ks, [res[f"ref_{L}"][res["k"] == k][0] for k in ks], ":", color=f"C{i}",
                        label=f"silent beyond $k$, $L={L}$")
        ax.set(yscale="log", xlabel="training length $k$")
    axes[0].set(ylabel="relative MSE", title="(a) test rel-MSE")
    axes[1].set(title="(b) beyond the training window", ylabel="beyond-window relative MSE")
    axes[1].axhline(1, color="grey", lw=0.8)
    # one legend for both panels (the same colours), below them, off the per-seed dots
    fig.legend(handles=axes[0].get_lines(), loc="outside lower center", ncols=2)
    return fig


def plot_sizes(rows: Sequence[dict], gate: float, tol: float, d_hat: int = 2):
    """F7 (C10): eps_q against the student size d (both axes log), one curve per k (the median over
    converged seeds) with every seed as a dot (hollow: missed the loss gate), and C1's lines: 0.1
    (dotted; k < 2 d_hat must stay above) and the tolerance (dash-dot; k > 2 d_hat must stay under)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 4.4))
    for i, k in enumerate(sorted({r["k"] for r in rows})):
        sub = experiments.select(rows, k=k)
        ds = sorted({r["d"] for r in sub})
        side = "below" if k < 2 * d_hat else "at" if k == 2 * d_hat else "above"
        med = [np.median([r["eps"] for r in sub if r["d"] == d and experiments.converged(r, gate)] or [np.nan])
               for d in ds]
        ax.plot(ds, np.clip(med, 1e-6, EPS_CLIP), "-", color=f"C{i}", label=f"$k={k}$ ({side} $2\\hat d$)")
        for r in sub:
            ok = experiments.converged(r, gate)
            ax.scatter(r["d"], min(r["eps"], EPS_CLIP), s=14, color=f"C{i}" if ok else "white",
                       edgecolors=f"C{i}", zorder=3)
    ax.axhline(0.1, color="grey", ls=":", lw=1.2, label="0.1 ((a), $k<2\\hat d$)")
    ax.axhline(tol, color="grey", ls="-.", lw=1.2, label=f"{tol:g} ((b), $k>2\\hat d$)")
    ax.set(xscale="log", yscale="log", xlabel="student state dimension $d$",
           ylabel=r"extrapolation error $\epsilon_q$", title=f"$\\hat d = {d_hat}$, symmetric, balanced")
    fig.legend(loc="outside lower center", ncols=3, fontsize=9)
    return fig
