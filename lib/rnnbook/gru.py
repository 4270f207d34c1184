"""GRU students of a linear teacher, many runs as one batched program ("extrapolation" chapter).

Serves the chapter "extrapolation" (Cohen-Karlik et al., ICLR 2023, §5.3): figure F3 and claim C8.
A GRU(1 -> H) + Linear(H -> 1) student reads the last hidden state and is trained on sequences of
length k to match the linear teacher y = sum_{j<n} h_hat[j] x_{n-1-j}; it is then tested on longer
sequences (length L), in full and "beyond the window" (the last k inputs zeroed).

All runs (one per (k, seed) pair) share one tensor program: parameters are stacked on a leading run
dimension, sequences of different k are right-aligned to K = max k, and run r's hidden state stays
exactly 0 before its first input (t < K - k_r). Each run draws its initialisation and its training
batches from its own generator, so its result does not depend on which runs share the batch.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch.nn import init

TAIL = 50  # training steps averaged into the final training relative loss


def reference_rel_mse(h_hat: torch.Tensor, k: int, L: int) -> float:
    """Rel-MSE at length L of a student that copies the first k taps and is silent beyond:
    1 - sum_{j<k} h_hat[j]^2 / sum_{j<L} h_hat[j]^2 (0 when k >= L)."""
    if len(h_hat) < L:
        raise ValueError(f"h_hat has {len(h_hat)} taps, fewer than the length L = {L}")
    energy = h_hat[:L].double() ** 2
    return float(1 - energy[:min(k, L)].sum() / energy.sum())


class GRUParams(NamedTuple):
    """Stacked parameters of R students (PyTorch GRU gate order r, z, n)."""
    w_ih: torch.Tensor  # (R, 3H, 1)
    w_hh: torch.Tensor  # (R, 3H, H)
    b_ih: torch.Tensor  # (R, 3H)
    b_hh: torch.Tensor  # (R, 3H)
    w_out: torch.Tensor  # (R, 1, H)
    b_out: torch.Tensor  # (R, 1)


def init_params(hidden: int, generators: Sequence[torch.Generator]) -> GRUParams:
    """Stacked float32 parameters, run r initialised from ``generators[r]`` exactly as
    ``nn.GRU(1, hidden)`` then ``nn.Linear(hidden, 1)`` would be (same draws, same order)."""
    bound = 1 / math.sqrt(hidden)
    shapes = [(3 * hidden, 1), (3 * hidden, hidden), (3 * hidden,), (3 * hidden,)]
    runs = []
    for g in generators:
        gru = [init.uniform_(torch.empty(s), -bound, bound, generator=g) for s in shapes]
        w_out = init.kaiming_uniform_(torch.empty(1, hidden), a=math.sqrt(5), generator=g)
        b_out = init.uniform_(torch.empty(1), -bound, bound, generator=g)
        runs.append(gru + [w_out, b_out])
    return GRUParams(*(torch.stack(t) for t in zip(*runs)))


def _join(h: torch.Tensor, m: int) -> torch.Tensor:
    """States of the first m runs: h (m_prev, B, H) with newly started runs appended at h = 0."""
    return h if m == len(h) else torch.cat([h, h.new_zeros(m - len(h), *h.shape[1:])])


def gru_forward(p: GRUParams, x: torch.Tensor, start: Sequence[int]) -> torch.Tensor:
    """Student outputs (R, B): PyTorch's GRU equations on inputs x (R, B, T), read out (Linear) from
    the last hidden state. Run r's state is h = 0 for t < start[r] and updated only from start[r] on.

    Runs are sorted by start, so the runs active at t are a prefix (of length m) that only grows;
    each step updates only those m runs, and a run joins with h = 0 exactly.
    """
    R, B, T = x.shape
    H = p.w_hh.shape[-1]
    start = [int(s) for s in start]
    idx = torch.tensor(sorted(range(R), key=start.__getitem__), device=x.device)
    w_ih, w_hh, b_ih, b_hh, w_out, b_out = (t[idx] for t in p)
    w_irz, w_in = w_ih.transpose(1, 2).split([2 * H, H], -1)  # (R, 1, 2H), (R, 1, H)
    w_hrz, w_hn = w_hh.transpose(1, 2).split([2 * H, H], -1)  # (R, H, 2H), (R, H, H)
    b_rz = (b_ih[:, :2 * H] + b_hh[:, :2 * H])[:, None]  # b_hn stays inside r * (W_hn h + b_hn)
    b_in, b_hn = b_ih[:, None, 2 * H:], b_hh[:, None, 2 * H:]
    # n = tanh(a) = 2 sigmoid(2a) - 1 (sigmoid is much faster than tanh on the CPU): double a's terms
    w_in, w_hn, b_in, b_hn = 2 * w_in, 2 * w_hn, 2 * b_in, 2 * b_hn
    x = x[idx, :, :, None]
    h = x.new_zeros(0, B, H)
    for t in range(min(start), T):
        m = sum(s <= t for s in start)
        h = _join(h, m)
        x_t = x[:m, :, t]
        rz = torch.addcmul(torch.baddbmm(b_rz[:m], h, w_hrz[:m]), x_t, w_irz[:m])
        r, z = torch.sigmoid(rz).chunk(2, -1)
        a = torch.addcmul(torch.addcmul(b_in[:m], x_t, w_in[:m]), r, torch.baddbmm(b_hn[:m], h, w_hn[:m]))
        h = torch.lerp(2 * torch.sigmoid(a) - 1, h, z)  # (1 - z) n + z h
    h = _join(h, R)  # runs that never start stay at h = 0
    y = torch.baddbmm(b_out[:, None, :], h, w_out.transpose(1, 2))[..., 0]
    return y[torch.argsort(idx)]


@dataclass
class GRUResult:
    """Per-run results (numpy arrays in the order of the given runs)."""
    k: np.ndarray
    seed: np.ndarray
    train_rel_loss: np.ndarray  # mean relative loss over the last TAIL training steps
    rel_mse: dict[int, np.ndarray]  # L -> (R,)
    beyond_rel_mse: dict[int, np.ndarray]  # L -> (R,), last k inputs zeroed


def _validate(h_hat: torch.Tensor, ks: Sequence[int], seeds: Sequence[int], hidden: int,
              steps: int, batch: int, test_lengths: Sequence[int], n_test: int) -> None:
    """Raise ValueError on impossible arguments."""
    if len(ks) == 0 or len(ks) != len(seeds):
        raise ValueError("ks and seeds must be non-empty and of equal length, "
                         f"got {len(ks)} and {len(seeds)}")
    if min(ks) < 1:
        raise ValueError(f"every k must be >= 1, got {list(ks)}")
    if min(seeds) < 0:
        raise ValueError(f"every seed must be >= 0, got {list(seeds)}")
    for name, value in (("hidden", hidden), ("steps", steps), ("batch", batch), ("n_test", n_test)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if len(test_lengths) == 0 or min(test_lengths) < max(ks):
        raise ValueError(f"test lengths {list(test_lengths)} must be non-empty and >= max k = {max(ks)}")
    if h_hat.ndim != 1 or len(h_hat) < max(test_lengths):
        raise ValueError(f"h_hat must be 1-D with at least max(test_lengths) = {max(test_lengths)} taps, "
                         f"got shape {tuple(h_hat.shape)}")


def _train_batch(generators: Sequence[torch.Generator], ks: Sequence[int], batch: int) -> torch.Tensor:
    """Right-aligned inputs (R, batch, K): run r's k_r N(0,1) inputs, from its own generator, fill
    the last k_r steps; earlier steps are 0 (never read by the student, no teacher weight)."""
    K = max(ks)
    x = torch.zeros(len(ks), batch, K)
    for r, (g, k) in enumerate(zip(generators, ks)):
        x[r, :, K - k:] = torch.randn(batch, k, generator=g)
    return x


def _to_device(x: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A batch drawn on the CPU (each run's own generator, the same numbers on any device) moved to
    ``device``; on a GPU through pinned memory without waiting, so that the host draws the next
    batch while the GPU trains on this one."""
    if device.type != "cuda":
        return x.to(device)
    return x.pin_memory().to(device, non_blocking=True)


def _test_inputs(seeds: Sequence[int], L: int, n_test: int) -> torch.Tensor:
    """Test inputs (R, n_test, L), run r's from a generator derived from (seed_r, L)."""
    xs = []
    for seed in seeds:
        derived = np.random.SeedSequence(seed, spawn_key=(L,)).generate_state(1, np.uint64)[0]
        xs.append(torch.randn(n_test, L, generator=torch.Generator().manual_seed(int(derived))))
    return torch.stack(xs)


def _rel_mse(p: GRUParams, x: torch.Tensor, h_hat: torch.Tensor) -> np.ndarray:
    """Per-run mean((y_student - y)^2) / mean(y^2), y = sum_j h_hat[j] x_{L-1-j} (float64)."""
    L = x.shape[-1]
    y = x.double() @ h_hat[:L].flip(0)
    y_student = gru_forward(p, x.to(p.w_hh.device), [0] * x.shape[0]).cpu().double()
    return (((y_student - y) ** 2).mean(1) / (y ** 2).mean(1)).numpy()


@torch.no_grad()
def _test(p: GRUParams, h_hat: torch.Tensor, ks: Sequence[int], seeds: Sequence[int], L: int,
          n_test: int) -> tuple[np.ndarray, np.ndarray]:
    """Rel-MSE at length L, in full and beyond the window (run r's last k_r inputs set to 0)."""
    x = _test_inputs(seeds, L, n_test)
    window = torch.arange(L)[None, :] >= L - torch.tensor(ks)[:, None]  # (R, L): last k_r steps
    x_beyond = x.masked_fill(window[:, None, :], 0.0)
    return _rel_mse(p, x, h_hat), _rel_mse(p, x_beyond, h_hat)


def train_gru_students(h_hat: torch.Tensor, ks: Sequence[int], seeds: Sequence[int], hidden: int,
                       steps: int, lr: float = 3e-3, batch: int = 256,
                       test_lengths: Sequence[int] = (20, 40), n_test: int = 4000,
                       device: torch.device | str = "cpu",
                       progress: Callable[[Iterable], Iterable] = iter) -> GRUResult:
    """Train one GRU student per run (k_r, seed_r) with Adam on the relative loss
    MSE / sum_{j<k_r} h_hat[j]^2 (fresh N(0,1) batches of length k_r), all runs batched;
    then test each at every length L in ``test_lengths`` on ``n_test`` fresh sequences."""
    _validate(h_hat, ks, seeds, hidden, steps, batch, test_lengths, n_test)
    ks, seeds, device = [int(k) for k in ks], [int(s) for s in seeds], torch.device(device)
    h_hat = h_hat.detach().cpu().double()
    K = max(ks)
    generators = [torch.Generator().manual_seed(s) for s in seeds]
    p = GRUParams(*(t.to(device).requires_grad_() for t in init_params(hidden, generators)))
    opt = torch.optim.Adam(p, lr=lr, fused=True)  # elementwise: independent Adams per run
    start = [K - k for k in ks]  # right alignment
    h_rev = h_hat[:K].flip(0).float().to(device)  # teacher taps at right-aligned positions
    window_energy = torch.cumsum(h_hat ** 2, 0)[torch.tensor(ks) - 1]  # sum_{j<k_r} h_hat[j]^2
    window_energy = window_energy.float().to(device)
    recent: deque[torch.Tensor] = deque(maxlen=TAIL)
    for _ in progress(range(steps)):
        x = _to_device(_train_batch(generators, ks, batch), device)
        rel = ((gru_forward(p, x, start) - x @ h_rev) ** 2).mean(1) / window_energy
        opt.zero_grad(set_to_none=True)
        rel.sum().backward()  # each run's gradient is its own
        opt.step()
        recent.append(rel.detach())
    p = GRUParams(*(t.detach() for t in p))
    tests = {L: _test(p, h_hat, ks, seeds, L, n_test) for L in test_lengths}
    return GRUResult(k=np.array(ks), seed=np.array(seeds),
                     train_rel_loss=torch.stack(list(recent)).mean(0).double().cpu().numpy(),
                     rel_mse={L: v[0] for L, v in tests.items()},
                     beyond_rel_mse={L: v[1] for L, v in tests.items()})
