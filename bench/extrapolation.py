"""Speed of the extrapolation chapter's batched linear-RNN sweep against a per-run loop.

Both train the chapter's quick-profile runs (F1, F2, F5, E3: every seed, k, variant and init
scale) for the same number of GD steps with the same freezing rule, in this process, on one
thread. The baseline is the straightforward implementation: one model at a time, torch autograd
for the gradient. The batched program is :func:`rnnbook.extrapolation.train.train_students` (all runs
stacked, closed-form gradient). The last line printed is the speed-up ratio.

A second part times one GD step of the full profile's largest batch (d = 100, 320 symmetric
students, k up to 11) two ways, both from the library's closed form: as the NumPy trainer it
replaced took it (the whole batch through each power, A and its transpose multiplied apart, the
A-gradient formed, :func:`rnnbook.extrapolation.theory.sym_grad`, the update), and as the trainer
takes it (:func:`rnnbook.extrapolation.train.gd_steps`: a cache-sized chunk of runs through the
powers, the gradient and the update, a symmetric A multiplied once with both rows). It prints both
step times, their floating-point work per second against this machine's float64 matmul peak (one
thread, measured here) and their ratio.

    .venv/bin/python bench/extrapolation.py [--steps 1000] [--step-only]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from rnnbook.extrapolation import experiments, theory, train


def train_one(cfg: train.RunConfig) -> float:
    """Baseline: one run, autograd, the same GD and freezing rule; returns the final loss."""
    A, B, C = (t.requires_grad_() for t in train.init_student(cfg))
    h_hat = theory.teacher_impulse(cfg.lam, cfg.w, cfg.k)
    for _ in range(cfg.steps):
        L = ((theory.impulse_response(A[None], B[None], C[None], cfg.k)[0] - h_hat) ** 2).sum()
        if L < train.FREEZE_LOSS:
            break
        gA, gB, gC = torch.autograd.grad(L, (A, B, C), allow_unused=True, materialize_grads=True)
        if cfg.variant != "nonsym":
            gA = gA + gA.T - torch.diag(torch.diagonal(gA))
        with torch.no_grad():
            A -= cfg.lr * gA
            B -= cfg.lr * gB
            C -= cfg.lr * gC
    with torch.no_grad():
        return ((theory.impulse_response(A[None], B[None], C[None], cfg.k)[0] - h_hat) ** 2).sum().item()


def step_flops(R: int, d: int, K: int) -> float:
    """Floating-point work of one closed-form step: the K powers (two mat-vecs each), the
    A-gradient's product and update, and the vector terms."""
    return 4 * R * K * d * d + 2 * R * d * d * K + 2 * R * d * K * K + 6 * R * d * K


def matmul_peak(n: int = 1024, reps: int = 5) -> float:
    """float64 GFLOP/s of an n x n matmul on this thread (the machine's practical peak)."""
    a, b = (torch.randn(n, n, dtype=torch.float64) for _ in range(2))
    a @ b
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n ** 3 * reps / (time.perf_counter() - t0) / 1e9


def numpy_trainer_step(A, B, C, h_hat, mask, lr):
    """One step as the NumPy trainer took it: whole batch, A^T apart, G_A formed, then sym_grad."""
    L, G_A, G_B, G_C = theory.loss_and_grads(A, B, C, h_hat, mask, n_sym=0)
    return L, A - lr[:, None, None] * theory.sym_grad(G_A), B - lr[:, None] * G_B, C - lr[:, None] * G_C


def time_step(R: int = 320, d: int = 100, K: int = 11, reps: int = 10) -> None:
    """The full profile's largest batch, one GD step both ways; prints times, GFLOP/s against the
    peak and the ratio."""
    g = torch.Generator().manual_seed(0)
    A = 0.05 * torch.randn(R, d, d, generator=g, dtype=torch.float64)
    A = torch.triu(A) + torch.triu(A, 1).mT  # symmetric, as F1's students
    B, C = (0.1 * torch.randn(R, d, generator=g, dtype=torch.float64) for _ in range(2))
    h_hat = torch.randn(R, K, generator=g, dtype=torch.float64)
    mask = torch.arange(K) < torch.randint(1, K + 1, (R,), generator=g)[:, None]
    lr = torch.full((R,), 1e-2, dtype=torch.float64)
    chunk = train.chunk_runs(d, torch.device("cpu"))
    ways = {"the NumPy trainer's way (whole batch per power)": lambda: numpy_trainer_step(A, B, C, h_hat, mask, lr),
            f"the trainer's gd_steps ({chunk} runs per chunk)": lambda: train.gd_steps(A, B, C, h_hat, mask, lr, R, chunk)}
    times, outs = {}, {}
    for name, step in ways.items():
        outs[name] = step()
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        times[name] = (time.perf_counter() - t0) / reps
    peak, work = matmul_peak(), step_flops(R, d, K) / 1e9
    (n0, t0_), (n1, t1_) = times.items()
    diff = max(float((a - b).abs().max() / b.abs().max()) for a, b in zip(outs[n0], outs[n1]))
    print(f"one GD step, d = {d}, {R} runs, k <= {K} (float64, 1 thread): {work:.3f} GFLOP; "
          f"float64 matmul peak here {peak:.1f} GFLOP/s")
    for name, t in times.items():
        print(f"{name}: {1e3 * t:7.1f} ms, {work / t:5.2f} GFLOP/s ({100 * work / t / peak:.0f}% of peak)")
    print(f"largest relative difference of L and the stepped parameters: {diff:.1e}")
    print(f"step speed-up: {t0_ / t1_:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--step-only", action="store_true")
    args = ap.parse_args()
    steps = args.steps
    torch.set_num_threads(1)
    time_step()
    if args.step_only:
        return
    S = experiments.resolve("quick", None, None, None, None, None, 1e-2, 1e-2, steps, None, None, None, None)
    configs = experiments.build_sweep(S.teachers, S.ds, S.n_seeds, 0, S.init_scale, S.lr, lambda dh, v: steps,
                             S.horizon_q, "quick", S.scales)
    t0 = time.perf_counter()
    batched = np.array([r["loss"] for r in train.train_students(configs)])
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop = np.array([train_one(c) for c in configs])
    t_loop = time.perf_counter() - t0
    agree = np.max(np.abs(batched - loop) / np.maximum(loop, 1e-12))
    print(f"{len(configs)} runs x {steps} GD steps (d = {S.ds[0]}, float64, 1 thread)")
    print(f"per-run loop (autograd): {t_loop:8.2f} s")
    print(f"batched (closed form):   {t_batched:8.2f} s")
    print(f"largest relative difference of final losses: {agree:.1e}")
    print(f"speed-up: {t_loop / t_batched:.1f}x")


if __name__ == "__main__":
    main()
