"""Speed of the extrapolation chapter's batched linear-RNN sweep against a per-run loop.

Both train the chapter's quick-profile runs (F1, F2, F5, E3: every seed, k, variant and init
scale) for the same number of GD steps with the same freezing rule, in this process, on one
thread. The baseline is the straightforward implementation: one model at a time, torch autograd
for the gradient. The batched program is :func:`rnnbook.extrapolation.train.train_students` (all runs
stacked, closed-form gradient). The last line printed is the speed-up ratio.

    .venv/bin/python bench/extrapolation.py [--steps 1000]
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    steps = ap.parse_args().steps
    torch.set_num_threads(1)
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
