"""The extrapolation chapter's students and their training (Cohen-Karlik et al., ICLR 2023, §3).

Many students (seeds x k x variants x init scales) train as one batched float64 torch program by full-batch
GD with the population loss (Eq. 3.4, rebuilt from the whitened-input statement) and its closed-form gradient
(:func:`rnnbook.extrapolation.theory.loss_and_grads`); a run freezes once its loss is below
:data:`FREEZE_LOSS`. Diagonal (S4D / LRU-form) students of extension E2 train the same way.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from rnnbook.extrapolation.theory import (DTYPE, _powers, diagonal_loss_and_grads, eps_q, gd_step,
                                          gradient_factors, impulse_response, teacher_impulse)


FREEZE_LOSS = 1e-10  # a run is frozen once L < 1e-10 (spec §3)
# A run has stalled, and stops, when its loss fell by less than STALL_DROP over the last
# STALL_WINDOW steps (our choice: the slowest converging runs of our trials, non-symmetric students
# at k = 2 d_hat + 1, still lose 10-20 % of their loss per window near L = 1e-7).
STALL_WINDOW = 20_000
STALL_DROP = 0.01


# ----------------------------------------------------------------------------- one GD step
def chunk_runs(d: int, device: torch.device) -> int:
    """How many runs :func:`gd_steps` takes at a time: on the CPU as many as keep their A (d x d,
    float64) within about 1 MiB of cache through the k powers, the gradient and the update; on a
    GPU all runs."""
    return 1 << 30 if device.type != "cpu" else max(1, (1 << 20) // (8 * d * d))


def gd_steps(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, h_hat: torch.Tensor,
             mask: torch.Tensor, lr: torch.Tensor, n_sym: int, chunk: int
             ) -> tuple[torch.Tensor, ...]:
    """One full-batch GD step of every run (the first ``n_sym`` with a symmetric A), a chunk of
    runs at a time, so that a chunk's matrices are read from memory once per step: the loss at
    (A, B, C) and the stepped parameters (:func:`~rnnbook.extrapolation.theory.gradient_factors`,
    :func:`~rnnbook.extrapolation.theory.gd_step`)."""
    L, A2, B2, C2 = A.new_empty(len(A)), torch.empty_like(A), torch.empty_like(B), torch.empty_like(C)
    bounds = [*range(0, n_sym, chunk), n_sym, *range(n_sym, len(A), chunk), len(A)]
    for a, z in zip(bounds, bounds[1:]):
        if a >= z:
            continue
        ns, s = (z - a) if z <= n_sym else 0, slice(a, z)
        L[s], U, W, G_B, G_C = gradient_factors(A[s], B[s], C[s], h_hat[s], mask[s], ns)
        gd_step(A[s], U, W, lr[s], ns, out=A2[s])
        torch.addcmul(B[s], lr[s, None], G_B, value=-1, out=B2[s])
        torch.addcmul(C[s], lr[s, None], G_C, value=-1, out=C2[s])
    return L, A2, B2, C2


# ----------------------------------------------------------------------------- runs
@dataclass(frozen=True)
class RunConfig:
    """One student run of experiment ``experiment`` (a figure id of the spec). ``variant``:
    "sym_bal" (symmetric A, B = C^T at init), "sym_ind" (symmetric A, independent B, C) or
    "nonsym" (full A, independent B, C; §5.2)."""

    experiment: str
    d: int
    lam: tuple[float, ...]
    w: tuple[float, ...]
    k: int
    variant: str
    init_scale: float
    lr: float
    steps: int
    seed: int
    horizon_q: int
    checkpoints: tuple[int, ...]

    @property
    def d_hat(self) -> int:
        return len(self.lam)


VARIANTS = {"sym_bal": "symmetric, balanced", "sym_ind": "symmetric, B and C independent",
            "nonsym": "non-symmetric"}


def run_seed(*parts: object) -> int:
    """A stable seed for one run, independent of which runs share its batch."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:7], "little")


def init_student(cfg: RunConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Near-zero init (spec §3): A = mirrored upper triangle of N(0, sigma^2) (full N(0, sigma^2)
    for "nonsym"), B ~ N(0, sigma^2), C = B^T ("sym_bal") or independent."""
    g = torch.Generator().manual_seed(cfg.seed)
    s, d = cfg.init_scale, cfg.d
    A = s * torch.randn(d, d, generator=g, dtype=DTYPE)
    if cfg.variant != "nonsym":
        A = torch.triu(A) + torch.triu(A, 1).T
    B = s * torch.randn(d, generator=g, dtype=DTYPE)
    C = B.clone() if cfg.variant == "sym_bal" else s * torch.randn(d, generator=g, dtype=DTYPE)
    return A, B, C


def train_students(configs: Sequence[RunConfig], progress: Callable[[Iterable], Iterable] = iter,
                   device: str | torch.device = "cpu") -> list[dict[str, np.ndarray]]:
    """Train all runs by full-batch GD as one batched float64 torch program on ``device`` (the
    chapter's; closed-form gradient, :func:`rnnbook.extrapolation.theory.loss_and_grads`). The runs
    with a symmetric A go first in the batch, so that their power recursion is one product per power
    and their step one batched product (:func:`~rnnbook.extrapolation.theory.gd_step`).

    A run is frozen once L < 1e-10, after its own ``steps``, when it has stalled (its loss fell by
    less than :data:`STALL_DROP` over the last :data:`STALL_WINDOW` steps: ``stalled``), or when its
    loss rises above 10x its initial value or turns non-finite (``diverged``: a step-size failure,
    not an extrapolation failure); frozen runs leave the batch. Records L and eps_q at each checkpoint and the largest
    imbalance :math:`\\|B-C^\\top\\|/\\|B\\|` seen during training (C4)."""
    dev = torch.device(device)
    R = len(configs)
    order = sorted(range(R), key=lambda i: configs[i].variant == "nonsym")  # symmetric runs first
    cf = [configs[i] for i in order]
    A, B, C = (torch.stack(t).to(dev) for t in zip(*(init_student(c) for c in cf)))
    K, q, T = (max(getattr(c, a) for c in cf) for a in ("k", "horizon_q", "steps"))
    h_hat_q = torch.stack([teacher_impulse(c.lam, c.w, q) for c in cf]).to(dev)
    tens = lambda f, **kw: torch.tensor([f(c) for c in cf], device=dev, **kw)  # noqa: E731
    per_run = {  # per-run constants, gathered again whenever the batch shrinks
        "h_hat": h_hat_q[:, :K],
        "mask": torch.arange(K, device=dev) < tens(lambda c: c.k)[:, None],
        "lr": tens(lambda c: c.lr, dtype=DTYPE),
        "steps": tens(lambda c: c.steps),
    }
    checkpoints = sorted({t for c in cf for t in c.checkpoints})
    ck_L = torch.full((R, len(checkpoints)), math.nan, dtype=DTYPE, device=dev)
    ck_eps = torch.full_like(ck_L, math.nan)
    diverged = torch.zeros(R, dtype=torch.bool, device=dev)
    stalled = torch.zeros_like(diverged)
    steps_run = torch.full((R,), T, device=dev)
    imbalance = torch.zeros(R, dtype=DTYPE, device=dev)
    n_sym = sum(c.variant != "nonsym" for c in cf)

    idx = torch.arange(R, device=dev)  # the runs still training (in batch order, symmetric first)
    w, (Aw, Bw, Cw), ns = per_run, (A, B, C), n_sym
    loss = lambda A_, B_, C_, w_, ns_: gradient_factors(A_, B_, C_, w_["h_hat"], w_["mask"], ns_)[0]  # noqa: E731
    chunk = chunk_runs(A.shape[1], dev)
    L0 = loss(A, B, C, per_run, n_sym)
    L_window = L0.clone()  # each run's loss at the start of the current stall window
    for t in progress(range(T + 1)):
        L, A2, B2, C2 = gd_steps(Aw, Bw, Cw, w["h_hat"], w["mask"], w["lr"], ns, chunk)
        imb = torch.linalg.vector_norm(Bw - Cw, dim=-1) / torch.linalg.vector_norm(Bw, dim=-1)
        imbalance[idx] = torch.maximum(imbalance[idx], imb)
        if t in checkpoints:
            A[idx], B[idx], C[idx] = Aw, Bw, Cw
            i = checkpoints.index(t)
            ck_L[:, i] = loss(A, B, C, per_run, n_sym)
            ck_eps[:, i] = eps_q(impulse_response(A, B, C, q), h_hat_q)
        bad = ~torch.isfinite(L) | (L > 10 * L0[idx])
        diverged[idx] |= bad
        go = ~bad & (L >= FREEZE_LOSS) & (t < w["steps"])
        if t > 0 and t % STALL_WINDOW == 0:
            stuck = go & (L > (1 - STALL_DROP) * L_window[idx])
            stalled[idx[stuck]] = True
            go &= ~stuck
            L_window[idx] = L
        if not bool(go.all()):  # drop frozen runs from the batch
            A[idx], B[idx], C[idx] = Aw, Bw, Cw
            steps_run[idx[~go]] = t
            ns = int(go[:ns].sum())
            idx = idx[go]
            if t == T or len(idx) == 0:
                break
            w = {name: x[idx] for name, x in per_run.items()}
            A2, B2, C2 = A2[go], B2[go], C2[go]
        Aw, Bw, Cw = A2, B2, C2
    L = loss(A, B, C, per_run, n_sym).cpu().numpy()
    h = impulse_response(A, B, C, q)
    eps = eps_q(h, h_hat_q).cpu().numpy()  # horizon q for every run
    h, h_hat_q, ck_L, ck_eps = h.cpu(), h_hat_q.cpu(), ck_L.cpu().numpy(), ck_eps.cpu().numpy()
    A, B, C = (x.cpu().numpy() for x in (A, B, C))
    flags = {n: x.cpu().numpy() for n, x in (("diverged", diverged), ("stalled", stalled),
                                             ("steps_run", steps_run), ("imbalance", imbalance))}
    out: list[dict] = [{}] * R
    for r, c in enumerate(cf):
        keep = [i for i, t in enumerate(checkpoints) if t in c.checkpoints]
        eps_r = eps[r] if c.horizon_q == q else eps_q(h[r, :c.horizon_q], h_hat_q[r, :c.horizon_q]).item()
        out[order[r]] = {
            "loss": float(L[r]), "eps": float(eps_r), "diverged": bool(flags["diverged"][r]),
            "stalled": bool(flags["stalled"][r]),
            "steps_run": int(flags["steps_run"][r]), "imbalance_max": float(flags["imbalance"][r]),
            "ck_steps": np.array([checkpoints[i] for i in keep]),
            "ck_loss": ck_L[r, keep], "ck_eps": ck_eps[r, keep],
            "h": h[r, :c.horizon_q].numpy(), "A": A[r], "B": B[r], "C": C[r],
        }
    return out


def train_diagonal(h_hat: torch.Tensor, ks: Sequence[int], seeds: Sequence[int], d: int,
                   complex_: bool, steps: int, lr: float, init_scale: float, horizon_q: int,
                   progress: Callable[[Iterable], Iterable] = iter) -> dict[str, np.ndarray]:
    """E2: diagonal students (S4D / LRU form), trained together by full-batch GD with the closed-form
    gradient of :func:`diagonal_loss_and_grads`, from N(0, sigma^2) entries (c = b at init).
    ``h_hat`` has length >= horizon_q. Returns final loss, eps_q and divergence per run."""
    R, K = len(ks), max(ks)
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    shape = (2, d) if complex_ else (d,)
    draw = lambda: np.stack([init_scale * torch.randn(shape, generator=g, dtype=DTYPE).numpy()
                             for g in gens])
    lam, b = draw(), draw()
    if complex_:
        lam, b = lam[:, 0] + 1j * lam[:, 1], b[:, 0] + 1j * b[:, 1]
    c = np.zeros_like(b) if complex_ else b.copy()  # c is not a parameter of the complex student
    target = np.broadcast_to(h_hat[:K].numpy(), (R, K))
    mask = np.arange(K) < np.array(ks)[:, None]
    L0 = diagonal_loss_and_grads(lam, b, None if complex_ else c, target, mask)[0]
    idx = np.arange(R)  # runs still training; frozen ones leave the batch
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in progress(range(steps)):
            L, *grads = diagonal_loss_and_grads(lam[idx], b[idx], None if complex_ else c[idx],
                                                target[idx], mask[idx])
            go = np.isfinite(L) & (L <= 10 * L0[idx]) & (L >= FREEZE_LOSS)
            idx, grads = idx[go], [g[go] for g in grads]
            if len(idx) == 0:
                break
            lam[idx] -= lr * grads[0]
            b[idx] -= lr * grads[1]
            if not complex_:
                c[idx] -= lr * grads[2]
        c = None if complex_ else c
        L = diagonal_loss_and_grads(lam, b, c, target, mask)[0]
        wts = c * b if c is not None else (b * b.conj()).real
        h = (wts[..., None] * _powers(lam, horizon_q)).sum(1).real
    eps = eps_q(torch.from_numpy(h), h_hat[:horizon_q]).numpy()
    return {"loss": L, "eps": eps, "diverged": ~np.isfinite(L) | (L > 10 * L0)}
