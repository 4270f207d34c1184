"""Synthesis chapter, section S1: Proca et al.'s effective regulariser is Zucchet & Orvieto's
hidden-state variance.

A one-unit linear network :math:`h_{t+1}=b\\,h_t+a\\,x_t`, :math:`h_1=0`, :math:`\\hat y_T=c\\,h_{T+1}`
fed white inputs for T steps has :math:`E[\\hat y_T^2]=c^2a^2\\frac{1-b^{2T}}{1-b^2}`: twice τ times
the regulariser of Proca et al. (ICML 2025, Lemma 3.2), which tends to :math:`c^2a^2E[h^2]_{\\rho=0}`
of Zucchet & Orvieto (NeurIPS 2024, eq. cm-h2) as T -> inf. This module checks the identity at finite
T (the learning-dynamics chapter's ``energy``, ``landscape``, ``curvature`` and network against the
curse-of-memory chapter's inputs, Monte-Carlo and closed forms) and measures where the finite-T and
the T = inf readings part as b -> 1. Every formula is called from the two chapters' packages.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import brentq
from scipy.stats import gamma

from rnnbook import params
from rnnbook.curse_of_memory import theory as com
from rnnbook.learning_dynamics import networks
from rnnbook.learning_dynamics import theory as ld


MOMENTS = ("variance", "curvature")  # E[h_T^2] (the regulariser) and E[(d_b h_T)^2] (its b-curvature)


@dataclass(frozen=True)
class Settings:
    """S1's sizes. ``one_minus_b``: the grid of 1 - b (0 is b = 1); ``Ts``: sequence lengths of the
    Monte-Carlo grid; ``n``: sequences per Monte-Carlo point; ``a``, ``c``: input and readout weights
    of the network check; ``beta``: s_1 of the Dirac task (s_T = 1) of the exact split; ``exact_Ts``:
    its lengths; ``cross_Ts``: lengths of the crossover measurement; ``z_tol``: Monte-Carlo tolerance
    in standard errors; ``exact_tol``: round-off tolerance (relative)."""

    one_minus_b: tuple[float, ...]
    Ts: tuple[int, ...]
    n: int
    a: float = 0.8
    c: float = 1.5
    beta: float = 2.0
    exact_Ts: tuple[int, ...] = (5, 50)
    cross_Ts: tuple[int, ...] = (10, 100, 1000)
    z_tol: float = 4.0
    exact_tol: float = 1e-9


def settings(profile: str, smoke: bool = False) -> Settings:
    """S1's settings for ``profile`` ("quick": one CPU thread, seconds; "full": a finer grid, longer
    sequences, 20,000 sequences a point); ``smoke``: the full profile's code at toy sizes."""
    params.choice("profile", profile, params.PROFILES)
    if params.smoke(smoke, profile):
        return Settings(one_minus_b=(1.0, 0.1, 0.01, 0.0), Ts=(10, 30), n=500, exact_Ts=(5,),
                        cross_Ts=(10, 30))
    if profile == "quick":
        return Settings(one_minus_b=(1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 0.0), Ts=(10, 100, 1000),
                        n=4000)
    return Settings(one_minus_b=(1.0, 0.5, 0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005, 0.003, 0.002,
                                 0.001, 5e-4, 2e-4, 1e-4, 0.0),
                    Ts=(10, 30, 100, 300, 1000, 3000), n=20_000, exact_Ts=(5, 50, 200),
                    cross_Ts=(10, 30, 100, 300, 1000, 3000), z_tol=4.5)


# ----------------------------------------------------------------------------- (i) the identity
def variance(a, b, c, T: int) -> np.ndarray:
    """Proca et al. Lemma 3.2's regulariser times 2τ, :math:`c^2a^2\\frac{1-b^{2T}}{1-b^2}`, read off the
    learning-dynamics energy (eq. 8) at s = 0: :math:`E|_{s=0}=\\frac1{2\\tau}c^2a^2\\sum_{k<T}b^{2k}`
    (τ = 1). Broadcast over b; the claim is that this is :math:`E[(c\\,h_{T+1})^2]` under white inputs."""
    b = np.atleast_1d(np.asarray(b, float))
    a, c = (np.full_like(b, x) for x in (a, c))
    return 2 * ld.energy(a, b, c, np.zeros((len(b), T)), ld.powers(T))


def split_check(a: float, b: float, c: float, T: int, beta: float, seed: int) -> dict[str, float]:
    """Lemma 3.2 as sample moments (τ = 1): with LD's whitened inputs (:math:`\\sum_px_{p,t}x_{p,t'}=\\delta_{tt'}`,
    App. P.4) and the Dirac target :math:`y=\\sum_is_ix_i` (s_1 = β, s_T = 1, eq. 11), the data term
    is :math:`\\sum_py_p^2-2\\sum_py_p\\hat y_p`, the regulariser :math:`\\sum_p\\hat y_p^2` and E
    :math:`\\frac12\\sum_p(y_p-\\hat y_p)^2`, exactly; returns the relative errors against LD's
    ``landscape`` (F4) and ``energy``."""
    rng = np.random.default_rng(seed)
    X = networks.whitened_inputs(2 * T + 2, T, 1, rng)
    s = ld.task("dirac", T, beta=beta, kappa=1.0)
    y = X[..., 0] @ s
    W = [torch.tensor([[[w]]], dtype=torch.float64) for w in (a, b, c)]
    yhat = networks.forward(*W, torch.tensor(X))[0, :, 0].numpy()
    land = ld.landscape(T, beta, np.array([b]), np.array([a * c]))
    E = ld.energy(np.array([a]), np.array([b]), np.array([c]), s[None], ld.powers(T))[0]
    rel = lambda x, ref: abs(x / ref - 1)  # noqa: E731
    return {"T": T, "data term": rel((y ** 2 - 2 * y * yhat).sum(), land["data"][0, 0]),
            "regulariser": rel((yhat ** 2).sum(), land["reg"][0, 0]),
            "regulariser = 2 E(s=0)": rel((yhat ** 2).sum(), variance(a, b, c, T)[0]),
            "E": rel(0.5 * ((y - yhat) ** 2).sum(), E), "E = landscape / 2": rel(land["E"][0, 0] / 2, E)}


def closed_form_check(one_minus_b, Ts) -> dict[str, float]:
    """The two chapters' closed forms against each other (largest relative difference): LD's
    :math:`2E|_{s=0}/u^2` and ``curvature`` against CoM's ``paper1_terms`` (E2) at finite T, b < 1; and
    at CoM's own stationary length :math:`T=\\lceil20/(1-b)\\rceil` (where :math:`b^{2T}<e^{-40}`)
    against its T = inf ``h2`` and ``dh_dlamb`` at ρ = 0 (eq. cm-h2)."""
    b = 1 - np.array([x for x in one_minus_b if 0 < x < 1])
    fin = max(float(np.max(np.abs(np.r_[variance(1, b, 1, T) / com.paper1_terms(b, T)[0],
                                        ld.curvature(b, T)[0] / com.paper1_terms(b, T)[1]] - 1)))
              for T in Ts)
    inf = 0.0
    for bj in b:
        T = int(math.ceil(20 / (1 - bj)))
        inf = max(inf, abs(variance(1, bj, 1, T)[0] / com.h2(bj, 0.0) - 1),
                  abs(ld.curvature(bj, T)[0][0] / com.dh_dlamb(bj, 0.0) - 1))
    return {"finite T: LD vs CoM paper1_terms": fin, "stationary T: LD vs CoM h2, dh_dlamb": inf}


# ----------------------------------------------------------------------------- (ii) Monte-Carlo grid
def network_moments(a: float, b: np.ndarray, c: float, T: int, n: int, gen: torch.Generator,
                    device: torch.device = torch.device("cpu")) -> tuple[np.ndarray, np.ndarray]:
    """:math:`E[\\hat y_T^2]` by Monte-Carlo: LD's network (§2, :math:`\\hat y_T=\\sum_iW_yW_h^{T-i}W_xx_i`)
    with scalar weights (a, b_j, c), all b_j in one batched program, on n of CoM's AR(1) input
    sequences at ρ = 0 (white) of length T. Returns (mean, standard error) per b_j."""
    X = torch.as_tensor(com.ar1_inputs(n, T, 0.0, gen), device=device)[..., None]
    b = torch.as_tensor(np.asarray(b, float), device=device)[:, None, None]
    Wx, Wy = (torch.full_like(b, w) for w in (a, c))
    y2 = networks.forward(Wx, b, Wy, X)[..., 0] ** 2
    return y2.mean(1).cpu().numpy(), (y2.std(1) / math.sqrt(n)).cpu().numpy()


def grid_check(S: Settings, seed: int, device: torch.device = torch.device("cpu"), rho: float = 0.0) -> dict:
    """(ii) on the (b, T) grid, in standard errors z: the network's :math:`E[(c\\,h)^2]` against
    :func:`variance` (LD's energy at s = 0), and CoM's ``mc_moments`` over T steps (unit weights)
    against LD's ``curvature``: :math:`E[h_T^2]=\\sum_{k<T}b^{2k}` and
    :math:`E[(\\partial_bh_T)^2]=\\sum_{k<T}k^2b^{2(k-1)}`. ``rho`` != 0 (a test) feeds correlated inputs
    to ``mc_moments``, which the white-input identity must fail. Passed if every |z| <= ``S.z_tol``."""
    gen = torch.Generator().manual_seed(seed)
    b = 1 - np.asarray(S.one_minus_b, float)
    rows = []
    for T in S.Ts:
        net, net_se = network_moments(S.a, b, S.c, T, S.n, gen, device)
        reg = variance(S.a, b, S.c, T)
        with np.errstate(divide="ignore"):  # its T = inf limits at b = 1, unused here
            curv, geo, _, _ = ld.curvature(b, T)
        for j, bj in enumerate(b):
            mc = com.mc_moments(float(bj), rho, S.n, gen, L=T)
            rows.append({"T": T, "1-b": float(S.one_minus_b[j]), "E[(c h)^2] LD": reg[j], "E[(c h)^2] MC": net[j],
                         "z net": (net[j] - reg[j]) / net_se[j], "E[h^2] LD": geo[j], "E[h^2] MC": mc["h2"],
                         "z h": (mc["h2"] - geo[j]) / mc["h2_se"], "E[(dh)^2] LD": curv[j],
                         "E[(dh)^2] MC": mc["dh"], "z dh": (mc["dh"] - curv[j]) / mc["dh_se"]})
    worst = max(abs(r[k]) for r in rows for k in ("z net", "z h", "z dh"))
    return {"rows": rows, "max_z": worst, "n_cmp": 3 * len(rows), "passed": bool(worst <= S.z_tol)}


def false_alarm(n_cmp: int, z: float) -> float:
    """Union bound on the chance that Monte-Carlo noise alone puts one of ``n_cmp`` Gaussian z-scores
    beyond ±z: :math:`n\\,\\mathrm{erfc}(z/\\sqrt2)`."""
    return n_cmp * math.erfc(z / math.sqrt(2))


# ----------------------------------------------------------------------------- (iii) the two readings
def crossover_prediction(moment: str) -> float:
    """The constant c of :math:`1-b_\\times\\approx c/T`. With :math:`b=1-x/T`, T -> inf, the fraction
    of the T = inf moment that T steps see is :math:`P(\\Gamma_k\\le2x)`: :math:`1-b^{2T}\\to1-e^{-2x}`
    (k = 1, the variance of eq. cm-h2 against Lemma 3.2) and
    :math:`\\sum_{k<T}k^2b^{2(k-1)}\\big/\\frac{1+b^2}{(1-b^2)^3}\\to\\gamma(3,2x)/\\Gamma(3)` (k = 3, the
    curvature of E1). A factor 2 apart: c = median(Γ_k)/2 (ln 2 / 2 and 1.337)."""
    params.choice("moment", moment, MOMENTS)
    return float(gamma.ppf(0.5, 1 if moment == "variance" else 3)) / 2


def ratio_inf_to_T(b: float, T: int, moment: str) -> float:
    """CoM's T = inf closed form (eq. cm-h2 at ρ = 0) over LD's finite-T one (Lemma 3.2 / E1)."""
    if moment == "variance":
        return com.h2(b, 0.0) / variance(1, b, 1, T)[0]
    return com.dh_dlamb(b, 0.0) / _finite_curvature(b, T)


def crossover(T: int, moment: str, factor: float = 2.0) -> float:
    """:math:`b_\\times`: the b in (0, 1) where the T = inf reading exceeds the finite-T one by
    ``factor`` (Brent's method on :func:`ratio_inf_to_T`, which rises from 1 at b = 0)."""
    return brentq(lambda b: ratio_inf_to_T(b, T, moment) - factor, 0.0, 1 - 1e-12, xtol=1e-15, rtol=1e-15)


def crossover_check(S: Settings, seed: int, c_pred: dict[str, float] | None = None) -> dict:
    """(iii): at each T of ``S.cross_Ts``, the measured :math:`T(1-b_\\times)` against the predicted c
    (relative error at most 1/T, about 6 times the measured O(1/T) correction, 0.17/T), and CoM's
    Monte-Carlo over T steps at :math:`b_\\times` against the closed form's factor 2 (within
    ``S.z_tol`` standard errors). Also the saturation at b = 1: :math:`E[h_T^2]=T`, the curvature
    :math:`\\sum_{k<T}k^2\\approx T^3/3` and LD's regulariser gradient (the pull, ``mode_grads`` at s = 0,
    u = 1) :math:`T(T-1)/2`, all finite, where T = inf gives infinity. ``c_pred`` overrides the
    prediction (a test)."""
    c_pred = c_pred or {m: crossover_prediction(m) for m in MOMENTS}
    gen = torch.Generator().manual_seed(seed)
    rows, ok = [], True
    for T in S.cross_Ts:
        row = {"T": T}
        for m in MOMENTS:
            bx = crossover(T, m)
            rel = T * (1 - bx) / c_pred[m] - 1
            mc = com.mc_moments(bx, 0.0, S.n, gen, L=T)
            key = "h2" if m == "variance" else "dh"
            inf = com.h2(bx, 0.0) if m == "variance" else com.dh_dlamb(bx, 0.0)
            z = (mc[key] - inf / 2) / mc[f"{key}_se"]  # is the MC moment at b_x half the T = inf one?
            ok &= abs(rel) <= 1 / T and abs(z) <= S.z_tol
            row.update({f"b_x {m}": bx, f"T(1-b_x) {m}": T * (1 - bx), f"rel. err {m}": rel,
                        f"T=inf / MC {m}": inf / mc[key], f"z {m}": z})
        rows.append(row)
    return {"rows": rows, "c": c_pred, "saturation": saturation(S.cross_Ts), "passed": bool(ok)}


def _finite_curvature(b: float, T: int) -> float:
    """LD's finite-T b-curvature (E1) at one b, without the warnings of its T = inf limit at b = 1."""
    with np.errstate(divide="ignore"):
        return float(ld.curvature(b, T)[0][0])


def saturation(Ts) -> list[dict[str, float]]:
    """At b = 1, per T: LD's :math:`2E|_{s=0}/T` (Lemma 3.2's finite limit, = 1), its curvature over
    :math:`T^3/3` (-> 1) and the b-gradient of the regulariser (``mode_grads`` at s = 0, a = c = 1)
    over :math:`T(T-1)/2` (= 1)."""
    out = []
    for T in Ts:
        one = np.ones(1)
        dEdb = ld.mode_grads(one, one, one, np.zeros((1, T)), ld.powers(T))[2][0]
        out.append({"T": T, "E[h_T^2] / T": variance(1, 1.0, 1, T)[0] / T,
                    "curvature / (T^3/3)": _finite_curvature(1.0, T) / (T ** 3 / 3),
                    "pull / (T(T-1)/2)": dEdb / (T * (T - 1) / 2)})
    return out


# ----------------------------------------------------------------------------- the section
def compute(S: Settings, seed: int, device: torch.device = torch.device("cpu")) -> dict:
    """Everything S1 shows: the exact split at ``S.exact_Ts``, the closed forms against each other,
    the Monte-Carlo grid and the crossover, the identity's (S1a, a check) pass flag and the
    crossover's (S1b) pass flag and verdict: with a failed identity S1b is "inconclusive" (the
    bridge between the papers broke, so nothing is carried across); a failed crossover on a sound
    identity is "partly"."""
    split = [split_check(S.a, 1 - x, S.c, T, S.beta, seed + i) for i, T in enumerate(S.exact_Ts)
             for x in (0.5, 0.1, 0.0)]
    split_err = max(v for r in split for k, v in r.items() if k != "T")
    closed = closed_form_check(S.one_minus_b, S.Ts)
    grid = grid_check(S, seed, device)
    cross = crossover_check(S, seed + 1)
    identity_ok = split_err <= S.exact_tol and max(closed.values()) <= S.exact_tol and grid["passed"]
    return {"split": split, "split_err": split_err, "closed": closed, "grid": grid, "cross": cross,
            "identity_passed": bool(identity_ok), "readings_passed": cross["passed"],
            "readings_verdict": "agree" if cross["passed"] else "partly" if identity_ok else "inconclusive"}


def numbers(res: dict, S: Settings) -> dict[str, float]:
    """S1's numbers for the text: the round-off errors, the Monte-Carlo comparisons (count, largest
    |z|, tolerance, union-bound false-alarm chance in %, the relative standard error √(2/n) of a
    Gaussian second moment in %), the predicted and measured T(1 - b_x) at the largest T, the
    largest |relative error|·T over the crossover lengths, the curvature at b = 1 over T³/3, and the
    most terms of a sum held to round-off (:func:`closed_form_check`'s stationary lengths)."""
    cr, T = res["cross"]["rows"], max(S.cross_Ts)
    last = next(r for r in cr if r["T"] == T)
    n_cmp = res["grid"]["n_cmp"] + len(MOMENTS) * len(cr)
    z = max([res["grid"]["max_z"]] + [abs(r[f"z {m}"]) for r in cr for m in MOMENTS])
    return {"s1_split_err": res["split_err"], "s1_closed_err": max(res["closed"].values()),
            "s1_n_cmp": n_cmp, "s1_max_z": z, "s1_z_tol": S.z_tol, "s1_n": S.n, "s1_a": S.a, "s1_c": S.c,
            "s1_alarm_pct": 100 * false_alarm(n_cmp, S.z_tol), "s1_se_pct": 100 * math.sqrt(2 / S.n),
            "s1_Tmax": T, "s1_c_var": res["cross"]["c"]["variance"], "s1_c_curv": res["cross"]["c"]["curvature"],
            "s1_cm_var": last["T(1-b_x) variance"], "s1_cm_curv": last["T(1-b_x) curvature"],
            "s1_bx_var": last["b_x variance"], "s1_bx_curv": last["b_x curvature"],
            "s1_relT": max(abs(r[f"rel. err {m}"]) * r["T"] for r in cr for m in MOMENTS),
            "s1_terms": max(max(S.Ts), *(math.ceil(20 / x) for x in S.one_minus_b if 0 < x < 1)),
            "s1_curv_sat": res["cross"]["saturation"][-1]["curvature / (T^3/3)"]}
