"""Speed of the learning-dynamics chapter's sensory-task GD step (F7, F8: C8 and C9) against the
trial-wise backpropagation through time it replaced.

Both run plain GD on C9's quick batch (late and early importance at its two rates: four networks,
N_h = 4, P = 256 trials of NeuroGym's inputs at T = 6) from the same weights, in this process, on one
thread. The baseline is :func:`rnnbook.learning_dynamics.networks.loss_grads` (torch, every trial and
time step, as until 7 December 2026); the chapter's step is
:func:`~rnnbook.learning_dynamics.networks.moment_grads` (NumPy, from the inputs' moments, no trial
axis). The last line printed is the speed-up ratio.

    .venv/bin/python bench/learning_dynamics_sensory.py [--steps 5000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from rnnbook.learning_dynamics import experiments, networks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=5000)
    steps = ap.parse_args().steps
    torch.set_num_threads(1)
    S = experiments.resolve("quick", 6, 0.1, 0.01, 20_000, 0.8)
    baseline, rates, _ = S.f8_variants["neurogym"]
    rng = np.random.default_rng(0)
    X = np.array([networks.sensory_inputs(256, S.T, rng, baseline) for _ in range(4)])
    Y = np.array([networks.sensory_targets(x, r) for x, r in zip(X, ["late", "late", "early", "early"])])
    W0 = [rng.normal(0, 0.05, sh) for sh in ((4, 4, 4), (4, 4, 4), (4, 4, 4))]
    eta = np.array([rates[0], rates[1], rates[0], rates[1]])[:, None, None]

    t0 = time.perf_counter()
    Xc, Yc = networks.columns(torch.from_numpy(X), torch.from_numpy(Y))
    W, eta_t = [torch.from_numpy(w) for w in W0], torch.from_numpy(eta)
    for _ in range(steps):
        g = networks.loss_grads(*W, Xc, Yc)[1:4]
        W = [torch.addcmul(w, eta_t, gi, value=-1) for w, gi in zip(W, g)]
    t_trials = time.perf_counter() - t0

    t0 = time.perf_counter()
    Sxx, Syx = networks.sensory_moments(X, Y)
    V = list(W0)
    for _ in range(steps):
        g = networks.moment_grads(*V, Sxx, Syx)[:3]
        V = [v - eta * gi for v, gi in zip(V, g)]
    t_moments = time.perf_counter() - t0

    late = [float(np.abs(w.numpy()[:2] - v[:2]).max() / np.abs(v[:2]).max()) for w, v in zip(W, V)]
    early = [float(np.abs(w.numpy()[2:] - v[2:]).max() / np.abs(v[2:]).max()) for w, v in zip(W, V)]
    print(f"4 networks (N_h = 4, P = 256, T = {S.T}) x {steps} GD steps (float64, 1 thread)")
    print(f"trial-wise BPTT (torch):   {t_trials:8.2f} s")
    print(f"from the moments (NumPy):  {t_moments:8.2f} s")
    print(f"largest relative difference of the weights: late importance {max(late):.1e}, early "
          f"{max(early):.1e} (at our rate GD oscillates on the early task, and round-off grows there)")
    print(f"speed-up: {t_trials / t_moments:.1f}x")


if __name__ == "__main__":
    main()
