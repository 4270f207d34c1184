"""Figure S4 of the synthesis chapter: Cohen-Karlik et al.'s students on one- and two-mode teachers
against Proca et al.'s energy (computed by :mod:`rnnbook.synthesis.learnability`). Presentation only."""
from __future__ import annotations

import numpy as np

from rnnbook.synthesis import learnability


def _plt():
    import matplotlib.pyplot as plt
    return plt


def _first(res: dict, d: int, d_hat: int, k: int, lam: float | None = None) -> np.ndarray:
    """The runs (all seeds) of student size d on teacher size d_hat at length k (and λ̂ = lam)."""
    r = learnability._rows(res, d, d_hat)
    r = r[res["k"][r] == k]
    return r if lam is None else r[res["lam"][r, 0] == lam]


def plot_s4(res: dict, chk: dict, S: "learnability.Settings"):
    """S4 at the first k. (A) one-mode teachers, d = 1, first seed each: loss against GD step, the
    extrapolation trainer (circles) and 2E of Proca's ``mode_gd`` (line), with the logistic's half
    time (eq. 47, b frozen at its init; dotted verticals). (B) the two-mode teacher: loss of the
    d = 1 (both trainers), 2 and 3 students (every seed), Proca's floor 2E* (dashed) and the zero-loss
    gate (dotted). (C) impulse responses of the first seed: teacher, the d = 1 student (line), the
    wider students (open markers) and the best single exponential :math:`u^*b^{*j}` (crosses); the training window j < k shaded. (D) Proca's profile
    energy 2E*(b) (u minimised) of the two-mode teacher and the d = 1 students' final (A, L)."""
    plt = _plt()
    from matplotlib.lines import Line2D

    fig, axes = plt.subplots(2, 2, figsize=(11, 9), layout="constrained")
    k = S.ks[0]
    _panel_one_mode(axes[0, 0], res, chk, S, k)
    floor = next(row for row in chk["floor"]["rows"] if row["k"] == k)
    _panel_two_mode(axes[0, 1], res, S, k, floor)
    ax = axes[1, 0]
    q = np.arange(S.horizon_q)
    ax.axvspan(-0.5, k - 0.5, color="0.92", zorder=0, label="training window $j < k$")
    ax.plot(q, res["h_hat"][_first(res, 1, 2, k)[0]], color="0.4", lw=5, label="teacher $\\hat h_j$")
    for c, d in enumerate(S.ds):  # d = 1 a line; the wider students markers, seen on the teacher
        style = {"lw": 1.8} if d == 1 else {"ls": "", "marker": "os^"[c % 3], "mfc": "none", "ms": 5 + 2 * c}
        ax.plot(q, res["h"][_first(res, d, 2, k)[0]], color=f"C{c + 3}", label=f"$d = {d}$", **style)
    ax.plot(q, floor["u*"] * floor["b*"] ** q, "k+", ms=10, label="best single exp. $u^*b^{*j}$")
    ax.set(xlabel="tap $j$", ylabel="$h_j$", title="(C) impulse responses, two-mode teacher")
    ax.legend(loc="upper right", ncol=2)
    ax.set_ylim(top=1.45)
    ax = axes[1, 1]
    b = np.linspace(-1.5, 1.5, 1201)
    E = learnability.ld.profile_energy(b[:, None], learnability._task(res, _first(res, 1, 2, k)[0])[None])[0]
    ax.plot(b, learnability.NORM * E, color="k", lw=1.8, label="$2E^*(b)$ (Proca)")
    r1 = _first(res, 1, 2, k)
    ax.plot(res["A"][r1, 0, 0], res["loss"][r1], "o", color="C3", ms=9, mfc="none",
            label="$d = 1$ students: $(A, L)$")
    ax.axhline(floor["2E* (Proca floor)"], color="k", ls="--", lw=1.2)
    ax.set(xlabel="recurrence $b$ ($= A$)", ylabel="loss $L$, $u$ minimised",
           title="(D) the best single exponential")
    ax.legend(loc="upper center")
    return fig


def _panel_one_mode(ax, res: dict, chk: dict, S, k: int) -> None:
    """Panel A of :func:`plot_s4`."""
    from matplotlib.lines import Line2D

    one, ck = np.flatnonzero(res["one"]), res["ck_steps"]
    times = [row for row in chk["time"]["rows"] if row["k"] == k]
    handles = []
    for c, (lam, w) in enumerate(S.one_mode):
        r = int(_first(res, 1, 1, k, lam)[0])
        j = int(np.flatnonzero(one == r)[0])
        live = ck <= res["steps_run"][r]
        ax.semilogy(ck[live], res["ld_L"][j][live], color=f"C{c}")
        ax.semilogy(ck[live][::8], res["ck_loss"][r][live][::8], "o", color=f"C{c}", ms=6, mfc="none")
        ax.axvline(next(x for x in times if x["lam_hat"] == lam)["predicted (b = b0)"], color=f"C{c}",
                   ls=":", lw=1.5)
        handles.append(Line2D([], [], color=f"C{c}", label=f"$\\hat\\lambda={lam:g},\\ \\hat w={w:g}$"))
    handles += [Line2D([], [], color="0.3", label="$2E$ (mode_gd)"),
                Line2D([], [], color="0.3", marker="o", mfc="none", ls="", label="$L$ (trainer)"),
                Line2D([], [], color="0.3", ls=":", label="eq. 47 half time")]
    ax.set(xlabel="GD step $n$", ylabel="loss $L = 2E$", title=f"(A) one-mode teachers, $d = 1$, $k = {k}$")
    ax.legend(handles=handles, loc="lower left")


def _panel_two_mode(ax, res: dict, S, k: int, floor: dict) -> None:
    """Panel B of :func:`plot_s4`."""
    one, ck = np.flatnonzero(res["one"]), res["ck_steps"]
    for c, d in enumerate(S.ds):
        rd = _first(res, d, 2, k)
        for n, r in enumerate(rd):
            live = ck <= res["steps_run"][r]
            ax.loglog(ck[live] + 1, res["ck_loss"][r][live], color=f"C{c + 3}", lw=1.5,
                      label=f"$d = {d}$ (trainer)" if n == 0 else None)
        if d == 1:
            j = int(np.flatnonzero(one == rd[0])[0])
            live = ck <= res["steps_run"][rd[0]]
            ax.loglog(ck[live][::6] + 1, res["ld_L"][j][live][::6], "x", color=f"C{c + 3}", ms=6,
                      label="$d = 1$: $2E$ (mode_gd)")
    ax.axhline(floor["2E* (Proca floor)"], color="k", ls="--", lw=1.5, label="Proca floor $2E^*$")
    ax.axhline(S.gate, color="0.5", ls=":", lw=1.5, label="zero-loss gate")
    ax.set(xlabel="GD step $n + 1$", ylabel="loss $L$", title=f"(B) two-mode teacher, $k = {k}$",
           ylim=(1e-11, 10))
    ax.legend(loc="lower left")
