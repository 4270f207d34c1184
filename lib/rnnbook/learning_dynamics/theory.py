"""Connectivity modes of linear RNNs in closed form (Proca et al., ICML 2025, §2-§3, App.).

Notation follows the paper: a mode (a, b, c), ``u = a*c``, task singular values ``s_t``, the energy
:math:`E=\\frac1{2\\tau}\\sum_i (s_i - c b^{T-i} a)^2` and its gradient flow; the zero-loss solutions
(§3.3), the minimum-energy profile, Dirac tasks' phase diagram (§3.4, F5), Eq. 49's derivative and
the symbolic checks, F4's loss landscape and E1's curvature. Everything is float64 numpy and batched:
a sweep of many (delta, lam, kappa, beta, T) runs is one broadcasted program.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import sympy as sp
from scipy.optimize import least_squares, minimize_scalar

from rnnbook import params


DYNAMICS = ("constant", "inv_exp", "exp", "dirac")


# ----------------------------------------------------------------------------- tasks
def task(dynamics: str, T: int, delta=1.0, lam=1.0, kappa=None, beta=None) -> np.ndarray:
    """Task singular values :math:`s_t=\\delta f(\\lambda,t)`, t = 1..T (§3.3, Table A1, App. P.4.1;
    eqs. 10-11), broadcast over
    array arguments to shape (..., T). ``constant``: f = 1; ``inv_exp``: :math:`\\lambda^{T-t}`;
    ``exp``: :math:`\\lambda^t`; ``dirac``: :math:`s_1=\\beta`, :math:`s_T=\\kappa`, 0 between.
    ``kappa`` given: the modified task (eq. 10) with :math:`s_T=\\kappa`. Complex ``delta``/``lam``
    give the rotational tasks (App. N-O)."""
    t = np.arange(1, T + 1)
    delta, lam = np.asarray(delta)[..., None], np.asarray(lam)[..., None]
    if dynamics == "constant":
        s = delta * np.ones(T)
    elif dynamics == "inv_exp":
        s = delta * lam ** (T - t)
    elif dynamics == "exp":
        s = delta * lam ** t
    elif dynamics == "dirac":
        s = np.zeros(np.broadcast_shapes(np.shape(beta), np.shape(kappa)) + (T,))
        s[..., 0] = beta
        s[..., -1] = kappa
        return s
    else:
        raise ValueError(dynamics)
    s = np.array(s)
    if kappa is not None:
        s = np.array(np.broadcast_to(s, np.broadcast_shapes(s.shape, np.shape(kappa) + (T,))))
        s[..., -1] = kappa
    return s


def powers(T: int) -> np.ndarray:
    """Exponents :math:`k_i = T-i` of b for the last-step loss, i = 1..T."""
    return np.arange(T - 1, -1, -1)


def pad(s_list: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stack tasks of different T into one batch: columns are exponents k = Tmax-1..0, a task of
    length T fills its last T columns and the others are masked out. Returns (s, k, mask)."""
    Tmax = max(s.shape[-1] for s in s_list)
    out = np.zeros((len(s_list), Tmax), dtype=np.result_type(*s_list))
    mask = np.zeros((len(s_list), Tmax), dtype=bool)
    for r, s in enumerate(s_list):
        out[r, Tmax - s.shape[-1]:] = s
        mask[r, Tmax - s.shape[-1]:] = True
    return out, powers(Tmax), mask


MULTI_OUTPUT = ("lag", "first_input")


def multi_output_task(T: int, beta, kappa, construction: str = "lag") -> tuple[np.ndarray, np.ndarray]:
    """F10 / C10 (rebuttal; App. M's T-output loss, the constructions are ours): targets
    :math:`s_{t,i}` for outputs t = 1..T and inputs i <= t, flattened to pairs (t, i) with exponent
    k = t - i of b. Both have :math:`s_{t,t}=\\kappa` (lag 0). ``"lag"`` (after M.3's zero-loss form
    :math:`s_{t,i}=\\delta\\lambda^{t-i}`, which depends on the lag only): :math:`s_{T,1}=\\beta` at lag
    T - 1, zeros elsewhere. ``"first_input"``: :math:`s_{t,1}=\\beta` for every output t >= 2, so β
    meets b at every lag 1..T-1. Returns (s (..., J), k (J,))."""
    params.choice("construction", construction, MULTI_OUTPUT)
    pairs = [(t, i) for t in range(1, T + 1) for i in range(1, t + 1)]
    beta, kappa = np.broadcast_arrays(np.asarray(beta, float), np.asarray(kappa, float))
    s = np.zeros(beta.shape + (len(pairs),))
    for j, (t, i) in enumerate(pairs):
        if i == t:
            s[..., j] = kappa
        elif i == 1 and (construction == "first_input" or t == T):
            s[..., j] = beta
    return s, np.array([t - i for t, i in pairs])


def energy(a, b, c, s, k, mask=None):
    """Energy (eq. 8, τ = 1): :math:`E=\\frac12\\sum_j m_j\\,|s_j-c\\,b^{k_j}a|^2`, batched: a, b, c (R,),
    s (R, J), exponents k (J,). Real or complex."""
    e = s - (a * c)[:, None] * b[:, None] ** k
    if mask is not None:
        e = e * mask
    return 0.5 * (np.abs(e) ** 2).sum(-1)


def mode_grads(a, b, c, s, k, mask=None, gn: bool = False):
    """Gradient of :func:`energy` (eqs. 5-7 with the sign of App. D fixed, slip iv):
    :math:`-\\partial_aE=\\sum_j c\\,b^{k_j}e_j`, :math:`-\\partial_bE=\\sum_j k_j\\,c\\,a\\,b^{k_j-1}e_j`,
    :math:`-\\partial_cE=\\sum_j a\\,b^{k_j}e_j`, :math:`e_j=s_j-c\\,b^{k_j}a`. For complex modes it
    returns the Wirtinger gradients :math:`\\partial E/\\partial z^*` (App. O): the same sums with
    conjugated prefactors and a factor 1/2. Returns (E, dE/da, dE/db, dE/dc), and with ``gn`` also
    the trace of the Gauss-Newton matrix G in (a, b, c),
    :math:`\\mathrm{tr}\\,G=\\sum_j m_j\\big[(|a|^2+|c|^2)|b|^{2k_j}+k_j^2|ac|^2|b|^{2(k_j-1)}\\big]`,
    an upper bound on its largest eigenvalue whose b-part is E1's curvature."""
    K = int(np.max(k))
    pw = np.empty((len(b), K + 1), dtype=b.dtype)  # b^0 .. b^K by cumulative products
    pw[:, 0] = 1
    pw[:, 1:] = b[:, None]
    pw = np.cumprod(pw, 1)
    bk = pw[:, k]
    bk1 = pw[:, np.maximum(k - 1, 0)] * k
    e = s - (a * c)[:, None] * bk
    if mask is not None:
        e = e * mask
    if np.iscomplexobj(e):
        cj = np.conj
        sq = lambda z: (z * cj(z)).real  # noqa: E731
        be, be1 = (cj(bk) * e).sum(-1), (cj(bk1) * e).sum(-1)
        out = sq(e).sum(-1) / 2, -0.5 * cj(c) * be, -0.5 * cj(a * c) * be1, -0.5 * cj(a) * be
    else:
        sq = lambda z: z * z  # noqa: E731
        be, be1 = (bk * e).sum(-1), (bk1 * e).sum(-1)
        out = sq(e).sum(-1) / 2, -c * be, -a * c * be1, -a * be
    if not gn:
        return out
    m = 1 if mask is None else mask
    tr = (sq(a) + sq(c)) * (m * sq(bk)).sum(-1) + sq(a * c) * (m * sq(bk1)).sum(-1)
    return out + (tr,)


def mode_gd(a, b, c, s, k, mask=None, lr=0.01, steps=1000, freeze=None, every=0, cap=None):
    """Full-batch GD on the modes: :math:`z \\leftarrow z - \\eta\\,\\partial E/\\partial z` (real) or
    :math:`z \\leftarrow z-\\eta\\,\\partial E/\\partial z^*` (complex), i.e. an Euler step of
    :math:`\\tau\\dot z=-\\partial E` with dt/τ = η. ``freeze``: "b" (b fixed: eq. 47) or "u" (a, c
    fixed: the b-flow of eqs. 58-61). ``lr`` may be an array (one per run). ``cap`` > 0 (our choice
    for long sequences) takes per run and step
    :math:`\\eta=\\min(\\texttt{lr},\\ \\texttt{cap}/\\mathrm{tr}\\,G)` (G: see :func:`mode_grads`): a
    positive rescaling of time, so GD still follows the same gradient flow, to the same fixed
    points, but stays below the stability limit 2/λ_max where the curvature grows like
    :math:`\\sum_k k^2b^{2k}` (E1). ``every`` > 0 records (a, b, c) every that many steps.
    Diverging runs turn to nan, never an error. Returns a dict. NumPy on the CPU in every profile:
    each step is a few elementwise operations on (runs, T) arrays of scalar modes, no matrix products,
    too little work per step for a GPU."""
    a, b, c = (np.array(x, dtype=np.result_type(x, s, float)) for x in (a, b, c))
    lr = np.asarray(lr, float)
    rec = {"a": [], "b": [], "c": [], "step": []}
    with np.errstate(all="ignore"):
        for t in range(steps + 1):
            if every and t % every == 0:
                for n, x in (("a", a), ("b", b), ("c", c)):
                    rec[n].append(x.copy())
                rec["step"].append(t)
            if t == steps:
                break
            E, ga, gb, gc, *tr = mode_grads(a, b, c, s, k, mask, gn=bool(cap))
            eta = np.minimum(lr, cap / tr[0]) if cap else lr
            if freeze != "u":
                a, c = a - eta * ga, c - eta * gc
            if freeze != "b":
                b = b - eta * gb
    out = {"a": a, "b": b, "c": c, "E": energy(a, b, c, s, k, mask)}
    if every:
        out.update({n: np.array(v) for n, v in rec.items()})
        out["step"] = np.array(rec["step"])
    return out


def logistic_u(t, s, b, u0, tau=1.0):
    """Eq. 47 (b frozen, a = c): :math:`\\tau\\dot u=2u(S_1-S_2u)`, :math:`S_1=\\sum_i b^{T-i}s_i`,
    :math:`S_2=\\sum_i b^{2(T-i)}`, solved by
    :math:`u(t)=\\frac{S_1e^{2tS_1/\\tau}}{S_1/u_0-S_2+S_2e^{2tS_1/\\tau}}` (K2)."""
    k = powers(len(s))
    S1, S2 = (b ** k * s).sum(), (b ** (2 * k)).sum()
    g = np.exp(-2 * np.asarray(t) * S1 / tau)  # the closed form divided by e^{2tS1/τ}: no overflow
    return S1 / (S2 + (S1 / u0 - S2) * g)


def taylor_b_flow(s, u, order: int = 5):
    """Eqs. 58-61 (u frozen): the time derivatives :math:`b^{(n)}=(F\\partial_b)^{n-1}F` of the flow
    :math:`\\dot b=F(b)=\\sum_i (T-i)\\,u\\,b^{T-i-1}(s_i-u\\,b^{T-i})` (τ = 1), n = 1..order, as
    functions of b, computed exactly as polynomials with rational coefficients (sympy ``Poly``;
    ``s`` and ``u`` are read as the rationals :func:`sympy.nsimplify` gives). Faà di Bruno's formula
    (App. E) organises the same derivatives."""
    bs = sp.Symbol("b")
    T, uq = len(s), sp.nsimplify(u)
    F = sp.Poly(sum((T - i) * uq * bs ** (T - i - 1) * (sp.nsimplify(s[i - 1]) - uq * bs ** (T - i))
                    for i in range(1, T + 1)), bs, domain="QQ")
    D, out = F, []
    for _ in range(order):
        out.append(np.poly1d([float(cf) for cf in D.all_coeffs()]))
        D = D.diff(bs) * F
    return out


def taylor_b(s, u, b0, lr, steps, window: int = 50, order: int = 5) -> np.ndarray:
    """K4: 5th-order Taylor solution of the b-flow (u frozen), re-expanded every ``window`` GD steps
    (our choice: 50) and evaluated at every step t with time t·lr (τ = 1)."""
    derivs = taylor_b_flow(s, u, order)
    out = np.empty(steps + 1)
    b = float(b0)
    h = lr * np.arange(window + 1)
    for start in range(0, steps + 1, window):
        coef = [float(d(b)) / math.factorial(n + 1) for n, d in enumerate(derivs)]
        seg = b + sum(cf * h ** (n + 1) for n, cf in enumerate(coef))
        n = min(window + 1, steps + 1 - start)
        out[start:start + n] = seg[:n]
        b = seg[-1]
    return out


# ----------------------------------------------------------------------------- solutions
def zero_loss_solution(dynamics: str, T: int, delta, lam):
    """K5 / K8: the zero-loss (b, ac) of the families of §3.3 (Table A1, App. P.4.1): constant
    (1, δ); inv_exp (λ, δ);
    exp (1/λ, δλ^T). Works for complex δ, λ."""
    delta, lam = np.asarray(delta), np.asarray(lam)
    if dynamics == "constant":
        return np.ones_like(delta * lam), delta * np.ones_like(lam)
    if dynamics == "inv_exp":
        return lam * np.ones_like(delta), delta * np.ones_like(lam)
    if dynamics == "exp":
        return 1 / lam * np.ones_like(delta), delta * lam ** T
    raise ValueError(dynamics)


def profile_energy(b, s):
    """E minimised over u at fixed b (τ = 1): :math:`E^*(b)=\\frac12\\big(\\sum s_i^2-S_1^2/S_2\\big)`
    with :math:`u^*(b)=S_1/S_2` (K2's fixed point). Broadcast: b (..., 1) against s (..., T)."""
    k = powers(s.shape[-1])
    bk = np.asarray(b) ** k
    S1, S2 = (bk * s).sum(-1), (bk * bk).sum(-1)
    return 0.5 * ((s * s).sum(-1) - S1 ** 2 / S2), S1 / S2


def min_energy(s, B: float = 3.0, n: int = 6001) -> tuple[float, float]:
    """C2: global minimum of E over (b, u) for one task s: E* on a b-grid in [-B, B] refined by a
    bounded scalar search and a joint Levenberg-Marquardt polish, and the b -> ±inf limit (u b^{T-1} -> s_1 only). Returns (E, b)."""
    grid = np.linspace(-B, B, n)
    E = profile_energy(grid[:, None], s[None, :])[0]
    i = int(np.nanargmin(E))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, n - 1)]
    res = minimize_scalar(lambda x: float(profile_energy(np.array([x])[:, None], s[None, :])[0][0]), bounds=(lo, hi),
                          method="bounded", options={"xatol": 1e-13})
    b = float(res.x) if res.fun < E[i] else float(grid[i])
    u = profile_energy(np.array([b])[:, None], s[None, :])[1][0]
    k = powers(len(s))
    fit = least_squares(lambda p: s - p[1] * p[0] ** k, [b, u], xtol=1e-15, ftol=1e-15, gtol=1e-15,
                        method="lm")  # polish (b, u) jointly: quadratic convergence at zero loss
    b, u = (fit.x if 0.5 * np.sum(fit.fun ** 2) < 0.5 * np.sum((s - u * b ** k) ** 2) else (b, u))
    b = float(b)
    E_b = 0.5 * float(((s - u * b ** k) ** 2).sum())  # directly: no cancellation
    E_inf = 0.5 * float((s[1:] ** 2).sum())  # b -> inf: only s_1 can be fitted
    return (E_inf, math.inf) if E_inf < E_b else (E_b, b)


def dirac_profile(beta, b, T: int):
    """K7 (Landau form, App. H, without the 1/2): :math:`s_1=\\beta`, :math:`s_T=1/\\beta`,
    :math:`E^*(\\beta,b)=\\beta^2+\\beta^{-2}-\\frac{(\\beta b^{T-1}+1/\\beta)^2}{\\sum_{i<T}b^{2i}}`,
    :math:`u^*=\\frac{\\beta b^{T-1}+1/\\beta}{\\sum_{i<T} b^{2i}}`; trivial branch b = 0,
    u = 1/β, E = β². Broadcasts β against b."""
    beta, b = np.asarray(beta, float), np.asarray(b, float)
    den = sum(b ** (2 * i) for i in range(T))
    num = beta * b ** (T - 1) + 1 / beta
    return beta ** 2 + beta ** -2 - num ** 2 / den, num / den


def phase_diagram(betas, T: int, B: float = 2.0, n_b: int = 4001) -> dict[str, np.ndarray]:
    """F5: minimiser b*, u*, E* of :func:`dirac_profile` over a b-grid on [-B, B] (it contains b = 0
    exactly), for every β."""
    bgrid = np.linspace(-B, B, n_b)
    betas = np.asarray(betas, float)
    out = {"beta": betas, "b": np.empty(len(betas)), "u": np.empty(len(betas)), "E": np.empty(len(betas))}
    for lo in range(0, len(betas), 100):  # blocks of 100 β bound the memory at full scale
        E, u = dirac_profile(betas[lo:lo + 100, None], bgrid[None, :], T)
        i = np.argmin(E, axis=1)
        r = np.arange(len(i))
        out["b"][lo:lo + 100], out["u"][lo:lo + 100], out["E"][lo:lo + 100] = bgrid[i], u[r, i], E[r, i]
    return out


def onset(T: int, B: float = 2.0, n_b: int = 4001, lo: float = 0.3, hi: float = 3.0,
          tol: float = 1e-6) -> float:
    """F5 / C5 / E2: the smallest β at which the grid minimiser of :func:`dirac_profile` on [-B, B]
    leaves b = 0, by bisection (the trivial branch wins at ``lo``, the other at ``hi``)."""
    bgrid = np.linspace(-B, B, n_b)
    off = lambda beta: bgrid[np.argmin(dirac_profile(beta, bgrid, T)[0])] != 0
    if off(lo) or not off(hi):
        return math.nan
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if off(mid) else (mid, hi)
    return hi


def onset_limit(B):
    """E2 / C5: the T -> inf limit of :func:`onset` for |b| <= B (B > 1). On the recurrent branch
    :math:`E^*(\\beta,B)\\to\\beta^{-2}+\\beta^2B^{-2}` (eq. 106's E* with
    :math:`\\sum_{i<T}B^{2i}\\approx B^{2T}/(B^2-1)`), which ties the trivial branch's β² at
    :math:`\\beta_c=(1-B^{-2})^{-1/4}`; for |b| < 1, :math:`E^*\\to\\beta^2+\\beta^{-2}b^2\\ge\\beta^2`."""
    return (1 - np.asarray(B, float) ** -2) ** -0.25


def bound_for_onset(beta_c):
    """E2: the bound B whose T -> inf onset (:func:`onset_limit`) is ``beta_c`` > 1,
    :math:`B=(1-\\beta_c^{-4})^{-1/2}` (1.94 for the paper's 1.08)."""
    return (1 - np.asarray(beta_c, float) ** -4) ** -0.5


def b_star(beta: float, T: int, B: float = 2.0, n_b: int = 400_001) -> float:
    """|b*| at one β on a fine grid of [-B, B] (C5's jump test)."""
    bgrid = np.linspace(-B, B, n_b)
    return float(abs(bgrid[np.argmin(dirac_profile(beta, bgrid, T)[0])]))


# ----------------------------------------------------------------------------- symbolic checks
def eq49_derivative(T: int, n: int, s, u, b):
    """K3: the closed form of eq. 49 (App. E; our transcription matches the paper's display):
    :math:`u\\sum_{i=1}^{T-n}s_i\\frac{(T-i)!}{(T-i-n)!}b^{T-i-n}
    -u^2\\sum_{i=1}^{\\lfloor(2T-n)/2\\rfloor}(T-i)\\frac{(2T-2i-1)!}{(2T-2i-n)!}b^{2T-2i-n}`, with the upper
    limit floored. It is :math:`\\partial_b^{\\,n-1}(-\\tau\\partial_bE)=-\\tau\\,d^nE/db^n`: the paper's
    label :math:`d^nE/db^n` follows App. D's convention :math:`db/dt=dE/db` (slip iv), under which
    it is the (n-1)-th b-derivative of the flow. ``s`` is a sequence of T symbols."""
    f = sp.factorial
    data = sum(s[i - 1] * f(T - i) / f(T - i - n) * b ** (T - i - n) for i in range(1, T - n + 1))
    reg = sum((T - i) * f(2 * T - 2 * i - 1) / f(2 * T - 2 * i - n) * b ** (2 * T - 2 * i - n)
              for i in range(1, (2 * T - n) // 2 + 1))
    return u * data - u ** 2 * reg


def symbolic_checks(T: int = 3) -> dict[str, bool]:
    """K3, K6, K7 and E1 in sympy (exact): eq. 49's derivatives (:func:`eq49_derivative`), the
    geometric sum of the regulariser, the T-output regulariser (App. M.4), the T = 3 Landau
    expansion of E* (slip iii: the exact b^4 coefficient is 2 - β²; App. H's β^-2 + 2 - β² is what
    its declared binomial approximation :math:`(1+b^2+b^4)^{-1}\\approx1-b^2-b^4` gives), and the
    T -> inf limits of E1."""
    b, beta = sp.symbols("b beta", positive=True)
    out = {"K3 eq. 49 = d^(n-1)/db^(n-1) of -tau dE/db (T <= 6, n <= 5)": True}
    u = sp.Symbol("u")
    for TT in range(1, 7):
        s = sp.symbols(f"s1:{TT + 1}")
        tauE = sum((s[i - 1] - u * b ** (TT - i)) ** 2 for i in range(1, TT + 1)) / 2
        for n in range(1, 6):
            out["K3 eq. 49 = d^(n-1)/db^(n-1) of -tau dE/db (T <= 6, n <= 5)"] &= sp.expand(
                eq49_derivative(TT, n, s, u, b) + sp.diff(tauE, b, n)) == 0
    for TT in range(1, 8):
        geo = sum(b ** (2 * (TT - i)) for i in range(1, TT + 1))
        out.setdefault("K6 geometric sum", True)
        out["K6 geometric sum"] &= sp.simplify(geo - (1 - b ** (2 * TT)) / (1 - b ** 2)) == 0
        multi = sum(b ** (2 * (t - i)) for t in range(1, TT + 1) for i in range(1, t + 1))
        closed = (TT * (1 - b ** 2) - b ** 2 * (1 - b ** (2 * TT))) / (1 - b ** 2) ** 2
        out.setdefault("K6 T-output regulariser", True)
        out["K6 T-output regulariser"] &= sp.simplify(multi - closed) == 0
    E3 = beta ** 2 + beta ** -2 - (beta * b ** 2 + 1 / beta) ** 2 / (1 + b ** 2 + b ** 4)
    ser = sp.series(E3, b, 0, 6).removeO()
    out["K7 T=3 b^2 coefficient = beta^-2 - 2"] = sp.simplify(ser.coeff(b, 2) - (beta ** -2 - 2)) == 0
    out["K7 T=3 b^4 coefficient = 2 - beta^2"] = sp.simplify(ser.coeff(b, 4) - (2 - beta ** 2)) == 0
    declared = sp.expand(beta ** 2 + beta ** -2 - (beta * b ** 2 + 1 / beta) ** 2 * (1 - b ** 2 - b ** 4))
    out["K7 eq. 106's b^4 coefficient beta^-2 + 2 - beta^2 follows the declared approximation, "
        "exact is 2 - beta^2"] = bool(sp.simplify(declared.coeff(b, 4) - (beta ** -2 + 2 - beta ** 2)) == 0
                                      and sp.simplify(ser.coeff(b, 4) - declared.coeff(b, 4)) != 0)
    out["K7 beta_c = 1/sqrt2 at T=3"] = sp.solve(sp.Eq(beta ** -2 - 2, 0), beta) == [1 / sp.sqrt(2)]
    xs = sp.Symbol("x")  # |x| < 1: the geometric series, differentiated
    geo = 1 / (1 - xs)
    out["E1 sum k^2 x^(k-1) -> (1+x)/(1-x)^3"] = sp.simplify(
        sp.diff(xs * sp.diff(geo, xs), xs) - (1 + xs) / (1 - xs) ** 3) == 0 and all(
        sp.series((1 + xs) / (1 - xs) ** 3, xs, 0, 8).removeO().coeff(xs, n) == (n + 1) ** 2
        for n in range(8))
    return {key: bool(v) for key, v in out.items()}


def multi_output_minimiser(T: int, ratio, construction: str = "lag", B: float = 3.0,
                           n_b: int = 6001) -> np.ndarray:
    """F10 / C10: global minimiser b* >= 0 of the T-output energy (κ = 1, β = ``ratio``) of
    :func:`multi_output_task`, u minimised in closed form (:math:`u^*=S_1/S_2`, as in
    :func:`profile_energy`), b on a grid of [0, B] that contains 0 exactly."""
    s, k = multi_output_task(T, np.atleast_1d(ratio), 1.0, construction)
    bgrid = np.linspace(0, B, n_b)
    bk = bgrid[:, None] ** k[None, :]
    E = (s * s).sum(1)[:, None] - (s @ bk.T) ** 2 / (bk * bk).sum(1)[None]
    return bgrid[np.argmin(E, 1)]


def multi_output_threshold(T: int, construction: str = "lag", B: float = 3.0, n_b: int = 6001,
                           lo: float = 0.05, hi: float = 20.0, tol: float = 1e-4) -> float:
    """C10: the pruning threshold, the smallest β/κ at which the global minimiser b* of
    :func:`multi_output_minimiser` leaves b = 0, by bisection; nan if b* > 0 already at ``lo`` (the
    mode is never pruned) or still 0 at ``hi``. For ``"lag"`` and T >= 4 the energy is β² on the
    feedforward branch (b = 0) and tends to Tκ² as b -> ∞, so the threshold is √T for unbounded b
    and a little above it on [0, B]."""
    pruned = lambda r: multi_output_minimiser(T, r, construction, B, n_b)[0] == 0
    if not pruned(lo) or pruned(hi):
        return math.nan
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if pruned(mid) else (lo, mid)
    return hi


def feedforward_b(ratio, T: int):
    """C10: the feedforward branch of the ``"first_input"`` T-output task to first order in b: the pairs with
    :math:`k\\le2` give :math:`E\\approx\\frac12[(T-1)u^2-2\\beta u]\\,b^2-\\beta u\\,b+\\dots` with u ≈ κ, so
    :math:`b\\approx\\frac{\\beta/\\kappa}{T-1-2\\beta/\\kappa}`: never 0, and smaller the longer the sequence."""
    ratio = np.asarray(ratio, float)
    return ratio / (T - 1 - 2 * ratio)


# ----------------------------------------------------------------------------- F4's landscape, E1's curvature
def landscape(T: int, s1: float, b: np.ndarray, u: np.ndarray) -> dict[str, np.ndarray]:
    """F4 (Fig. A2, Lemma 3.2): the split of E (τ = 1, times 2) on a (b, ac) grid for the Dirac task
    s_1 = ``s1``, s_T = 1: data term :math:`\\sum_i(s_i^2-2s_iu\\,b^{T-i})`, regulariser
    :math:`u^2\\frac{1-b^{2T}}{1-b^2}` and their sum E."""
    B, U = np.meshgrid(b, u)
    s = task("dirac", T, beta=s1, kappa=1.0)
    k = powers(T)
    data = (s ** 2).sum() - 2 * U * sum(s[i] * B ** k[i] for i in range(T))
    reg = U ** 2 * sum(B ** (2 * i) for i in range(T))
    return {"b": b, "u": u, "data": data, "reg": reg, "E": data + reg}


def curvature(b, T):
    """E1: Gauss-Newton curvature of E in b at u = 1, :math:`\\sum_{k<T}k^2b^{2(k-1)}`, and the
    regulariser's :math:`\\sum_{k<T}b^{2k}`; limits :math:`(1+b^2)/(1-b^2)^3` and :math:`1/(1-b^2)`."""
    b = np.asarray(b, float)
    k = np.arange(T)[:, None]
    return ((k ** 2 * b ** (2 * np.maximum(k - 1, 0))).sum(0), (b ** (2 * k)).sum(0),
            (1 + b ** 2) / (1 - b ** 2) ** 3, 1 / (1 - b ** 2))


def solution_sharpness(T: int, b, u) -> np.ndarray:
    r"""C12 (§3.3, Fig. 3's stability): the largest eigenvalue λ_max of the Hessian of E (τ = 1) at a
    zero-loss solution (b, u) with balanced a = c = √|u|, where the Hessian is the Gauss-Newton
    :math:`J^\top J`, :math:`J_i=\partial(c\,b^{k_i}a)/\partial(a,b,c)=(c\,b^{k_i},\ k_iac\,b^{k_i-1},\ a\,b^{k_i})`.
    GD at rate η can settle there only if η < 2/λ_max. Broadcast over b and u."""
    b, u = np.broadcast_arrays(np.asarray(b, float), np.asarray(u, float))
    r, k = np.sqrt(np.abs(u))[..., None], powers(T)
    bb = b[..., None]
    J = np.stack([r * bb ** k, k * u[..., None] * bb ** np.maximum(k - 1, 0), r * bb ** k], -1)
    return np.linalg.eigvalsh(np.swapaxes(J, -1, -2) @ J)[..., -1]


def stable_lr(lr: float, T: int, b: float, u: float) -> float:
    """Our per-T rate rule: ``lr``, lowered where needed to 1/tr G at the target (b, u) (a = c = √u,
    tr G of :func:`mode_grads`), so that GD stays below its stability limit 2/λ_max as the curvature
    grows like :math:`\\sum_k k^2b^{2k}` with T (E1). At T = 5 and the default rate it changes nothing."""
    r = np.array([math.sqrt(abs(u))])
    tr = mode_grads(r, np.array([float(b)]), r, np.zeros((1, T)), powers(T), gn=True)[-1][0]
    return float(min(lr, 1 / tr))
