"""The extrapolation chapter's closed forms (Cohen-Karlik et al., ICLR 2023, §3-§5).

Teachers and their impulse responses, the extrapolation error :math:`\\epsilon_q` (Def. 2), the
population loss over length-k sequences (Eq. 3.4, rebuilt from the whitened-input statement) and its gradient in closed form (claim C9), the
symmetric-gradient update, Prop. 3's student that fits k steps and fails to extrapolate (C3), the mass
a moment-matching measure puts off the teacher's support (C7), a student's spectrum and its
Wasserstein distance to the teacher (E1), and the loss of diagonal students (E2). float64 throughout;
the closed form and the GD step the trainer takes with it are batched torch programs on the
tensors' device.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from scipy.optimize import linprog


DTYPE = torch.float64


# ----------------------------------------------------------------------------- teachers, metrics
# Default teachers (spec §4, our choice): each includes lam = 1, memory that never decays.
TEACHERS: dict[int, tuple[tuple[float, ...], tuple[float, ...]]] = {
    1: ((1.0,), (1.0,)),
    2: ((1.0, -0.9), (0.5, 0.5)),
    3: ((1.0, -0.9, 0.6), (0.4, 0.3, 0.3)),
    4: ((1.0, -0.9, 0.6, -0.3), (0.3, 0.3, 0.2, 0.2)),
}


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
BLOCK_BYTES = 2 ** 19  # the A of one block of runs on the CPU: half of a 1 MiB L2 cache


def run_blocks(A: torch.Tensor, k: Sequence[int], n_sym: int) -> list[tuple[slice, bool, int]]:
    """Blocks of runs whose matrices stay in cache while all their powers are applied: the first
    ``n_sym`` runs (symmetric A), then the rest; each block with whether it is symmetric and the
    powers its runs need, their largest k (runs sorted by k need few). One block each on a GPU."""
    R, size = A.shape[0], A[0].numel() * A.element_size()
    n = R if A.device.type != "cpu" else max(1, BLOCK_BYTES // size)
    return [(slice(a, min(a + n, hi)), sym, max(k[a:min(a + n, hi)]))
            for lo, hi, sym in ((0, n_sym, True), (n_sym, R, False)) for a in range(lo, hi, n)]


def krylov(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, k: Sequence[int], n_sym: int = 0
           ) -> torch.Tensor:
    """:math:`v_m = A^m B` and :math:`u_m = C A^m` for m < max k (spec §3), as rows of P (K, R, 2, d):
    ``P[m, :, 0]`` = v_m, ``P[m, :, 1]`` = u_m (zero for m >= the block's largest k, where the
    gradient does not need them). Batched over runs A (R, d, d), B, C (R, d) of lengths k, one
    block of runs at a time (:func:`run_blocks`), one product per power and block: the first
    ``n_sym`` runs have a symmetric A, whose powers act on both rows at once,
    :math:`[v_{m+1}; u_{m+1}] = [v_m; u_m] A`; the others' rows take :math:`A^\\top` and A in turn."""
    X, d, K, blocks = torch.stack([B, C], 1), B.shape[-1], max(k), []
    for r, sym, Kr in run_blocks(A, k, n_sym):
        if sym:
            x, M = X[r], A[r]
        else:  # each run's rows v_m^T and u_m, one after the other, times A^T and A
            x, M = X[r].reshape(-1, 1, d), torch.stack([A[r].mT, A[r]], 1).flatten(0, 1)
        xs = [x]
        for _ in range(1, Kr):
            xs.append(torch.bmm(xs[-1], M))
        xs += [torch.zeros_like(x)] * (K - Kr)
        blocks.append(torch.stack(xs).view(K, -1, 2, d))
    return torch.cat(blocks, 1)


def residuals(P: torch.Tensor, C: torch.Tensor, h_hat: torch.Tensor, mask: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Population loss :math:`L=\\sum_{j<k}r_j^2` (Eq. 3.4, rebuilt) and :math:`2r_j`, zero for j >= k
    (``mask``), with :math:`h_j = C v_j` from :func:`krylov`'s P (K, R, 2, d); ``h_hat`` and
    ``mask`` (R, >= K) are cut to K."""
    h, K = (P[:, :, 0] * C).sum(-1).T, P.shape[0]
    r2 = 2 * (h - h_hat[:, :K]) * mask[:, :K]
    return (r2 * r2).sum(-1) / 4, r2


def grad_factors(P: torch.Tensor, r2: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """:math:`\\partial_A L = U^\\top W` with rows :math:`U_m = u_m`, :math:`W_m=\\sum_n 2r_{m+n+1}v_n`
    (Hankel weights); :math:`\\partial_B L=\\sum_j 2r_j u_j^\\top`, :math:`\\partial_C L=\\sum_j 2r_j v_j^\\top`.
    Returns (U, W, G_B, G_C), U and W (R, K, d)."""
    K = r2.shape[-1]
    Hk = torch.nn.functional.pad(r2, (0, K))[:, 1:].unfold(-1, K, 1).contiguous()  # [m, n]: 2 r_{m+n+1}
    G_CB = (r2.T[..., None, None] * P).sum(0)
    return P[:, :, 1].transpose(0, 1), torch.bmm(Hk, P[:, :, 0].transpose(0, 1)), G_CB[:, 1], G_CB[:, 0]


def loss_and_grads(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, h_hat: torch.Tensor,
                   k: Sequence[int], n_sym: int = 0) -> tuple[torch.Tensor, ...]:
    """Population loss and its gradient in closed form (spec §3, claim C9). With :math:`v_m = A^m B`,
    :math:`u_m = C A^m` and :math:`r_j = h_j-\\hat h_j` (zero for j >= k):

    :math:`\\partial_A L=\\sum_{m+n+1<k}2r_{m+n+1}u_m^\\top v_n^\\top`,
    :math:`\\partial_B L=\\sum_j 2r_j u_j^\\top`, :math:`\\partial_C L=\\sum_j 2r_j v_j^\\top`.

    Batched over runs in float64 torch (on the tensors' device): A (R, d, d), B, C (R, d),
    ``h_hat`` (R, K) with K = max k, one k per run, the first ``n_sym`` runs with a symmetric A;
    returns (L, G_A, G_B, G_C). The trainer applies the same factors block by block
    (:func:`descend`)."""
    k = [int(x) for x in k]
    mask = torch.arange(max(k), device=A.device) < torch.tensor(k, device=A.device)[:, None]
    P = krylov(A, B, C, k, n_sym)
    L, r2 = residuals(P, C, h_hat, mask)
    U, W, G_B, G_C = grad_factors(P, r2)
    return L, U.mT @ W, G_B, G_C


def descend(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, P: torch.Tensor, r2: torch.Tensor,
            lr: torch.Tensor, k: Sequence[int], n_sym: int) -> None:
    """One GD step in place, from :func:`krylov`'s P and :func:`residuals`' 2r: per block of runs
    (:func:`run_blocks`) :math:`A \\leftarrow A - \\eta\\,G` with :math:`G = U^\\top W`, or
    :func:`sym_grad` of it for a symmetric A (the update of its upper triangle); B, C likewise.
    G is never formed: A is updated by one product accumulated into it, the symmetric update as
    :math:`G + G^\\top = [U; W]^\\top [W; U]` and a diagonal, so that a large A is read and written
    once per step (the same step as :func:`sym_grad`'s to round-off, ``tests/``; a symmetric A stays
    symmetric to round-off, about 1e-16 relative, no longer bit for bit)."""
    U, W, G_B, G_C = grad_factors(P, r2)
    for r, sym, Kr in run_blocks(A, k, n_sym):
        U_r, W_r = U[r, :Kr], W[r, :Kr]  # the rows m >= k of U and W are zero
        eta_U = lr[r, None, None] * U_r
        if sym:  # A -= eta (G + G^T - diag G)
            A[r].baddbmm_(torch.cat([eta_U, lr[r, None, None] * W_r], 1).mT, torch.cat([W_r, U_r], 1),
                          alpha=-1)
            A[r].diagonal(dim1=-2, dim2=-1).add_((eta_U * W_r).sum(1))
        else:
            A[r].baddbmm_(eta_U.mT, W_r, alpha=-1)
    B -= lr[:, None] * G_B
    C -= lr[:, None] * G_C


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


def _upper_triangle_update(seed: int, runs: int, d: int, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """On the non-symmetric students of :func:`_random_students`: the closed-form G of a symmetric
    A stored as its upper triangle, and autograd's gradient on that upper triangle
    (:math:`A` = triu(theta) + triu(theta, 1)^T)."""
    *_, (_, A, B, C, h_hat, k) = _random_students(seed, runs, d, K)
    theta = torch.triu(A).clone().requires_grad_()
    L = population_loss(impulse_response(torch.triu(theta) + torch.triu(theta, 1).transpose(1, 2),
                                         B, C, K), h_hat, k)
    auto = torch.triu(torch.autograd.grad(L.sum(), theta)[0])
    Asym = torch.triu(A) + torch.triu(A, 1).transpose(1, 2)
    G = loss_and_grads(Asym, B, C, h_hat, k, n_sym=runs)[1]
    return G, auto


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """:math:`\\|a-b\\|/\\|b\\|` (Frobenius)."""
    return float((a - b).norm() / b.norm())


def gradient_check(seed: int, runs: int = 6, d: int = 7, K: int = 5) -> dict[str, float]:
    """C9: largest relative difference between :func:`loss_and_grads` and autograd on random
    students (symmetric, through the powers of A acting on [B; C] at once, and not) and random
    targets, over L and the three gradients; and between :func:`sym_grad` and autograd through the
    upper-triangle parametrisation of a symmetric A."""
    out = {}
    for variant, A, B, C, h_hat, k in _random_students(seed, runs, d, K):
        closed = loss_and_grads(A, B, C, h_hat, k, n_sym=runs if variant == "symmetric" else 0)
        P = [x.clone().requires_grad_() for x in (A, B, C)]
        L = population_loss(impulse_response(*P, K), h_hat, k)
        auto = (L.detach(), *torch.autograd.grad(L.sum(), P))
        out[variant] = max(_rel(a, b) for a, b in zip(closed, auto))
    G, auto = _upper_triangle_update(seed, runs, d, K)
    out["upper-triangle update"] = _rel(torch.triu(sym_grad(G)), auto)
    return out


def half_update_error(seed: int, runs: int = 6, d: int = 7, K: int = 5) -> float:
    """The control of C9: relative difference between the wrong update :math:`(G+G^\\top)/2` and
    autograd's upper-triangle gradient, on the same students as :func:`gradient_check`."""
    G, auto = _upper_triangle_update(seed, runs, d, K)
    return _rel(torch.triu((G + G.mT) / 2), auto)


def sym_grad(G: torch.Tensor) -> torch.Tensor:
    """Update of a symmetric A stored as its upper triangle (spec §3): :math:`G+G^\\top-\\mathrm{diag}(G)`.

    (Not :math:`(G+G^\\top)/2`, whose dynamics differ.)"""
    S = G + G.mT
    S.diagonal(dim1=-2, dim2=-1).mul_(0.5)
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


def hankel_rank(h: np.ndarray, rel: float = 1e-2) -> int:
    """C12 (§1, §6): the state dimension an impulse response h (j < q) needs, as the numerical rank
    of its Hankel matrix :math:`(h_{i+j})_{i,j<q/2}` (Kronecker: the rank of the infinite Hankel
    matrix is the smallest state dimension realising h): singular values at least ``rel`` times the
    largest. A non-finite h has no rank (-1)."""
    n = len(h) // 2
    H = np.asarray(h)[np.arange(n)[:, None] + np.arange(n)[None, :]]
    if not np.all(np.isfinite(H)):
        return -1
    s = np.linalg.svd(H, compute_uv=False)
    return int((s >= rel * s[0]).sum())


def tail_share(h: np.ndarray) -> float:
    """C12 (§1, §6): the memory of an impulse response h (j < q),
    :math:`\\max_{j\\ge q/2}|h_j| / \\max_j|h_j|`: about :math:`\\rho^{q/2}` for a slowest mode of
    modulus ρ; near 0 for short memory, about 1/2 for the default teachers (λ̂ = 1), 1 for a
    response that grows (its largest value lies in the tail; inf where h is not finite)."""
    h = np.abs(np.asarray(h, dtype=float))
    if not np.all(np.isfinite(h)):
        return math.inf
    return float(h[len(h) // 2:].max() / h.max())


def short_memory_student(lam: Sequence[float], w: Sequence[float], k: int, n: int) -> np.ndarray:
    """C12's construction: the impulse response (j < n) of a zero-loss student of *short* memory,
    k diagonal modes at :math:`\\mu` = linspace(-0.5, 0.5, k) whose signed weights solve the
    Vandermonde system :math:`\\sum_i v_i\\mu_i^j = \\hat h_j`, j < k (it fits the teacher's first k
    taps exactly; its memory decays at least like :math:`0.5^j`)."""
    mu = np.linspace(-0.5, 0.5, k)
    j = np.arange(max(n, k))
    h_hat = (np.asarray(w)[:, None] * np.asarray(lam)[:, None] ** j[:k]).sum(0)
    v = np.linalg.solve(mu[None, :] ** j[:k, None], h_hat)
    return (v[:, None] * mu[:, None] ** j[None, :n]).sum(0)


def conserved(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """C2 (§5.2's students): :math:`Q = AA^\\top - A^\\top A + BB^\\top - C^\\top C`, conserved by
    gradient flow on any loss of the impulse response (which is invariant under
    :math:`(SAS^{-1}, SB, CS^{-1})`), batched over a leading run axis. Its trace is
    :math:`\\|B\\|^2 - \\|C\\|^2`: a student whose Q is of order one stays that far from balance."""
    outer = lambda X, Y: X[..., :, None] * Y[..., None, :]
    return A @ A.swapaxes(-1, -2) - A.swapaxes(-1, -2) @ A + outer(B, B) - outer(C, C)


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
