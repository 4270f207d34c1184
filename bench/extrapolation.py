"""Speed of the extrapolation chapter's batched linear-RNN trainer, on one thread, in this process.

1. One GD step of the full profile's F1 and F2 runs at d = 100 (320 runs, k up to 11), float64:
   the torch step the trainer takes (:func:`rnnbook.extrapolation.theory.krylov`, ``residuals``,
   ``descend``: runs blocked so that a block's matrices stay in cache, a symmetric A times
   [B; C] once) against the NumPy step it replaced (:func:`numpy_step_baseline`, kept here only as
   this baseline). Both start from the same students (and are checked to agree after one
   step); the shortest of ``--reps`` interleaved timings counts; each one's floating-point work (the
   mat-vecs of the powers and the product :math:`G = U^\\top W`) per second is set against this
   machine's peak, measured as a large float64 matmul on one thread.
2. The chapter's quick-profile runs (F1, F2, F5, E3: every seed, k, variant and init scale) for
   the same number of GD steps with the same freezing rule: the batched trainer
   (:func:`rnnbook.extrapolation.train.train_students`) against a per-run loop with autograd's
   gradient (:func:`rnnbook.extrapolation.train.train_one`).

The last line printed is the speed-up ratio of 2.

    .venv/bin/python bench/extrapolation.py [--steps 1000] [--reps 5]
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # NumPy's BLAS: one thread
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from rnnbook.extrapolation import experiments, theory, train  # noqa: E402


def numpy_step_baseline(A, B, C, h_hat, mask, lr, sym):
    """The NumPy trainer's GD step before the torch port (its ``loss_and_grads``, then ``sym_grad``
    where A is symmetric): the powers as mat-vecs of [A; A^T] with [B; C], every run's matrices
    reloaded for each power. Returns the new (A, B, C)."""
    R, K = h_hat.shape
    M = np.concatenate([A, A.swapaxes(1, 2)])
    x = np.concatenate([B, C])[..., None]
    P = np.empty((2 * R, A.shape[1], K))
    P[..., 0] = x[..., 0]
    for m in range(1, K):
        x = M @ x
        P[..., m] = x[..., 0]
    v, u = P[:R], P[R:]
    r2 = 2 * ((C[..., None] * v).sum(1) - h_hat) * mask
    i = np.arange(K)
    Hk = np.concatenate([r2, np.zeros_like(r2)], -1)[:, i[:, None] + i[None, :] + 1]
    G_A = u @ (v @ Hk).swapaxes(1, 2)
    G_CB = (P @ np.concatenate([r2, r2])[..., None])[..., 0]
    S = G_A + G_A.swapaxes(1, 2)
    d = np.arange(A.shape[1])
    S[:, d, d] *= 0.5
    G_A = np.where(sym[:, None, None], S, G_A)
    return A - lr[:, None, None] * G_A, B - lr[:, None] * G_CB[R:], C - lr[:, None] * G_CB[:R]


def torch_step(A, B, C, h_hat, mask, lr, k, n_sym):
    """The trainer's GD step (in place; the first ``n_sym`` runs symmetric, each kind sorted by k)."""
    P = theory.krylov(A, B, C, k, n_sym)
    r2 = theory.residuals(P, C, h_hat, mask)[1]
    theory.descend(A, B, C, P, r2, lr, k, n_sym)


def seconds(step) -> float:
    """Wall time of ``step()``."""
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


def peak_flops(n: int = 2000, reps: int = 3) -> float:
    """This machine's float64 peak on one thread, as a large matmul measures it (FLOP/s)."""
    X = torch.randn(n, n, dtype=torch.float64)
    return 2 * n ** 3 / min(seconds(lambda: X @ X) for _ in range(reps))


def work_flops(runs: int, d: int, K: int) -> int:
    """Floating-point work of a step on ``runs`` runs that compute K powers: the mat-vecs of
    v_m and u_m (m < K) and the product G = U^T W (2 flops a multiply-add; the O(d^2) update and
    the O(K d) terms are left out)."""
    return runs * d * d * (4 * (K - 1) + 2 * K)


def step_bench(reps: int) -> None:
    """Part 1: one GD step of the full profile's F1 and F2 runs at d = 100, both ways."""
    F = experiments.resolve("full", [100], None, None, None, None, 1e-2, 1e-2, None, None, None, None, None)
    configs = [c for c in experiments.build_sweep(F.teachers, F.ds, F.n_seeds, 0, F.init_scale, F.lr,
                                                  lambda dh, v: 1, F.horizon_q, "full", F.scales)
               if c.experiment in ("F1", "F2")]
    configs.sort(key=lambda c: (c.variant == "nonsym", c.k))  # as the trainer orders them
    R, d, K = len(configs), configs[0].d, max(c.k for c in configs)
    A, B, C = (torch.stack(t) for t in zip(*(train.init_student(c) for c in configs)))
    h_hat = torch.stack([theory.teacher_impulse(c.lam, c.w, K) for c in configs])
    mask = torch.arange(K) < torch.tensor([c.k for c in configs])[:, None]
    lr = torch.tensor([c.lr for c in configs], dtype=torch.float64)
    sym = torch.tensor([c.variant != "nonsym" for c in configs])
    old = [x.numpy().copy() for x in (A, B, C, h_hat, mask, lr, sym)]
    new = (A.clone(), B.clone(), C.clone(), h_hat, mask, lr, [c.k for c in configs], int(sym.sum()))
    A_old = numpy_step_baseline(*old)[0]
    torch_step(*new)
    agree = np.abs(new[0].numpy() - A_old).max() / np.abs(A_old).max()
    t_old = t_new = np.inf
    for _ in range(reps):  # interleaved, so that a busy machine slows both alike (min of reps)
        t_old = min(t_old, seconds(lambda: numpy_step_baseline(*old)))
        t_new = min(t_new, seconds(lambda: torch_step(*new)))
    blocks = [(r.stop - r.start, Kr) for r, _, Kr in theory.run_blocks(A, new[6], new[7])]
    work = {"NumPy step (before the port)": (work_flops(R, d, K), t_old),  # every run to the batch's K
            "torch step (the trainer's)": (sum(work_flops(n, d, Kr) for n, Kr in blocks), t_new)}
    peak = peak_flops()
    print(f"one GD step, {R} runs at d = {d}, k <= {K} (F1, F2 of the full profile), float64, 1 thread;")
    print(f"peak {peak / 1e9:.1f} GFLOP/s (float64 matmul of 2000 x 2000 matrices, this machine, this run)")
    for name, (flops, t) in work.items():
        print(f"  {name:29s} {1e3 * t:6.1f} ms, {flops / 1e9:.3f} GFLOP: {flops / t / 1e9:5.2f} GFLOP/s "
              f"= {100 * flops / t / peak:4.1f}% of peak")
    print(f"  largest relative difference of A after one step, both ways: {agree:.1e}")
    print(f"  step speed-up: {t_old / t_new:.1f}x")


def sweep_bench(steps: int) -> None:
    """Part 2: the quick profile's runs, batched trainer against the per-run autograd loop."""
    S = experiments.resolve("quick", None, None, None, None, None, 1e-2, 1e-2, steps, None, None, None, None)
    configs = experiments.build_sweep(S.teachers, S.ds, S.n_seeds, 0, S.init_scale, S.lr, lambda dh, v: steps,
                                      S.horizon_q, "quick", S.scales)
    t0 = time.perf_counter()
    batched = np.array([r["loss"] for r in train.train_students(configs)])
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop = []
    for c in configs:
        A, B, C = train.train_one(c)
        h = theory.impulse_response(A[None], B[None], C[None], c.k)[0]
        loop.append(float(((h - theory.teacher_impulse(c.lam, c.w, c.k)) ** 2).sum()))
    t_loop = time.perf_counter() - t0
    agree = np.max(np.abs(batched - loop) / np.maximum(loop, 1e-12))
    print(f"{len(configs)} runs x {steps} GD steps (d = {S.ds[0]}, float64, 1 thread)")
    print(f"per-run loop (autograd): {t_loop:8.2f} s")
    print(f"batched (closed form):   {t_batched:8.2f} s")
    print(f"largest relative difference of final losses: {agree:.1e}")
    print(f"speed-up: {t_loop / t_batched:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    step_bench(args.reps)
    sweep_bench(args.steps)


if __name__ == "__main__":
    main()
