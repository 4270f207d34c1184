"""Stable recurrent models, the theory half (Miller & Hardt, ICLR 2019): App. A.1, Props. 3-4, App. C.

Serves the chapter "stable_models" (spec §3, claims C1-C4; their figures F6-F8 are drawn by
:mod:`rnnbook.stable_models.plots`):

- C1 (App. C): properties of the projection :math:`P(W)` onto :math:`\\{\\|W\\|_2 \\le 1\\}` and of the
  stable LSTM's row constraint, checked on batches of random matrices;
- C2/F7 (App. A.1): the scalar system :math:`h_t = a h_{t-1} + x_t` whose gradient explodes in
  :math:`T` when :math:`|a| > 1`, in closed form (float64, vectorised over :math:`a` and :math:`T`);
- C3/F8 (§3.2, Prop. 3): the gap :math:`\\|h_T - h^k_T\\|` between a stable tanh RNN and its depth-k
  truncation against the bound :math:`\\lambda^k(\\|U\\|_2B_x + \\|\\phi(0,0)\\|)/(1-\\lambda)`;
- C4/F6 (Prop. 4, Thm 1): the weight gap :math:`\\|w^{\\rm trunc}_N - w^{\\rm rec}_N\\|` of projected
  SGD on a recurrent and a truncated student, all (instance, schedule, k) runs stacked on one axis.

The tanh RNNs here have no bias, so :math:`\\phi(0,0) = \\tanh(0) = 0` (spec C3; our choice for F6).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TypeVar

import numpy as np
import torch

from rnnbook import params
from rnnbook.stable_models.constraints import (GATES, LSTM_U_F_BOUND, LSTM_W_BOUNDS, constrain_lstm,
                                               project_spectral, spectral_norm)
from rnnbook.stable_models.settings import SMOKE


DTYPE = torch.float64
F = TypeVar("F", bound=Callable)


def one_thread(fn: F) -> F:
    """Run ``fn`` with one torch thread: these programs are many small matrices, and on a shared
    2-core machine a second thread made batched SVDs up to 30x slower (oversubscription)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return fn(*args, **kwargs)
        finally:
            torch.set_num_threads(threads)
    return wrapper  # type: ignore[return-value]


# ============================================================================ settings
@dataclass(frozen=True)
class Schedule:
    """A step-size schedule of F6: :math:`\\alpha/t` (``decay``) or the constant :math:`\\alpha`."""

    alpha: float
    decay: bool

    @property
    def name(self) -> str:
        return f"{self.alpha:g}/t" if self.decay else f"{self.alpha:g}"

    def step(self, t: int) -> float:
        """The step size at SGD step ``t`` (1-indexed)."""
        return self.alpha / t if self.decay else self.alpha


@dataclass(frozen=True)
class TheorySettings:
    """Sizes of C1-C4 (spec §5) for one profile; ``profile`` only changes the instance counts."""

    profile: str
    # C1: random matrices for the projection
    c1_count: int = 200
    c1_n: int = 64
    c1_norm: float = 4.0
    c1_Z: int = 1000
    c1_lstms: int = 20
    # C2/F7: the scalar example of App. A.1
    c2_a0: tuple[float, ...] = (-2.0, -1.5, -1.1, -1.01, 1.01, 1.1, 1.5, 2.0)
    c2_T: tuple[int, ...] = (10, 20, 50)
    c2_steps: int = 100
    c2_stable: tuple[float, ...] = (-0.9, -0.5, 0.5, 0.9)  # C2's control: stable starts
    c2_scales: tuple[float, ...] = (1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001)
    f7_T: tuple[int, ...] = (5, 10, 20, 40)
    f7_a0: tuple[float, ...] = (-1.5, -1.1, -0.5, 0.5, 1.1, 1.5)
    # C3/F8: truncation at inference
    c3_lams: tuple[float, ...] = (0.5, 0.9, 0.99)
    c3_n: int = 64
    c3_m: int = 8
    c3_T: int = 200
    c3_K: int = 64
    c3_instances: int = 20
    # C4/F6: truncation during training
    c4_instances: int = 5
    c4_flat: float = 0.25  # (b): the α/t slopes at most this (the specification's)
    c4_growth: float = 0.1  # (b): every constant step's slope at least this (ours; spec: 0.3)
    c4_lam: float = 0.8
    c4_teacher_norm: float = 0.7
    c4_n: int = 16
    c4_m: int = 4
    c4_T: int = 40
    c4_batch: int = 8
    c4_test: int = 256  # C16: the held-out inputs on which predictions are compared (ours)
    c4_control_norm: float = 2.0  # C15's and C16's controls: ||W||_2 of an unstable model (ours)
    c4_N: int = 1000
    c4_N_k: int = 300  # N of the gap-vs-k panel
    c4_ks: tuple[int, ...] = (1, 2, 4, 6, 8, 12, 16, 24)
    c4_k_fit: tuple[int, int] = (4, 16)
    c4_k_N: tuple[int, ...] = (4, 8)
    c4_schedules: tuple[Schedule, ...] = (Schedule(1.0, True), Schedule(2.0, True), Schedule(0.05, False),
                                          Schedule(0.2, False), Schedule(0.5, False))


def theory_settings(profile: str, smoke: bool = False) -> TheorySettings:
    """The theory half's settings: quick = 20 instances for C3, full = 200; five for C4 in both;
    ``smoke`` (full profile only): the toy sizes of :data:`rnnbook.stable_models.settings.SMOKE`."""
    params.choice("profile", profile, params.PROFILES)
    if params.smoke(smoke, profile):
        return TheorySettings(profile, **SMOKE["theory"])
    if profile == "full":
        return TheorySettings(profile, c3_instances=200)
    return TheorySettings(profile)


def theory_config(S: TheorySettings, seed: int) -> dict:
    """The cache key of the theory half's results: every setting and the seed."""
    return {**asdict(S), "seed": seed}


# ============================================================================ C1: projections
def random_matrices(count: int, n: int, norm: float, gen: torch.Generator) -> torch.Tensor:
    """``count`` Gaussian n×n matrices with entries :math:`N(0, (\\mathrm{norm}/2)^2/n)`, so that
    :math:`\\|W\\|_2 \\approx` ``norm`` (the largest singular value of :math:`G/\\sqrt n` is about 2)."""
    return torch.randn(count, n, n, generator=gen, dtype=DTYPE) * (norm / 2 / math.sqrt(n))


def _inner(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Frobenius inner products :math:`\\langle A_i, B_j\\rangle` of two stacks (a matrix)."""
    return A.flatten(1) @ B.flatten(1).T


@one_thread
def projection_properties(S: TheorySettings, seed: int) -> dict[str, float]:
    """C1 (App. C): the five properties of :math:`P(W)` on ``S.c1_count`` random W at once, as the
    worst case of each (all in float64)."""
    gen = torch.Generator().manual_seed(seed)
    W = random_matrices(S.c1_count, S.c1_n, S.c1_norm, gen)
    U_W, sigma, Vh_W = torch.linalg.svd(W)
    norm_W = sigma[:, :1, None]  # ||W||_2
    P = project_spectral(W)
    inside = W * torch.rand(S.c1_count, 1, 1, generator=gen, dtype=DTYPE) / norm_W  # ||.||_2 <= 1
    # feasible Z: on the boundary (G/||G||_2) and projections of large matrices (many sigma_i = 1)
    half = S.c1_Z // 2
    G = random_matrices(S.c1_Z - half, S.c1_n, 1.0, gen)
    Z = torch.cat([G / spectral_norm(G)[:, None, None],
                   project_spectral(random_matrices(half, S.c1_n, S.c1_norm, gen))])
    Z_star = U_W @ Vh_W  # the feasible point that makes <W - P, Z - P> largest (= 0)
    D = W - P
    vi = _inner(D, Z) - (D * P).sum((1, 2))[:, None]
    vi_star = (D * (Z_star - P)).sum((1, 2))
    fro = torch.linalg.matrix_norm
    return {
        "max ||P(W)||_2 - 1": (spectral_norm(P) - 1).max().item(),
        "max ||P(P(W)) - P(W)||_F": fro(project_spectral(P) - P).max().item(),
        "max ||P(W) - W||_F, ||W||_2 <= 1": fro(project_spectral(inside) - inside).max().item(),
        "max <W - P(W), Z - P(W)>": max(vi.max().item(), vi_star.max().item()),
        "mean <W - P(W), Z - P(W)>, random Z": vi.mean().item(),
        "max ||W - P(W)||_F - ||W - W/||W||_2||_F": (fro(D) - fro(W - W / norm_W)).max().item(),
        "min ||W||_2": norm_W.min().item(),
    }


def lstm_rowsum_excess(weight_hh: torch.Tensor, weight_ih: torch.Tensor) -> float:
    """The largest :math:`\\sum_j|W_{ij}|/c - 1` over the rows of the four recurrent blocks and of
    :math:`U_f` (spec §3, stable LSTM): :math:`\\le 0` when the constraint holds."""
    ratios = [b.abs().sum(1) / LSTM_W_BOUNDS[g] for g, b in zip(GATES, weight_hh.chunk(4, dim=0))]
    ratios.append(weight_ih.chunk(4, dim=0)[1].abs().sum(1) / LSTM_U_F_BOUND)
    return (torch.cat(ratios).max() - 1).item()


@one_thread
def lstm_constraint_properties(S: TheorySettings, seed: int, hidden: int = 64, m: int = 32
                               ) -> dict[str, float]:
    """C1 (spec §3): ``constrain_lstm`` (rows) on ``S.c1_lstms`` random LSTMs (PyTorch's init scale
    ×10, so that every row violates its bound): row sums within bounds, and idempotent."""
    gen = torch.Generator().manual_seed(seed)
    excess, idem = [], []
    for _ in range(S.c1_lstms):
        Whh = (torch.rand(4 * hidden, hidden, generator=gen, dtype=DTYPE) * 2 - 1) * 10 / math.sqrt(hidden)
        Wih = (torch.rand(4 * hidden, m, generator=gen, dtype=DTYPE) * 2 - 1) * 10 / math.sqrt(hidden)
        W1, U1 = constrain_lstm(Whh, Wih, "row")
        W2, U2 = constrain_lstm(W1, U1, "row")
        excess.append(lstm_rowsum_excess(W1, U1))
        idem.append(max((W2 - W1).abs().max().item(), (U2 - U1).abs().max().item()))
    return {"max row sum / c - 1": max(excess), "max |C(C(W)) - C(W)|": max(idem)}


# ============================================================================ C2/F7: App. A.1
def h_T(a: np.ndarray, T: np.ndarray) -> np.ndarray:
    """A.1: :math:`h_T = \\sum_{j<T} a^j = (1-a^T)/(1-a)` for :math:`h_t = ah_{t-1} + 1`,
    :math:`h_0 = 0` (broadcast over ``a`` and ``T``; exact sums where :math:`|1-a| < 10^{-3}`)."""
    a, T = np.broadcast_arrays(np.asarray(a, float), np.asarray(T))
    near = np.abs(1 - a) < 1e-3
    safe = np.where(near, 0.0, a)
    out = (1 - safe ** T) / (1 - safe)
    return np.where(near, _power_sum(a, T, 0), out)


def dh_T(a: np.ndarray, T: np.ndarray) -> np.ndarray:
    """A.1: :math:`\\partial h_T/\\partial a = \\sum_{j<T} j a^{j-1}
    = (1 - Ta^{T-1} + (T-1)a^T)/(1-a)^2`."""
    a, T = np.broadcast_arrays(np.asarray(a, float), np.asarray(T))
    near = np.abs(1 - a) < 1e-3
    safe = np.where(near, 0.0, a)
    out = (1 - T * safe ** (T - 1) + (T - 1) * safe ** T) / (1 - safe) ** 2
    return np.where(near, _power_sum(a, T, 1), out)


def _power_sum(a: np.ndarray, T: np.ndarray, order: int) -> np.ndarray:
    """:math:`\\sum_{j<T} a^j` (order 0) or :math:`\\sum_{j<T} ja^{j-1}` (order 1), summed term by term."""
    j = np.arange(max(int(np.max(T)), 1))
    terms = a[..., None] ** j if order == 0 else j * a[..., None] ** np.maximum(j - 1, 0)
    return np.where(j < T[..., None], terms, 0.0).sum(-1)


def grad_A1(a: np.ndarray, T: np.ndarray) -> np.ndarray:
    """A.1: :math:`g(a, T) = \\partial L/\\partial a` of :math:`L = \\tfrac12(h_T - 1)^2`
    (our choice of loss): :math:`g = (h_T - 1)\\,\\partial h_T/\\partial a`."""
    return (h_T(a, T) - 1) * dh_T(a, T)


def gd_A1(a0: np.ndarray, T: np.ndarray, steps: int, blowup: float = 1e6, c: float = 1.0
          ) -> np.ndarray:
    """A.1: gradient descent :math:`a_{i+1} = a_i - \\alpha_i g(a_i, T)`, :math:`\\alpha_i = c/i`
    (the paper's :math:`c = 1`), from every ``a0`` for every ``T`` (broadcast); the path
    (``..., steps + 1``), NaN once :math:`|a| > 10^6` or non-finite (diverged)."""
    a = np.broadcast_to(np.asarray(a0, float), np.broadcast_shapes(np.shape(a0), np.shape(T))).copy()
    path = [a.copy()]
    with np.errstate(all="ignore"):
        for i in range(1, steps + 1):
            a = a - c * grad_A1(a, T) / i
            a[~(np.abs(a) <= blowup)] = np.nan
            path.append(a.copy())
    return np.stack(path, -1)


def divergence_step(path: np.ndarray) -> np.ndarray:
    """The first step at which a GD path of :func:`gd_A1` diverged (-1 if it never did)."""
    bad = np.isnan(path)
    return np.where(bad.any(-1), bad.argmax(-1), -1)


def a1_results(S: TheorySettings) -> dict:
    """C2: divergence steps of GD from ``S.c2_a0`` for ``S.c2_T``, and the gradient ratios
    :math:`|g(a,40)|/|g(a,20)|` at :math:`a \\in \\{.5, 1.1, 1.5\\}`."""
    a0, T = np.array(S.c2_a0), np.array(S.c2_T)
    steps = divergence_step(gd_A1(a0[:, None], T[None, :], S.c2_steps))
    a = np.array([0.5, 1.1, 1.5])
    ratio = np.abs(grad_A1(a, 40)) / np.abs(grad_A1(a, 20))
    return {"divergence_step": steps, "ratio_a": a, "ratio": ratio}


def a1_control(S: TheorySettings) -> dict:
    """C2 with its control: for every step scale c of ``S.c2_scales`` (steps c/i), whether GD
    diverges within ``S.c2_steps`` steps from each stable start ``S.c2_stable`` and each unstable
    start ``S.c2_a0`` at each T of ``S.c2_T``; ``c_star``, the largest c at which no stable start
    diverges (None: none such), and, at c = 1 and at ``c_star``, the lengths T at which each start
    diverged."""
    a0, T = np.array(S.c2_stable + S.c2_a0), np.array(S.c2_T)
    div = {c: divergence_step(gd_A1(a0[:, None], T[None, :], S.c2_steps, c=c)) >= 0
           for c in S.c2_scales}
    stable = np.isin(a0, S.c2_stable)
    c_star = max((c for c, d in div.items() if not d[stable].any()), default=None)

    def lengths(c: float) -> dict[str, list[int]]:
        return {f"{a:g}": [int(t) for t, d in zip(T, row) if d] for a, row in zip(a0, div[c])}
    return {"c_star": c_star, "at 1/i": lengths(1.0),
            "at c*/i": lengths(c_star) if c_star is not None else {},
            "stable diverged at 1/i": int(div[1.0][stable].sum()),
            "unstable diverged at c*/i": int(div[c_star][~stable].sum()) if c_star else 0,
            "unstable pairs": int((~stable).sum() * len(T))}


def a1_control_table(S: TheorySettings, ctrl: dict) -> list[dict]:
    """Table A.2: per start of :func:`a1_control`, stable or not, and the lengths T at which GD
    diverged with steps 1/i and with c*/i ("-": none)."""
    def fmt(ts: list[int]) -> str:
        return ", ".join(map(str, ts)) or "-"
    return [{"a0": a, "start": "stable" if abs(float(a)) < 1 else "unstable",
             "diverged at T (1/i)": fmt(ctrl["at 1/i"][a]),
             f"diverged at T ({ctrl['c_star']:g}/i)": fmt(ctrl["at c*/i"].get(a, []))}
            for a in sorted(ctrl["at 1/i"], key=float)]


def c2_ours(S: TheorySettings, ctrl: dict) -> str:
    """C2's measured outcome in words: stable pairs diverged at 1/i, unstable pairs diverged at
    the control's c*/i, and the unstable starts that did not diverge at every T there."""
    partial = "; ".join(f"{a}: T = {', '.join(map(str, ts)) or 'none'}"
                        for a, ts in ctrl["at c*/i"].items()
                        if abs(float(a)) > 1 and len(ts) < len(S.c2_T))
    return (f"with steps 1/i {ctrl['stable diverged at 1/i']} of {len(S.c2_stable) * len(S.c2_T)} "
            f"stable (a0, T) pairs diverge as well as the unstable ones; with the control's "
            f"{ctrl['c_star']:g}/i, where no stable start diverges, {ctrl['unstable diverged at c*/i']} "
            f"of {ctrl['unstable pairs']} unstable pairs diverge (diverged only at: {partial or '-'})")


def a1_divergence(S: TheorySettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """C2/F7 (Table A.1): every :math:`a_0` of C2 and F7, the lengths T (5, shown but not claimed,
    and the claim's), and the first GD step with :math:`|a| > 10^6` (-1: none within
    ``S.c2_steps``) per (a0, T)."""
    a0 = np.array(sorted(set(S.c2_a0) | set(S.f7_a0)))
    T = np.array((S.f7_T[0],) + S.c2_T)
    return a0, T, divergence_step(gd_A1(a0[:, None], T[None, :], S.c2_steps))


def a1_divergence_table(S: TheorySettings) -> list[dict]:
    """Table A.1: :func:`a1_divergence` as rows, "-" where GD did not diverge."""
    a0, T, steps = a1_divergence(S)
    return [{"a0": a, **{f"T = {t}": (int(d) if d >= 0 else "-") for t, d in zip(T, row)}}
            for a, row in zip(a0, steps)]


def diverging_lengths(S: TheorySettings, a0: float) -> list[int]:
    """Table A.1: the lengths T at which GD from ``a0`` diverges."""
    starts, T, steps = a1_divergence(S)
    return [int(t) for t, d in zip(T, steps[list(starts).index(a0)]) if d >= 0]


# ============================================================================ C3/F8: Prop. 3
def tanh_rnn_instances(count: int, lams: tuple[float, ...], n: int, m: int, gen: torch.Generator
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` random tanh RNNs per λ (our choice): W Gaussian rescaled to :math:`\\|W\\|_2 = \\lambda`
    exactly, U with entries :math:`N(0, 1/m)`; shapes (L, count, n, n) and (L, count, n, m)."""
    W = torch.randn(len(lams), count, n, n, generator=gen, dtype=DTYPE)
    W = W * (torch.tensor(lams, dtype=DTYPE)[:, None] / spectral_norm(W))[..., None, None]
    U = torch.randn(len(lams), count, n, m, generator=gen, dtype=DTYPE) / math.sqrt(m)
    return W, U


def tanh_forward(W: torch.Tensor, U: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """§3.1: :math:`h_t = \\tanh(Wh_{t-1} + Ux_t)`, :math:`h_0 = 0`, over x (..., T, m); returns
    every :math:`h_t` (..., T, n) (batched over the leading dimensions)."""
    h = x.new_zeros(x.shape[:-2] + (W.shape[-1],))
    Ux = x @ U.mT
    hs = []
    for t in range(x.shape[-2]):
        h = torch.tanh((W @ h[..., None])[..., 0] + Ux[..., t, :])
        hs.append(h)
    return torch.stack(hs, -2)


def truncated_final_states(W: torch.Tensor, U: torch.Tensor, x: torch.Tensor, K: int) -> torch.Tensor:
    """§3.1: :math:`h^k_T` for every k = 1..K at once (..., K, n): state k starts from 0 at time
    :math:`T-k+1` and runs the map over :math:`x_{T-k+1..T}`; before its start it is held at 0."""
    T = x.shape[-2]
    k = torch.arange(1, K + 1)
    h = x.new_zeros(x.shape[:-2] + (K, W.shape[-1]))
    Ux = x[..., T - K:, :] @ U.mT if K <= T else torch.nn.functional.pad(x, (0, 0, K - T, 0)) @ U.mT
    for s in range(K):  # s-th of the last K time steps
        started = (k >= K - s)[:, None]
        step = torch.tanh(h @ W.mT + Ux[..., s, None, :])
        h = torch.where(started, step, h)
    return h


def inference_bound(lam: torch.Tensor, U: torch.Tensor, x: torch.Tensor, k: torch.Tensor,
                    phi00: float = 0.0) -> torch.Tensor:
    """Prop. 3 (as rebuilt in the spec): :math:`\\|h_T - h^k_T\\| \\le \\lambda^k(\\|U\\|_2B_x +
    \\|\\phi(0,0)\\|)/(1-\\lambda)`, :math:`B_x = \\max_t\\|x_t\\|` (``phi00`` = 0 without bias)."""
    B_x = torch.linalg.vector_norm(x, dim=-1).amax(-1)
    scale = (spectral_norm(U) * B_x + phi00) / (1 - lam)
    return lam[..., None] ** k * scale[..., None]


def inference_depth(lam: torch.Tensor, U: torch.Tensor, x: torch.Tensor, eps: float,
                    phi00: float = 0.0) -> torch.Tensor:
    """Prop. 3 solved for k (eq. sm-prop3; synthesis S5): the depth
    :math:`k_\\varepsilon = \\ln(B_0/\\varepsilon)/\\ln(1/\\lambda)` at which the bound
    :math:`B_k = \\lambda^kB_0` of :func:`inference_bound` equals ε, :math:`B_0` its value at k = 0
    (real-valued, 0 where :math:`B_0 \\le \\varepsilon`; the shortest truncation that the bound
    guarantees within ε is :math:`\\lceil k_\\varepsilon\\rceil`). ``lam`` broadcasts against the
    leading dimensions of ``U`` and ``x``."""
    B0 = inference_bound(lam, U, x, torch.zeros(1, dtype=lam.dtype, device=lam.device), phi00)[..., 0]
    return (torch.log(B0 / eps) / -torch.log(lam)).clamp(min=0)


@one_thread
def truncation_errors(S: TheorySettings, seed: int) -> dict[str, np.ndarray]:
    """C3: :math:`\\|h_T - h^k_T\\|` and its bound for every λ, instance and k = 1..K (float64),
    arrays of shape (L, instances, K)."""
    gen = torch.Generator().manual_seed(seed)
    W, U = tanh_rnn_instances(S.c3_instances, S.c3_lams, S.c3_n, S.c3_m, gen)
    x = torch.rand(len(S.c3_lams), S.c3_instances, S.c3_T, S.c3_m, generator=gen, dtype=DTYPE) * 2 - 1
    h_T_full = tanh_forward(W, U, x)[..., -1, :]
    h_k = truncated_final_states(W, U, x, S.c3_K)
    err = torch.linalg.vector_norm(h_T_full[..., None, :] - h_k, dim=-1)
    lam = torch.tensor(S.c3_lams, dtype=DTYPE)[:, None].expand(-1, S.c3_instances)
    k = torch.arange(1, S.c3_K + 1, dtype=DTYPE)
    return {"err": err.numpy(), "bound": inference_bound(lam, U, x, k).numpy(), "k": k.numpy(),
            "lams": np.array(S.c3_lams)}


def decay_rate(k: np.ndarray, gap: np.ndarray, floor: float = 0.0) -> float:
    """The fitted per-step ratio :math:`r` of :math:`\\mathrm{gap} \\approx Cr^k` (least squares on
    :math:`\\log` gap) over the points above ``floor``."""
    keep = np.isfinite(gap) & (gap > floor)
    slope = np.polyfit(k[keep], np.log(gap[keep]), 1)[0]
    return float(np.exp(slope))


def c3_summary(res: dict[str, np.ndarray], floor: float = 1e-13) -> dict:
    """C3's rule: the largest err/bound wherever err > ``floor``, and per λ the largest fitted
    per-step decay over instances (fits over k with err > ``floor``)."""
    e, b, k = res["err"], res["bound"], res["k"]
    above = e > floor
    rates = [[decay_rate(k, e[i, j], floor) for j in range(e.shape[1])] for i in range(e.shape[0])]
    return {"max err/bound": float((e / b)[above].max()),
            "max decay rate": {f"{lam:g}": max(r) for lam, r in zip(res["lams"], rates)},
            "min decay rate": {f"{lam:g}": min(r) for lam, r in zip(res["lams"], rates)}}


# ============================================================================ C4/F6: Prop. 4
def c4_checkpoints(S: TheorySettings) -> np.ndarray:
    """The SGD steps N at which the weights are compared: 21 log-spaced in [10, N] and N_k."""
    grid = np.unique(np.round(np.logspace(1, math.log10(S.c4_N), 21)).astype(int))
    return np.union1d(grid, [S.c4_N_k])


def _teacher_and_data(S: TheorySettings, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One F6 instance (our choice): a teacher tanh RNN with :math:`\\|W^*\\|_2 = 0.7`, U* and readout
    c* Gaussian (variance 1/m, 1/n); inputs x ~ N(0, I) for every SGD step (N, batch, T, m) and the
    targets :math:`y = c^{*\\top}h^*_T` (N, batch)."""
    W, U = tanh_rnn_instances(1, (S.c4_teacher_norm,), S.c4_n, S.c4_m, gen)
    c = torch.randn(S.c4_n, generator=gen, dtype=DTYPE) / math.sqrt(S.c4_n)
    x = torch.randn(S.c4_N, S.c4_batch, S.c4_T, S.c4_m, generator=gen, dtype=DTYPE)
    return x, tanh_forward(W[0, 0], U[0, 0], x)[..., -1, :] @ c


def _student_init(S: TheorySettings, gen: torch.Generator) -> list[torch.Tensor]:
    """PyTorch's RNN init :math:`U(-1/\\sqrt n, 1/\\sqrt n)` for W, U, c, with W projected into
    :math:`\\|W\\|_2 \\le \\lambda`."""
    bound = 1 / math.sqrt(S.c4_n)
    W, U, c = (torch.rand(*shape, generator=gen, dtype=DTYPE) * 2 * bound - bound
               for shape in ((S.c4_n, S.c4_n), (S.c4_n, S.c4_m), (S.c4_n,)))
    return [project_spectral(W, S.c4_lam), U, c]


def _active(k: torch.Tensor, T: int) -> list[int]:
    """How many students of a stack sorted by k (descending) run at time t = 0..T-1."""
    if torch.any(k[1:] > k[:-1]):
        raise ValueError("students must be sorted by k, largest first")
    return (k >= T - torch.arange(T)[:, None]).sum(1).tolist()


def truncated_stack_forward(W: torch.Tensor, U: torch.Tensor, c: torch.Tensor, x: torch.Tensor,
                      k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """§3.1 for a stack of M students sorted by ``k`` (descending): :math:`\\hat y = c^\\top h^k_T`,
    the state of student i started from 0 at time :math:`T - k_i + 1` (:math:`k_i \\ge T`: the
    recurrent model). Before its start a student's state is 0 and is not computed, so the cost is
    :math:`\\sum_i k_i`. Shapes: W (M,n,n), U (M,n,m), c (M,n), x (M,B,T,m), k (M,) → all states
    H (T+1, M, B, n) and :math:`\\hat y` (M, B)."""
    M, B, T, _ = x.shape
    Ux = (x.permute(2, 0, 1, 3) @ U.mT).unbind(0)  # T of (M, B, n)
    H = x.new_zeros(T + 1, M, B, W.shape[-1])
    active = _active(k, T)
    Hs, Wt = H.unbind(0), {a: W[:a].mT for a in set(active)}
    for t, a in enumerate(active):
        torch.baddbmm(Ux[t][:a], Hs[t][:a], Wt[a], out=Hs[t + 1][:a]).tanh_()
    return H, (H[-1] * c[:, None]).sum(-1)


def truncated_stack_grads(W: torch.Tensor, U: torch.Tensor, c: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                    k: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The loss :math:`\\sum_i \\frac1{2B}\\sum_b(\\hat y_{ib} - y_b)^2` of :func:`truncated_stack_forward`
    and its gradients in W, U, c by hand (backpropagation through time, batched over students):
    :math:`g_t = \\delta_t \\odot (1 - h_t^2)`, :math:`\\delta_{t-1} = g_t W`,
    :math:`\\partial_W = \\sum_t g_t^\\top h_{t-1}`, :math:`\\partial_U = \\sum_t g_t^\\top x_t`."""
    H, y_hat = truncated_stack_forward(W, U, c, x, k)
    M, B, T, m = x.shape
    r = (y_hat - y) / B
    delta = r[..., None] * c[:, None]
    started = torch.arange(T)[:, None] >= T - k  # (T, M)
    G = (1 - H[1:] ** 2) * started[..., None, None]  # tanh' while running, 0 before the start
    active = _active(k, T)
    Gs, Wa, ds = G.unbind(0), {a: W[:a] for a in set(active)}, {a: delta[:a] for a in set(active)}
    for t, a in reversed(list(enumerate(active))):
        g_t = Gs[t][:a]
        g_t *= ds[a]
        torch.bmm(g_t, Wa[a], out=ds[a])
    G = G.permute(1, 3, 0, 2).reshape(M, -1, T * B)  # (M, n, T*B)
    gW = G @ H[:-1].permute(1, 0, 2, 3).reshape(M, T * B, -1)
    gU = G @ x.permute(0, 2, 1, 3).reshape(M, T * B, m)
    gc = (r[..., None] * H[-1]).sum(1)
    return 0.5 * (r * (y_hat - y)).sum(), [gW, gU, gc]


def project_stack_(W: torch.Tensor, lam: float) -> None:
    """App. C in place on a stack of W: only the matrices with :math:`\\|W\\|_2 > \\lambda` (found by
    eigenvalues of :math:`W^\\top W`, cheaper than an SVD) go through ``project_spectral``."""
    over = torch.isfinite(W).all((1, 2))  # a diverged run stays diverged
    over[over.clone()] = torch.linalg.eigvalsh(W[over].mT @ W[over])[:, -1] > lam ** 2
    if over.any():
        W[over] = project_spectral(W[over], lam)


@one_thread
def weight_gap_runs(S: TheorySettings, seed: int) -> dict[str, np.ndarray]:
    """C4: projected SGD of every (k, instance, schedule) student, all stacked on one axis (sorted by
    k, the recurrent model k = T first), sharing init and batches within an instance. Returns the
    weight gaps :math:`\\|w_k - w_{\\rm rec}\\|` (instances, schedules, ks, checkpoints) and, for
    C16 (Thm. 1), the prediction gaps: the RMS over a held-out batch per instance of
    :math:`\\hat y_k - \\hat y_{\\rm rec}`, each truncated student predicting from its last k inputs
    (§3.1), the recurrent one from all T (same shape), and their control at the end of training:
    every student's W rescaled to :math:`\\|W\\|_2` = ``S.c4_control_norm`` (instances,
    schedules, ks)."""
    gen = torch.Generator().manual_seed(seed)
    ks = [S.c4_T] + sorted(S.c4_ks, reverse=True)
    I, Sc, K = S.c4_instances, len(S.c4_schedules), len(ks)
    data, init = zip(*[(_teacher_and_data(S, gen), _student_init(S, gen)) for _ in range(I)])
    x_test = torch.randn(I, S.c4_test, S.c4_T, S.c4_m, generator=gen, dtype=DTYPE)  # drawn last
    w = [torch.stack([p[j] for p in init])[None, :, None].expand(K, -1, Sc, *init[0][j].shape)
         .reshape(K * I * Sc, *init[0][j].shape).clone() for j in range(3)]  # W, U, c
    k = torch.tensor(ks).repeat_interleave(I * Sc)
    inst = torch.arange(I).repeat_interleave(Sc).repeat(K)
    x_all = torch.stack([d[0] for d in data])  # (I, N, B, T, m)
    y_all = torch.stack([d[1] for d in data])
    checkpoints = set(c4_checkpoints(S).tolist())
    snaps, preds = [], []
    for t in range(1, S.c4_N + 1):
        _, grads = truncated_stack_grads(*w, x_all[inst, t - 1], y_all[inst, t - 1], k)
        eta = torch.tensor([s.step(t) for s in S.c4_schedules], dtype=DTYPE).repeat(K * I)
        for p, g in zip(w, grads):
            p -= eta.view(-1, *[1] * (p.dim() - 1)) * g
        project_stack_(w[0], S.c4_lam)
        if t in checkpoints:
            snaps.append(torch.cat([p.flatten(1) for p in w], 1).reshape(K, I, Sc, -1))
            preds.append(truncated_stack_forward(*w, x_test[inst], k)[1].reshape(K, I, Sc, -1))
    snap = torch.stack(snaps, -2).permute(1, 2, 0, 3, 4)  # (I, Sc, K, checkpoints, params)
    pred = torch.stack(preds, -2).permute(1, 2, 0, 3, 4)  # (I, Sc, K, checkpoints, test batch)
    gap = torch.linalg.vector_norm(snap[:, :, 1:] - snap[:, :, :1], dim=-1)
    pred_gap = _rms_gap(pred)
    W_ctrl = w[0] * (S.c4_control_norm / torch.linalg.matrix_norm(w[0], 2))[:, None, None]
    pred_ctrl = truncated_stack_forward(W_ctrl, w[1], w[2], x_test[inst], k)[1].reshape(K, I, Sc, -1)
    order = np.argsort(ks[1:])  # back to increasing k
    return {"gap": gap[:, :, order].numpy(), "pred_gap": pred_gap[:, :, order].numpy(),
            "pred_gap_control": _rms_gap(pred_ctrl.permute(1, 2, 0, 3))[:, :, order].numpy(),
            "N": c4_checkpoints(S), "ks": np.array(ks[1:])[order],
            "final_finite": torch.isfinite(snap[..., -1, :]).all(-1).numpy()}


def _rms_gap(pred: torch.Tensor) -> torch.Tensor:
    """C16: the RMS over the last axis (held-out inputs) of each truncated student's prediction
    minus the recurrent one's; axis 2 holds the students, the recurrent one first."""
    return (pred[:, :, 1:] - pred[:, :, :1]).pow(2).mean(-1).sqrt()


def loglog_slope(N: np.ndarray, gap: np.ndarray) -> float:
    """The least-squares slope of :math:`\\log` gap against :math:`\\log N` (NaN if any gap is not
    finite and positive)."""
    if not np.all(np.isfinite(gap) & (gap > 0)):
        return float("nan")
    return float(np.polyfit(np.log(N), np.log(gap), 1)[0])


def c4_summary(S: TheorySettings, res: dict[str, np.ndarray]) -> dict:
    """C4's rules on the median over instances: (a) the fitted per-step ratio of the α = 1/t gap at
    N = N_k over k ∈ k_fit; (b) per schedule, the log-log slope of the k = 4 gap against N."""
    gap = np.median(res["gap"], axis=0)  # (schedules, ks, checkpoints)
    names = [s.name for s in S.c4_schedules]
    ks, N = res["ks"], res["N"]
    lo, hi = S.c4_k_fit
    in_fit = (ks >= lo) & (ks <= hi)
    j = list(N).index(S.c4_N_k)
    ratio = decay_rate(ks[in_fit], gap[names.index("1/t"), in_fit, j])
    k4 = list(ks).index(4)
    slopes = {nm: loglog_slope(N, gap[i, k4]) for i, nm in enumerate(names)}
    decay_ok = all(slopes[s.name] <= S.c4_flat for s in S.c4_schedules if s.decay)
    const_ok = all(slopes[s.name] >= S.c4_growth for s in S.c4_schedules if not s.decay)
    return {"ratio": ratio, "slopes": slopes, "passed_a": ratio <= S.c4_lam, "decay_flat": decay_ok,
            "constant_grows": const_ok, "passed_b": bool(decay_ok and const_ok), "median_gap": gap}


def c16_summary(S: TheorySettings, res: dict[str, np.ndarray]) -> dict:
    """C16 (Thm. 1) on the median prediction gap over instances: (a) its fitted per-step ratio over
    k ∈ k_fit at N = N_k with steps 1/t, at most :math:`\\lambda`; (b) the log-log slope against
    N of the k = 4 gap, at most ``S.c4_flat`` for every α/t schedule (constant steps: reported);
    the control (every trained student's W rescaled to ``S.c4_control_norm``) must fail (a)."""
    gap = np.median(res["pred_gap"], axis=0)  # (schedules, ks, checkpoints)
    names = [s.name for s in S.c4_schedules]
    ks, N = res["ks"], res["N"]
    lo, hi = S.c4_k_fit
    fit, k4 = (ks >= lo) & (ks <= hi), list(ks).index(4)
    i = names.index("1/t")
    ratio = decay_rate(ks[fit], gap[i, fit, list(N).index(S.c4_N_k)])
    control = decay_rate(ks[fit], np.median(res["pred_gap_control"], axis=0)[i, fit])
    slopes = {nm: loglog_slope(N, gap[j, k4]) for j, nm in enumerate(names)}
    flat = all(slopes[s.name] <= S.c4_flat for s in S.c4_schedules if s.decay)
    return {"ratio per k (1/t, N = %d)" % S.c4_N_k: ratio, "slopes at k = 4": slopes,
            "ratio per k (control, ||W||2 = %g)" % S.c4_control_norm: control,
            "control refused": bool(control > S.c4_lam),
            "passed": bool(ratio <= S.c4_lam and flat and control > S.c4_lam)}


def c4_slope_table(S: TheorySettings, res: dict[str, np.ndarray]) -> list[dict]:
    """C4 (b) per schedule: the log-log slope of the k = 4 gap against N, for the median over
    instances (the claim's value) and for every instance."""
    N, k4 = res["N"], list(res["ks"]).index(4)
    median = np.median(res["gap"], axis=0)
    return [{"schedule": s.name, "median": loglog_slope(N, median[i, k4]),
             **{f"instance {j}": loglog_slope(N, g[i, k4]) for j, g in enumerate(res["gap"])}}
            for i, s in enumerate(S.c4_schedules)]
