"""The extrapolation chapter's students and their training (Cohen-Karlik et al., ICLR 2023, §3).

Many students (seeds x k x variants x init scales) train as one batched float64 torch program (on the
chapter's ``device``) by full-batch GD with the population loss (Eq. 3.4, rebuilt from the
whitened-input statement) and its closed-form gradient
(:func:`rnnbook.extrapolation.theory.loss_and_grads`, applied by
:func:`~rnnbook.extrapolation.theory.descend`); a run freezes once its loss is below
:data:`FREEZE_LOSS`. Diagonal (S4D / LRU-form) students of extension E2 train the same way.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from rnnbook.extrapolation.theory import (DTYPE, _powers, conserved, descend, diagonal_loss_and_grads,
                                          eps_q, impulse_response, krylov, residuals, teacher_impulse)
from rnnbook.stable_models.constraints import project_spectral_feasible


# The chapter's default near-zero init scale sigma and GD step eta (its parameter cell's init_scale
# and lr; tests/test_notebooks.py checks that they agree), which the synthesis chapter reuses.
INIT_SCALE = 1e-2
LR = 1e-2

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
    "sym_bal" (symmetric A, B = C^T at init), "sym_ind" (symmetric A, independent B, C),
    "nonsym" (full A, independent B, C; §5.2) or "nonsym_far" (as "nonsym", but B of norm about 1:
    far from balance, C2's variant). ``keep_A``: whether the run's record keeps its final A (d x d:
    most of a stored piece at large d); every record keeps B, C and A's asymmetry and conserved Q."""

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
    keep_A: bool = True

    @property
    def d_hat(self) -> int:
        return len(self.lam)


VARIANTS = {"sym_bal": "symmetric, balanced", "sym_ind": "symmetric, B and C independent",
            "nonsym": "non-symmetric", "nonsym_far": "non-symmetric, far from balance"}


def symmetric(variant: str) -> bool:
    """Whether a variant's A is symmetric (stored as its upper triangle)."""
    return variant.startswith("sym")


def run_seed(*parts: object) -> int:
    """A stable seed for one run, independent of which runs share its batch."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:7], "little")


def init_student(cfg: RunConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Near-zero init (spec §3): A = mirrored upper triangle of N(0, sigma^2) (full N(0, sigma^2)
    for "nonsym" and "nonsym_far"), B ~ N(0, sigma^2), C = B^T ("sym_bal") or independent;
    "nonsym_far" then scales B to N(0, 1/d) entries, so that ||B||^2 - ||C||^2, the trace of the
    conserved :func:`rnnbook.extrapolation.theory.conserved` Q, is about 1 (C2's variant far from
    balance)."""
    g = torch.Generator().manual_seed(cfg.seed)
    s, d = cfg.init_scale, cfg.d
    A = s * torch.randn(d, d, generator=g, dtype=DTYPE)
    if symmetric(cfg.variant):
        A = torch.triu(A) + torch.triu(A, 1).T
    B = s * torch.randn(d, generator=g, dtype=DTYPE)
    C = B.clone() if cfg.variant == "sym_bal" else s * torch.randn(d, generator=g, dtype=DTYPE)
    if cfg.variant == "nonsym_far":
        B = B / (s * math.sqrt(d))
    return A, B, C


def project_students(A: torch.Tensor, max_norm: torch.Tensor, sym: torch.Tensor) -> torch.Tensor:
    """Miller & Hardt's projected GD (ICLR 2019, App. C, eq. sm-proj) on a batch of students, in
    place: each run's A is replaced by its Frobenius-nearest point of :math:`\\{\\|A\\|_2 \\le \\lambda\\}`,
    λ = ``max_norm`` per run (inf: unconstrained), in one call of
    :func:`rnnbook.stable_models.constraints.project_spectral_feasible` as
    :math:`P_\\lambda(A) = \\lambda P_1(A/\\lambda)`; runs inside (and non-finite ones) are left as
    they are. A symmetric run's projected A is symmetrised (round-off of the SVD)."""
    lam = max_norm[:, None, None]
    i = torch.nonzero(torch.isfinite(A).all(-1).all(-1) & ((A * A).sum((1, 2)).sqrt() > max_norm))[:, 0]
    if len(i):  # ||A||_2 <= ||A||_F: the others are inside
        Z = A[i] / lam[i]
        P = project_spectral_feasible(Z)
        P = torch.where(sym[i, None, None], (P + P.mT) / 2, P)  # round-off
        A[i] = torch.where((P != Z).any(-1).any(-1)[:, None, None], lam[i] * P, A[i])
    return A


@torch.inference_mode()  # no autograd bookkeeping: a fifth off each small batch's step
def train_students(configs: Sequence[RunConfig],
                   progress: Callable[[Iterable], Iterable] = iter,
                   max_norm: Sequence[float | None] | None = None,
                   init: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                   device: str | torch.device = "cpu") -> list[dict[str, np.ndarray]]:
    """Train all runs by full-batch GD as one batched float64 torch program on ``device``
    (the chapter's ``device``; closed-form gradient, :func:`rnnbook.extrapolation.theory.descend`;
    symmetric students first, so that their powers act on [B; C] at once, each kind sorted by k, so
    that a block of runs computes only the powers its k need).

    A run is frozen once L < 1e-10, after its own ``steps``, when it has stalled (its loss fell by
    less than :data:`STALL_DROP` over the last :data:`STALL_WINDOW` steps: ``stalled``), or when its
    loss rises above 10x its initial value or turns non-finite (``diverged``: a step-size failure,
    not an extrapolation failure); frozen runs leave the batch. Records L and eps_q at each checkpoint and the largest
    imbalance :math:`\\|B-C^\\top\\|/\\|B\\|` seen during training (C4); at the end, the final B, C,
    the asymmetry :math:`\\|A-A^\\top\\|/\\|A\\|` and the norm of the conserved Q (C2, C11), and the
    final A of the runs that keep it (``keep_A``).

    ``max_norm`` (one bound λ or None per run; None: no run is constrained, today's program
    unchanged): projected GD, :func:`project_students` after every step (synthesis chapter, S2).

    ``init`` (None: :func:`init_student` for every run, today's program unchanged): the starting
    (A, B, C), arrays (R, d, d), (R, d), (R, d) of one common d, e.g. smaller students zero-padded
    so that students of several sizes train in one batch (synthesis chapter, S4). Results are
    NumPy arrays, in the order of ``configs``."""
    order = sorted(range(len(configs)), key=lambda r: (not symmetric(configs[r].variant), configs[r].k))
    runs = [configs[r] for r in order]
    dev = torch.device(device)
    A, B, C = (torch.stack(t) for t in zip(*(init_student(c) for c in runs))) if init is None else \
        (torch.as_tensor(np.asarray(x, dtype=np.float64)[order]) for x in init)
    A, B, C = (x.to(dev, copy=True) for x in (A, B, C))
    K, q, T = (max(getattr(c, a) for c in runs) for a in ("k", "horizon_q", "steps"))
    h_hat_q = torch.stack([teacher_impulse(c.lam, c.w, q) for c in runs]).to(dev)
    per_run = {  # per-run constants, gathered again whenever the batch shrinks
        "h_hat": h_hat_q[:, :K],
        "mask": torch.arange(K, device=dev) < torch.tensor([c.k for c in runs], device=dev)[:, None],
        "lr": torch.tensor([c.lr for c in runs], dtype=DTYPE, device=dev),
        "steps": torch.tensor([c.steps for c in runs], device=dev),
        "sym": torch.tensor([symmetric(c.variant) for c in runs], device=dev),
    }
    if max_norm is not None:
        per_run["max_norm"] = torch.tensor([math.inf if max_norm[r] is None else max_norm[r] for r in order],
                                           dtype=DTYPE, device=dev)
    n_sym, ks = int(per_run["sym"].sum()), [c.k for c in runs]

    def loss() -> torch.Tensor:  # every run's L, from the stored (A, B, C)
        return residuals(krylov(A, B, C, ks, n_sym), C, per_run["h_hat"], per_run["mask"])[0]

    checkpoints = sorted({t for c in runs for t in c.checkpoints})
    ck_L = torch.full((len(runs), len(checkpoints)), math.nan, dtype=DTYPE, device=dev)
    ck_eps = torch.full_like(ck_L, math.nan)
    diverged = torch.zeros(len(runs), dtype=torch.bool, device=dev)
    stalled = torch.zeros_like(diverged)
    steps_run = torch.full((len(runs),), T, device=dev)
    imbalance = torch.zeros(len(runs), dtype=DTYPE, device=dev)

    L_window = loss()  # each run's loss at the start of the current stall window
    per_run["L_max"] = 10 * L_window  # a run diverges above 10x its initial loss
    idx = torch.arange(len(runs), device=dev)  # the runs still training
    w, (Aw, Bw, Cw), n_w, k_w, imb = per_run, (A.clone(), B.clone(), C.clone()), n_sym, ks, imbalance.clone()
    for t in progress(range(T + 1)):
        P = krylov(Aw, Bw, Cw, k_w, n_w)
        L, r2 = residuals(P, Cw, w["h_hat"], w["mask"])
        imb = torch.maximum(imb, torch.linalg.vector_norm(Bw - Cw, dim=-1) / torch.linalg.vector_norm(Bw, dim=-1))
        if t in checkpoints:
            A[idx], B[idx], C[idx] = Aw, Bw, Cw
            i = checkpoints.index(t)
            ck_L[:, i] = loss()
            ck_eps[:, i] = eps_q(impulse_response(A, B, C, q), h_hat_q)
        bad = ~torch.isfinite(L) | (L > w["L_max"])
        go = ~bad & (L >= FREEZE_LOSS) & (t < w["steps"])
        if t > 0 and t % STALL_WINDOW == 0:
            stuck = go & (L > (1 - STALL_DROP) * L_window[idx])
            stalled[idx[stuck]] = True
            go &= ~stuck
            L_window[idx] = L
        if not go.all():  # drop frozen runs from the batch
            A[idx], B[idx], C[idx], imbalance[idx] = Aw, Bw, Cw, imb
            diverged[idx[bad]] = True
            steps_run[idx[~go]] = t
            idx = idx[go]
            if t == T or len(idx) == 0:
                break
            w = {name: x[idx] for name, x in per_run.items()}
            Aw, Bw, Cw, imb, n_w = A[idx], B[idx], C[idx], imb[go], int(w["sym"].sum())
            k_w = [ks[i] for i in idx.tolist()]
            P, r2 = P[:, go], r2[go]
        descend(Aw, Bw, Cw, P, r2, w["lr"], k_w, n_w)
        if max_norm is not None:
            project_students(Aw, w["max_norm"], w["sym"])
    L, h = loss(), impulse_response(A, B, C, q)
    eps = eps_q(h, h_hat_q)  # horizon q for every run
    L, h, eps, h_hat_q, ck_L, ck_eps, A, B, C, diverged, stalled, steps_run, imbalance = (
        x.cpu().numpy() for x in (L, h, eps, h_hat_q, ck_L, ck_eps, A, B, C, diverged, stalled, steps_run,
                                  imbalance))
    out: dict[int, dict] = {}
    for pos, (r, c) in enumerate(zip(order, runs)):
        keep = [i for i, t in enumerate(checkpoints) if t in c.checkpoints]
        eps_r = eps[pos] if c.horizon_q == q else eps_q(torch.from_numpy(h[pos, :c.horizon_q]),
                                                        torch.from_numpy(h_hat_q[pos, :c.horizon_q])).item()
        out[r] = {
            "loss": float(L[pos]), "eps": float(eps_r), "diverged": bool(diverged[pos]),
            "stalled": bool(stalled[pos]),
            "steps_run": int(steps_run[pos]), "imbalance_max": float(imbalance[pos]),
            "ck_steps": np.array([checkpoints[i] for i in keep]),
            "ck_loss": ck_L[pos, keep], "ck_eps": ck_eps[pos, keep],
            "h": h[pos, :c.horizon_q], "B": B[pos], "C": C[pos],
            "asymmetry": float(np.linalg.norm(A[pos] - A[pos].T) / np.linalg.norm(A[pos])),
            "Q_norm": float(np.linalg.norm(conserved(A[pos], B[pos], C[pos]))),
            **({"A": A[pos]} if c.keep_A else {}),
        }
    return [out[r] for r in range(len(runs))]


def train_one(cfg: RunConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`train_students` written plainly for one run: autograd's gradient of the population
    loss (the upper-triangle update for a symmetric A), the same GD steps and freeze rule (no stall
    or divergence rule); the tests' reference and the baseline of ``bench/extrapolation.py``.
    Returns the final (A, B, C)."""
    A, B, C = (t.requires_grad_() for t in init_student(cfg))
    h_hat = teacher_impulse(cfg.lam, cfg.w, cfg.k)
    for _ in range(cfg.steps):
        L = ((impulse_response(A[None], B[None], C[None], cfg.k)[0] - h_hat) ** 2).sum()
        if L < FREEZE_LOSS:
            break
        gA, gB, gC = torch.autograd.grad(L, (A, B, C), allow_unused=True, materialize_grads=True)
        if symmetric(cfg.variant):
            gA = gA + gA.T - torch.diag(torch.diagonal(gA))
        with torch.no_grad():
            A -= cfg.lr * gA
            B -= cfg.lr * gB
            C -= cfg.lr * gC
    return A.detach(), B.detach(), C.detach()


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
