"""The extrapolation chapter's closed forms (Cohen-Karlik et al., ICLR 2023, §3-§5).

Teachers and their impulse responses, the extrapolation error :math:`\\epsilon_q` (Def. 2), the
population loss over length-k sequences (Eq. 3.4, rebuilt from the whitened-input statement) and its gradient in closed form (claim C9), the
symmetric-gradient update, Prop. 3's student that fits k steps and fails to extrapolate (C3), the mass
a moment-matching measure puts off the teacher's support (C7), a student's spectrum and its
Wasserstein distance to the teacher (E1), and the loss of diagonal students (E2). float64 throughout.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from scipy.optimize import linprog


DTYPE = torch.float64


# ----------------------------------------------------------------------------- teachers, metrics
def teacher_impulse(lam: Sequence[float], w: Sequence[float], n: int) -> torch.Tensor:
    """Balanced diagonal teacher: :math:`\\hat h_j = \\sum_i \\hat w_i \\hat\\lambda_i^j`, j < n (§3)."""
    lam_t, w_t = torch.tensor(lam, dtype=DTYPE), torch.tensor(w, dtype=DTYPE)
    return (w_t[:, None] * lam_t[:, None] ** torch.arange(n, dtype=DTYPE)).sum(0)


def eps_q(h: torch.Tensor, h_hat: torch.Tensor) -> torch.Tensor:
    """Extrapolation error (Def. 2, normalised): :math:`\\max_{j<q}|h_j-\\hat h_j| / \\max_{j<q}|\\hat h_j|`
    over the last axis; non-finite values become ``inf`` (a failure)."""
    err = (h - h_hat).abs().amax(-1) / h_hat.abs().amax(-1)
    return torch.where(torch.isfinite(err), err, torch.full_like(err, math.inf))


def impulse_response(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, n: int) -> torch.Tensor:
    """:math:`h_j = C A^j B` for j < n, batched over a leading run axis: A (R,d,d), B, C (R,d)."""
    v, out = B, []
    for _ in range(n):
        out.append((C * v).sum(-1))
        v = torch.einsum("rij,rj->ri", A, v)
    return torch.stack(out, -1)


def population_loss(h: torch.Tensor, h_hat: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Population loss over length-k sequences (Eq. 3.4, rebuilt from the whitened-input statement): :math:`L = \\sum_{j<k}(h_j-\\hat h_j)^2`."""
    mask = torch.arange(h.shape[-1], device=h.device) < k[:, None]
    return (((h - h_hat) * mask) ** 2).sum(-1)


# ----------------------------------------------------------------------------- closed-form gradient
def loss_and_grads(A: np.ndarray, B: np.ndarray, C: np.ndarray, h_hat: np.ndarray,
                   mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """Population loss and its gradient in closed form (spec §3). With :math:`v_m = A^m B`,
    :math:`u_m = C A^m` and :math:`r_j = h_j-\\hat h_j` (zero for j >= k, as ``mask`` says):

    :math:`\\partial_A L=\\sum_{m+n+1<k}2r_{m+n+1}u_m^\\top v_n^\\top`,
    :math:`\\partial_B L=\\sum_j 2r_j u_j^\\top`, :math:`\\partial_C L=\\sum_j 2r_j v_j^\\top`.

    Batched over runs in float64 numpy: A (R, d, d), B, C (R, d), ``h_hat`` and ``mask`` (R, K) with
    K = max k; returns (L, G_A, G_B, G_C). The models are tiny, so this is written with few,
    batched operations."""
    R, K = h_hat.shape
    # columns m of P: v_m for the first R rows, u_m^T = (A^T)^m C^T for the last R
    M = np.concatenate([A, A.swapaxes(1, 2)])
    x = np.concatenate([B, C])[..., None]
    P = np.empty((2 * R, A.shape[1], K))
    P[..., 0] = x[..., 0]
    for m in range(1, K):
        x = M @ x
        P[..., m] = x[..., 0]
    v, u = P[:R], P[R:]
    h = (C[..., None] * v).sum(1)
    r2 = 2 * (h - h_hat) * mask  # 2 r_j
    L = (r2 * r2).sum(-1) / 4
    Hk = np.concatenate([r2, np.zeros_like(r2)], -1)[:, _hankel(K)]  # 2 r_{m+n+1}
    G_A = u @ (v @ Hk).swapaxes(1, 2)  # sum_m u_m^T (sum_n 2 r_{m+n+1} v_n)^T
    G_CB = (P @ np.concatenate([r2, r2])[..., None])[..., 0]
    return L, G_A, G_CB[R:], G_CB[:R]


def _hankel(K: int) -> np.ndarray:
    """Index m + n + 1 for the Hankel weights of the A-gradient."""
    i = np.arange(K)
    return i[:, None] + i[None, :] + 1


def _random_students(seed: int, runs: int, d: int, K: int):
    """Random students (symmetric and not), targets and lengths k for :func:`gradient_check`."""
    g = torch.Generator().manual_seed(seed)
    for variant in ("symmetric", "non-symmetric"):
        A = 0.3 * torch.randn(runs, d, d, generator=g, dtype=DTYPE)
        A = (A + A.transpose(1, 2)) / 2 if variant == "symmetric" else A
        B, C = (torch.randn(runs, d, generator=g, dtype=DTYPE) for _ in range(2))
        h_hat = torch.randn(runs, K, generator=g, dtype=DTYPE)
        k = torch.randint(1, K + 1, (runs,), generator=g)
        yield variant, A, B, C, h_hat, k


def _upper_triangle_update(seed: int, runs: int, d: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """On the non-symmetric students of :func:`_random_students`: the closed-form G of a symmetric
    A stored as its upper triangle, and autograd's gradient on that upper triangle
    (:math:`A` = triu(theta) + triu(theta, 1)^T)."""
    *_, (_, A, B, C, h_hat, k) = _random_students(seed, runs, d, K)
    theta = torch.triu(A).clone().requires_grad_()
    L = population_loss(impulse_response(torch.triu(theta) + torch.triu(theta, 1).transpose(1, 2),
                                         B, C, K), h_hat, k)
    auto = torch.triu(torch.autograd.grad(L.sum(), theta)[0]).numpy()
    Asym = (torch.triu(A) + torch.triu(A, 1).transpose(1, 2)).numpy()
    G = loss_and_grads(Asym, B.numpy(), C.numpy(), h_hat.numpy(),
                       (torch.arange(K) < k[:, None]).numpy())[1]
    return G, auto


def gradient_check(seed: int, runs: int = 6, d: int = 7, K: int = 5) -> dict[str, float]:
    """C9: largest relative difference between :func:`loss_and_grads` and autograd on random
    students (symmetric and not) and random targets, over L and the three gradients; and between
    :func:`sym_grad` and autograd through the upper-triangle parametrisation of a symmetric A."""
    out = {}
    for variant, A, B, C, h_hat, k in _random_students(seed, runs, d, K):
        closed = loss_and_grads(*(t.numpy() for t in (A, B, C, h_hat)),
                                (torch.arange(K) < k[:, None]).numpy())
        P = [x.clone().requires_grad_() for x in (A, B, C)]
        L = population_loss(impulse_response(*P, K), h_hat, k)
        auto = (L.detach(), *torch.autograd.grad(L.sum(), P))
        out[variant] = max(float(np.linalg.norm(a - b.numpy()) / b.norm()) for a, b in zip(closed, auto))
    G, auto = _upper_triangle_update(seed, runs, d, K)
    out["upper-triangle update"] = float(np.linalg.norm(np.triu(sym_grad(G)) - auto)
                                         / np.linalg.norm(auto))
    return out


def half_update_error(seed: int, runs: int = 6, d: int = 7, K: int = 5) -> float:
    """The control of C9: relative difference between the wrong update :math:`(G+G^\\top)/2` and
    autograd's upper-triangle gradient, on the same students as :func:`gradient_check`."""
    G, auto = _upper_triangle_update(seed, runs, d, K)
    half = np.triu((G + G.swapaxes(1, 2)) / 2)
    return float(np.linalg.norm(half - auto) / np.linalg.norm(auto))


def sym_grad(G: np.ndarray) -> np.ndarray:
    """Update of a symmetric A stored as its upper triangle (spec §3): :math:`G+G^\\top-\\mathrm{diag}(G)`.

    (Not :math:`(G+G^\\top)/2`, whose dynamics differ.)"""
    S = G + G.swapaxes(1, 2)
    i = np.arange(G.shape[-1])
    S[:, i, i] *= 0.5
    return S


# ----------------------------------------------------------------------------- Prop. 3, moments
def prop3_student(lam: Sequence[float], w: Sequence[float], k: int, alpha: float
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Proposition 3 (our construction): a student that fits the teacher on length k but not beyond.

    :math:`A=\\mathrm{diag}(\\hat\\lambda,\\mu_1..\\mu_{k+1})` with :math:`\\mu` = linspace(-.5,.5,k+1),
    :math:`B=(\\sqrt{\\hat w};v)`, :math:`C=(\\sqrt{\\hat w}^\\top,1..1)`, where v solves the Vandermonde
    system :math:`\\sum_i v_i\\mu_i^j = 0` (j<k), :math:`=\\alpha` (j=k). Returns (A, B, C, v)."""
    mu = torch.linspace(-0.5, 0.5, k + 1, dtype=DTYPE)
    V = mu[None, :] ** torch.arange(k + 1, dtype=DTYPE)[:, None]
    rhs = torch.zeros(k + 1, dtype=DTYPE)
    rhs[k] = alpha
    v = torch.linalg.solve(V, rhs)
    sw = torch.tensor(w, dtype=DTYPE).sqrt()
    A = torch.diag(torch.cat([torch.tensor(lam, dtype=DTYPE), mu]))
    B = torch.cat([sw, v])
    C = torch.cat([sw, torch.ones(k + 1, dtype=DTYPE)])
    return A, B, C, v


def off_support_mass(lam: Sequence[float], w: Sequence[float], k: int, n_grid: int = 601,
                     span: float = 1.5) -> float:
    """Moment uniqueness (§4.1 lemma, Cohen & Yeredor 2011) as a linear programme: the largest mass
    a non-negative measure on a grid in [-span, span] can put off the teacher's atoms while matching
    the teacher's moments :math:`\\sum_i m_i a_i^j = \\sum_i \\hat w_i\\hat\\lambda_i^j`, j < k."""
    grid = np.linspace(-span, span, n_grid)
    for x in lam:  # the grid includes the teacher's atoms exactly
        grid[np.argmin(np.abs(grid - x))] = x
    on = np.isin(grid, lam)
    M = grid[None, :] ** np.arange(k)[:, None]
    moments = (np.asarray(w)[None, :] * np.asarray(lam)[None, :] ** np.arange(k)[:, None]).sum(1)
    res = linprog(-(~on).astype(float), A_eq=M, b_eq=moments, bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"moment LP failed: {res.message}")
    return float(-res.fun)


def spectrum(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """E1: atoms :math:`\\mu_i` and weights :math:`w_i = (C u_i)(u_i^\\top B)` of a learned student, so
    that :math:`h_j = \\sum_i w_i \\mu_i^j` (A symmetric: eigendecomposition)."""
    mu, U = np.linalg.eigh(A)
    return mu, (C @ U) * (U.T @ B)


def w1_distance(mu: np.ndarray, wts: np.ndarray, lam: Sequence[float], w: Sequence[float]) -> float:
    """E1: Wasserstein-1 distance between the learned measure (negative weights taken as mass by
    absolute value, then normalised) and the teacher's."""
    a = np.abs(wts) / np.abs(wts).sum()
    b = np.asarray(w) / np.sum(w)
    x = np.concatenate([mu, lam])
    order = np.argsort(x)
    cdf = np.cumsum(np.concatenate([a, -b])[order])
    return float(np.sum(np.abs(cdf[:-1]) * np.diff(x[order])))


# ----------------------------------------------------------------------------- diagonal students
def diagonal_loss_and_grads(lam: np.ndarray, b: np.ndarray, c: np.ndarray | None,
                            h_hat: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """E2: loss and closed-form gradient of a diagonal student, batched over runs (R, d).

    Real (``c`` given): :math:`h_j = \\sum_i c_i b_i \\lambda_i^j`. Complex (``c`` None, complex
    ``lam`` and ``b``): :math:`h_j = \\mathrm{Re}\\sum_i |b_i|^2 \\lambda_i^j`; the gradient of a
    complex parameter is returned as :math:`\\partial_{\\mathrm{Re}} + i\\,\\partial_{\\mathrm{Im}}`."""
    K = h_hat.shape[-1]
    P = _powers(lam, K)  # lam_i^j, (R, d, K)
    wts = c * b if c is not None else (b * b.conj()).real
    h = (wts[..., None] * P).sum(1).real
    r2 = 2 * (h - h_hat) * mask
    L = (r2 * r2).sum(-1) / 4
    g_w = (r2[:, None, :] * P).sum(-1)  # dL/dw_i (complex for complex lam: its real part counts)
    j = np.arange(1, K)
    g_lam = wts * (r2[:, None, 1:] * j * P[..., :-1]).sum(-1)  # holomorphic derivative
    if c is not None:
        return L, g_lam, g_w * c, g_w * b
    return L, g_lam.conj(), 2 * g_w.real * b


def _powers(lam: np.ndarray, K: int) -> np.ndarray:
    """:math:`\\lambda_i^j` for j < K by cumulative products (cheaper than ``**`` for complex)."""
    P = np.empty(lam.shape + (K,), dtype=lam.dtype)
    P[..., 0] = 1
    P[..., 1:] = lam[..., None]
    return np.cumprod(P, -1)
