"""Tests of rnnbook.gru: batched GRU students of a linear teacher ("extrapolation" chapter, F3/C8)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from rnnbook.extrapolation.theory import teacher_impulse
from rnnbook.gru import (GRUParams, gru_forward, init_params, reference_rel_mse,
                         train_gru_students)

H_HAT = teacher_impulse((0.9, -0.8), (0.5, 0.5), 40)


@pytest.fixture(autouse=True)
def one_thread():
    """Run on one thread, as the book does (small tensors; avoids OpenMP spinning on a busy CPU)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _modules(p: GRUParams, r: int) -> tuple[torch.nn.GRU, torch.nn.Linear]:
    """nn.GRU + nn.Linear holding run r's weights."""
    H = p.w_hh.shape[-1]
    gru, lin = torch.nn.GRU(1, H, batch_first=True), torch.nn.Linear(H, 1)
    with torch.no_grad():
        for dst, src in zip([gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0,
                             lin.weight, lin.bias], p):
            dst.copy_(src[r])
    return gru, lin


def test_forward_and_gradients_match_nn_gru_with_right_alignment():
    start = [3, 0, 5, 3]  # unsorted on purpose; run r reads x[r, :, start[r]:]
    gens = [torch.Generator().manual_seed(s) for s in range(len(start))]
    p = GRUParams(*(t.requires_grad_() for t in init_params(8, gens)))
    x = torch.randn(len(start), 32, 9, generator=torch.Generator().manual_seed(99))
    y = gru_forward(p, x, start)
    (y ** 2).sum().backward()
    for r, s in enumerate(start):
        gru, lin = _modules(p, r)
        out, _ = gru(x[r, :, s:, None])
        y_ref = lin(out[:, -1])[:, 0]
        torch.testing.assert_close(y[r], y_ref, atol=1e-5, rtol=1e-5)
        (y_ref ** 2).sum().backward()
        grads = [gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0, lin.weight, lin.bias]
        for mine, ref in zip(p, grads):
            torch.testing.assert_close(mine.grad[r], ref.grad, atol=1e-5, rtol=1e-4)


def test_init_equals_nn_gru_and_linear():
    torch.manual_seed(3)
    gru, lin = torch.nn.GRU(1, 8), torch.nn.Linear(8, 1)
    p = init_params(8, [torch.Generator().manual_seed(3)])
    ref = [gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0, lin.weight, lin.bias]
    for mine, theirs in zip(p, ref):
        assert torch.equal(mine[0], theirs.detach())


def test_run_alone_equals_run_batched():
    kw = dict(hidden=8, steps=60, batch=64, test_lengths=(12,), n_test=300)
    batched = train_gru_students(H_HAT, [3, 6, 2], [0, 1, 2], **kw)
    alone = train_gru_students(H_HAT, [6], [1], **kw)
    np.testing.assert_allclose(batched.train_rel_loss[1], alone.train_rel_loss[0], rtol=1e-5)
    np.testing.assert_allclose(batched.rel_mse[12][1], alone.rel_mse[12][0], rtol=1e-5)
    np.testing.assert_allclose(batched.beyond_rel_mse[12][1], alone.beyond_rel_mse[12][0], rtol=1e-5)
    assert list(batched.k) == [3, 6, 2] and list(batched.seed) == [0, 1, 2]


def test_training_reduces_relative_loss():
    kw = dict(hidden=8, test_lengths=(20,), n_test=100)
    initial = train_gru_students(H_HAT, [4], [0], steps=1, **kw).train_rel_loss[0]
    final = train_gru_students(H_HAT, [4], [0], steps=300, **kw).train_rel_loss[0]
    assert final < 0.1 * initial


def test_reference_rel_mse():
    assert reference_rel_mse(H_HAT, 20, 20) == 0.0
    assert reference_rel_mse(H_HAT, 25, 20) == 0.0
    values = [reference_rel_mse(H_HAT, k, 20) for k in (1, 2, 5, 10, 19)]
    assert all(0 < v < 1 for v in values)
    assert values == sorted(values, reverse=True)


def test_teacher_impulse():
    torch.testing.assert_close(H_HAT[:3], torch.tensor([1.0, 0.05, 0.725], dtype=torch.float64))


@pytest.mark.parametrize("kwargs, match", [
    (dict(ks=[2], seeds=[0], hidden=0), "hidden"),
    (dict(ks=[2], seeds=[0], steps=0), "steps"),
    (dict(ks=[0], seeds=[0]), "k"),
    (dict(ks=[2, 3], seeds=[0]), "equal length"),
    (dict(ks=[2], seeds=[0], test_lengths=(50,)), "h_hat"),
])
def test_invalid_arguments(kwargs, match):
    args = dict(hidden=4, steps=1) | kwargs
    with pytest.raises(ValueError, match=match):
        train_gru_students(H_HAT, **args)
