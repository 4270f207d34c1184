"""The extrapolation chapter's trained students through the results cache (Cohen-Karlik et al.,
ICLR 2023): the linear students of every figure (§5.1, §5.2; C1, C2, C4-C6, C10-C12, E1, E3), the
GRU students (§5.3; C8, F3) and E2's diagonal students. It declares the pieces it computes
(:data:`PIECES`), so that a change to how the chapter judges or shows them (``experiments``,
``report``, ``plots``) keeps its finished runs; what they compute is ``train``, ``theory`` and
:mod:`rnnbook.gru`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from rnnbook.extrapolation.theory import teacher_impulse
from rnnbook.extrapolation.train import RunConfig, run_seed, train_diagonal, train_students

PIECES = ("linear", "gru", "diagonal")  # the results-cache pieces this module computes


def train_sweep(configs: Sequence[RunConfig], cache, progress, chunk_size: int | None,
                device: str | torch.device = "cpu") -> list[dict]:
    """Train (or load from the results cache) every run, one batched program per student size d on
    ``device`` (the chapter's); returns :func:`run_rows` records in the order of ``configs``."""
    results: dict[int, dict] = {}
    for d in sorted({c.d for c in configs}):
        idx = [i for i, c in enumerate(configs) if c.d == d]
        got = cache.cached_batch(
            "linear", [configs[i].__dict__ for i in idx],
            lambda cfgs: train_students([RunConfig(**c) for c in cfgs], progress, device=device),
            chunk_size=chunk_size)
        results.update(zip(idx, got))
    return run_rows(configs, [results[i] for i in range(len(configs))])


def run_rows(configs: Sequence[RunConfig], results: Sequence[dict]) -> list[dict]:
    """One flat record per run: its configuration and what it measured."""
    return [{**c.__dict__, "d_hat": c.d_hat, **r} for c, r in zip(configs, results)]


# ----------------------------------------------------------------------------- GRU (§5.3)
GRU_TEACHER = ((0.9, -0.8), (0.5, 0.5))  # our choice (spec §3): d_hat = 2
# C8's long-memory variant (issue 43, full profile): lam_hat = 1 as in every linear default teacher,
# so the response never decays (our choice)
GRU_LONG_TEACHER = ((1.0, -0.8), (0.5, 0.5))
GRU_LENGTHS = (20, 40)


def gru_sweep(cache, ks: Sequence[int], n_seeds: int, seed: int, hidden: int, steps: int,
              batch: int, device, progress, teacher=GRU_TEACHER) -> dict[str, np.ndarray]:
    """F3/C8: GRU students of ``teacher`` (lam, w) for every (k, seed), one batched program
    (:mod:`rnnbook.gru`), cached. Returns flat arrays: k, train_rel_loss, rel_mse_L and beyond_L for
    L in (20, 40), and the silent-beyond-k reference ref_L."""
    from rnnbook.gru import reference_rel_mse, train_gru_students

    teacher = (tuple(teacher[0]), tuple(teacher[1]))
    h_hat = teacher_impulse(*teacher, max(GRU_LENGTHS))
    run_k = [k for k in ks for _ in range(n_seeds)]
    seeds = [run_seed(seed, "gru", k, i) if teacher == GRU_TEACHER else run_seed(seed, "gru", teacher, k, i)
             for k in ks for i in range(n_seeds)]
    config = {"teacher": teacher, "ks": run_k, "seeds": seeds, "hidden": hidden, "steps": steps,
              "batch": batch}

    def compute() -> dict[str, np.ndarray]:
        res = train_gru_students(h_hat, run_k, seeds, hidden, steps, batch=batch, device=device,
                                 progress=progress)
        out = {"k": res.k, "seed_index": np.arange(len(run_k)) % n_seeds,
               "train_rel_loss": res.train_rel_loss}
        for L in GRU_LENGTHS:
            out[f"rel_mse_{L}"] = res.rel_mse[L]
            out[f"beyond_{L}"] = res.beyond_rel_mse[L]
            out[f"ref_{L}"] = np.array([reference_rel_mse(h_hat, k, L) for k in res.k])
        return out

    return cache.cached("gru", config, compute)


# ----------------------------------------------------------------------------- E2
def diagonal_sweep(cache, lam: Sequence[float], w: Sequence[float], ks: Sequence[int],
                   n_seeds: int, seed: int, d: int, steps: int, lr: float, init_scale: float,
                   horizon_q: int, progress) -> dict[str, np.ndarray]:
    """E2: real and complex diagonal students for every (k, seed), cached."""
    run_k = [k for k in ks for _ in range(n_seeds)]
    out: dict[str, np.ndarray] = {"k": np.array(run_k)}
    for complex_ in (False, True):
        seeds = [run_seed(seed, "E2", complex_, k, i) for k in ks for i in range(n_seeds)]
        config = {"lam": lam, "w": w, "ks": run_k, "seeds": seeds, "d": d, "complex": complex_,
                  "steps": steps, "lr": lr, "init_scale": init_scale, "q": horizon_q}
        res = cache.cached("diagonal", config, lambda: train_diagonal(
            teacher_impulse(lam, w, horizon_q), run_k, seeds, d, complex_, steps, lr,
            init_scale, horizon_q, progress))
        name = "complex" if complex_ else "real"
        out.update({f"{name}_{key}": val for key, val in res.items()})
    return out
