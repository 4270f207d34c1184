"""Figure S2 of the synthesis chapter: projected and unconstrained students of a λ̂ = 1 teacher
against Miller & Hardt's truncation bound (computed by :mod:`rnnbook.synthesis.stable_students`).
Presentation only."""
from __future__ import annotations

import math

import numpy as np

from rnnbook.synthesis import stable_students


def _plt():
    import matplotlib.pyplot as plt
    return plt


def plot_s2(res: dict[str, np.ndarray], S: "stable_students.Settings"):
    """S2: one row per teacher. (A) the students' impulse responses :math:`h_j` (solid, one per λ,
    the first of each λ's stacked students; the unconstrained one in black-dotted), the teacher's
    :math:`\\hat h_j` (grey, with its ±τ band) and each bound :math:`\\|C\\|\\|B\\|\\lambda^j` (dashed);
    (B) :math:`|h_j - \\hat h_j|` (log), the tolerance (grey) and each bound's floor
    :math:`|\\hat h_j| - \\|C\\|\\|B\\|\\lambda^j` (dashed); vertical dotted lines: the bound's
    horizons t*, dots: the measured reach."""
    plt = _plt()
    from matplotlib.lines import Line2D

    hz = stable_students.horizons(res, S.tol)
    fig, axes = plt.subplots(len(S.d_hats), 2, figsize=(11, 4.3 * len(S.d_hats) + 1.4), squeeze=False,
                             layout="constrained")
    j = np.arange(S.horizon_q)
    for row, dh in zip(axes, S.d_hats):
        first = [int(np.flatnonzero((res["d_hat"] == dh) & _same(res["lam"], lam))[0])
                 for lam in (*S.lams, math.nan)]
        h_hat = res["h_hat"][first[0]]
        tau = S.tol * np.abs(h_hat).max()
        row[0].plot(j, h_hat, color="0.4", lw=3, label="teacher $\\hat h_j$")
        row[0].fill_between(j, h_hat - tau, h_hat + tau, color="0.85", label="$\\pm\\tau$")
        row[1].axhline(tau, color="0.5", lw=1.5, label="tolerance $\\tau$")
        for c, (lam, r) in enumerate(zip(S.lams, first)):
            col = f"C{c}"
            bound = stable_students.impulse_bound(lam, res["cb"][r], S.horizon_q)
            row[0].plot(j, res["h"][r], color=col, label=f"$\\lambda = {lam:g}$")
            row[0].plot(j, bound, "--", color=col, lw=1)
            err = np.abs(res["h"][r] - h_hat)
            row[1].semilogy(j, err, color=col, label=f"$\\lambda = {lam:g}$")
            floor = stable_students.error_floor(h_hat, lam, res["cb"][r])
            row[1].semilogy(j[floor > 0], floor[floor > 0], "--", color=col, lw=1)
            for ax in row:
                ax.axvline(hz["t_star"][r], color=col, ls=":", lw=1.2)
            if hz["reach"][r] >= 0:
                row[1].plot(hz["reach"][r], err[hz["reach"][r]], "o", color=col, ms=6)
        r = first[-1]
        row[0].plot(j, res["h"][r], ":", color="k", lw=2, label="unconstrained")
        row[1].semilogy(j, np.abs(res["h"][r] - h_hat), ":", color="k", lw=2, label="unconstrained")
        row[0].set(xlabel="tap $j$", ylabel="$h_j$", title=f"impulse responses, $\\hat d = {dh}$",
                   ylim=(-0.1, 1.5 * np.abs(h_hat).max()))
        row[1].set(xlabel="tap $j$", ylabel="$|h_j - \\hat h_j|$", title="error and the bound's floor",
                   ylim=(1e-4, 2 * np.abs(h_hat).max()))
        for ax in row:  # the short horizons sit at the first taps
            ax.set_xscale("symlog", linthresh=1, linscale=0.5)
            ticks = [t for t in (0, 1, 2, 5, 10, 20, 50, 100, 200) if t < S.horizon_q]
            ax.set_xticks(ticks, [str(t) for t in ticks])
            ax.set_xlim(0, S.horizon_q - 1)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles += [axes[0, 1].get_legend_handles_labels()[0][0], Line2D([], [], ls="--", lw=1, color="0.3"),
                Line2D([], [], ls=":", lw=1.2, color="0.3")]
    labels += ["tolerance $\\tau$", "bound, floor (dashed)", "horizon $t^*$"]
    fig.legend(handles, labels, loc="outside lower center", ncol=4)
    return fig


def _same(x: np.ndarray, lam: float) -> np.ndarray:
    """Runs whose bound is ``lam`` (nan: the unconstrained runs)."""
    return np.isnan(x) if math.isnan(lam) else x == lam
