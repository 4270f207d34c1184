"""Figure S1 of the synthesis chapter (presentation only): the regulariser of Proca et al. as the
output variance of Zucchet & Orvieto, from :func:`rnnbook.synthesis.regulariser.compute`."""
from __future__ import annotations

import numpy as np

from rnnbook.curse_of_memory import theory as com
from rnnbook.learning_dynamics import theory as ld
from rnnbook.synthesis import regulariser


def _plt():
    import matplotlib.pyplot as plt
    return plt


def plot_s1(res: dict, S: regulariser.Settings):
    """S1: (a) :math:`E[h_T^2]` (per :math:`c^2a^2`) and (b) :math:`E[(\\partial_bh_T)^2]` against 1 - b
    (log; b = 1 at the left edge, tick "0"): LD's finite-T closed forms (lines), CoM's Monte-Carlo
    over T steps (dots; crosses in (a): LD's network with readout, divided by :math:`c^2a^2`), the
    T = inf closed forms at ρ = 0 (dashed), and :math:`b_\\times` where they are a factor 2 apart
    (open squares)."""
    plt = _plt()
    rows, cross = res["grid"]["rows"], res["cross"]["rows"]
    pos = [x for x in S.one_minus_b if x > 0]
    x0 = min(pos) / 10  # where b = 1 is drawn
    eps = np.geomspace(min(pos) / 3, 1, 300)
    u2 = (S.a * S.c) ** 2
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6))
    panels = (("variance", "E[h^2]", com.h2, lambda b, T: regulariser.variance(1, b, 1, T)),
              ("curvature", "E[(dh)^2]", com.dh_dlamb, lambda b, T: ld.curvature(b, T)[0]))
    for ax, (m, key, inf, fin) in zip(axes, panels):
        for i, T in enumerate(S.Ts):
            col = f"C{i}"
            ax.plot(eps, fin(1 - eps, T), color=col, label=f"T = {T}: LD closed form")
            r = [q for q in rows if q["T"] == T]
            x = np.array([q["1-b"] if q["1-b"] > 0 else x0 for q in r])
            ax.plot(x, [q[f"{key} MC"] for q in r], "o", color=col, ms=5, label="CoM Monte-Carlo" if i == 0 else None)
            if m == "variance":
                ax.plot(x, [q["E[(c h)^2] MC"] / u2 for q in r], "x", color="k", ms=6,
                        label="LD network, $/c^2a^2$" if i == 0 else None)
            for q in cross:
                if q["T"] == T:
                    bx = q[f"b_x {m}"]
                    ax.plot(1 - bx, fin(np.array([bx]), T)[0], "s", mfc="none", mec="k", ms=8,
                            label="$b_\\times$ (factor 2)" if i == 0 else None)
        ax.plot(eps, inf(1 - eps, 0.0), "--k", lw=1.4, label="$T=\\infty$ (CoM, $\\rho=0$)")
        ticks = [x0] + [10.0 ** k for k in range(int(np.floor(np.log10(min(pos)))), 1)]
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(ticks, ["0"] + [f"$10^{{{int(np.log10(t))}}}$" for t in ticks[1:]])
        ax.minorticks_off()
        ax.invert_xaxis()  # b grows to the right
        ax.set_xlabel("$1-b$  (0: $b = 1$)")
    axes[0].set(ylabel="$E[h_T^2]$", title="(a) regulariser / $c^2a^2$: $\\Sigma_{k<T}\\, b^{2k}$")
    axes[1].set(ylabel="$E[(\\partial_b h_T)^2]$", title="(b) curvature: $\\Sigma_{k<T}\\, k^2 b^{2(k-1)}$")
    handles, labels = axes[0].get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: (not labels[i].startswith("T"), i))  # lines first
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center",
               ncol=3, fontsize=11)
    return fig
