"""The curse of memory in closed form (Zucchet & Orvieto, NeurIPS 2024, §2-§3): K1-K5.

A scalar recurrence :math:`h_t = \\lambda h_{t-1} + x_t` driven by wide-sense-stationary inputs with
:math:`E[x_t x_{t-\\Delta}] = \\rho^{|\\Delta|}`: the second moment of :math:`h` and of its sensitivity
:math:`dh/d\\lambda` in closed form, checked against series, Monte Carlo and sympy (C1, F1); their
normalised versions (K4, C2, F2); the 1-D loss (K5); the first paper's terms (E2). float64 throughout.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch


DTYPE = torch.float64
CDTYPE = torch.complex128


# ============================================================================ closed forms (K1-K5)
def f_corr(l1, l2, rho):
    """:math:`f(\\lambda_1,\\lambda_2) = E[h(\\lambda_1)h(\\lambda_2)]` (Eq. cm-f)."""
    return (1 - rho ** 2 * l1 * l2) / ((1 - l1 * l2) * (1 - rho * l1) * (1 - rho * l2))


def h2(lam, rho):
    """K1, Eq. cm-h2: :math:`E[h^2] = f(\\lambda,\\lambda) = \\frac{1+\\rho\\lambda}{(1-\\rho\\lambda)(1-\\lambda^2)}`."""
    return (1 + rho * lam) / ((1 - rho * lam) * (1 - lam ** 2))


def S(l1, l2, rho):
    """K2/K7, Eq. cm-S: :math:`S = \\partial_1\\partial_2 f` in closed form, from
    :math:`f = g(\\lambda_1\\lambda_2)p(\\lambda_1)p(\\lambda_2)`, :math:`g(u) = \\frac{1-\\rho^2u}{1-u}`,
    :math:`p(\\lambda) = \\frac1{1-\\rho\\lambda}`. Valid for complex arguments (numpy or torch)."""
    u = l1 * l2
    p1, p2 = 1 / (1 - rho * l1), 1 / (1 - rho * l2)
    g = (1 - rho ** 2 * u) / (1 - u)
    g1 = (1 - rho ** 2) / (1 - u) ** 2
    return (g1 * p1 * p2 * (2 * u / (1 - u) + 1 + rho * l1 * p1 + rho * l2 * p2)
            + g * rho ** 2 * p1 ** 2 * p2 ** 2)


def dh_dlamb(lam, rho):
    """K2, Eq. cm-h2: :math:`E[(d_\\lambda h)^2] = \\frac{(1+\\lambda^2)(1-\\lambda^2\\rho^2)+2(1-\\lambda^2)\\lambda\\rho}{(1-\\lambda^2)^3(1-\\lambda\\rho)^2}`."""
    return (((1 + lam ** 2) * (1 - lam ** 2 * rho ** 2) + 2 * (1 - lam ** 2) * lam * rho)
            / ((1 - lam ** 2) ** 3 * (1 - lam * rho) ** 2))


def S_notebook(l1, l2, r):
    """K8: the hand-written ``estimate(l1, l2, r)`` of the author notebook
    ``figures/visualization_S.ipynb`` (commit 686ec0a), transcribed verbatim."""
    p1 = (1 - r) * (1 + l1 * l2)
    p2 = r ** 2 * (1 - l1 * l2) ** 3
    p3 = - r * (1 - r) * l1 * l2 * (2 * l1 + 2 * l2 - r * l1 * l2 * (1 + l1 * l2))
    den = (1 - r * l1) ** 2 * (1 - r * l2) ** 2 * (1 - l1 * l2) ** 3
    return (p1 + p2 + p3) / den


def asymptotes(rho: float) -> dict[str, float]:
    """K3, K4: leading behaviour as :math:`\\lambda\\to1`: (exponent, prefactor) of
    :math:`E[h^2]` and :math:`E[(d_\\lambda h)^2]` in :math:`(1-\\lambda)`, and the limit of
    :math:`\\gamma^2E[(d_{\\omega_\\nu}h)^2]` (exp parametrisation) for rho < 1."""
    if rho < 1:
        c = (1 + rho) / (1 - rho)
        return {"h2_exp": -1.0, "h2_pref": c / 2, "dh_exp": -3.0, "dh_pref": c / 4,
                "gamma_exp_limit": c / 2}
    return {"h2_exp": -2.0, "h2_pref": 1.0, "dh_exp": -4.0, "dh_pref": 1.0,
            "gamma_exp_limit": math.inf}


def sympy_asymptotes(rho) -> dict[str, object]:
    """K3 by sympy: the limits of :math:`(1-\\lambda)^{1}E[h^2]`, :math:`(1-\\lambda)^3E[(d_\\lambda h)^2]`
    (rho < 1; exponents 2 and 4 at rho = 1) with :math:`S` obtained by symbolic differentiation of f."""
    import sympy as sp
    a, b, e = sp.symbols("a b e", positive=True)
    r = sp.Rational(str(rho)) if not isinstance(rho, sp.Basic) else rho
    f = (1 - r ** 2 * a * b) / ((1 - a * b) * (1 - r * a) * (1 - r * b))
    Ssym = sp.diff(f, a, b).subs({a: 1 - e, b: 1 - e})
    hsym = f.subs({a: 1 - e, b: 1 - e})
    p1, p3 = (2, 4) if r == 1 else (1, 3)
    return {"h2_pref": sp.limit(sp.simplify(hsym * e ** p1), e, 0),
            "dh_pref": sp.limit(sp.simplify(Ssym * e ** p3), e, 0)}


def series_moments(lam: float, rho: float, tol: float = 1e-17) -> tuple[float, float]:
    """K1, K2 by their double series :math:`\\sum_{k,l}\\lambda^{k+l}\\rho^{|k-l|}` and
    :math:`\\sum_{k,l}kl\\lambda^{k+l-2}\\rho^{|k-l|}` (truncated where the terms fall below ``tol``)."""
    n = int(math.ceil((math.log(tol) - 4 * math.log(1 + 1 / (1 - lam))) / math.log(lam))) + 10
    k = np.arange(n, dtype=np.float64)
    lk = lam ** k
    R = rho ** np.abs(k[:, None] - k[None, :])
    e_h2 = lk @ R @ lk
    kk = k * lam ** np.maximum(k - 1, 0)
    return float(e_h2), float(kk @ R @ kk)


def ar1_inputs(n: int, L: int, rho: float, gen: torch.Generator) -> np.ndarray:
    """Stationary AR(1) inputs with :math:`E[x_tx_{t-\\Delta}] = \\rho^{|\\Delta|}` (unit variance),
    shape (n, L), float64: :math:`x_0\\sim\\mathcal N(0,1)`, :math:`x_t=\\rho x_{t-1}+\\sqrt{1-\\rho^2}\\varepsilon_t`."""
    from scipy.signal import lfilter
    eps = torch.randn(n, L, generator=gen, dtype=DTYPE).numpy()
    if rho >= 1:
        return np.repeat(eps[:, :1], L, axis=1)
    s = math.sqrt(1 - rho ** 2)
    eps[:, 0] /= s
    return lfilter([s], [1.0, -rho], eps, axis=1)


def mc_moments(lam: float, rho: float, n: int, gen: torch.Generator,
               L: int | None = None) -> dict[str, float]:
    """K1, K2 by Monte-Carlo: n AR(1) sequences of length :math:`\\lceil 20/(1-\\lambda)\\rceil`, the
    recurrence :math:`h_t=\\lambda h_{t-1}+x_t` and its sensitivity :math:`d_t = h_{t-1}+\\lambda d_{t-1}`
    (:math:`d_t = \\partial h_t/\\partial\\lambda`); returns the moments at the last step and their
    standard errors. ``L`` (synthesis S1): a finite sequence length instead, from :math:`h_0 = 0`
    (then :math:`\\lambda = 1` is allowed)."""
    from scipy.signal import lfilter
    L = int(math.ceil(20 / (1 - lam))) if L is None else L
    x = ar1_inputs(n, L, rho, gen)
    h = lfilter([1.0], [1.0, -lam], x, axis=1)
    d = lfilter([0.0, 1.0], [1.0, -lam], h, axis=1)
    h2v, d2v = h[:, -1] ** 2, d[:, -1] ** 2
    return {"h2": float(h2v.mean()), "h2_se": float(h2v.std() / math.sqrt(n)),
            "dh": float(d2v.mean()), "dh_se": float(d2v.std() / math.sqrt(n))}


def mc_check(lams: Sequence[float], rhos: Sequence[float], n: int, tol: float,
             seed: int) -> dict:
    """C1 (first half): closed forms K1, K2 against Monte-Carlo at every (lam, rho); passed if every
    relative error is within ``tol``."""
    gen = torch.Generator().manual_seed(seed)
    rows, worst = [], 0.0
    for rho in rhos:
        for lam in lams:
            mc = mc_moments(lam, rho, n, gen)
            e1 = mc["h2"] / h2(lam, rho) - 1
            e2 = mc["dh"] / dh_dlamb(lam, rho) - 1
            worst = max(worst, abs(e1), abs(e2))
            rows.append({"rho": rho, "lambda": lam, "E[h^2] closed": h2(lam, rho),
                         "E[h^2] MC": mc["h2"], "E[(dh)^2] closed": dh_dlamb(lam, rho),
                         "E[(dh)^2] MC": mc["dh"], "rel. err h": e1, "rel. err dh": e2})
    return {"rows": rows, "max_rel_err": worst, "passed": worst <= tol}


def c1_numbers(mc: dict, slopes: dict, n: int, tol: float) -> dict[str, float]:
    """C1, for the text: the largest Monte-Carlo error, the tolerance (%), the sequences per point,
    the standard error :math:`\\sqrt{2/n}` of a Gaussian second moment (%), the tolerance in standard
    errors, the number of comparisons, the union bound on the chance (%) that noise alone fails one,
    and the largest distance of a measured log-log slope from its exponent."""
    nse = tol / math.sqrt(2 / n)
    n_cmp = 2 * len(mc["rows"])  # two moments per (rho, lambda)
    dev = max(abs(r[k] - r[e]) for r in slopes["rows"]
              for k, e in (("slope E[h^2]", "expected"), ("slope E[(dh)^2]", "expected ")))
    return {"mc_err": mc["max_rel_err"], "mc_tol_pct": 100 * tol, "mc_seqs": n,
            "mc_se_pct": 100 * math.sqrt(2 / n), "mc_nse": nse, "mc_n": n_cmp,
            "mc_alarm_pct": 100 * n_cmp * math.erfc(nse / math.sqrt(2)), "slope_dev": dev}


def loglog_slope(fn: Callable, rho: float, lo: float, hi: float) -> float:
    """Least-squares slope of :math:`\\log fn(\\lambda)` against :math:`\\log(1-\\lambda)` on
    :math:`1-\\lambda \\in [lo, hi]` (20 log-spaced points)."""
    eps = np.logspace(math.log10(lo), math.log10(hi), 20)
    y = np.log(np.abs(fn(1 - eps, rho)))
    return float(np.polyfit(np.log(eps), y, 1)[0])


def slope_range(rho: float) -> tuple[float, float]:
    """K3's window: :math:`1-\\lambda \\in (1-\\rho)[10^{-4},10^{-2}]`, or :math:`[10^{-5},10^{-3}]` at
    rho = 1 (a fixed window fails near rho = 1, where the asymptote sets in late)."""
    return (1e-5, 1e-3) if rho >= 1 else ((1 - rho) * 1e-4, (1 - rho) * 1e-2)


def slope_check(rhos: Sequence[float], tol: float = 0.02) -> dict:
    """C1 (second half): log-log slopes of K1 and K2 against the asymptotes of K3 (-1/-3 for rho < 1,
    -2/-4 at rho = 1, within ``tol``, K3's 0.02) and the backward (K2) slope steeper than the forward
    one."""
    rows, ok = [], True
    for rho in rhos:
        lo, hi = slope_range(rho)
        a = asymptotes(rho)
        s1, s2 = loglog_slope(h2, rho, lo, hi), loglog_slope(dh_dlamb, rho, lo, hi)
        good = abs(s1 - a["h2_exp"]) <= tol and abs(s2 - a["dh_exp"]) <= tol and s2 < s1
        ok &= good
        rows.append({"rho": rho, "window": f"[{lo:.0e}, {hi:.0e}]", "slope E[h^2]": s1,
                     "expected": a["h2_exp"], "slope E[(dh)^2]": s2, "expected ": a["dh_exp"],
                     "ok": good})
    return {"rows": rows, "passed": bool(ok)}


# ---------------------------------------------------------------------------- K4: normalisation
def gamma_h2(lam, rho):
    """K4, Eq. cm-gamma: :math:`\\gamma^2E[h^2] = \\frac{1+\\rho\\lambda}{1-\\rho\\lambda}` with
    :math:`\\gamma = \\sqrt{1-\\lambda^2}`."""
    return (1 - lam ** 2) * h2(lam, rho)


def gamma_dh(lam, rho):
    """K4: :math:`\\gamma^2E[(d_\\lambda h)^2]`, γ held constant in the differentiation (Fig. 2)."""
    return (1 - lam ** 2) * dh_dlamb(lam, rho)


def dlam_domega_nu(omega_nu):
    """Real exp parametrisation :math:`\\lambda = \\exp(-e^{\\omega_\\nu})`: returns
    (λ, dλ/dω_ν) with :math:`d\\lambda/d\\omega_\\nu = \\lambda\\log\\lambda`."""
    lam = torch.exp(-torch.exp(omega_nu))
    return lam, lam * torch.log(lam)


def gamma_exp_dh(lam, rho):
    """K4, Eq. cm-gamma-exp: :math:`\\gamma^2E[(d_{\\omega_\\nu}h)^2] = \\gamma^2(\\lambda\\log\\lambda)^2E[(d_\\lambda h)^2]`."""
    return (1 - lam ** 2) * (lam * np.log(lam)) ** 2 * dh_dlamb(lam, rho)


def gamma_check(rhos: Sequence[float], eps: float = 1e-6) -> dict:
    """C2: at :math:`1-\\lambda` = ``eps``, γ+exp stays within 1% of its limit
    :math:`\\frac{1+\\rho}{2(1-\\rho)}` for rho < 1 (and is not flat at rho = 1), while γ alone leaves a
    log-log slope of -2 (±0.02, as K3) in :math:`E[(d_\\lambda h)^2]`."""
    rows, ok = [], True
    for rho in rhos:
        lam = 1 - eps
        lim = asymptotes(rho)["gamma_exp_limit"]
        val = gamma_exp_dh(lam, rho)
        lo, hi = slope_range(rho)
        s_gamma = loglog_slope(gamma_dh, rho, lo, hi)
        if rho < 1:
            good = abs(val / lim - 1) <= 0.01 and abs(s_gamma + 2) <= 0.02  # two-sided: 0 fails
        else:  # rho = 1: grows like 2/(1-lambda); gamma alone: slope -3
            good = abs(val * eps / 2 - 1) <= 0.01 and abs(s_gamma + 3) <= 0.02
        ok &= good
        rows.append({"rho": rho, "gamma+exp at 1-lam=1e-6": val,
                     "limit (rho = 1: 2/(1-lam))": lim if math.isfinite(lim) else 2 / eps,
                     "ratio": val / lim if math.isfinite(lim) else val * eps / 2,
                     "slope gamma only": s_gamma, "ok": good})
    return {"rows": rows, "passed": bool(ok)}


# ---------------------------------------------------------------------------- K5: 1-D loss
def _conj(z):
    return torch.conj(z) if isinstance(z, torch.Tensor) else np.conj(z)


def loss_1d(lam, lam_star, mu: float = 0.0, sigma: float = 1.0):
    """K5, Eq. cm-loss: :math:`\\tfrac12E|h(\\lambda)-h(\\lambda^*)|^2` for real i.i.d. inputs of mean μ and
    variance σ² (complex λ allowed; numpy or torch)."""
    conj = _conj(lam_star)
    mean = abs(1 / (1 - lam) - 1 / (1 - lam_star)) ** 2
    var = (1 / (1 - abs(lam) ** 2) + 1 / (1 - abs(lam_star) ** 2) - 2 * (1 / (1 - lam * conj)).real)
    return 0.5 * (mu ** 2 * mean + sigma ** 2 * var)


def gamma_loss_1d(lam, lam_star, sigma: float = 1.0):
    """K5 with input normalisation: :math:`\\tfrac12E|\\gamma h(\\lambda)-\\gamma^*h(\\lambda^*)|^2`,
    :math:`\\gamma = \\sqrt{1-|\\lambda|^2}` (zero-mean inputs)."""
    g, gs = (1 - abs(lam) ** 2) ** 0.5, (1 - abs(lam_star) ** 2) ** 0.5
    conj = _conj(lam_star)
    return 0.5 * sigma ** 2 * (2 - 2 * g * gs * (1 / (1 - lam * conj)).real)


# ============================================================================ E2
def paper1_terms(b, T: int):
    """E2: the learning-dynamics chapter's regulariser factor :math:`\\frac{1-b^{2T}}{1-b^2}` and its
    b-curvature factor :math:`\\sum_{k<T}k^2b^{2(k-1)}`, which tend to :math:`E[h^2]_{\\rho=0}` and
    :math:`E[(d_\\lambda h)^2]_{\\rho=0}` as T -> inf."""
    k = np.arange(T)
    b = np.asarray(b, dtype=np.float64)[..., None]
    return (1 - b[..., 0] ** (2 * T)) / (1 - b[..., 0] ** 2), (k ** 2 * b ** (2 * np.maximum(k - 1, 0))).sum(-1)
