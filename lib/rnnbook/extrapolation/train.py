"""The extrapolation chapter's students and their training (Cohen-Karlik et al., ICLR 2023, §3).

Many students (seeds x k x variants x init scales) train as one batched float64 program by full-batch
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

from rnnbook.extrapolation.theory import (DTYPE, _powers, diagonal_loss_and_grads, eps_q,
                                          impulse_response, loss_and_grads, sym_grad, teacher_impulse)
from rnnbook.stable_models.constraints import project_spectral_feasible


FREEZE_LOSS = 1e-10  # a run is frozen once L < 1e-10 (spec §3)
# A run has stalled, and stops, when its loss fell by less than STALL_DROP over the last
# STALL_WINDOW steps (our choice: the slowest converging runs of our trials, non-symmetric students
# at k = 2 d_hat + 1, still lose 10-20 % of their loss per window near L = 1e-7).
STALL_WINDOW = 20_000
STALL_DROP = 0.01


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


def project_students(A: np.ndarray, max_norm: np.ndarray, sym: np.ndarray) -> np.ndarray:
    """Miller & Hardt's projected GD (ICLR 2019, App. C, eq. sm-proj) on a batch of students: each
    run's A is replaced by its Frobenius-nearest point of :math:`\\{\\|A\\|_2 \\le \\lambda\\}`,
    λ = ``max_norm`` per run (inf: unconstrained), in one call of
    :func:`rnnbook.stable_models.constraints.project_spectral_feasible` as
    :math:`P_\\lambda(A) = \\lambda P_1(A/\\lambda)`; runs inside (and non-finite ones) are left as
    they are. A symmetric run's projected A is symmetrised (round-off of the SVD)."""
    lam = max_norm[:, None, None]
    i = np.flatnonzero(np.isfinite(A).all((1, 2)) & (np.sqrt((A * A).sum((1, 2))) > max_norm))
    if len(i):  # ||A||_2 <= ||A||_F: the others are inside
        Z = A[i] / lam[i]
        P = project_spectral_feasible(torch.from_numpy(Z)).numpy()
        P = np.where(sym[i, None, None], (P + P.swapaxes(1, 2)) / 2, P)  # round-off
        A[i] = np.where((P != Z).any((1, 2))[:, None, None], lam[i] * P, A[i])
    return A


def train_students(configs: Sequence[RunConfig],
                   progress: Callable[[Iterable], Iterable] = iter,
                   max_norm: Sequence[float | None] | None = None,
                   init: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                   ) -> list[dict[str, np.ndarray]]:
    """Train all runs by full-batch GD as one batched float64 NumPy program on the CPU
    (closed-form gradient; there is no ``device`` option: the chapter's ``device`` reaches only the
    GRU students).

    A run is frozen once L < 1e-10, after its own ``steps``, when it has stalled (its loss fell by
    less than :data:`STALL_DROP` over the last :data:`STALL_WINDOW` steps: ``stalled``), or when its
    loss rises above 10x its initial value or turns non-finite (``diverged``: a step-size failure,
    not an extrapolation failure); frozen runs leave the batch. Records L and eps_q at each checkpoint and the largest
    imbalance :math:`\\|B-C^\\top\\|/\\|B\\|` seen during training (C4).

    ``max_norm`` (one bound λ or None per run; None: no run is constrained, today's program
    unchanged): projected GD, :func:`project_students` after every step (synthesis chapter, S2).

    ``init`` (None: :func:`init_student` for every run, today's program unchanged): the starting
    (A, B, C), arrays (R, d, d), (R, d), (R, d) of one common d, e.g. smaller students zero-padded
    so that students of several sizes train in one batch (synthesis chapter, S4)."""
    R = len(configs)
    A, B, C = ((torch.stack(t).numpy() for t in zip(*(init_student(c) for c in configs)))
               if init is None else (np.array(x, dtype=np.float64) for x in init))
    K, q, T = (max(getattr(c, a) for c in configs) for a in ("k", "horizon_q", "steps"))
    h_hat_q = torch.stack([teacher_impulse(c.lam, c.w, q) for c in configs]).numpy()
    per_run = {  # per-run constants, gathered again whenever the batch shrinks
        "h_hat": h_hat_q[:, :K],
        "mask": np.arange(K) < np.array([c.k for c in configs])[:, None],
        "lr": np.array([c.lr for c in configs]),
        "steps": np.array([c.steps for c in configs]),
        "sym": np.array([c.variant != "nonsym" for c in configs]),
    }
    if max_norm is not None:
        per_run["max_norm"] = np.array([math.inf if m is None else m for m in max_norm], dtype=float)
    checkpoints = sorted({t for c in configs for t in c.checkpoints})
    ck_L = np.full((R, len(checkpoints)), math.nan)
    ck_eps = np.full_like(ck_L, math.nan)
    diverged = np.zeros(R, dtype=bool)
    stalled = np.zeros(R, dtype=bool)
    steps_run = np.full(R, T)
    imbalance = np.zeros(R)

    idx = np.arange(R)  # the runs still training
    w, (Aw, Bw, Cw) = per_run, (A, B, C)
    L0 = loss_and_grads(A, B, C, per_run["h_hat"], per_run["mask"])[0]
    L_window = L0.copy()  # each run's loss at the start of the current stall window
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging run is detected, not an error
        for t in progress(range(T + 1)):
            L, G_A, G_B, G_C = loss_and_grads(Aw, Bw, Cw, w["h_hat"], w["mask"])
            imb = np.linalg.norm(Bw - Cw, axis=-1) / np.linalg.norm(Bw, axis=-1)
            imbalance[idx] = np.maximum(imbalance[idx], imb)
            if t in checkpoints:
                A[idx], B[idx], C[idx] = Aw, Bw, Cw
                i = checkpoints.index(t)
                ck_L[:, i] = loss_and_grads(A, B, C, per_run["h_hat"], per_run["mask"])[0]
                h = impulse_response(*(torch.from_numpy(x) for x in (A, B, C)), q)
                ck_eps[:, i] = eps_q(h, torch.from_numpy(h_hat_q)).numpy()
            bad = ~np.isfinite(L) | (L > 10 * L0[idx])
            diverged[idx] |= bad
            go = ~bad & (L >= FREEZE_LOSS) & (t < w["steps"])
            if t > 0 and t % STALL_WINDOW == 0:
                stuck = go & (L > (1 - STALL_DROP) * L_window[idx])
                stalled[idx[stuck]] = True
                go &= ~stuck
                L_window[idx] = L
            if not go.all():  # drop frozen runs from the batch
                A[idx], B[idx], C[idx] = Aw, Bw, Cw
                steps_run[idx[~go]] = t
                idx = idx[go]
                if t == T or len(idx) == 0:
                    break
                w = {name: x[idx] for name, x in per_run.items()}
                Aw, Bw, Cw = A[idx], B[idx], C[idx]
                G_A, G_B, G_C = G_A[go], G_B[go], G_C[go]
            lr = w["lr"][:, None]
            G_A = np.where(w["sym"][:, None, None], sym_grad(G_A), G_A)
            Aw = Aw - lr[..., None] * G_A
            if max_norm is not None:
                Aw = project_students(Aw, w["max_norm"], w["sym"])
            Bw = Bw - lr * G_B
            Cw = Cw - lr * G_C
    L = loss_and_grads(A, B, C, per_run["h_hat"], per_run["mask"])[0]
    h = impulse_response(*(torch.from_numpy(x) for x in (A, B, C)), q)
    eps = eps_q(h, torch.from_numpy(h_hat_q)).numpy()  # horizon q for every run
    out = []
    for r, c in enumerate(configs):
        keep = [i for i, t in enumerate(checkpoints) if t in c.checkpoints]
        eps_r = eps[r] if c.horizon_q == q else eps_q(h[r, :c.horizon_q], torch.from_numpy(h_hat_q[r, :c.horizon_q])).item()
        out.append({
            "loss": float(L[r]), "eps": float(eps_r), "diverged": bool(diverged[r]),
            "stalled": bool(stalled[r]),
            "steps_run": int(steps_run[r]), "imbalance_max": float(imbalance[r]),
            "ck_steps": np.array([checkpoints[i] for i in keep]),
            "ck_loss": ck_L[r, keep], "ck_eps": ck_eps[r, keep],
            "h": h[r, :c.horizon_q].numpy(), "A": A[r], "B": B[r], "C": C[r],
        })
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
