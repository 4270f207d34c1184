"""Speed of the learning-dynamics chapter's F6 sweep (kernel distance of the NTK) against a loop over
networks.

Both train the quick profile's F6 networks at one length T (both initialisations, every σ and seed)
for the same GD steps and compute each network's kernel before and after, in this process, on one
thread. The baseline is the straightforward implementation: one network at a time, torch autograd
for the gradient and ``torch.func.jacrev`` for the Jacobian of the kernel :math:`K=JJ^\\top`. The
batched program is :func:`rnnbook.learning_dynamics.networks.ntk_sweep` (all networks stacked,
hand-written backpropagation and the closed-form kernel, in torch on the CPU). The last line printed is the
speed-up ratio.

    .venv/bin/python bench/learning_dynamics.py [--T 3]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch.func import jacrev

from rnnbook.learning_dynamics import experiments, networks


def kernel(W: list[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """Baseline NTK of one network: :math:`JJ^\\top` from autodiff Jacobians of vec Ŷ_T."""
    J = jacrev(lambda *w: networks.forward(*(x[None] for x in w), X[None])[0].reshape(-1),
               argnums=(0, 1, 2))(*W)
    J = torch.cat([j.reshape(j.shape[0], -1) for j in J], 1)
    return J @ J.T


def distance_one(W: list[torch.Tensor], X: torch.Tensor, Y: torch.Tensor, rate: float, steps: int
                 ) -> float:
    """Baseline: one network, autograd GD on ½Σ‖ŷ − y‖² at ``rate``; returns D."""
    K0 = kernel(W, X)
    W = [w.clone().requires_grad_() for w in W]
    for _ in range(steps):
        L = 0.5 * ((networks.forward(*(w[None] for w in W), X[None])[0] - Y) ** 2).sum()
        grads = torch.autograd.grad(L, W)
        with torch.no_grad():
            for w, g in zip(W, grads):
                w -= rate * g
    K = kernel([w.detach() for w in W], X)
    return float(1 - (K0 * K).sum() / (K0.norm() * K.norm()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--T", type=int, default=3)
    T = ap.parse_args().T
    torch.set_num_threads(1)
    S = experiments.resolve("quick", 6, 0.1, 0.01, 20_000, 0.8)
    _, sigmas, seeds = S.f6
    rate, steps = networks.f6_schedule(T)
    t0 = time.perf_counter()
    batched = networks.ntk_sweep([T], sigmas, seeds)["D"][0]  # (init, σ, seed)
    t_batched = time.perf_counter() - t0
    X, Y, W = networks.f6_networks(T, sigmas, seeds)  # order (seed, init, σ)
    t0 = time.perf_counter()
    loop = np.array([distance_one([torch.from_numpy(w[c]) for w in W], torch.from_numpy(X[c]),
                                  torch.from_numpy(Y[c]), rate, steps) for c in range(len(X))])
    t_loop = time.perf_counter() - t0
    loop = loop.reshape(len(seeds), 2, len(sigmas)).transpose(1, 2, 0)
    print(f"{len(X)} networks (N = 4, T = {T}) x {steps} GD steps and 2 kernels each (float64, 1 thread)")
    print(f"per-network loop (autograd, jacrev): {t_loop:8.2f} s")
    print(f"batched (hand-written, closed form): {t_batched:8.2f} s")
    print(f"largest difference of D: {np.nanmax(np.abs(batched - loop)):.1e}")
    print(f"speed-up: {t_loop / t_batched:.1f}x")


if __name__ == "__main__":
    main()
