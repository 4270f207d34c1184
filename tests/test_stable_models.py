"""Stable-models chapter: data loaders on the real files, metrics, the tanh recurrence, truncation,
projections during training, parameter validation and the contraction estimate."""
from __future__ import annotations

import dataclasses
import json
import math
import shutil
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from rnnbook.stable_models import (constraints, datasets, experiments, models, plots, sections, settings,
                                   stack, theory, train)
from rnnbook.data import DataError, fetch
from rnnbook.params import ParameterError

RESOLVE = dict(profile="quick", device="cpu", seed=0, tasks=["jsb"], hidden_size=None,
               epochs=None, max_train_tokens=None, data_dir=None, lstm_forget_bias=0.0,
               lstm_constraint="row", n_seeds=None)


# ---------------------------------------------------------------------------- data (real files)
def test_jsb_splits():
    d = datasets.load_jsb()
    assert [len(d[s]) for s in datasets.SPLITS] == [229, 76, 77]
    assert all(x.shape[1] == 88 and set(x.unique().tolist()) <= {0.0, 1.0} for x in d["train"])


def test_atis_splits():
    a = datasets.load_atis()
    assert [len(a.words[s]) for s in datasets.SPLITS] == [4478, 500, 893]
    assert all(len(w) == len(t) for s in datasets.SPLITS for w, t in zip(a.words[s], a.tags[s]))
    assert "O" in a.tag_vocab and not any(t.startswith("atis_") for t in a.tag_vocab)


@pytest.mark.parametrize(("task", "test_tokens", "vocab"), [
    ("ptb_char", 442_424, 50), ("ptb_word", 82_430, 10_000), ("wikitext2", 245_569, 33_278)])
def test_corpus_statistics(task, test_tokens, vocab):
    c = datasets.load_corpus(task, max_train_tokens=1000)
    assert len(c.ids["test"]) == test_tokens and len(c.vocab) == vocab
    assert len(c.ids["train"]) == 1000


def test_vocabulary_most_frequent_first():
    c = datasets.load_corpus("ptb_word")
    counts = torch.bincount(c.ids["train"], minlength=len(c.vocab))
    assert c.vocab[0] == "the" and bool((counts[:-1] >= counts[1:]).all())


def test_adaptive_softmax_is_a_normalised_distribution():
    torch.manual_seed(0)
    net = models.Net("lstm", 50, 50, hidden=16, emb=8, cutoffs=(10,))
    h, y = torch.randn(3, 5, 16), torch.randint(0, 50, (3, 5))
    log_p = net.decoder.log_prob(h.flatten(0, 1))
    assert torch.allclose(log_p.logsumexp(-1), torch.zeros(15), atol=1e-5)
    assert torch.allclose(net.token_nll(h, y), -log_p.gather(1, y.reshape(-1, 1)).sum(), atol=1e-4)


def test_corrupted_file_is_refused(tmp_path):
    src = fetch("jsb-chorales", "JSB_Chorales.mat")
    dst = tmp_path / "jsb-chorales" / "JSB_Chorales.mat"
    dst.parent.mkdir()
    shutil.copy(src, dst)
    data = bytearray(dst.read_bytes())
    data[1000] ^= 0xFF
    dst.write_bytes(bytes(data))
    with pytest.raises(DataError, match="checksum mismatch"):
        datasets.load_jsb(tmp_path)


def test_missing_file_names_data_dir_and_file(tmp_path, monkeypatch):
    def offline(*a, **k):
        raise OSError("no network")
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(DataError, match="JSB_Chorales.mat") as err:
        settings.resolve(**RESOLVE | {"data_dir": str(tmp_path)})
    assert str(tmp_path) in str(err.value)


# ---------------------------------------------------------------------------- metrics
def test_conlleval_chunks():
    assert datasets.chunks(["B-a", "I-a", "O", "B-b"]) == {(0, 1, "a"), (3, 3, "b")}
    assert datasets.chunks(["O", "I-a", "I-a", "I-b"]) == {(1, 2, "a"), (3, 3, "b")}  # I- opens
    assert datasets.chunks(["B-a", "B-a"]) == {(0, 0, "a"), (1, 1, "a")}


def test_conlleval_f1_hand_example():
    gold = [["B-a", "I-a", "O", "B-b"], ["B-c"]]
    pred = [["B-a", "O", "O", "B-b"], ["B-c"]]  # 2 of 3 chunks right, 3 predicted
    assert datasets.conlleval_f1(gold, pred) == pytest.approx(100 * 2 / 3)
    assert datasets.conlleval_f1(gold, gold) == 100.0


def test_lm_metrics_and_tokens():
    assert datasets.bpc(2 * 0.6931471805599453, 2) == pytest.approx(1.0)
    assert datasets.ppl(0.0, 5) == 1.0
    assert datasets.char_tokens("a b _ c \nd \n") == ["a", "b", "_", "c", "<eos>", "d", "<eos>"]
    assert datasets.word_tokens(" x y \n z \n") == ["x", "y", "<eos>", "z", "<eos>"]


def test_jsb_nll_counts_frames():
    logits, y = torch.zeros(2, 3, 88), torch.ones(2, 3, 88)
    mask = torch.tensor([[1.0, 1, 1], [1, 0, 0]])
    total, n = datasets.jsb_nll(logits, y, mask)
    assert n == 4 and total == pytest.approx(4 * 88 * 0.6931471805599453, rel=1e-6)


# ---------------------------------------------------------------------------- models
def test_tanh_rnn_equals_nn_rnn():
    torch.manual_seed(0)
    ours, ref = models.TanhRNN(5, 7), nn.RNN(5, 7, batch_first=True)
    ref.load_state_dict(ours.state_dict())
    x = torch.randn(3, 11, 5)
    (a, ha), (b, hb) = ours(x), ref(x)
    assert torch.allclose(a, b, atol=1e-6) and torch.allclose(ha, hb, atol=1e-6)
    a.square().sum().backward()
    b.square().sum().backward()
    for p, q in zip(ours.parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-5)


@pytest.mark.parametrize("T", [1, 5])
def test_stacked_tanh_backward_is_the_gradient(T):
    """The hand-written BPTT against autograd's finite differences (float64), in p, W and h0."""
    torch.manual_seed(0)
    p, W, h0 = (torch.randn(*s, dtype=torch.float64, requires_grad=True)
                for s in ((T, 2, 3, 4), (2, 4, 4), (2, 3, 4)))
    assert torch.autograd.gradcheck(models.StackedTanh.apply, (p, W, h0))


@pytest.mark.parametrize("cls", [models.TanhRNN, lambda m, h: nn.LSTM(m, h, batch_first=True)])
def test_truncated_forward_runs_each_window_from_zero(cls):
    torch.manual_seed(0)
    rnn, x, k = cls(4, 6), torch.randn(2, 9, 4), 3
    with torch.no_grad():
        h = constraints.truncated_forward(rnn, x, k)
        assert torch.allclose(h[:, :k - 1], rnn(x)[0][:, :k - 1])
        for t in range(k - 1, 9):
            assert torch.allclose(h[:, t], rnn(x[:, t - k + 1:t + 1])[0][:, -1], atol=1e-6)
        assert torch.allclose(constraints.truncated_forward(rnn, x, None), rnn(x)[0])


def test_truncated_tanh_rnn_shares_the_input_map_exactly():
    """The tanh RNN unfolds Ux + b, not x: same outputs and gradients as nn.RNN unfolding x."""
    torch.manual_seed(0)
    ours, ref, x = models.TanhRNN(4, 6), nn.RNN(4, 6, batch_first=True), torch.randn(2, 9, 4)
    ref.load_state_dict(ours.state_dict())
    a, b = constraints.truncated_forward(ours, x, 3), constraints.truncated_forward(ref, x, 3)
    assert torch.allclose(a, b, atol=1e-6)
    a.square().sum().backward()
    b.square().sum().backward()
    for p, q in zip(ours.parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, atol=1e-5)


def test_fork_lstm_is_the_k1_truncation():
    torch.manual_seed(0)
    lstm, x = nn.LSTM(88, 8, batch_first=True), torch.rand(1, 20, 88)
    with torch.no_grad():
        assert torch.allclose(experiments.fork_lstm_forward(lstm, x), constraints.truncated_forward(lstm, x, 1),
                              atol=1e-6)


def _toy_jsb(n_train: int = 8, n_test: int = 2, T: int = 12) -> dict[str, list[torch.Tensor]]:
    torch.manual_seed(1)
    return {s: [(torch.rand(T - i % 3, 88) > 0.8).float() for i in range(n)]
            for s, n in (("train", n_train), ("test", n_test))}


def _one_model(cell: str, cfg: settings.TaskConfig, data, m: stack.Member) -> nn.Module:
    """The oracle: one ``Net`` (``nn.LSTM`` / the tanh RNN, ``truncated_forward``) trained alone by
    ``torch.optim.SGD`` with ``clip_grad_norm_`` and the projection, seed m.seed."""
    net = models.make_net(cell, cfg, 88, 88, m.forget_bias, m.seed)
    opt = torch.optim.SGD(net.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(m.seed)
    xs, ys = stack.sequence_data("jsb", data, "train")
    for _ in range(cfg.epochs):
        order = torch.randperm(len(xs), generator=gen).tolist()
        for s in range(0, len(order), cfg.batch):
            idx = order[s:s + cfg.batch]
            (x, mask), (y, _) = stack.padded([[xs[i] for i in idx]]), stack.padded([[ys[i] for i in idx]])
            loss = stack.seq_losses("jsb", net(x[0], m.k)[None], y, mask)[0]
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), cfg.clip)
            opt.step()
            with torch.no_grad():
                W, U = net.rnn.weight_hh_l0, net.rnn.weight_ih_l0
                if m.constraint == "spectral":
                    W.copy_(constraints.project_spectral(W))
                elif m.constraint:
                    W_new, U_new = constraints.constrain_lstm(W, U, m.constraint)
                    W.copy_(W_new)
                    U.copy_(U_new)
    return net


@pytest.mark.parametrize(("cell", "constraint"), [("rnn", "spectral"), ("lstm", "row"), ("lstm", "col_fork")])
@pytest.mark.parametrize("truncated", [False, True])
def test_a_stack_trains_each_member_as_if_alone(cell, constraint, truncated):
    """Same numbers as one model trained alone for a fixed seed: members that differ in seed,
    constraint and forget bias, stacked, recurrent or truncated (float32 rounding only)."""
    cfg = settings.TaskConfig("jsb", 16, lr=0.5, clip=1.0, epochs=2, batch=2)
    k = 3 if truncated else None
    members = [stack.Member(0, None, k, 0.0), stack.Member(1, constraint, k, 0.0),
               stack.Member(2, None, k, 1.0)]
    data = _toy_jsb()
    st = stack.make_stack(cell, cfg, 88, 88, members)
    records = stack.train_stack("jsb", st, data)
    for j, m in enumerate(members):
        alone = _one_model(cell, cfg, data, m)
        for n, p in alone.named_parameters():
            assert torch.allclose(st.member_state(j)[n], p.detach(), atol=2e-5), (m, n)
        xs, ys = stack.sequence_data("jsb", data, "test")
        (x, mask), (y, _) = stack.padded([xs]), stack.padded([ys])
        with torch.no_grad():
            total, n = datasets.jsb_nll(alone(x[0], m.k), y[0], mask[0])
        assert records[j].test == pytest.approx(total / n, rel=1e-5)


@pytest.mark.parametrize("task", ["jsb", "atis", "ptb_char"])
def test_every_stack_trains_on_the_settings_device(task, monkeypatch):
    """JSB and ATIS stacks go to the chapter's device as the language models do (issue 24, item 1:
    no CPU-only path in the full profile); the device is not in the cache key."""
    S = settings.resolve(**RESOLVE | {"tasks": [task]})
    S = dataclasses.replace(S, device=torch.device("cuda"))  # never used: train_members is stubbed
    seen = []
    monkeypatch.setattr(train, "train_members", lambda *a: seen.append(a[7]) or [{}])

    class Cache:
        def cached_batch(self, name, configs, compute):
            self.configs = configs
            compute(configs)

        def put(self, name, config, result, seconds=None):  # the run's weights
            assert "cuda" not in json.dumps(config)
    cache = Cache()
    train.train_group(cache, S, train.TaskData(task, {}, 8, 8), [(task, "rnn", False, 0, {})])
    assert seen == [torch.device("cuda")] and "cuda" not in json.dumps(cache.configs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
@pytest.mark.parametrize("cell", settings.CELLS)
def test_a_jsb_stack_trains_on_cuda_as_on_the_cpu(cell):
    """A truncated JSB stack (stable and unstable members) on CUDA ends where the CPU's does, to
    float32 rounding over a few steps (another order of sums)."""
    cfg = settings.TaskConfig("jsb", 16, lr=0.5, clip=1.0, epochs=2, batch=1)
    members = [stack.Member(0, None, 3, 0.0),
               stack.Member(1, "spectral" if cell == "rnn" else "row", 3, 0.0)]
    cpu, gpu = (stack.train_members("jsb", cell, cfg, _toy_jsb(), 88, 88, members,
                                    torch.device(d)) for d in ("cpu", "cuda"))
    for a, b in zip(cpu, gpu):
        assert b["test"] == pytest.approx(a["test"], rel=1e-4)
        for n in a:
            if n.startswith("p."):
                assert np.allclose(a[n], b[n], atol=1e-4), n


@pytest.mark.parametrize("cell", settings.CELLS)
@pytest.mark.parametrize("cutoffs", [(), (30,)])
def test_stacked_language_model_loss_is_the_nets(cell, cutoffs):
    """The stack's token NLL (full or adaptive softmax) and its carried state are ``Net``'s."""
    cfg = settings.TaskConfig("ptb_word", 8, lr=1.0, clip=1.0, epochs=1, batch=3, emb=6, bptt=5,
                              cutoffs=cutoffs)
    members = [stack.Member(s, None, None, 0.0) for s in (0, 1)]
    st, ids = stack.make_stack(cell, cfg, 50, 50, members), torch.randint(0, 50, (3, 11))
    with torch.no_grad():
        h, state = stack.lm_hidden(st, ids[:, :5], None, None)
        h2, _ = stack.lm_hidden(st, ids[:, 5:10], state, None)
        for j, m in enumerate(members):
            net = models.make_net(cell, cfg, 50, 50, 0.0, m.seed).eval()
            _, s_ = net.rnn(net.embed(ids[:, :5]))
            b, _ = net.rnn(net.embed(ids[:, 5:10]), s_)
            assert torch.allclose(h2[j], b, atol=1e-6)
            assert float(st.token_nll(h2, ids[:, 6:11])[j]) == pytest.approx(
                float(net.token_nll(b, ids[:, 6:11])), rel=1e-5)


@pytest.mark.parametrize(("cell", "constraint"), [("rnn", "spectral"), ("lstm", "row")])
def test_projections_hold_at_every_training_step(cell, constraint, monkeypatch):
    cfg = settings.TaskConfig("jsb", 16, lr=5.0, clip=10.0, epochs=1, batch=2)
    st = stack.make_stack(cell, cfg, 88, 88, [stack.Member(0, constraint, None, 0.0),
                                              stack.Member(1, None, None, 0.0)])
    after_step = []  # the constrained quantity after every projection, measured independently
    W, U = st.p("rnn.weight_hh_l0"), st.p("rnn.weight_ih_l0")
    measure = ((lambda: float(constraints.spectral_norm(W[0].detach()))) if cell == "rnn" else
               (lambda: float(constraints.lstm_row_ratios(W[0], U[0]))))
    stabilize = st.stabilize_

    def stabilize_():
        out = stabilize()
        after_step.append(measure())
        return out
    monkeypatch.setattr(st, "stabilize_", stabilize_)
    records = stack.train_stack("jsb", st, _toy_jsb())
    assert len(after_step) == 4 and max(after_step) <= 1 + 1e-5
    assert 0.5 < records[0].c1_max <= 1 + 1e-5 and records[1].c1_max == 0.0
    assert records[1].w_norms[-1] > 1  # the unconstrained member is left alone


def _with_spectrum(sigma: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """U diag(sigma) V^T with Haar-random U, V (float64)."""
    U, V = (torch.linalg.qr(torch.randn(len(sigma), len(sigma), generator=gen,
                                        dtype=torch.float64))[0] for _ in range(2))
    return (U * sigma) @ V.T


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [16, 128])
def test_matmul_projection_is_the_svds(dtype, n):
    """project_spectral_ns = eq. (sm-proj) to 1e-6 (max abs entry), batched over a stack, for
    singular values near λ, well above (up to 10λ), all below (then P(W) = W) and PyTorch's
    initialisation, in the stack's float32 and in float64. The reference is the SVD projection
    of the same matrices in float64 (float32's own SVD is off by up to ~7e-7 here)."""
    gen = torch.Generator().manual_seed(n)
    lin = lambda a, b: torch.linspace(a, b, n, dtype=torch.float64)  # noqa: E731
    spectra = [1 + lin(-1e-3, 1e-3), 1 + lin(-1e-7, 1e-7), lin(0, 10), lin(0.5, 3), lin(0, 0.999)]
    W = torch.stack([_with_spectrum(s, gen) for s in spectra]
                    + [torch.rand(n, n, generator=gen, dtype=torch.float64) * 2 / n ** 0.5 - 1 / n ** 0.5
                       for _ in range(2)]).to(dtype)
    for lam in (1.0, 0.8) if n == 16 else (1.0,):
        P = constraints.project_spectral_ns(W, lam)
        assert P.dtype == dtype
        assert (P.double() - constraints.project_spectral(W.double(), lam)).abs().max() < 1e-6
    assert (constraints.project_spectral_ns(W[4]) - W[4]).abs().max() < 1e-6  # feasible: itself


def test_newton_schulz_steps_meet_their_bounds():
    """The scalar iterations each eigenvalue follows (``constraints._sign``, ``_inverse_sqrt``):
    :math:`\\max_x x(1 - s_k(x))` small enough that :math:`\\lambda\\gamma/4` times it stays
    below 1e-7 for γ ≤ 1e3, and :math:`z_k(\\nu) = \\nu^{-1/2}` on [1e-3, 1]."""
    x = torch.logspace(-16, 0, 100_001, dtype=torch.float64)
    s = constraints._sign(x.view(-1, 1, 1)).flatten()  # a batch of 1 x 1 matrices: the scalars
    assert (x * (1 - s)).abs().max() * 1e3 / 4 < 1e-7
    nu = torch.linspace(1e-3, 1, 2001, dtype=torch.float64)
    z = constraints._inverse_sqrt(nu.view(-1, 1, 1)).flatten()
    assert (z * nu.sqrt() - 1).abs().max() < 1e-12


def test_a_stack_with_the_matmul_projection_trains_as_with_the_svd(monkeypatch):
    """The GPU's projection forced on the CPU: a short stacked run (two stable RNNs, one unstable,
    16 steps at lr 0.5) ends where the SVD's does, to 1e-5 (both projections are within ~1e-6 of
    the exact one, and 16 steps of SGD amplify such float32 differences no more than the
    stack-vs-alone test's rounding, 2e-5)."""
    cfg = settings.TaskConfig("jsb", 16, lr=0.5, clip=1.0, epochs=2, batch=1)
    members = [stack.Member(0, "spectral", None, 0.0), stack.Member(1, None, None, 0.0),
               stack.Member(2, "spectral", None, 0.0)]
    svd = stack.train_members("jsb", "rnn", cfg, _toy_jsb(), 88, 88, members, torch.device("cpu"))
    monkeypatch.setattr(stack, "MATMUL_PROJECTION", {"cpu"})
    ns = stack.train_members("jsb", "rnn", cfg, _toy_jsb(), 88, 88, members, torch.device("cpu"))
    for a, b in zip(svd, ns):
        assert b["test"] == pytest.approx(a["test"], rel=1e-5)
        for name in a:
            if name.startswith("p."):
                assert np.abs(a[name] - b[name]).max() < 1e-5, name


@pytest.mark.parametrize("task", ["jsb", "atis"])
def test_epochs_on_the_device_are_the_padded_minibatches(task):
    """sequence_epoch's gathers from the split padded once are, bit for bit, the minibatches
    :func:`stack.padded` builds per step (batch 3: minibatches of unequal lengths, a short last
    one)."""
    data = _toy_jsb(n_train=8) if task == "jsb" else datasets.load_atis()
    xs, ys = (v[:8] for v in stack.sequence_data(task, data, "train"))
    cfg = settings.TaskConfig(task, 8, lr=0.5, clip=1.0, epochs=1, batch=3)
    st = stack.make_stack("rnn", cfg, 88, 88, [stack.Member(s, None, None, 0.0) for s in (0, 1)])
    batches = list(stack.sequence_epoch(st, stack.device_split(xs, ys, torch.device("cpu")),
                                        [torch.Generator().manual_seed(s) for s in (0, 1)]))
    orders = [torch.randperm(8, generator=torch.Generator().manual_seed(s)).tolist() for s in (0, 1)]
    assert len(batches) == 3
    for b, (x, y, mask) in enumerate(batches):
        idx = [o[3 * b:3 * b + 3] for o in orders]
        (x_, mask_), (y_, _) = (stack.padded([[v[i] for i in ix] for ix in idx]) for v in (xs, ys))
        assert all(torch.equal(u, v) and u.dtype == v.dtype for u, v in ((x, x_), (y, y_), (mask, mask_)))


# ---------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(("change", "name"), [
    ({"tasks": ["mnist"]}, "tasks"), ({"hidden_size": 0}, "hidden_size"),
    ({"lstm_constraint": "col"}, "lstm_constraint"), ({"profile": "huge"}, "profile"),
    ({"epochs": {"atis": 3}}, "epochs"), ({"device": "tpu"}, "device"),
    ({"n_seeds": 0}, "n_seeds")])
def test_resolve_refuses(change, name):
    with pytest.raises(ParameterError, match=f"parameter '{name}'"):
        settings.resolve(**RESOLVE | change)


def test_resolve_defaults():
    S = settings.resolve(**RESOLVE | {"tasks": None})
    assert S.tasks == ["jsb", "atis", "ptb_char", "ptb_word"] and S.seeds == [0]
    assert settings.resolve(**RESOLVE | {"profile": "full", "tasks": ["jsb"]}).seeds == [0, 1, 2]


def test_resolve_smoke_keeps_the_full_profile_at_toy_sizes():
    """The smoke run (issue 24, item 2): the full profile's branches (WikiText-2, schedules, C9's and
    C11's seeds, F4's LM panels, F5) at SMOKE's sizes, explicit parameters winning; smoke=False is
    the full profile as before, and smoke is refused outside it."""
    from dataclasses import replace
    full = RESOLVE | {"profile": "full", "tasks": None}
    S, F = settings.resolve(**full, smoke=True), settings.resolve(**full)
    assert S.profile == "full" and S.tasks == F.tasks == ["jsb", "atis", "ptb_char", "wikitext2"]
    assert S.configs == {t: replace(settings.FULL[t], **settings.SMOKE["configs"][t]) for t in S.tasks}
    assert all(c.hidden <= 8 and c.epochs <= 2 and c.schedule for c in S.configs.values())
    assert (S.f3_task, S.f5_task, S.f5_cells, S.c11_cells, S.c9_nll) == (
        "wikitext2", "wikitext2", settings.CELLS, settings.CELLS, True)
    assert S.seeds == S.c9_seeds == [0, 1] and S.lm_k and S.contraction < F.contraction
    assert (F.configs, F.seeds, F.contraction, F.f5_epochs) == (settings.FULL, [0, 1, 2], (20, 1000), 20)
    mine = settings.resolve(**full | {"hidden_size": 16, "n_seeds": 3}, smoke=True)
    assert mine.configs["jsb"].hidden == 16 and mine.seeds == [0, 1, 2]
    assert theory.theory_settings("full", True).c4_N < theory.theory_settings("full").c4_N == 1000
    with pytest.raises(ParameterError, match="parameter 'smoke'"):
        settings.resolve(**RESOLVE, smoke=True)


# ---------------------------------------------------------------------------- contraction
def test_contraction_estimate_of_a_contracting_rnn():
    cfg = settings.TaskConfig("jsb", 8, lr=1.0, clip=1.0, epochs=1)
    net = models.make_net("rnn", cfg, 88, 88, 0.0, 0)
    with torch.no_grad():
        q, _ = torch.linalg.qr(torch.randn(8, 8))
        net.rnn.weight_hh_l0.copy_(0.5 * q)
    x = 0.01 * torch.rand(4, 20, 88)
    S_hat = train.contraction_estimate(net, x, [1, 4], starts=4, steps=30)
    assert 0.3 < S_hat[1] <= 0.5 + 1e-5
    assert S_hat[4] <= 0.5 ** 4 + 1e-5
    assert train.smallest_contracting_r(S_hat) == 1


@pytest.mark.parametrize(("w2", "w32", "passed", "verdict"), [
    (3.4, 2.4, True, "partly"), (3.4, 3.25, False, "not reproduced"), (3.0, 3.1, False, "not reproduced")])
def test_c9_rule(w2, w32, passed, verdict):
    S = settings.resolve(**RESOLVE)
    assert (S.c9_seeds, S.c9_min_drop, S.c9_nll) == ([0, 1, 2], 0.2, False)
    assert experiments.c9_jobs(S) == [("jsb", "rnn", False, s, {"k": k}) for s in S.c9_seeds
                             for k in (2, 32)]
    runs = {(False, k, s): {"w_norms": [1.0] * 14 + [w + 0.1 * (s - 1)]} for s in S.c9_seeds
            for k, w in ((2, w2), (32, w32))}
    trunc = {("rnn", s, k): {"test": 9.0 + (0.1 if k == 2 else 0.05) * s} for s in (False, True)
             for k in (2, 32)}  # instability's NLL advantage shrinks with k, as the paper says
    c9 = experiments.c9_check(S, trunc, runs)
    assert (c9["passed"], c9["verdict"]) == (passed, verdict)
    assert c9["value"]["‖W‖₂ k=2"] == pytest.approx(w2)  # mean over the seeds
    assert c9["value"]["NLL(stable) − NLL(unstable), k=2"] == pytest.approx(0.1)  # F2's, reported
    assert experiments.c9_drops(S, runs) == pytest.approx([w2 - w32] * 3)


def test_c9_quick_does_not_judge_the_reported_nll_half():
    """Quick: the NLL half is reported from one seed, not judged: whatever its sign, a norm half
    that holds gives 'partly'."""
    S = settings.resolve(**RESOLVE)
    runs = {(False, k, s): {"w_norms": [1.0] * 14 + [w]} for s in S.c9_seeds
            for k, w in ((2, 3.4), (32, 2.4))}
    for sign in (1.0, -1.0):
        trunc = {("rnn", s, k): {"test": 9.0 + sign * (0.1 if k == 2 else 0.01) * s}
                 for s in (False, True) for k in (2, 32)}
        c9 = experiments.c9_check(S, trunc, runs)
        assert (c9["passed"], c9["verdict"]) == (True, "partly")
        assert "F2's" in c9["value"]["NLL runs"]


@pytest.mark.parametrize(("adv2", "adv32", "passed"), [
    ((0.10, 0.12, 0.08), (0.0, 0.02, -0.01), True),   # advantage > 1 sd at k = 2, smaller at 32
    ((0.10, -0.05, 0.02), (0.0, 0.0, 0.0), False),    # within one sd of zero
    ((0.10, 0.12, 0.08), (0.2, 0.2, 0.2), False)])    # not shrinking by k = 32
def test_c9_rule_over_seeds(adv2, adv32, passed):
    S = settings.resolve(**{**RESOLVE, "profile": "full"})
    assert (S.c9_seeds, S.c9_min_drop, S.c9_nll) == (S.seeds, 0.5, True)
    assert len(experiments.c9_jobs(S)) == 12  # three seeds x {unstable, stable} x k in {2, 32}
    runs = {(s, k, seed): {"test": 9.0 + (a if s else 0.0), "w_norms": [1.0, w]}
            for seed, a2, a32 in zip(S.c9_seeds, adv2, adv32) for s in (False, True)
            for k, a, w in ((2, a2, 3.4), (32, a32, 2.4))}
    c9 = experiments.c9_check(S, {}, runs)
    assert c9["passed"] == passed and c9["value"]["seeds"] == 3
    assert c9["verdict"] == (None if passed else "partly")


@pytest.mark.parametrize(("nll", "passed"), [((9.0, 9.1, 9.05), True), ((9.0, 9.2, 9.05), False)])
def test_c11_rule(nll, passed):
    S = settings.resolve(**RESOLVE)
    runs = {(c, k, s): v for c in settings.CELLS for s in experiments.c11_seeds(S, c)
            for k, v in zip(experiments.C11_K, nll)}
    assert experiments.c11_check(S, runs, memory=0.16)["passed"] == passed
    assert not experiments.c11_check(S, runs, memory=0.05)["passed"]  # memory worth less than k


def _table1(costs: dict) -> dict:
    """Table 1 results with the given stable model's test metric per (task, cell); the unstable
    model's is 90 (F1), 2 (bpc), 400 (ppl) or 9 (NLL)."""
    base = {"atis": 90.0, "ptb_char": 2.0, "ptb_word": 400.0, "wikitext2": 400.0, "jsb": 9.0}
    res = {}
    for (t, c), v in costs.items():
        res[(t, c, False)] = [{"test": base[t]}]
        res[(t, c, True)] = [{"test": v}]
    return res


@pytest.mark.parametrize(("char_rnn", "verdict"), [(2.05, None), (2.2, "partly")])
def test_c5_judges_relative_costs_and_jsb_against_memory(char_rnn, verdict):
    """C5: relative cost below 5 % on ATIS, characters and words (the line C6 shares); on JSB the
    cost below the memory effect."""
    S = settings.resolve(**RESOLVE | {"tasks": ["jsb", "atis", "ptb_char", "ptb_word"]})
    res = _table1({("jsb", "rnn"): 8.9, ("jsb", "lstm"): 9.1, ("atis", "rnn"): 88.0,
                   ("atis", "lstm"): 86.4, ("ptb_char", "rnn"): char_rnn, ("ptb_word", "rnn"): 390.0})
    gap = {t: {c: experiments.mean_test(res, t, c, True) - experiments.mean_test(res, t, c, False)
               for c in (settings.CELLS if t in ("jsb", "atis") else ("rnn",))} for t in S.tasks}
    c5 = experiments.c5_checks(gap, res, S, memory=0.16)
    assert c5["verdict"] == verdict and c5["passed"] == (verdict is None)
    assert c5["value"]["atis/lstm relative cost"] == pytest.approx(0.04)
    assert c5["value"]["ptb_word/rnn relative cost"] == pytest.approx(-0.025)
    jsb = settings.resolve(**RESOLVE | {"tasks": ["jsb"]})
    assert experiments.c5_checks({"jsb": gap["jsb"]}, res, jsb, memory=0.05)["verdict"] == \
        "partly"  # the stable LSTM costs more than memory is worth, the RNN less (it is better)
    assert experiments.c5_checks({"jsb": {"rnn": 0.2, "lstm": 0.1}}, res, jsb, 0.05)["verdict"] == \
        "not reproduced"


@pytest.mark.parametrize(("lstm", "passed"), [(2.3, True), (2.08, False)])
def test_c6_shares_c5s_line(lstm, passed):
    """C6: the char LSTM's relative cost at least C5's 5 % and larger than the RNN's."""
    S = settings.resolve(**RESOLVE | {"tasks": ["ptb_char"]})
    res = _table1({("ptb_char", "rnn"): 2.06, ("ptb_char", "lstm"): lstm})
    c6 = experiments.c6_check(res, S)
    assert c6["passed"] == passed
    assert c6["value"]["ptb_char RNN relative cost"] == pytest.approx(0.03)


def test_c11_decides_the_rnn_on_medians_over_seeds():
    """Quick: one seed's outlying recurrent RNN (seed 3 of our survey: 9.28 against 8.96-9.00)
    moves the median of three seeds little; the LSTM is judged on its first seed."""
    S = settings.resolve(**RESOLVE)
    assert experiments.c11_seeds(S, "rnn") == S.c9_seeds and len(S.c9_seeds) == 3
    assert experiments.c11_seeds(S, "lstm") == S.seeds[:1]
    runs = {("rnn", k, s): v for s, row in zip(S.c9_seeds, ((9.0, 9.02, 9.28), (8.98, 9.0, 8.97),
                                                            (9.01, 9.03, 9.0)))
            for k, v in zip(experiments.C11_K, row)}
    runs |= {("lstm", k, S.seeds[0]): v for k, v in zip(experiments.C11_K, (8.7, 8.75, 8.65))}
    c11 = experiments.c11_check(S, runs, memory=0.16)
    assert c11["passed"] and c11["value"]["unstable RNN"] == pytest.approx(0.02)
    assert c11["value"]["unstable LSTM"] == pytest.approx(0.1)
    assert not experiments.c11_check(S, runs | {("rnn", None, S.c9_seeds[1]): 9.3}, 0.16)["passed"]
    full = settings.resolve(**RESOLVE | {"profile": "full"})
    assert experiments.c11_seeds(full, "lstm") == full.c9_seeds
    jobs = experiments.c11_jobs(S)
    assert len(jobs) == 3 * 3 + 3 and all(not j[2] for j in jobs)  # unstable models only


class _NoCache:
    """A results cache with nothing in it."""

    def path(self, name, config):
        return Path("/nonexistent") / name

    def plan(self, name, configs):
        pass


_NO_CACHE = _NoCache()


def test_estimates_run_after_their_models_stack(monkeypatch):
    """C8's and E2's estimates ride with the stack that trains their model, each exactly once."""
    S = settings.resolve(**(RESOLVE | {"tasks": ["jsb", "ptb_char"]}))
    seen = {}
    monkeypatch.setattr(experiments, "prefit", lambda cache, S_, jobs, workers, progress, wait,
                        after: seen.update(groups=train.stacks(S_, jobs), after=after))
    experiments.train_all(_NO_CACHE, S)
    attached = [(g, e) for g in seen["groups"] for _, e in seen["after"](g)]
    assert sorted(e.config.get("name", e.name) for _, e in attached) == sorted(
        e.config.get("name", e.name) for e in experiments.estimates(S).values())
    assert all(experiments.estimate_job(e) in g for g, e in attached)


def test_train_all_covers_every_section_longest_first(monkeypatch):
    S = settings.resolve(**(RESOLVE | {"tasks": ["jsb", "atis"]}))
    seen = []
    monkeypatch.setattr(experiments, "prefit", lambda cache, S_, jobs, workers, progress, wait, after: seen.extend(jobs))
    experiments.train_all(_NO_CACHE, S)
    keys = {(j[0], j[1], j[2], j[4].get("k"), j[4].get("snapshots", False)) for j in seen}
    assert {("jsb", c, s, k, False) for c, s, k in experiments.truncation_jobs(S)} <= keys
    assert {("jsb", "rnn", False, w["k"], True) for w in experiments.f5_runs(S)} <= keys
    assert {(t, c, s, None, False) for t in S.tasks for c, s in experiments.MODELS} <= keys
    assert any(j[4] == experiments.FORK_LSTM for j in seen)
    costs = sorted((train.job_cost(S, j) for j in seen), reverse=True)
    assert costs[0] > costs[-1] > 0
    assert all(job in seen for job in experiments.c9_jobs(S) + experiments.c11_jobs(S))
    seen.clear()
    full = settings.resolve(**(RESOLVE | {"profile": "full"}))
    experiments.train_all(_NO_CACHE, full)  # seed 0 of C9's runs is F2's: scheduled once
    assert all(job in seen for job in experiments.c9_jobs(full)) and len(set(map(repr, seen))) == len(seen)


def test_full_profile_language_model_figures_are_scheduled(monkeypatch):
    """Spec §4: in the full profile F3 and F5 run on WikiText-2 (F5 for both cells) and F4 adds
    PTB-character and WikiText-2 truncations; the quick profile schedules none of these."""
    full = settings.resolve(**RESOLVE | {"profile": "full", "tasks": ["jsb", "ptb_char", "wikitext2"]})
    assert (full.f3_task, full.f5_task, full.f5_cells) == ("wikitext2", "wikitext2", settings.CELLS)
    seen = []
    monkeypatch.setattr(experiments, "prefit", lambda cache, S_, jobs, workers, progress, wait, after: seen.extend(jobs))
    experiments.train_all(_NO_CACHE, full)
    keys = {(j[0], j[1], j[4].get("k"), j[4].get("snapshots", False)) for j in seen}
    assert {(t, c, k, False) for t in ("ptb_char", "wikitext2") for c in settings.CELLS
            for k in full.lm_k} <= keys
    assert {("wikitext2", c, k, True) for c in settings.CELLS for k in full.f5_k + [65]} <= keys
    quick = settings.resolve(**RESOLVE | {"tasks": ["jsb", "ptb_char"]})
    assert (quick.f3_task, quick.f5_task, quick.lm_k) == ("ptb_char", "jsb", [])
    assert experiments.lm_truncation_jobs(quick) == []


class _Run:
    """The parts of :class:`rnnbook.run.Run` that the figure functions use."""

    def __init__(self, cache):
        self.cache, self.figures = cache, {}

    def progress(self, it, **kw):
        return it

    def save_figure(self, fig, name, caption):
        import matplotlib.pyplot as plt
        self.figures[name] = (len(fig.axes), caption)
        plt.close(fig)


def test_summaries_and_weights_are_pieces_apart_and_f3_needs_no_weights_once_cached(tmp_path):
    """Issue 47: a training run's summary and its weights are separate cache pieces (WikiText-2's
    weights take about 180 MB a model, its summary a few KB); a run resumed from the summaries
    alone (the weights not committed) trains the model again for its weights, the same run, and
    F3's curves, a piece of their own, need no weights once cached."""
    from dataclasses import replace

    from rnnbook.cache import Cache
    S = settings.resolve(**RESOLVE | {"profile": "full", "tasks": ["ptb_char"], "hidden_size": 4,
                                "epochs": 1, "max_train_tokens": 3000})
    S.configs["ptb_char"] = replace(S.configs["ptb_char"], emb=4, schedule=None, max_eval_tokens=2000)
    td = train.load_task("ptb_char", S)
    cache = Cache(tmp_path)
    summary = train.fit(cache, S, td, "lstm", False, S.seeds[0])
    assert not any(k.startswith("p.") for k in summary) and summary["test"] > 0
    net = train.trained_net(cache, S, td, "lstm", False, S.seeds[0])
    assert net.W_hh_norm() == pytest.approx(float(summary["w_hh_final"]), rel=1e-5)
    weights = sorted(tmp_path.glob(f"ptb_char-lstm{train.WEIGHTS}-*.npz"))
    assert len(weights) == 1
    weights[0].unlink()  # as a run resumed from committed pieces finds it
    again = train.trained_net(cache, S, td, "lstm", False, S.seeds[0])
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), again.state_dict().values()))
    g = experiments.gradient_decays(cache, S, td)
    assert {"unstable RNN", "unstable LSTM", "forget gate shut", "initial RNN", "initial LSTM"} == set(g)
    for f in tmp_path.glob(f"*{train.WEIGHTS}-*.npz"):
        f.unlink()
    hits = cache.hits
    assert all(np.array_equal(g[k], v) for k, v in experiments.gradient_decays(cache, S, td).items())
    assert cache.hits == hits + 1 and not list(tmp_path.glob(f"*{train.WEIGHTS}-*.npz"))


def test_language_model_truncations_and_f5_on_toy_sizes(tmp_path):
    """The full profile's LM code paths (F4's panels, F5 with W_hh snapshots for RNN and LSTM) at
    toy sizes on PTB characters: runs, caches, and draws."""
    from dataclasses import replace

    from rnnbook.cache import Cache
    S = settings.resolve(**RESOLVE | {"profile": "full", "tasks": ["ptb_char"], "hidden_size": 4,
                                "epochs": 1, "max_train_tokens": 4000})
    S.configs["ptb_char"] = replace(S.configs["ptb_char"], emb=4, schedule=None)
    S.lm_k, S.f5_k, S.f5_ref, S.f5_epochs, S.workers = [2, 3], [2], 3, 2, 1
    S.f5_task, S.f5_cells = "ptb_char", settings.CELLS
    td = train.load_task("ptb_char", S)
    td.data.ids["test"] = td.data.ids["test"][:3000]
    run = _Run(Cache(tmp_path))
    lm = experiments.lm_truncation_sweep(run.cache, S, {"ptb_char": td})
    assert set(lm) == {("ptb_char", c, k) for c in settings.CELLS for k in (2, 3)}
    assert all(0 < v < 10 for v in lm.values())  # bits per character of barely trained models
    f5 = sections.f5_weight_gaps(run, S, td)
    assert {"RNN final k=2", "LSTM final k=2"} <= set(f5["value"])
    assert all(v > 0 for n, v in f5["value"].items() if "final" in n)
    snap = train.fit(run.cache, S, td, "lstm", False, 0, **experiments.f5_runs(S)[0])["snapshots"]
    assert snap.shape == (S.f5_epochs + 1, 4 * 4 * 4)  # W_hh only, after each epoch
    trunc = {(c, False, k): {"test": 9.0, "w_norms": [2.0]} for c in settings.CELLS for k in S.f2_k}
    trunc |= {("rnn", True, k): {"test": 9.0, "w_norms": [1.0]} for k in S.f2_k}
    res = {(t, c, False): [{"test": 9.0}] for t in ("jsb", "ptb_char") for c in settings.CELLS}
    c9 = {(False, k, s): {"w_norms": [1.5, 2.0]} for k in (2, 32) for s in S.c9_seeds}
    sections.f2_f4_figures(run, S, trunc, res, c9, lm)
    assert run.figures["F2"][0] == 3 and "3 seeds" in run.figures["F2"][1]
    assert run.figures["F4"][0] == 2 and "PTB characters" in run.figures["F4"][1]


@pytest.mark.parametrize(("r_star", "verdict"), [(64, None), (128, None), (8, "partly"), (None, "not reproduced")])
def test_c8_rule_compares_r_star_with_the_papers_80(r_star, verdict, monkeypatch):
    """C8 (SM-1): contractive if some r <= 128 has S_r < 1; reproduced only if the first such r
    is within a factor 2 of the paper's ~80 steps, else partly."""
    rs = [2 ** j for j in range(8)]
    S_hat = {r: 0.5 if r_star is not None and r >= r_star else 1.5 for r in rs}
    monkeypatch.setattr(experiments, "estimate", lambda cache, S, td, e: S_hat)
    S = settings.resolve(**RESOLVE | {"tasks": ["ptb_char"]})
    c8 = experiments.c8_contraction(None, S, object())
    assert (c8["value"]["r*"], c8["passed"], c8["verdict"]) == (r_star, r_star is not None, verdict)
    reading = experiments.c8_reading(c8["value"])  # the chapter's sentence, whatever r* is
    assert reading.endswith({64: "within a factor 2 of the paper's ≈80",
                             128: "within a factor 2 of the paper's ≈80",
                             8: "10 times sooner than the paper's ≈80",
                             None: "within 128 steps by our estimate"}[r_star])


@pytest.mark.parametrize(("gaps", "passed"), [
    ({5: [0, 1, 2, 3], 10: [0, .1, .9, .8], 40: [0, 0, .01, .5]}, True),   # a dip in one epoch
    ({5: [0, 1, 2, 3], 10: [0, .9, .5, .8], 40: [0, 0, .01, .5]}, False),  # ends below epoch 1
    ({5: [0, 1, 2, 3], 10: [0, .1, .2, .4], 40: [0, 0, .01, .5]}, False)])  # not falling in k
def test_c12_rule_growth_over_training_and_order_in_k(gaps, passed, monkeypatch):
    """C12: the final gap falls strictly in k, and each gap ends above its first-epoch value."""
    S = settings.resolve(**RESOLVE)
    ref = np.zeros((4, 1))
    snaps = {k: ref + np.array(g, dtype=float)[:, None] for k, g in gaps.items()} | {65: ref}
    monkeypatch.setattr(sections, "fit_jobs", lambda cache, S_, tds, jobs, progress: [
        {"snapshots": snaps[w["k"]]} for *_, w in jobs])
    monkeypatch.setattr(plots, "plot_f5", lambda *a, **kw: None)
    run = _Run(None)
    run.save_figure = lambda *a: None
    td = train.TaskData("jsb", None, 88, 88)
    assert sections.f5_weight_gaps(run, S, td)["passed"] == passed


def test_contraction_estimates_listed_c8_first():
    S = settings.resolve(**(RESOLVE | {"tasks": ["jsb", "ptb_char"]}))
    names = list(experiments.estimates(S))
    assert names[0] == "c8" and len(names) == 1 + 4 + 4 + 1
    assert "jsb/lstm/fork (col, bias 10+10)" in names
    assert "c8" not in experiments.estimates(settings.resolve(**RESOLVE))


def test_word_contraction_estimates_c13():
    """C13: the word LSTM's estimate, C8's search; quick one seed, full C9's three (median r*)."""
    S = settings.resolve(**(RESOLVE | {"tasks": ["ptb_word"]}))
    est = experiments.estimates(S)
    assert list(est) == ["c13"] and est["c13"].steps == S.contraction[1] and est["c13"].rs[-1] == 128
    full = settings.resolve(**(RESOLVE | {"profile": "full", "tasks": ["wikitext2"]}))
    keys = [k for k in experiments.estimates(full) if k.startswith("c13")]
    assert keys == ["c13"] + [f"c13/{s}" for s in full.c9_seeds[1:]]
    assert all(e.task == "wikitext2" for k, e in experiments.estimates(full).items() if k in keys)


@pytest.mark.parametrize(("profile", "r_stars", "r_star", "verdict"), [
    ("quick", [64], 64, "partly"), ("quick", [None], None, "not reproduced"),
    ("full", [16, 64, 128], 64, None), ("full", [16, 32, 128], 32, "partly")])
def test_c13_judges_r_star_only_in_full(profile, r_stars, r_star, verdict, monkeypatch):
    """C13 (quick): contracts or not, r* reported; full: the median r* against ≈100 (factor 2)."""
    S = settings.resolve(**RESOLVE | {"profile": profile, "tasks": ["ptb_word"]} |
                         ({"tasks": ["wikitext2"]} if profile == "full" else {}))
    hats = iter([{r: (0.5 if rs is not None and r >= rs else 2.0) for r in (16, 32, 64, 128)}
                 for rs in r_stars])
    monkeypatch.setattr(experiments, "estimate", lambda cache, S_, td, e: next(hats))
    c13 = experiments.c8_contraction(None, S, object(), "c13")
    assert (c13["value"]["r*"], c13["verdict"]) == (r_star, verdict)


def test_initial_norm_leaves_the_global_generator_alone():
    S = settings.resolve(**RESOLVE)
    td = train.load_task("jsb", S)
    state = torch.get_rng_state()
    w0 = train.initial_W_hh_norm(S, td, "rnn")
    assert torch.equal(state, torch.get_rng_state())
    assert 1.0 < w0 < 1.3  # PyTorch's U(-1/sqrt(n), 1/sqrt(n)): about 2/sqrt(3) for large n


# ---------------------------------------------------------------------------- presentation
def test_c5_context_costs():
    gap = {"jsb": {"rnn": -0.16, "lstm": 0.07}, "atis": {"rnn": -1.75, "lstm": -2.45},
           "ptb_char": {"rnn": 0.21, "lstm": 0.38}}
    res = _table1({("atis", "rnn"): 89.0, ("atis", "lstm"): 87.5, ("ptb_char", "rnn"): 2.21})
    ctx = experiments.c5_context(gap, res)
    assert ctx["cost_atis_rnn"] == pytest.approx(1.75)  # F1 lost by the stable model, counted up
    assert ctx["cost_jsb_rnn"] == pytest.approx(-0.16)  # a negative cost: the stable model is better
    assert ctx["c5_atis_err"] == "10% and 25% (RNN, LSTM)"  # errors: 100 - F1, 10 -> 11 and 12.5
    assert ctx["c5_char_u"] == pytest.approx(2.0)
    assert "ATIS +0.0 (RNN) and +0.5 (LSTM) F1 points" in ctx["c5_paper"]
    assert math.isnan(experiments.c5_context({"jsb": gap["jsb"]}, res)["cost_atis_rnn"])  # not run


def test_settings_table_has_one_column_per_task():
    S = settings.resolve(**RESOLVE)
    rows = experiments.settings_rows(S, {"jsb": train.TaskData("jsb", {"train": [None] * 229}, 88, 88)})
    assert all(set(r) == {"setting", "jsb"} for r in rows)
    by = {r["setting"]: r["jsb"] for r in rows}
    assert by["training set"] == "229 chorales" and by["epochs"] == S.configs["jsb"].epochs
    assert {"bptt", "schedule", "dropout", "softmax"} <= set(by)


def test_e2_plot_marks_clipped_values_and_the_fork():
    import matplotlib
    matplotlib.use("Agg")
    fig = plots.plot_e2({"jsb/lstm/stable": {1: 1.0, 4: 1e-3, 16: 0.0},
                       "jsb/lstm/fork (col, bias 10+10)": {1: 1.0, 4: 1.0, 16: 1.0}})
    lines = fig.axes[0].get_lines()
    fork = [ln for ln in lines if ln.get_label().startswith("jsb/lstm/fork")]
    stable = [ln for ln in lines if ln.get_label() == "jsb/lstm/stable"]
    assert fork[0].get_color() not in {ln.get_color() for ln in stable}
    assert any(ln.get_marker() == "v" and list(ln.get_xdata()) == [16] for ln in lines)


def test_survey_margins_of_the_committed_survey():
    """Every headline value of the committed survey is on its verdict's side of its line: C5's ATIS
    and word costs below 5 %, the char RNN's above (C5 partly at every seed), C6's char LSTM above."""
    from rnnbook.paths import SURVEY_DIR
    rows = experiments.survey_margins(SURVEY_DIR / "stable_models.json").records
    assert [r["run"] for r in rows] == [f"seed {s}" for s in (0, 1, 2, 3, 4, 11, 17)]
    for r in rows:
        at, constant = map(float, r["C4 slope, α/t (≤ 0.25) | constant (≥ 0.1)"].split(" | "))
        assert at <= 0.25 and constant >= 0.1
        atis, char, word = map(float, r["C5 relative cost, ATIS (largest) | char RNN | word RNN (< 0.05)"]
                               .split(" | "))
        assert atis < 0.05 and word < 0.05 and char >= 0.05
        assert float(r["C6 char LSTM relative cost (≥ 0.05)"]) >= 0.05
        assert float(r["C9 ‖W‖₂ drop (≥ 0.2)"]) >= 0.2
        assert int(r["C13 r* (paper ≈ 100)"]) <= 128
        assert max(map(float, r["C11 spread / memory effect, RNN | LSTM (< 1)"].split(" | "))) < 1


def test_survey_ranges_quote_the_extremes_over_runs():
    """The ranges the text glues from the committed survey: min to max over its runs (C5, C6, C8 to
    C14)."""
    run = lambda w2, w32, drops, a2, a32, r: {  # noqa: E731
        "C9": {"‖W‖₂ k=2": w2, "‖W‖₂ k=32": w32, "‖W‖₂ drop per seed": drops,
               "NLL(stable) − NLL(unstable), k=2": a2, "NLL(stable) − NLL(unstable), k=32": a32},
        "C8": {"r*": r}, "C6": {"char RNN gap (bpc)": 0.2, "ptb_char LSTM relative cost": 0.17,
                                "ptb_char RNN relative cost": 0.1},
        "C5": {"jsb/rnn cost (nats)": -0.1, "jsb/lstm cost (nats)": 0.05, "jsb memory effect (nats)": 0.1},
        "C10": {"unstable RNN g(20)/g(1)": 4e-6, "control, LSTM with its forget gate shut: g(20)/g(1)": 3e-12,
                "at initialisation: LSTM g(20)/g(1)": 5e-5, "at initialisation: RNN g(20)/g(1)": 3e-7},
        "C11": {"unstable RNN": 0.05, "unstable LSTM": 0.02, "memory effect (nats)": 0.1 * r / 8},
        "C12": {f"RNN first rise / later growth, k={k}": x for k, x in ((5, 1.0), (10, 0.3), (40, 1e-5))}
        | {"RNN control (reference drift): first rise / later growth": 3.2},
        "C14": {"r*": r // 4, "Ŝ_r": {"1": 1.2, "4": 0.9 + r / 160, "16": 0.6},
                "control Ŝ_r (fork LSTM)": {"16": 1.05, "64": 1.1}}}
    out = experiments.survey_ranges({"seed 0": run(3.4, 2.9, [0.3, 0.7], -0.04, -0.2, 16),
                                     "seed 1": run(3.3, 2.8, [0.5], 0.02, 0.1, 8) | {"C13": {"r*": 64}}})
    assert out["c9_mean_drop"] == "0.50 to 0.50" and out["c9_seed_drop"] == "0.30 to 0.70"
    assert out["c9_runs"] == "3" and out["c9_adv2"] == "-0.040 to +0.020"
    assert out["c9_adv32_won"] == "1 of 2" and out["char_rnn_gap"] == "0.200 to 0.200"
    assert (out["c8_r"], out["c8_factor"]) == ("8 to 16", "5 to 10")
    assert out["c13_r"] == "64 to 64"  # runs made before C13 are left out
    assert (out["c5_jsb_rnn"], out["c5_jsb_lstm"]) == ("-0.10 to -0.10", "0.50 to 0.50")
    assert out["c6_lstm_over_rnn"] == "1.7 to 1.7"
    assert out["c10_ctrl20"] == "3e-12 to 3e-12" and out["c11_frac"] == "0.50"  # seed 1: 0.05 / 0.1
    assert (out["c12_k5"], out["c12_k40"], out["c12_ctrl"]) == ("1.00 to 1.00", "1e-05", "3.2 to 3.2")
    assert out["c14_rstar"] == "2 in 1 run, 4 in 1 (seed 0, where Ŝ at r = 1 is 1.20)"


# ---------------------------------------------------------------------------- the claims' records (issue 42)
@pytest.mark.parametrize(("verdict", "passed", "reason"), [
    (None, True, None), ("reproduced", True, None), (None, False, "differs"),
    ("partly", True, "differs"), ("not reproduced", False, "differs"), ("inconclusive", False, "not-run")])
def test_evidence_reason_follows_the_verdict(verdict, passed, reason):
    assert experiments.evidence_reason(verdict, passed) == reason


def test_evidence_records_are_valid_claims(tmp_path):
    """The chapter's evidence strings are accepted by the claim schema, for a real and a missing
    task, and C5's names each task with its unit."""
    from rnnbook.claims import Claims
    c5 = {"jsb/rnn cost (nats)": 0.17, "jsb/lstm cost (nats)": -0.07, "jsb memory effect (nats)": 0.16,
          "atis/rnn relative cost": 0.02, "ptb_char/rnn relative cost": 0.085,
          "ptb_word/rnn relative cost": -0.03}
    text = experiments.c5_ours(c5)
    assert "ATIS RNN +2.0 %, PTB characters RNN +8.5 %, PTB words RNN -3.0 %" in text
    assert "JSB cost RNN +0.170, LSTM -0.070 nats against a memory effect of 0.160 nats" in text
    claims = Claims(tmp_path / "claims.json")
    claims.add("C5", "s", "§4.2", c5, "t", True, kind="evidence", paper="§4.2", ours=text,
               reason=experiments.evidence_reason(None, True))
    claims.add("C9", "s", "§4.3", "jsb not in tasks", "t", False, "inconclusive", kind="evidence",
               paper="§4.3", ours=experiments.c9_ours("jsb not in tasks"),
               reason=experiments.evidence_reason("inconclusive", False))
    assert [c.reason for c in claims.items] == [None, "not-run"]


def test_findings_name_only_figures_and_claims_of_the_chapter():
    from rnnbook.report import chapter_report
    report = chapter_report("stable_models")
    names = {n for f in report.FINDINGS for n in f.names}
    assert names <= {f"F{i}" for i in range(2, 9)} | {"E1", "E2"} | {
        "C1", "C1-train", "C2-grad", "C10-vanish", *(f"C{i}" for i in range(2, 17))}


# ---------------------------------------------------------------------------- C10's control, C12's shape, C14 (issue 44)
def test_c10_ordering_counts_only_with_its_control_refused():
    """C10 passes if the LSTM decays more slowly than the RNN at i = 20 and 40 and the control (the
    LSTM with its forget gate shut) does not; C10-vanish is g(40)/g(1) < 1e-2 for both."""
    rnn, lstm = {20: 1e-6, 40: 1e-11}, {20: 1e-4, 40: 1e-7}
    init = {"rnn": rnn, "lstm": lstm}
    ratio = {"unstable RNN": rnn, "unstable LSTM": lstm}
    ok = experiments.c10_check(ratio, {20: 1e-11, 40: 1e-23}, init)
    assert ok["passed"] and ok["vanish"] and ok["value"]["control refused"]
    assert "forget gate shut: 1e-11, 1e-23" in experiments.c10_ours(ok["value"], "ptb_char")
    assert not experiments.c10_check(ratio, {20: 1e-5, 40: 1e-10}, init)["passed"]  # control ordered
    swapped = {"unstable RNN": lstm, "unstable LSTM": rnn}
    assert not experiments.c10_check(swapped, {20: 1e-11, 40: 1e-23}, init)["passed"]
    assert not experiments.c10_check({"unstable RNN": rnn, "unstable LSTM": {20: .5, 40: .1}},
                                     {20: 1e-11, 40: 1e-23}, init)["vanish"]
    assert experiments.decay_ratios(np.array([2.0] + [1.0] + [0.5] * 39)) == {20: .5, 40: .5}


def test_forget_gate_shut_cuts_the_cell_path_and_leaves_the_net_alone():
    """The control's LSTM forgets its cell state in one step (f ≈ 0), the original does not."""
    cfg = settings.QUICK["ptb_char"]
    net = models.make_net("lstm", dataclasses.replace(cfg, hidden=16, emb=8), 20, 20, 0.0, 0)
    before = {n: p.clone() for n, p in net.state_dict().items()}
    shut = experiments.forget_gate_shut(net)
    assert all(torch.equal(before[n], p) for n, p in net.state_dict().items())
    torch.manual_seed(1)
    h, c1, c2, x = torch.randn(16), torch.randn(16), torch.randn(16), torch.randn(8)

    def cell_change(n) -> float:  # how much the next cell state depends on the previous one
        phi, project, _ = train.cell_map(n)
        a, b = (phi(torch.cat([h, c]), project(x)) for c in (c1, c2))
        return float((a[16:] - b[16:]).norm() / (c1 - c2).norm())
    assert cell_change(shut) < 1e-3 < 0.1 < cell_change(net)


def test_initial_net_is_trainings_start_and_leaves_the_generator_alone():
    S, td = settings.resolve(**RESOLVE), train.TaskData("jsb", None, 88, 88)
    state = torch.random.get_rng_state()
    net = experiments.initial_net(S, td, "rnn")
    assert torch.equal(state, torch.random.get_rng_state())
    assert net.W_hh_norm() == pytest.approx(train.initial_W_hh_norm(S, td, "rnn"))


@pytest.mark.parametrize(("g", "shape"), [
    ([0, 3, 4, 5], True),      # rises, then grows slowly (the paper's Fig. 5)
    ([0, 1, 2, 3], False),     # linear: the line
    ([0, .1, .5, 2], False),   # grows faster late (ours)
    ([0, 3, 3, 3], False)])    # rises, then stops
def test_fig5_shape(g, shape):
    assert experiments.fig5_shape(g) == shape


@pytest.mark.parametrize(("gaps", "drift", "passed", "verdict"), [
    ({5: [0, 3, 4, 5], 10: [0, 2, 2.5, 3], 40: [0, 1, 1.2, 1.4]}, [0, 5, 6, 7], True, None),
    ({5: [0, 1, 2, 3], 10: [0, .1, .9, 1.2], 40: [0, 0, .01, .5]}, [0, 5, 6, 7], True, "partly"),
    ({5: [0, 3, 4, 5], 10: [0, 2, 2.5, 3], 40: [0, 1, 1.2, 1.4]}, [0, 1, 2, 3], True, "partly"),
    ({5: [0, 1, 1.2, 1.4], 10: [0, 2, 2.5, 3], 40: [0, 3, 4, 5]}, [0, 5, 6, 7], False, "partly"),
    ({5: [0, 1, 2, 3], 10: [0, .1, .9, 3.5], 40: [0, 0, .01, .5]}, [0, 5, 6, 7], False,
     "not reproduced")])
def test_c12_judges_the_ordering_and_fig5s_shape(gaps, drift, passed, verdict):
    """C12: the check is the ordering in k (and growth past epoch 1); reproduced only if every gap
    also has Fig. 5's shape and the control (the reference's drift) has it too."""
    S = settings.resolve(**RESOLVE)
    c12 = experiments.c12_check({"rnn": gaps}, {"rnn": drift}, S)
    assert (c12["passed"], c12["verdict"]) == (passed, verdict)
    text = experiments.c12_ours(c12["value"], S)
    assert "first-epoch rise / later growth per epoch" in text and "reference's drift" in text


def _S_hat(r_star: int | None) -> dict[int, float]:
    """E2's estimates on the grid 1, 4, 16, 64 with the first value below 1 at ``r_star``."""
    return {r: 0.5 if r_star is not None and r >= r_star else 1.1 for r in (1, 4, 16, 64)}


@pytest.mark.parametrize(("model", "fork", "constraint", "passed", "verdict"), [
    (16, None, "row", True, "partly"),            # contracts by 2 log2 d, the control does not
    (4, 64, "row", True, "partly"),               # the control contracts only at d/2
    (64, None, "row", False, "not reproduced"),   # contracts only at d/2
    (4, 4, "row", False, "not reproduced"),       # the control contracts as well: decides nothing
    (4, None, "col_fork", False, "inconclusive")])
def test_c14_prop2_rule_with_the_forks_lstm_as_control(model, fork, constraint, passed, verdict):
    S = settings.resolve(**RESOLVE | {"lstm_constraint": constraint})
    S_hat = {"jsb/lstm/stable": _S_hat(model), experiments.FORK_NAME: _S_hat(fork),
             "ptb_char/lstm/stable": _S_hat(1)}
    c14 = experiments.c14_check(S, S_hat)
    assert (c14["passed"], c14["verdict"]) == (passed, verdict)
    if verdict != "inconclusive":
        assert c14["value"]["r bound"] == 16 and c14["value"]["r*"] == model
        assert "(bound 16)" in experiments.c14_ours(c14["value"])


def test_prop2_bound_is_the_grid_step_above_2_log2_d():
    rs = [1, 4, 16, 64]
    assert [experiments.prop2_r(d, rs) for d in (8, 128, 256, 1024, 10 ** 12)] == [16, 16, 16, 64, 64]


def test_training_runs_are_pieces_of_their_own():
    """Issue 47: every training run's summary and weights (``<task>-<cell>[-weights]``) is a piece
    keyed by train.py and what it imports, not by experiments.py, so that a change to how the chapter
    judges its runs keeps the paper-scale training."""
    from rnnbook import paths
    from rnnbook.stable_models.settings import CELLS, TASKS
    names = {f"{t}-{c}" for t in TASKS for c in CELLS}
    assert set(train.PIECES) == names | {n + train.WEIGHTS for n in names}
    assert train.fit_key(settings.resolve("quick", "cpu", 0, ["jsb"], None, None, None, None, 0.0,
                                          "row", None), "jsb", "rnn", False, 0, {})[0] in names
    used = paths.imported_files(paths.LIB_DIR / "stable_models" / "train.py")
    assert not {paths.LIB_DIR / "stable_models" / m for m in ("experiments.py", "theory.py")} & used
    assert set(paths.piece_versions("stable_models").values()) != {paths.results_version("stable_models")}


def test_train_all_plans_its_runs_per_piece(monkeypatch, tmp_path):
    """Issue 47: the training runs are planned per piece name, so ``status`` says what is left."""
    from rnnbook import cache as cache_mod, paths
    S = settings.resolve(**(RESOLVE | {"tasks": ["jsb", "atis"]}))
    monkeypatch.setattr(experiments, "prefit", lambda *a, **kw: None)
    code = paths.results_version("stable_models")
    c = cache_mod.Cache(tmp_path, code)
    experiments.train_all(c, S)
    plans = {p.name: p for p in cache_mod.progress(tmp_path, code, c.pieces)}
    assert set(plans) == {"jsb-rnn", "jsb-lstm", "atis-rnn", "atis-lstm"}
    assert all(p.current and p.done == 0 for p in plans.values())
    assert plans["atis-rnn"].total == 2 * len(S.seeds)  # stable and unstable, every seed


def test_committed_table1_reads_the_tasks_whose_runs_are_all_committed(monkeypatch, tmp_path):
    """Issue 47: Table 1 at the paper's sizes is shown from the committed pieces of the full run, a
    task only when every model and seed of it is there."""
    from rnnbook import cache as cache_mod, paths
    monkeypatch.setattr(paths, "FULL_RESULTS_DIR", tmp_path)
    S = settings.resolve(**(RESOLVE | {"tasks": ["jsb", "atis"], "n_seeds": 2}))
    c = cache_mod.Cache(tmp_path / "stable_models" / "cache", paths.results_version("stable_models"))
    summary = {"test": np.array(8.5), "w_norms": np.array([2.0, 1.5]), "cpu_s": np.array(1.0)}
    jobs = [(t, cell, s, seed) for t in S.tasks for cell, s in experiments.MODELS for seed in S.seeds]
    for job in jobs[:-1]:  # ATIS's last run missing
        c.put(*train.fit_key(S, *job, {}), summary)
    res = experiments.committed_table1(S)
    assert set(res) == {("jsb", cell, s) for cell, s in experiments.MODELS}
    rows = experiments.table1_rows(res, S)
    assert [r["task"] for r in rows] == ["jsb"] * 4 and rows[0]["ours"] == "8.50 ± 0.00"
    c.put(*train.fit_key(S, *jobs[-1], {}), summary)
    assert len(experiments.committed_table1(S)) == 8
