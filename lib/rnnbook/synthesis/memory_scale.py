"""Synthesis chapter, section S5: one memory scale in three papers.

Miller & Hardt's (ICLR 2019) truncation depth for an ε error, Zucchet & Orvieto's (NeurIPS 2024)
hidden-state variance and sensitivity, and Proca et al.'s (ICML 2025) effective regulariser and its
b-curvature all grow as powers of one number, the memory scale :math:`M = 1/(1-\\lambda)` of a
contraction :math:`\\lambda` (Proca et al.'s b). Every quantity comes from its chapter's package:
``inference_bound`` / ``inference_depth`` (stable models, Prop. 3), ``h2`` / ``dh_dlamb``
(curse of memory, eq. cm-h2), ``curvature`` (learning dynamics, Lemma 3.2 and E1). Exponents are
fitted with the curse-of-memory chapter's ``loglog_slope`` over a stated window of M, against the
window's own finite-size bias, and the finite-T saturation of Proca et al.'s terms is located.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import brentq
from scipy.special import gamma as gamma_fn, gammainc

from rnnbook import params
from rnnbook.curse_of_memory import theory as com
from rnnbook.learning_dynamics import theory as ld
from rnnbook.stable_models import theory as sm

DTYPE = torch.float64
Fn = Callable[[np.ndarray, float], np.ndarray]  # Q(λ, ρ): loglog_slope's signature

# name -> (paper, predicted exponent p of M, first correction a_1 in Q = C M^p (1 + a_1/M + ...));
# the a_1 are derived in the section's text, the exponents are the papers'. Miller & Hardt's two rows
# are identities of the rebuilt bound (B_0 = ell M, k_eps / ln(B_0/eps) = 1/ln(1/lambda)): they check
# the stable-models chapter's implementation, not the paper; its raw depth is judged by raw_depth_row.
PREDICTIONS: dict[str, tuple[str, float, float]] = {
    "MH B_0": ("Miller & Hardt", 1.0, 0.0),
    "MH k_eps / ln(B_0/eps)": ("Miller & Hardt", 1.0, -0.5),
    "CoM E[h^2]": ("Zucchet & Orvieto", 1.0, 0.5),
    "CoM E[(dh)^2]": ("Zucchet & Orvieto", 3.0, 0.5),
    "LD regulariser": ("Proca et al.", 1.0, 0.5),
    "LD curvature": ("Proca et al.", 3.0, 0.5),
}
ROUNDOFF = 1e-9  # tolerance of a slope with no finite-size bias (a_1 = 0): float64 fits


@dataclass(frozen=True)
class Settings:
    """S5's sizes. ``window``: the fit window of :math:`1-\\lambda` (M from 1/hi to 1/lo);
    ``decades``: lower ends of the decade windows :math:`M \\in [M_0, 10M_0]` of the table;
    ``eps``: Miller & Hardt's accuracy ε (absolute, in the state's norm); ``instances``: random
    tanh RNNs of the stable-models chapter's C3 (their :math:`\\|U\\|_2B_x`); ``Ts``: Proca et al.'s
    finite lengths; ``rhos``: Zucchet & Orvieto's input correlations in the figure; ``grid``: M
    points of the figure; ``sat_tol``: tolerance of :math:`T(M_{1/2}/(c_pT)-1)`."""

    window: tuple[float, float] = (1e-3, 1e-1)
    decades: tuple[float, ...] = (10.0, 100.0, 1000.0)
    eps: float = 1e-3
    instances: int = 20
    Ts: tuple[int, ...] = (10, 100, 1000)
    rhos: tuple[float, ...] = (0.0, 0.9)
    grid: int = 80
    sat_tol: float = 2.0

    def __post_init__(self):
        lo, hi = self.window
        params.real("window[0]", lo, 0.0, 1.0, lo_open=True)
        params.real("window[1]", hi, lo, 0.5, lo_open=True)
        params.real("eps", self.eps, 0.0, lo_open=True)
        params.integer("instances", self.instances, 1)
        for T in params.sequence("Ts", self.Ts):
            params.integer("Ts", T, 2)
        for M0 in params.sequence("decades", self.decades):
            params.real("decades", M0, 2.0)
        params.integer("grid", self.grid, 10)


def settings(profile: str, smoke: bool = False) -> Settings:
    """S5's settings for ``profile`` ("quick": seconds on one CPU thread; "full": more decades,
    lengths and figure points, the C3 full profile's 200 instances); ``smoke``: the full profile's
    code at toy sizes."""
    params.choice("profile", profile, params.PROFILES)
    if params.smoke(smoke, profile):
        return Settings(decades=(10.0,), instances=2, Ts=(10, 100), grid=20)
    if profile == "quick":
        return Settings()
    return Settings(decades=(10.0, 100.0, 1000.0, 1e4, 1e5), instances=200,
                    Ts=(10, 30, 100, 300, 1000, 3000, 10_000), rhos=(0.0, 0.9, 0.99), grid=300)


# ----------------------------------------------------------------------------- the three quantities
def lam_of(M: np.ndarray) -> np.ndarray:
    """The contraction of memory scale M: :math:`\\lambda = 1 - 1/M`."""
    return 1 - 1 / np.asarray(M, float)


def mh_instances(S: Settings, seed: int, device: torch.device = torch.device("cpu")
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """``S.instances`` inputs of Prop. 3's bound: U of the stable-models chapter's C3 RNNs
    (``tanh_rnn_instances``, its n, m) and inputs :math:`x_t \\sim U[-1,1]^m` over its T steps."""
    TS = sm.theory_settings("quick")
    gen = torch.Generator().manual_seed(seed)
    _, U = sm.tanh_rnn_instances(S.instances, (1.0,), TS.c3_n, TS.c3_m, gen)
    x = torch.rand(S.instances, TS.c3_T, TS.c3_m, generator=gen, dtype=DTYPE) * 2 - 1
    return U[0].to(device), x.to(device)


def mh_depth(lam: np.ndarray, U: torch.Tensor, x: torch.Tensor, eps: float) -> np.ndarray:
    """Miller & Hardt, Prop. 3 (eq. sm-prop3) solved for k: :math:`k_\\varepsilon(\\lambda)` per λ and
    instance (shape (len(λ), instances)), by the stable-models chapter's ``inference_depth``."""
    lam_t = torch.as_tensor(np.asarray(lam, float), dtype=DTYPE, device=U.device)[:, None]
    return sm.inference_depth(lam_t, U, x, eps).cpu().numpy()


def mh_B0(lam: np.ndarray, U: torch.Tensor, x: torch.Tensor) -> np.ndarray:
    """Prop. 3's bound at k = 0, :math:`B_0 = (\\|U\\|_2B_x + \\|\\phi(0,0)\\|)/(1-\\lambda)` (``inference_bound``),
    per λ and instance."""
    lam_t = torch.as_tensor(np.asarray(lam, float), dtype=DTYPE, device=U.device)[:, None]
    return sm.inference_bound(lam_t, U, x, torch.zeros(1, dtype=DTYPE, device=U.device))[..., 0].cpu().numpy()


def quantities(U: torch.Tensor, x: torch.Tensor, eps: float) -> dict[str, Fn]:
    """The section's quantities as functions of (λ, ρ), each from its chapter (ρ is read by CoM's
    only; MH's are the median over instances): MH's :math:`B_0`, its depth per e-fold
    :math:`k_\\varepsilon/\\ln(B_0/\\varepsilon)` and :math:`k_\\varepsilon` itself; CoM's
    :math:`E[h^2]`, :math:`E[(d_\\lambda h)^2]` (eq. cm-h2); LD's regulariser
    :math:`\\sum_k b^{2k}\\to 1/(1-b^2)` and curvature (E1) at T = ∞ (``curvature``'s limits)."""
    med = lambda a: np.median(a, axis=-1)  # noqa: E731
    return {
        "MH B_0": lambda lam, rho: med(mh_B0(lam, U, x)),
        "MH k_eps / ln(B_0/eps)": lambda lam, rho: med(mh_depth(lam, U, x, eps) / np.log(mh_B0(lam, U, x) / eps)),
        "MH k_eps": lambda lam, rho: med(mh_depth(lam, U, x, eps)),
        "CoM E[h^2]": com.h2,
        "CoM E[(dh)^2]": com.dh_dlamb,
        "LD regulariser": lambda lam, rho: ld.curvature(lam, 1)[3],
        "LD curvature": lambda lam, rho: ld.curvature(lam, 1)[2],
    }


def ld_finite(T: int) -> dict[str, Fn]:
    """Proca et al.'s regulariser :math:`\\sum_{k<T}b^{2k}` (Lemma 3.2) and b-curvature
    :math:`\\sum_{k<T}k^2b^{2(k-1)}` (E1) at finite T, from ``curvature``."""
    return {"LD regulariser": lambda b, rho: ld.curvature(b, T)[1],
            "LD curvature": lambda b, rho: ld.curvature(b, T)[0]}


# ----------------------------------------------------------------------------- exponents
def slope(fn: Fn, window: tuple[float, float], rho: float = 0.0) -> float:
    """The fitted exponent of M: minus CoM's ``loglog_slope`` (against :math:`\\ln(1-\\lambda)` =
    :math:`-\\ln M`, 20 log-spaced points) on :math:`1-\\lambda \\in` ``window``."""
    return -com.loglog_slope(fn, rho, *window)


def bias_slope(window: tuple[float, float]) -> float:
    """:math:`\\sigma_W`, the fitted slope of :math:`1/M` against :math:`\\ln M` on ``window`` (the same
    20 points as :func:`slope`): a correction :math:`Q = CM^p(1 + a_1/M)` shifts the fitted exponent
    by :math:`a_1\\sigma_W` to first order (``loglog_slope`` of :math:`e^{1-\\lambda}`, whose log is 1/M)."""
    return slope(lambda lam, rho: np.exp(1 - lam), window)


def local_slope(fn: Fn, M: float, rho: float = 0.0, rel: float = 1e-3) -> float:
    """:math:`d\\ln Q/d\\ln M` at M: :func:`slope` on the narrow window :math:`1-\\lambda \\in
    [1/(M(1+rel)), (1+rel)/M]`."""
    return slope(fn, (1 / (M * (1 + rel)), (1 + rel) / M), rho)


def exponent_rows(qs: dict[str, Fn], window: tuple[float, float]) -> list[dict]:
    """Per quantity of :data:`PREDICTIONS` (ρ = 0): the fitted exponent on ``window``, the
    prediction p, the first-order bias :math:`a_1\\sigma_W` and the tolerance, the bias's own size
    (:data:`ROUNDOFF` where :math:`a_1 = 0`); passed if :math:`|s - p - a_1\\sigma_W| \\le`
    tolerance, so that the exponent and the sign of the derived :math:`a_1` are both checked."""
    sigma = bias_slope(window)
    rows = []
    for name, (paper, p, a1) in PREDICTIONS.items():
        s = slope(qs[name], window)
        bias = a1 * sigma + 0.0  # + 0.0: no "-0" where a_1 = 0
        tol = max(abs(bias), ROUNDOFF)
        rows.append(_row(name, paper, s, p, bias, tol))
    return rows


def _row(name: str, paper: str, s: float, p: float, bias: float, tol: float) -> dict:
    """One row of the exponent table: passed if :math:`|s - p - a_1\\sigma_W| \\le` ``tol``."""
    return {"quantity": name, "paper": paper, "fitted exponent": s, "predicted": p, "s - p": s - p,
            "bias a_1 sigma_W": bias, "tolerance": tol, "passed": bool(abs(s - p - bias) <= tol)}


def raw_depth_row(qs: dict[str, Fn], ell: float, eps: float, window: tuple[float, float]) -> dict:
    """Miller & Hardt's raw depth :math:`k_\\varepsilon` judged against eq. syn-s5-mh: its exponent
    is :math:`1 + 1/\\ln(B_0/\\varepsilon)` at the window's geometric centre :math:`M_c`
    (:math:`B_0 = \\ell M_c`, ℓ the instances' median :math:`\\|U\\|_2B_x`) plus the depth per
    e-fold's bias :math:`-\\sigma_W/2`, within that bias's size; the log term's own curvature over the
    window is second order (about a tenth of the tolerance on M in [10, 1000])."""
    M_c = (window[0] * window[1]) ** -0.5
    p = 1 + 1 / math.log(ell * M_c / eps)
    bias = PREDICTIONS["MH k_eps / ln(B_0/eps)"][2] * bias_slope(window)
    return _row("MH k_eps (raw)", "Miller & Hardt", slope(qs["MH k_eps"], window), p, bias, abs(bias))


def mh_log_correction(U: torch.Tensor, x: torch.Tensor, eps: float, window: tuple[float, float]
                      ) -> dict[str, np.ndarray | float]:
    """Miller & Hardt's raw exponent: per instance, the fitted slope of :math:`k_\\varepsilon` on
    ``window`` and its log correction, the slope of :math:`\\ln(B_0/\\varepsilon)` (≈
    :math:`1/\\ln(B_0/\\varepsilon)` at the window's centre); the raw slope is their sum plus the
    depth per e-fold's (least squares is linear), and only that last one tends to a power. Also the
    median :math:`L = \\|U\\|_2B_x` (:math:`B_0` at λ = 0)."""
    raw, corr = [], []
    for i in range(U.shape[0]):
        Ui, xi = U[i:i + 1], x[i:i + 1]
        raw.append(slope(lambda lam, rho: mh_depth(lam, Ui, xi, eps)[:, 0], window))
        corr.append(slope(lambda lam, rho: np.log(mh_B0(lam, Ui, xi)[:, 0] / eps), window))
    raw, corr = np.array(raw), np.array(corr)
    return {"raw": raw, "log correction": corr, "raw median": float(np.median(raw)),
            "correction median": float(np.median(corr)), "L median": float(np.median(
                mh_B0(np.array([0.0]), U, x)[0]))}


def decade_rows(qs: dict[str, Fn], decades: tuple[float, ...]) -> list[dict]:
    """The fitted exponents of :func:`exponent_rows`' quantities and of MH's raw :math:`k_\\varepsilon`
    on each decade :math:`M \\in [M_0, 10M_0]`, with :math:`\\sigma_W/2` (the size of the 1/M bias,
    which shrinks tenfold per decade; MH's log correction shrinks like :math:`1/\\ln M`)."""
    rows = []
    for M0 in decades:
        w = (1 / (10 * M0), 1 / M0)
        rows.append({"M window": f"[{M0:.0e}, {10 * M0:.0e}]", "|sigma_W|/2": abs(bias_slope(w)) / 2,
                     **{name: slope(qs[name], w) for name in (*PREDICTIONS, "MH k_eps")}})
    return rows


def rho_rows(rhos: tuple[float, ...], window: tuple[float, float]) -> list[dict]:
    """CoM's exponents at input correlation ρ on ``window`` and on CoM's own window (``slope_range``,
    where the asymptote has set in: :math:`1-\\lambda \\ll 1-\\rho`), against ``asymptotes``."""
    rows = []
    for rho in (*rhos, 1.0):
        a = com.asymptotes(rho)
        own = com.slope_range(rho)
        rows.append({"rho": rho, "E[h^2] window": slope(com.h2, window, rho),
                     "E[(dh)^2] window": slope(com.dh_dlamb, window, rho),
                     "CoM window 1-lambda": f"[{own[0]:.0e}, {own[1]:.0e}]",
                     "E[h^2] CoM window": slope(com.h2, own, rho),
                     "E[(dh)^2] CoM window": slope(com.dh_dlamb, own, rho),
                     "predicted": f"{-a['h2_exp']:g}, {-a['dh_exp']:g}"})
    return rows


# ----------------------------------------------------------------------------- finite T: saturation
def scaling_slope(p: float, y: float) -> float:
    """The local exponent of :math:`\\sum_{k<T}k^{p-1}e^{-2k/M} \\approx (M/2)^p\\gamma(p, y)`,
    :math:`y = 2T/M` (our T → ∞ scaling limit of the regulariser, p = 1, and the curvature, p = 3):
    :math:`p - y^pe^{-y}/\\gamma(p, y)`, γ the lower incomplete gamma function."""
    return p - y ** p * math.exp(-y) / (gammainc(p, y) * gamma_fn(p))


def half_point_prediction(p: float) -> float:
    """:math:`c_p`: the scaling limit's exponent is p/2 at :math:`M_{1/2} = c_pT`, :math:`c_p = 2/y_p`
    with :func:`scaling_slope` :math:`(p, y_p) = p/2` (1.592 for p = 1, 0.863 for p = 3)."""
    return 2 / brentq(lambda y: scaling_slope(p, y) - p / 2, 1e-6, 60.0, xtol=1e-14)


def half_point(fn: Fn, p: float, T: int, n: int = 60) -> float:
    """:math:`M_{1/2}`: the M above which the local exponent of ``fn`` stays below p/2 (the last
    crossing on a log grid of M in [2, 1000T], refined by Brent's method); NaN if it never falls."""
    grid = np.geomspace(2.0, 1e3 * T, n)
    s = np.array([local_slope(fn, M) for M in grid])
    above = np.flatnonzero(s >= p / 2)
    if len(above) == 0 or above[-1] == n - 1:
        return math.nan
    i = above[-1]
    return brentq(lambda M: local_slope(fn, M) - p / 2, grid[i], grid[i + 1], xtol=1e-10)


def saturation_rows(Ts: tuple[int, ...], tol: float, fns: Callable[[int], dict[str, Fn]] = ld_finite
                    ) -> list[dict]:
    """Per T and LD term: :math:`M_{1/2}`, the prediction :math:`c_pT` and
    :math:`T(M_{1/2}/(c_pT) - 1)` (O(1): the sum over k < T is not its integral), passed if its size
    is at most ``tol``; the local exponent at M = 100T (saturated: near 0). ``fns`` replaces the
    finite-T terms (a test)."""
    rows = []
    for T in Ts:
        for name, fn in fns(T).items():
            p = PREDICTIONS[name][1]
            Mh, c = half_point(fn, p, T), half_point_prediction(p)
            dev = T * (Mh / (c * T) - 1)
            rows.append({"T": T, "term": name, "M_1/2": Mh, "c_p T": c * T, "T (M_1/2/(c_p T) - 1)": dev,
                         "exponent at M = 100T": local_slope(fn, 100.0 * T),
                         "passed": bool(abs(dev) <= tol)})  # NaN fails
    return rows


# ----------------------------------------------------------------------------- the figure's curves
def curves(S: Settings, qs: dict[str, Fn]) -> dict[str, np.ndarray]:
    """The figure's data on a log grid of M in [2, 10 max T]: MH's median :math:`k_\\varepsilon`, CoM's
    moments per ρ, LD's terms at T = ∞ and per T, and every curve's local exponent (:func:`compute`
    adds MH's per-instance depths and its predicted exponent)."""
    M = np.geomspace(2.0, 10.0 * max(S.Ts), S.grid)
    lam = lam_of(M)
    out: dict[str, np.ndarray] = {"M": M, "Ts": np.array(S.Ts), "rhos": np.array(S.rhos)}
    fns: dict[str, tuple[Fn, float]] = {"MH k_eps": (qs["MH k_eps"], 0.0)}
    for rho in S.rhos:
        fns[f"CoM E[h^2] rho={rho:g}"] = (com.h2, rho)
        fns[f"CoM E[(dh)^2] rho={rho:g}"] = (com.dh_dlamb, rho)
    for name in ("LD regulariser", "LD curvature"):
        fns[f"{name} T=inf"] = (qs[name], 0.0)
        for T in S.Ts:
            fns[f"{name} T={T}"] = (ld_finite(T)[name], 0.0)
    for key, (fn, rho) in fns.items():
        out[key] = fn(lam, rho)
        out[f"slope {key}"] = np.array([local_slope(fn, m, rho) for m in M])
    return out


# ----------------------------------------------------------------------------- the section
def compute(S: Settings, seed: int, device: torch.device = torch.device("cpu")) -> dict:
    """Everything S5 shows: the exponents on ``S.window`` against the predictions, MH's raw exponent
    and log correction per instance, the decade table, CoM's ρ table, LD's saturation, the figure's
    curves, the pass flag and the verdict."""
    U, x = mh_instances(S, seed, device)
    qs = quantities(U, x, S.eps)
    mh = mh_log_correction(U, x, S.eps, S.window)
    rows = exponent_rows(qs, S.window) + [raw_depth_row(qs, mh["L median"], S.eps, S.window)]
    sat = saturation_rows(S.Ts, S.sat_tol)
    cur = curves(S, qs)
    cur["MH k_eps instances"] = mh_depth(lam_of(cur["M"]), U, x, S.eps)
    cur["MH predicted slope"] = 1 + 1 / np.log(np.median(mh_B0(lam_of(cur["M"]), U, x), -1) / S.eps)
    passed = all(r["passed"] for r in rows) and all(r["passed"] for r in sat)
    return {"exponents": rows, "mh": mh,
            "decades": decade_rows(qs, S.decades), "rho": rho_rows(S.rhos, S.window),
            "saturation": sat, "c_p": {p: half_point_prediction(p) for p in (1.0, 3.0)},
            "sigma_W": bias_slope(S.window), "curves": cur, "passed": bool(passed),
            "verdict": "agree" if passed else "partly"}


def claim_value(res: dict) -> dict:
    """The claim's measured values: each fitted exponent minus its prediction, MH's raw exponent and
    log correction (medians), and the largest :math:`|T(M_{1/2}/(c_pT)-1)|`."""
    return {"s - p": {r["quantity"]: r["s - p"] for r in res["exponents"]},
            "tolerance": {r["quantity"]: r["tolerance"] for r in res["exponents"]},
            "MH raw exponent": res["mh"]["raw median"], "MH log correction": res["mh"]["correction median"],
            "max |T(M_1/2/(c_p T) - 1)|": max(abs(r["T (M_1/2/(c_p T) - 1)"]) for r in res["saturation"])}
