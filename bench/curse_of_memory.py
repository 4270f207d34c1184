"""Speed of the curse-of-memory chapter's training step: the quadratic form against the recurrence.

Both compute the loss and its gradients for the chapter's quick-profile teacher-student runs of one
architecture (every nu0 and learning rate stacked on the run axis, the quick batch, T = 300), in this
process, on one thread, float64. The baseline is the step-by-step recurrence
(:func:`rnnbook.curse_of_memory.models.predict_recurrent`, a Python loop over time, autograd through it);
the chapter's step is the quadratic form of the kernel error in the batch's lag moments
(:func:`rnnbook.curse_of_memory.models.batch_loss`, Eq. cm-quad; the runs share one batch, as runs of
one seed do in the chapter).
Both must give the same loss and gradients; the last line printed is the speed-up ratio.

    .venv/bin/python bench/curse_of_memory.py [--reps 3]
"""
from __future__ import annotations

import argparse
import time

import torch

from rnnbook.curse_of_memory import experiments, models


def recurrence_step(spec, p, x, y_star):
    """Baseline: loss and gradients through the step-by-step recurrence."""
    q = {k: v.clone().requires_grad_() for k, v in p.items()}
    loss = 0.5 * ((models.predict_recurrent(spec, q, x) - y_star) ** 2).mean((1, 2))
    return loss.detach(), torch.autograd.grad(loss.sum(), list(q.values()))


def quadratic_step(spec, p, x, K_star, D_star):
    """The chapter's step: kernels, the batch's lag moments, the quadratic form (Eq. cm-quad)."""
    q = {k: v.clone().requires_grad_() for k, v in p.items()}
    dK = models.kernel_error(models.kernel(spec, q, x.shape[-1]), q["D"], K_star, D_star)
    loss = models.batch_loss(dK, models.lag_moments(x[:1]), torch.zeros(len(dK), dtype=torch.long))
    return loss.detach(), torch.autograd.grad(loss.sum(), list(q.values()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    reps = ap.parse_args().reps
    torch.set_num_threads(1)
    S = experiments.resolve("quick", [0.0], None, 300, 64, None, None, None)
    total = {"quadratic": 0.0, "recurrence": 0.0}
    worst = 0.0
    n_runs = 0
    for name, kind in (("RNN", "dense"), ("LRU", "diag")):
        spec = models.ModelSpec(name, kind, S.hidden_size)
        cfgs = [(nu, lr, s) for nu in S.nu0_values for lr in S.lrs[name] for s in S.seeds]
        n_runs += len(cfgs)
        p = models.stack_params([models.init_params(spec, torch.Generator().manual_seed(10_000 + s), nu)
                                 for nu, _, s in cfgs])
        tp = models.stack_params([models.teacher(nu) for nu, _, _ in cfgs])
        K_star = models.kernel(models.TEACHER_SPEC, tp, S.T)
        x = torch.randn(1, S.batch, S.T, generator=torch.Generator().manual_seed(0),
                        dtype=torch.float64).expand(len(cfgs), -1, -1)  # one batch, as one seed's
        y_star = models.predict_recurrent(models.TEACHER_SPEC, tp, x)
        steps = {"quadratic": lambda: quadratic_step(spec, p, x, K_star, tp["D"]),
                 "recurrence": lambda: recurrence_step(spec, p, x, y_star)}
        out = {}
        for label, fn in steps.items():
            fn()  # warm-up
            t0 = time.perf_counter()
            for _ in range(reps):
                out[label] = fn()
            dt = (time.perf_counter() - t0) / reps
            total[label] += dt
            print(f"{name}: {len(cfgs)} runs, {label:10s} {dt * 1e3:9.1f} ms / step")
        (la, ga), (lb, gb) = out["quadratic"], out["recurrence"]
        worst = max(worst, ((la - lb).abs() / lb.abs()).max().item(),
                    *[((a - b).norm() / b.norm()).item() for a, b in zip(ga, gb)])
    print(f"{n_runs} runs (all nu0 x lrs x seeds), batch {S.batch}, T = {S.T}, float64, 1 thread")
    print(f"largest relative difference in loss or gradients: {worst:.1e}")
    assert worst < 1e-10, "quadratic form and recurrence disagree"
    print(f"recurrence: {total['recurrence']:.3f} s / step, quadratic form: {total['quadratic']:.3f} s / step")
    print(f"speed-up: {total['recurrence'] / total['quadratic']:.1f}x")


if __name__ == "__main__":
    main()
