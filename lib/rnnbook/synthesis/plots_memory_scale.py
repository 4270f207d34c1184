"""Figure S5 of the synthesis chapter: Miller & Hardt's truncation depth, Zucchet & Orvieto's moments
and Proca et al.'s regulariser and curvature against the memory scale M = 1/(1 - λ) (computed by
:mod:`rnnbook.synthesis.memory_scale`). Presentation only."""
from __future__ import annotations

import numpy as np

from rnnbook.synthesis import memory_scale

MH, COM, LD = "C0", "C1", "C2"
RHO_STYLES = ("-", "--", "-.")


def _plt():
    import matplotlib.pyplot as plt
    return plt


def _ld_shades(n: int) -> list:
    """Greens from dark to light, one per finite T (short T lightest)."""
    from matplotlib import colormaps
    return [colormaps["Greens"](v) for v in np.linspace(0.35, 0.8, n)]


def _reference(ax, M: np.ndarray, y_at: float, p: float, label: str | None) -> None:
    """A grey dotted line of slope p through (M[-1], y_at)."""
    ax.plot(M, y_at * (M / M[-1]) ** p, ":", color="0.45", lw=1.5, label=label)


def _magnitude_panel(ax, res: dict, S: "memory_scale.Settings", which: str, p: float) -> None:
    """One family (``which`` = "h^2": exponent 1, "(dh)^2": exponent 3) against M, log-log."""
    c = res["curves"]
    M = c["M"]
    ld_name = "LD regulariser" if which == "h^2" else "LD curvature"
    if which == "h^2":
        k = c["MH k_eps instances"]
        ax.fill_between(M, k.min(1), k.max(1), color=MH, alpha=0.25, lw=0)
        ax.plot(M, np.median(k, 1), color=MH, label="Miller & Hardt $k_\\varepsilon$")
    for rho, ls in zip(S.rhos, RHO_STYLES):
        ax.plot(M, c[f"CoM E[{which}] rho={rho:g}"], ls, color=COM,
                label=f"Zucchet & Orvieto, $\\rho = {rho:g}$")
    every = max(len(M) // 16, 1)
    ax.plot(M[::every], c[f"{ld_name} T=inf"][::every], "o", color=LD, ms=5, mfc="none",
            label="Proca et al., $T = \\infty$")
    for T, col in zip(S.Ts, _ld_shades(len(S.Ts))):
        ax.plot(M, c[f"{ld_name} T={T}"], color=col, lw=1.8, label=f"Proca et al., $T = {T}$")
    _reference(ax, M, 2 * c[f"CoM E[{which}] rho=0"][-1], p, "reference slope (1 in a, 3 in b)")
    ax.axvspan(1 / S.window[1], 1 / S.window[0], color="0.9", zorder=0, label="fit window")
    ax.set(xscale="log", yscale="log", xlabel="memory scale $M = 1/(1-\\lambda)$")


def plot_s5(res: dict, S: "memory_scale.Settings"):
    """S5: (a) the exponent-1 quantities, Miller & Hardt's :math:`k_\\varepsilon` (median, band: range
    over instances), Zucchet & Orvieto's :math:`E[h^2]` per ρ, Proca et al.'s regulariser
    :math:`\\sum_{k<T}b^{2k}` (T = ∞: circles; finite T: greens), a slope-1 reference (dotted) and the
    fit window (grey); (b) the same for the exponent-3 quantities :math:`E[(d_\\lambda h)^2]` and the
    curvature :math:`\\sum_{k<T}k^2b^{2(k-1)}`; (c) every curve's local exponent
    :math:`d\\ln Q/d\\ln M`, Miller & Hardt's predicted :math:`1 + 1/\\ln(B_0/\\varepsilon)` (dashed)
    and the half-exponent points :math:`M_{1/2}` of the finite-T terms (dots)."""
    plt = _plt()
    fig = plt.figure(figsize=(11, 9.2), layout="constrained")
    gs = fig.add_gridspec(2, 2)
    ax_a, ax_b, ax_c = fig.add_subplot(gs[0, 0]), fig.add_subplot(gs[0, 1]), fig.add_subplot(gs[1, :])
    _magnitude_panel(ax_a, res, S, "h^2", 1.0)
    _magnitude_panel(ax_b, res, S, "(dh)^2", 3.0)
    ax_a.set(ylabel="$k_\\varepsilon$, $E[h^2]$, $\\sum_{k<T} b^{2k}$", title="(a) exponent 1")
    ax_b.set(ylabel="$E[(d_\\lambda h)^2]$, $\\sum_{k<T} k^2 b^{2(k-1)}$", title="(b) exponent 3")
    c = res["curves"]
    M = c["M"]
    ax_c.plot(M, c["slope MH k_eps"], color=MH)
    ax_c.plot(M, c["MH predicted slope"], "--", color=MH, lw=1.2,
              label="Miller & Hardt, predicted $1 + 1/\\ln(B_0/\\varepsilon)$")
    for rho, ls in zip(S.rhos, RHO_STYLES):
        for which in ("h^2", "(dh)^2"):
            ax_c.plot(M, c[f"slope CoM E[{which}] rho={rho:g}"], ls, color=COM)
    shades = _ld_shades(len(S.Ts))
    for name in ("LD regulariser", "LD curvature"):
        ax_c.plot(M[::max(len(M) // 16, 1)], c[f"slope {name} T=inf"][::max(len(M) // 16, 1)], "o",
                  color=LD, ms=5, mfc="none")
        for T, col in zip(S.Ts, shades):
            ax_c.plot(M, c[f"slope {name} T={T}"], color=col, lw=1.8)
    sat = res["saturation"]
    ax_c.plot([r["M_1/2"] for r in sat], [memory_scale.PREDICTIONS[r["term"]][1] / 2 for r in sat], "o",
              color="k", ms=5, label="$M_{1/2}$: half the exponent")
    for p in (1, 3):
        ax_c.axhline(p, color="0.45", ls=":", lw=1.5)
    ax_c.axvspan(1 / S.window[1], 1 / S.window[0], color="0.9", zorder=0)
    ax_c.set(xscale="log", xlabel="memory scale $M = 1/(1-\\lambda)$", ylim=(-0.1, 3.4),
             ylabel="local exponent $d\\ln Q/d\\ln M$", title="(c) local exponents")
    handles, labels = (a + c for a, c in zip(ax_a.get_legend_handles_labels(), ax_c.get_legend_handles_labels()))
    fig.legend(handles, labels, loc="outside lower center", ncol=3)
    return fig
