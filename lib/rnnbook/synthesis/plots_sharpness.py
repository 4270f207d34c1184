"""Figure S3 of the synthesis chapter: the sharpness of Cohen-Karlik et al.'s loss at the teacher
against Zucchet & Orvieto's curse of memory, and GD's step-size threshold 2/λ_max (computed by
:mod:`rnnbook.synthesis.sharpness`). Presentation only."""
from __future__ import annotations

import numpy as np

from rnnbook.extrapolation.theory import TEACHERS
from rnnbook.synthesis import sharpness


def _plt():
    import matplotlib.pyplot as plt
    return plt


def plot_s3(res: dict, S: "sharpness.Settings"):
    """S3: (A) the top Hessian eigenvalue at the teacher against the training length k (log-log), one
    colour per λ̂: eq. s3-lmax (lines, every integer k), autograd (dots), Zucchet & Orvieto's T = inf
    curvature :math:`2\\hat w^2(1+\\hat\\lambda^2)/(1-\\hat\\lambda^2)^3` (dashed, λ̂ < 1), the k³ law
    :math:`2\\hat w^2k^3/3` (dotted) and the wider student (d = 2, crosses); (B) the step-size sweep:
    final over initial loss against :math:`f=\\eta/\\eta^*` (one marker per run; colour: λ̂, open:
    wider student), the threshold f = 1 (vertical) and the divergence flag (10x, dotted)."""
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4.8), layout="constrained")
    kk = np.arange(min(S.ks), max(S.ks) + 1)
    colours = {lam: f"C{i}" for i, lam in enumerate(S.lam_hats)}
    for lam, col in colours.items():
        a.plot(kk, [sharpness.lambda_max(lam, S.w_hat, k) for k in kk], color=col, label=f"$\\hat\\lambda = {lam:g}$")
        r = [q for q in res["hessian"] if q["lam_hat"] == lam]
        a.plot([q["k"] for q in r], [q["lambda_max measured"] for q in r], "o", color=col, ms=5)
        if lam < 1:
            a.axhline(r[0]["H_ll k=inf (Zucchet)"], color=col, ls="--", lw=1)
    a.plot(kk, 2 * S.w_hat ** 2 * kk ** 3 / 3, ":k", lw=1.5, label="$2\\hat w^2k^3/3$")
    lam_w, w_w = TEACHERS[S.wide]
    a.plot([q["k"] for q in res["wide"]], [q["lambda_max measured"] for q in res["wide"]], "xk", ms=8,
           mew=1.5, label=f"wider student, $d = {len(lam_w)}$, $\\hat w_1 = {w_w[0]:g}$")
    a.plot([], [], "--", color="0.4", lw=1, label="$T=\\infty$ (Zucchet & Orvieto)")
    a.plot([], [], "o", color="0.4", ms=5, label="autograd")
    a.set(xscale="log", yscale="log", xlabel="training length $k$", ylabel="$\\lambda_{\\max}(H)$ at the teacher",
          title="(A) sharpness: eq. s3-lmax (lines) and autograd")
    a.set_xticks(S.ks, [str(k) for k in S.ks])
    a.minorticks_off()
    a.legend(ncol=2)
    sw = res["sweep"]
    ratio = sw["loss"] / sw["loss0"]
    one = sw["group"] == "one-mode"
    jitter = 1 + 0.012 * (np.arange(len(ratio)) % 5 - 2)  # separate the stacked markers
    for lam, col in colours.items():
        m = one & (sw["lam_hat"] == lam)
        b.plot(sw["f"][m] * jitter[m], ratio[m], "o", color=col, ms=4, alpha=0.8)
    b.plot(sw["f"][~one] * jitter[~one], ratio[~one], "s", mfc="none", mec="k", ms=5, label="wider student")
    b.axvline(1, color="k", lw=1.2, label="$\\eta = \\eta^* = 2/\\lambda_{\\max}$")
    b.axhline(1, color="0.5", lw=0.8)
    b.axhline(sharpness.DIVERGE, color="0.5", ls=":", lw=1, label="divergence flag (10x)")
    b.set(xscale="log", yscale="log", xlabel="$f = \\eta/\\eta^*$", ylabel="final loss / initial loss",
          title=f"(B) GD from the teacher, {S.steps} steps")
    b.set_xticks(S.fs, [f"{f:g}" for f in S.fs])
    b.minorticks_off()
    b.legend(loc="center left")
    return fig
