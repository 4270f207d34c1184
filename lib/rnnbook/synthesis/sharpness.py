"""Synthesis chapter, section S3: the curse of memory at a finite training length.

Zucchet & Orvieto (NeurIPS 2024) find the loss sharp in the recurrent parameter as memory grows:
for :math:`h_t=\\lambda h_{t-1}+x_t` with white inputs, :math:`E[(\\partial_\\lambda h)^2]=
(1+\\lambda^2)/(1-\\lambda^2)^3` (eq. cm-h2, T -> inf), infinite at λ = 1. Cohen-Karlik et al. (ICLR
2023) train linear students :math:`h_j=CA^jB` on the population loss :math:`L=\\sum_{j<k}(h_j-\\hat
h_j)^2` (eq. ex-loss) over a finite length k, on teachers with :math:`\\hat\\lambda=1`. At the
teacher (zero loss) the Hessian is the Gauss-Newton matrix :math:`H=2J^\\top J`,
:math:`J_{j\\theta}=\\partial h_j/\\partial\\theta`. For a d = 1 student (A, B, C) = (λ, a, c) on
:math:`\\hat h_j=\\hat w\\hat\\lambda^j`, with the one-mode sums

:math:`S_0=\\sum_{j<k}\\hat\\lambda^{2j}`, :math:`S_1=\\sum_{j<k}j\\hat\\lambda^{2j-1}`,
:math:`S_2=\\sum_{j<k}j^2\\hat\\lambda^{2(j-1)}`

(the learning-dynamics chapter's regulariser factor, its b-gradient and its E1 curvature), and
:math:`r^2=a^2+c^2` (:math:`2\\hat w` at the balanced point :math:`a=c=\\sqrt{\\hat w}`):
:math:`H_{\\lambda\\lambda}=2\\hat w^2S_2`, :math:`H_{\\lambda a}=2\\hat wcS_1`,
:math:`H_{\\lambda c}=2\\hat waS_1`, :math:`H_{aa}=2c^2S_0`, :math:`H_{cc}=2a^2S_0`,
:math:`H_{ac}=2\\hat wS_0`. H has rank 2 (the a- and c-columns of J are parallel; the rescaling
:math:`(a,c)\\to(ta,c/t)` is flat), and with :math:`p=\\hat w^2S_2`, :math:`q=r^2S_0`,
:math:`x=\\hat wrS_1`:

:math:`\\lambda_{\\max}(H)=p+q+\\sqrt{(p-q)^2+4x^2}` (eq. s3-lmax).

As k -> inf at :math:`\\hat\\lambda<1`, :math:`H_{\\lambda\\lambda}\\to2\\hat w^2(1+\\hat\\lambda^2)/
(1-\\hat\\lambda^2)^3` (Zucchet's curse, :math:`\\propto(1-\\hat\\lambda)^{-3}`); at
:math:`\\hat\\lambda=1`, :math:`S_2=(k-1)k(2k-1)/6` and :math:`\\lambda_{\\max}\\approx2\\hat w^2k^3/3`:
a finite training length cures the divergence, the sharpness grows like k³ instead. Gradient
descent on L is stable at the teacher iff :math:`\\eta<\\eta^*=2/\\lambda_{\\max}`.

This module checks eq. s3-lmax against the autograd Hessian (float64) on a (λ̂, k) grid, measures
a wider student (d = 2, the extrapolation chapter's d̂ = 2 teacher realised exactly), and sweeps the
step size around η* with the extrapolation chapter's trainer (all runs in ONE batched
``train_students`` call, started at the teacher plus a small perturbation). Every model, trainer
and chapter closed form is imported from its package.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from rnnbook import params
from rnnbook.curse_of_memory import theory as com
from rnnbook.extrapolation.theory import TEACHERS
from rnnbook.extrapolation.theory import DTYPE, impulse_response, population_loss, teacher_impulse
from rnnbook.extrapolation.train import FREEZE_LOSS, RunConfig, run_seed, train_students
from rnnbook.learning_dynamics import theory as ld
from rnnbook.synthesis.regulariser import crossover_prediction

PIECES = ("S3",)  # the results-cache piece the chapter computes with sweep(): rnnbook.paths.PIECES

DIVERGE = 10.0  # the trainer's divergence flag: loss above 10x its initial value


@dataclass(frozen=True)
class Settings:
    """S3's sizes. ``lam_hats``: one-mode teachers' :math:`\\hat\\lambda` (0 < λ̂ <= 1) with weight
    ``w_hat`` (the extrapolation chapter's d̂ = 1 teacher has ŵ = 1); ``ks``: training lengths;
    ``fs``: step sizes as multiples :math:`f=\\eta/\\eta^*` (some below 1, some above); ``steps``: GD
    steps of the sweep (see :func:`steps_needed`); ``loss0``: the initial loss of the perturbed start
    (:func:`start_point`); ``wide``: the extrapolation chapter's teacher (``TEACHERS`` key, d = d̂
    student realising it exactly) of the wider student, measured at ``wide_ks``; ``tol_round``:
    round-off tolerance (relative) of derived against autograd; ``tol_exponent``: tolerance of the
    k-exponent 3 at λ̂ = 1 and of the (1-λ̂)^-3 exponent at k = inf."""

    lam_hats: tuple[float, ...]
    ks: tuple[int, ...]
    fs: tuple[float, ...]
    steps: int
    wide_ks: tuple[int, ...]
    w_hat: float = 1.0
    wide: int = 2
    loss0: float = 1e-6
    tol_round: float = 1e-9
    tol_exponent: float = 0.1

    def __post_init__(self):
        for lam in params.sequence("lam_hats", self.lam_hats):
            params.real("lam_hats", lam, lo=0, hi=1, lo_open=True)
        for k in params.sequence("ks", self.ks, min_len=2):
            params.integer("ks", k, lo=2)
        for k in params.sequence("wide_ks", self.wide_ks, min_len=2):
            params.integer("wide_ks", k, lo=2)
        for f in params.sequence("fs", self.fs, min_len=2):
            if params.real("fs", f, lo=0, lo_open=True) == 1:
                raise params.ParameterError("fs", f, "multiples f > 0 of eta*, f != 1 (the threshold itself)")
        if min(self.fs) >= 1 or max(self.fs) <= 1:
            raise params.ParameterError("fs", self.fs, "multiples on both sides of 1")
        params.integer("steps", self.steps, lo=1)
        params.real("w_hat", self.w_hat, lo=0, lo_open=True)
        params.choice("wide", self.wide, tuple(TEACHERS))
        params.real("loss0", self.loss0, lo=100 * FREEZE_LOSS, hi=1e-3)
        params.real("tol_round", self.tol_round, lo=0, lo_open=True)
        params.real("tol_exponent", self.tol_exponent, lo=0, lo_open=True)


def settings(profile: str, smoke: bool = False) -> Settings:
    """S3's settings for ``profile`` ("quick": six λ̂ up to 1, k = 5..40, six step multiples, 300 GD
    steps, seconds on one CPU thread; "full": ten λ̂, k up to 160, twelve multiples down to
    1 ± 0.01, 1000 steps); ``smoke``: the full profile's code at toy sizes."""
    params.choice("profile", profile, params.PROFILES)
    if params.smoke(smoke, profile):
        return Settings(lam_hats=(0.5, 0.9, 1.0), ks=(5, 10), fs=(0.9, 1.1), steps=200, wide_ks=(5, 10))
    if profile == "quick":
        return Settings(lam_hats=(0.5, 0.8, 0.9, 0.95, 0.99, 1.0), ks=(5, 10, 20, 40),
                        fs=(0.8, 0.9, 0.95, 1.05, 1.1, 1.25), steps=300, wide_ks=(5, 10, 20, 40))
    return Settings(lam_hats=(0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.99, 0.995, 0.999, 1.0),
                    ks=(5, 10, 20, 40, 80, 160), fs=(0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 1.01, 1.02, 1.05, 1.1,
                                                     1.25, 1.5),
                    steps=1000, wide_ks=(5, 10, 20, 40, 80, 160))


def config(S: Settings, seed: int) -> dict:
    """The results cache's key of :func:`compute`."""
    return {**asdict(S), "seed": seed}


# ----------------------------------------------------------------------------- the derived Hessian
def one_mode_sums(lam_hat: float, k: int) -> tuple[float, float, float]:
    """The one-mode sums of eq. s3-lmax, from the learning-dynamics chapter: :math:`S_0=\\sum_{j<k}
    \\hat\\lambda^{2j}` and :math:`S_2=\\sum_{j<k}j^2\\hat\\lambda^{2(j-1)}` (``curvature``, E1), and
    :math:`S_1=\\sum_{j<k}j\\hat\\lambda^{2j-1}`, the b-gradient of the regulariser
    :math:`E|_{s=0}=\\frac12S_0` (``mode_grads`` at s = 0, a = c = 1)."""
    with np.errstate(divide="ignore"):  # curvature's T = inf limits at λ̂ = 1, unused here
        S2, S0, _, _ = ld.curvature(float(lam_hat), k)
    one = np.ones(1)
    S1 = ld.mode_grads(one, np.array([float(lam_hat)]), one, np.zeros((1, k)), ld.powers(k))[2][0]
    return float(S0[0]), float(S1), float(S2[0])


def stationary_length(lam_hat: float) -> int:
    """A k at which the one-mode sums are their k = inf values to round-off,
    :math:`\\lceil40/(1-\\hat\\lambda)\\rceil` (:math:`\\hat\\lambda^{2k}<e^{-80}`); λ̂ < 1."""
    return int(math.ceil(40 / (1 - lam_hat)))


def gn_blocks(lam_hat: float, w_hat: float, k: int, r2: float | None = None) -> tuple[float, float, float]:
    """:math:`(g_{\\lambda\\lambda}, g_{rr}, g_{\\lambda r})` of eq. s3-lmax: the Gauss-Newton matrix
    :math:`J^\\top J` of the d = 1 student at the teacher, restricted to its range (the λ-direction
    and :math:`(c,a)/r`), with :math:`g_{\\lambda\\lambda}=\\hat w^2S_2`, :math:`g_{rr}=r^2S_0`,
    :math:`g_{\\lambda r}=\\hat wrS_1`; ``r2`` = :math:`a^2+c^2` (None: balanced, :math:`2\\hat w`).
    ``k`` = inf: the sums at :func:`stationary_length`."""
    if math.isinf(k):
        k = stationary_length(lam_hat)
    S0, S1, S2 = one_mode_sums(lam_hat, int(k))
    r2 = 2 * w_hat if r2 is None else r2
    return w_hat ** 2 * S2, r2 * S0, w_hat * math.sqrt(r2) * S1


def lambda_max(lam_hat: float, w_hat: float, k: float, r2: float | None = None) -> float:
    """Eq. s3-lmax: the top eigenvalue of the Hessian :math:`H=2J^\\top J` of Cohen-Karlik et al.'s
    loss (eq. ex-loss) at a d = 1 student realising :math:`\\hat h_j=\\hat w\\hat\\lambda^j`:
    :math:`g_{\\lambda\\lambda}+g_{rr}+\\sqrt{(g_{\\lambda\\lambda}-g_{rr})^2+4g_{\\lambda r}^2}`
    (:func:`gn_blocks`; ``k`` = inf: its T = inf value, λ̂ < 1)."""
    g_ll, g_rr, g_lr = gn_blocks(lam_hat, w_hat, k, r2)
    return g_ll + g_rr + math.hypot(g_ll - g_rr, 2 * g_lr)


def h_lamlam(lam_hat: float, w_hat: float, k: float) -> float:
    """:math:`H_{\\lambda\\lambda}=2\\hat w^2\\sum_{j<k}j^2\\hat\\lambda^{2(j-1)}` (E1's curvature, the
    curse-of-memory chapter's ``paper1_terms``); ``k`` = inf: :math:`2\\hat w^2E[(d_\\lambda h)^2]_{\\rho=0}`
    (``dh_dlamb``, eq. cm-h2), infinite at λ̂ = 1."""
    if math.isinf(k):
        return math.inf if lam_hat == 1 else 2 * w_hat ** 2 * float(com.dh_dlamb(lam_hat, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):  # its regulariser factor at λ̂ = 1, unused
        return 2 * w_hat ** 2 * float(com.paper1_terms(lam_hat, int(k))[1])


def k_half(lam_hat: float, w_hat: float) -> int:
    """The least k at which :func:`lambda_max` reaches half its k = inf value (λ̂ < 1; λ_max grows
    with k, as rows added to J grow :math:`J^\\top J`), by bisection."""
    half = lambda_max(lam_hat, w_hat, math.inf) / 2
    lo, hi = 1, stationary_length(lam_hat)  # lambda_max(lo) < half <= lambda_max(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if lambda_max(lam_hat, w_hat, mid) < half else (lo, mid)
    return hi


# ----------------------------------------------------------------------------- the measured Hessian
def teacher_student(lam: tuple[float, ...], w: tuple[float, ...]) -> tuple[torch.Tensor, ...]:
    """The balanced student (Cohen-Karlik §3: symmetric A, B = C^T) that realises the teacher
    exactly with d = d̂: :math:`A=\\mathrm{diag}(\\hat\\lambda)`, :math:`B=C=\\sqrt{\\hat w}`."""
    sw = torch.tensor(w, dtype=DTYPE).sqrt()
    return torch.diag(torch.tensor(lam, dtype=DTYPE)), sw, sw.clone()


def to_theta(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
    """The trainer's parameters of a symmetric student: the upper triangle of A (its update
    ``sym_grad`` is GD on it), then B, C; for d = 1, (λ, a, c)."""
    i, j = torch.triu_indices(len(B), len(B))
    return torch.cat([A[i, j], B, C])


def from_theta(theta: torch.Tensor, d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inverse of :func:`to_theta`: symmetric A from its upper triangle, B, C."""
    i, j = torch.triu_indices(d, d, device=theta.device)
    n = len(i)
    U = torch.zeros(d, d, dtype=theta.dtype, device=theta.device).index_put((i, j), theta[:n])
    return torch.triu(U) + torch.triu(U, 1).T, theta[n:n + d], theta[n + d:]


def hessian(lam: tuple[float, ...], w: tuple[float, ...], k: int,
            device: torch.device = torch.device("cpu")) -> np.ndarray:
    """The measured Hessian: torch autograd (float64) of the extrapolation chapter's
    ``population_loss(impulse_response(...))`` (eq. ex-loss) over :func:`to_theta`'s parameters, at
    :func:`teacher_student` (zero loss)."""
    A, B, C = teacher_student(lam, w)
    h_hat = teacher_impulse(lam, w, k).to(device)[None]
    kk = torch.tensor([k], device=device)

    def loss(theta: torch.Tensor) -> torch.Tensor:
        A_, B_, C_ = from_theta(theta, len(B))
        return population_loss(impulse_response(A_[None], B_[None], C_[None], k), h_hat, kk)[0]

    return torch.autograd.functional.hessian(loss, to_theta(A, B, C).to(device)).cpu().numpy()


def hessian_rows(S: Settings, device: torch.device = torch.device("cpu")) -> list[dict]:
    """Per (λ̂, k): eq. s3-lmax against the autograd Hessian's top eigenvalue and
    :math:`H_{\\lambda\\lambda}` against its (λ, λ) entry (relative errors), the T = inf values
    (:func:`lambda_max` at k = inf, Zucchet's :math:`2\\hat w^2(1+\\hat\\lambda^2)/(1-\\hat\\lambda^2)^3`)
    and the ratio to :math:`2\\hat w^2k^3/3`."""
    rows = []
    for lam in S.lam_hats:
        inf = math.inf if lam == 1 else lambda_max(lam, S.w_hat, math.inf)
        for k in S.ks:
            H = hessian((lam,), (S.w_hat,), k, device)
            meas, der = float(np.linalg.eigvalsh(H)[-1]), lambda_max(lam, S.w_hat, k)
            hll = h_lamlam(lam, S.w_hat, k)
            rows.append({"lam_hat": lam, "k": k, "lambda_max derived": der, "lambda_max measured": meas,
                         "rel. error": abs(meas / der - 1), "H_ll derived": hll,
                         "H_ll rel. error": abs(H[0, 0] / hll - 1), "lambda_max k=inf": inf,
                         "H_ll k=inf (Zucchet)": h_lamlam(lam, S.w_hat, math.inf),
                         "lambda_max / (2 w^2 k^3/3)": der / (2 * S.w_hat ** 2 * k ** 3 / 3),
                         "eta*": 2 / der})
    return rows


def wide_rows(S: Settings, device: torch.device = torch.device("cpu")) -> list[dict]:
    """The wider student: d = d̂ realising the extrapolation chapter's teacher ``S.wide`` exactly
    (:func:`teacher_student`), its measured top Hessian eigenvalue per k, against eq. s3-lmax of its
    λ̂ = 1 mode alone (weight ŵ_1) and against :math:`2\\hat w_1^2k^3/3`."""
    lam, w = TEACHERS[S.wide]
    rows = []
    for k in S.wide_ks:
        meas = float(np.linalg.eigvalsh(hessian(lam, w, k, device))[-1])
        one = lambda_max(lam[0], w[0], k)
        rows.append({"k": k, "lambda_max measured": meas, "one-mode lambda_max": one,
                     "measured / one-mode": meas / one,
                     "measured / (2 w_1^2 k^3/3)": meas / (2 * w[0] ** 2 * k ** 3 / 3), "eta*": 2 / meas})
    return rows


def loglog_exponent(x: tuple[float, float], y: tuple[float, float]) -> float:
    """The exponent of a power law through two points, :math:`\\ln(y_2/y_1)/\\ln(x_2/x_1)`."""
    return math.log(y[1] / y[0]) / math.log(x[1] / x[0])


# ----------------------------------------------------------------------------- the step-size sweep
def steps_needed(f: float, omega: float) -> float:
    """GD steps for a run at :math:`\\eta=f\\eta^*` (f > 1) to reach the trainer's divergence flag:
    linearised at the teacher, the top mode's share ω of the initial loss grows by
    :math:`(1-\\eta\\lambda_{\\max})^2=(2f-1)^2` per step (the other modes shrink), so
    :math:`\\ln(10/\\omega)/(2\\ln(2f-1))` steps (13 at f = 1.05, ω = 1; 58 at f = 1.01)."""
    return math.log(DIVERGE / omega) / (2 * math.log(2 * f - 1))


def start_point(H: np.ndarray, theta: np.ndarray, loss0: float, seed: int) -> tuple[np.ndarray, float]:
    """The sweep's start: the teacher plus :math:`\\delta=su`, u a standard normal direction (a
    deterministic ``seed``), s such that the quadratic loss :math:`\\frac12\\delta^\\top H\\delta` is
    ``loss0``; and the top mode's share ω of it. ``loss0`` = 1e-6 sits four decades above the
    trainer's freeze level 1e-10, so a stable run has room to fall before it freezes (converged),
    while at the divergence flag, 10·loss0, :math:`|\\delta|\\approx\\sqrt{2\\cdot10^{-5}/\\lambda_{\\max}}
    \\le 2\\cdot10^{-3}`: the curvature there differs from H by far less than the 1 % between
    η* and the nearest f."""
    u = torch.randn(len(theta), generator=torch.Generator().manual_seed(seed), dtype=DTYPE).numpy()
    s = math.sqrt(2 * loss0 / (u @ H @ u))
    ev, V = np.linalg.eigh(H)
    omega = 0.5 * ev[-1] * (s * V[:, -1] @ u) ** 2 / loss0
    return theta + s * u, float(omega)


def sweep_points(S: Settings, device: torch.device = torch.device("cpu"),
                 lam_max: dict | None = None) -> list[dict]:
    """The sweep's grid points: every one-mode (λ̂, k) of ``S`` with η* from eq. s3-lmax, and the
    wider student at ``S.wide_ks`` with η* from its measured Hessian; each with its teacher, the
    measured Hessian and θ at the teacher. ``lam_max`` ({(λ̂, k): value}, a test) replaces a
    one-mode λ_max, e.g. by a wrong one."""
    pts = []
    for lam in S.lam_hats:
        for k in S.ks:
            lm = (lam_max or {}).get((lam, k), lambda_max(lam, S.w_hat, k))
            pts.append({"group": "one-mode", "lam": (lam,), "w": (S.w_hat,), "k": k, "lambda_max": lm})
    lam, w = TEACHERS[S.wide]
    for k in S.wide_ks:
        pts.append({"group": f"d={len(lam)}", "lam": lam, "w": w, "k": k, "lambda_max": None})
    for p in pts:
        p["H"] = hessian(p["lam"], p["w"], p["k"], device)
        p["theta"] = to_theta(*teacher_student(p["lam"], p["w"])).numpy()
        if p["lambda_max"] is None:
            p["lambda_max"] = float(np.linalg.eigvalsh(p["H"])[-1])
    return pts


def sweep(S: Settings, seed: int, device: torch.device = torch.device("cpu"),
          lam_max: dict | None = None) -> dict[str, np.ndarray]:
    """GD at :math:`\\eta=f\\eta^*`, :math:`\\eta^*=2/\\lambda_{\\max}`, for every f of ``S.fs`` and
    every grid point of :func:`sweep_points`, from :func:`start_point` (one start per point, the same
    for all f), ``S.steps`` steps, in ONE call of the extrapolation chapter's ``train_students``
    (its ``init``, per-run ``lr``; one-mode students zero-padded to the wider d: padded coordinates
    have zero gradient). Per run: group, λ̂ (the first mode), k, f, η, initial and final loss,
    ``diverged`` (the trainer's flag), ``grew`` (diverged or final > initial), ω and the
    :func:`steps_needed` at its f."""
    pts = sweep_points(S, device, lam_max)
    D = max(len(p["lam"]) for p in pts)
    cfgs, starts, rows = [], [], []
    for p in pts:
        th, omega = start_point(p["H"], p["theta"], S.loss0, run_seed("S3", seed, p["group"], p["lam"], p["k"]))
        A, B, C = (x.numpy() for x in from_theta(torch.from_numpy(th), len(p["lam"])))
        for f in S.fs:
            cfgs.append(RunConfig("S3", D, p["lam"], p["w"], p["k"], "sym_bal", 0.0, 2 * f / p["lambda_max"],
                                  S.steps, 0, max(max(S.ks), max(S.wide_ks)), (0,)))
            starts.append((A, B, C))
            rows.append({"group": str(p["group"]), "lam_hat": p["lam"][0], "k": p["k"], "f": f, "omega": omega,
                         "steps needed": steps_needed(f, omega) if f > 1 else math.nan})
    init = tuple(np.zeros((len(cfgs),) + s) for s in ((D, D), (D,), (D,)))
    for r, (A, B, C) in enumerate(starts):
        d = len(B)
        init[0][r, :d, :d], init[1][r, :d], init[2][r, :d] = A, B, C
    out = train_students(cfgs, init=init, device=device)
    L0 = np.array([o["ck_loss"][0] for o in out])
    L = np.array([o["loss"] for o in out])
    div = np.array([o["diverged"] for o in out])
    cols = {key: np.array([r[key] for r in rows]) for key in rows[0]}
    return {**cols, "lr": np.array([c.lr for c in cfgs]), "loss0": L0, "loss": L, "diverged": div,
            "grew": div | ~(L <= L0), "steps_run": np.array([o["steps_run"] for o in out])}


def brackets(sw: dict[str, np.ndarray]) -> list[dict]:
    """Per grid point of the sweep: the largest f that stayed (did not grow) and the smallest that
    grew, the measured threshold bracket in units of η*; ``ok`` when every f < 1 stayed and every
    f > 1 grew (the bracket contains 1)."""
    out = []
    keys = dict.fromkeys(zip(sw["group"], sw["lam_hat"], sw["k"]))
    for g, lam, k in keys:
        m = (sw["group"] == g) & (sw["lam_hat"] == lam) & (sw["k"] == k)
        f, grew = sw["f"][m], sw["grew"][m]
        stayed_max = float(f[~grew].max()) if (~grew).any() else math.nan
        grew_min = float(f[grew].min()) if grew.any() else math.nan
        ok = bool(np.all(~grew[f < 1]) and np.all(grew[f > 1]))
        out.append({"group": str(g), "lam_hat": float(lam), "k": int(k), "largest stable f": stayed_max,
                    "smallest growing f": grew_min, "ok": ok,
                    "max steps needed": float(np.nanmax(sw["steps needed"][m]))})
    return out


# ----------------------------------------------------------------------------- the claim
def trends(rows: list[dict], S: Settings) -> dict:
    """Zucchet's two trends in the measured Hessians: for λ̂ < 1 the sharpness grows with k toward,
    and stays below, its k = inf value, which grows like :math:`(1-\\hat\\lambda)^{-3}` (exponent of
    the two λ̂ < 1 closest to 1, within ``tol_exponent`` of 3 once :math:`1-\\hat\\lambda\\le0.05`, else
    reported); at λ̂ = 1 it grows like k³ (exponent at the two largest k within ``tol_exponent``),
    approaching :math:`2\\hat w^2k^3/3` from below within :math:`3/(2k)` (the leading correction of
    :math:`S_2`) at the largest k. Also k_half (:func:`k_half`) and :math:`k_{1/2}(1-\\hat\\lambda)` per
    λ̂ < 1, judged within :math:`1-\\hat\\lambda` of S1's curvature constant once
    :math:`1-\\hat\\lambda\\le0.05`."""
    below, tol = [lam for lam in S.lam_hats if lam < 1], 1 + S.tol_round  # saturated: equal to round-off
    mono = True
    for lam in below:
        m = sorted((r["k"], r["lambda_max measured"], r["lambda_max k=inf"]) for r in rows if r["lam_hat"] == lam)
        mono &= all(b[1] * tol >= a[1] for a, b in zip(m, m[1:])) and all(x[1] <= x[2] * tol for x in m)
    out = {"grows with k, below k=inf (lam_hat < 1)": bool(mono)}
    if len(below) >= 2:
        l1, l2 = sorted(below)[-2:]
        e = -loglog_exponent((1 - l1, 1 - l2), (lambda_max(l1, S.w_hat, math.inf), lambda_max(l2, S.w_hat, math.inf)))
        out["k=inf exponent of 1/(1-lam_hat)"] = e
        out["k=inf exponent ok"] = bool(abs(e - 3) <= S.tol_exponent or 1 - l2 > 0.05)
    if 1.0 in S.lam_hats:
        m = sorted((r["k"], r["lambda_max measured"]) for r in rows if r["lam_hat"] == 1.0)
        (k1, y1), (k2, y2) = m[-2:]
        e = loglog_exponent((k1, k2), (y1, y2))
        sat = y2 / (2 * S.w_hat ** 2 * k2 ** 3 / 3)  # S_2(k) = k^3/3 (1 - 3/(2k) + ...), the rest O(1/k^2)
        out.update({"k exponent at lam_hat=1": e, "k exponent ok": bool(abs(e - 3) <= S.tol_exponent),
                    "saturation ratio at largest k": sat,
                    "k^3 law ok": bool(1 - 1.5 / k2 <= sat <= 1 + S.tol_round)})
    out["k_half"] = {lam: k_half(lam, S.w_hat) for lam in below}
    out["k_half (1-lam_hat)"] = {lam: k_half(lam, S.w_hat) * (1 - lam) for lam in below}
    kappa = crossover_prediction("curvature")  # S1's 1.337; an integer k_half moves it by < 1 - lam_hat
    out["k_half ok"] = all(abs(v - kappa) <= 1 - lam for lam, v in out["k_half (1-lam_hat)"].items()
                           if 1 - lam <= 0.05)
    out["passed"] = bool(all(v for key, v in out.items() if key.endswith("ok") or key.startswith("grows")))
    return out


def check(hess: list[dict], sw: dict[str, np.ndarray], S: Settings) -> dict:
    """S3's rule: eq. s3-lmax and :math:`H_{\\lambda\\lambda}` match the autograd Hessian to
    ``tol_round`` everywhere (``round-off``), the sweep brackets η* at every one-mode grid point
    (``bracket``: every f < 1 stayed, every f > 1 grew, and ``decisive``: every f > 1 run had the
    :func:`steps_needed` to reach the divergence flag, else a run that stayed proves nothing) and
    Zucchet's trends hold (:func:`trends`). "agree": all three; "inconclusive": the derived Hessian
    misses autograd (our derivation, the bridge between the papers, failed: nothing is carried
    across); "conflict": the trends fail (the curse's scalings are not in Cohen-Karlik's loss);
    "partly": only the bracket fails. The wider student's bracket (η* from its measured Hessian) is
    reported, not judged."""
    err = float(max(max(r["rel. error"], r["H_ll rel. error"]) for r in hess))
    br = brackets(sw)
    one = [b for b in br if b["group"] == "one-mode"]
    need = float(np.nanmax(sw["steps needed"]))
    round_ok, decisive = err <= S.tol_round, need <= S.steps
    bracket_ok = all(b["ok"] for b in one) and decisive
    tr = trends(hess, S)
    passed = bool(round_ok and bracket_ok and tr["passed"])
    verdict = ("agree" if passed else "inconclusive" if not round_ok else "conflict" if not tr["passed"]
               else "partly")
    wide = [b for b in br if b["group"] != "one-mode"]
    return {"max rel. error": err, "round-off": bool(round_ok), "brackets": br, "bracket": bool(bracket_ok),
            "decisive": bool(decisive), "max steps needed": need,
            "wide bracket": bool(all(b["ok"] for b in wide)), "trends": tr,
            "bracket lo": max(b["largest stable f"] for b in one),
            "bracket hi": min(b["smallest growing f"] for b in one), "passed": passed, "verdict": verdict}


def compute(S: Settings, seed: int, device: torch.device = torch.device("cpu"),
            sw: dict[str, np.ndarray] | None = None) -> dict:
    """Everything S3 shows: the Hessian rows (one-mode grid) and the wider student's, the sweep (one
    batched ``train_students`` call; ``sw``: its result, e.g. from the results cache), the check and
    its verdict."""
    hess = hessian_rows(S, device)
    wide = wide_rows(S, device)
    sw = sweep(S, seed, device) if sw is None else sw
    return {"hessian": hess, "wide": wide, "sweep": sw, "check": check(hess, sw, S)}


def numbers(res: dict, S: Settings) -> dict[str, float]:
    """S3's numbers for the text: the worst relative error of eq. s3-lmax (and of H_λλ) against
    autograd, the bracket (largest stable f, smallest growing f over all one-mode points), the runs
    and steps, the k-exponent and saturation ratio at λ̂ = 1, the k = inf exponent, the wider
    student's k-exponent and its ratio to its λ̂ = 1 mode at the largest k, and k_half(1-λ̂) at the
    λ̂ < 1 closest to 1 with S1's curvature constant (1.337) beside it."""
    c, tr, wide = res["check"], res["check"]["trends"], res["wide"]
    (k1, y1), (k2, y2) = sorted((r["k"], r["lambda_max measured"]) for r in wide)[-2:]
    below = [lam for lam in S.lam_hats if lam < 1]
    out = {"s3_max_rel_err": c["max rel. error"], "s3_tol_round": S.tol_round,
           "s3_bracket_lo": c["bracket lo"], "s3_bracket_hi": c["bracket hi"], "s3_n_runs": len(res["sweep"]["f"]),
           "s3_steps": S.steps, "s3_loss0": S.loss0, "s3_kmax": max(S.ks), "s3_w_hat": S.w_hat,
           "s3_wide_exponent": loglog_exponent((k1, k2), (y1, y2)),
           "s3_wide_ratio": wide[-1]["measured / one-mode"], "s3_c_curv": crossover_prediction("curvature")}
    if "k exponent at lam_hat=1" in tr:
        out.update({"s3_k_exponent": tr["k exponent at lam_hat=1"],
                    "s3_sat_ratio": tr["saturation ratio at largest k"]})
    if "k=inf exponent of 1/(1-lam_hat)" in tr:
        out["s3_inf_exponent"] = tr["k=inf exponent of 1/(1-lam_hat)"]
    if below:
        lam = max(below)
        out.update({"s3_lam_top": lam, "s3_k_half": tr["k_half"][lam], "s3_k_half_scaled": tr["k_half (1-lam_hat)"][lam]})
    return out
