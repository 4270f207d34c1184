"""Training and stability diagnostics of the stable-models chapter (Miller & Hardt 2019, §3-§4).

Training loops for the sequence tasks (JSB, ATIS) and the language models (PTB, WikiText-2),
optionally as depth-k truncated models (§3.1); the gradient-decay probe of Fig. 3; the data-dependent
contraction estimate :math:`\\hat S_r` (§4.3); and :func:`fit`, one training run through the results
cache, run two at a time in worker processes (:func:`prefit`).
"""
from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from rnnbook.stable_models import datasets
from rnnbook.stable_models.models import (Schedule, Trained, constraint_of, flat_weights, make_net,
                                          sgd_step)
from rnnbook.stable_models.settings import TaskConfig

if TYPE_CHECKING:
    from rnnbook.stable_models.models import Net
    from rnnbook.stable_models.settings import Settings


def initial_W_hh_norm(S: Settings, td: TaskData, cell: str) -> float:
    """E1's starting point: :math:`\\|W_{hh}\\|_2` of a freshly initialised model of ``td``'s
    task, drawn without touching the global random generator."""
    with torch.random.fork_rng():
        return make_net(cell, S.configs[td.task], td.n_in, td.n_out, S.lstm_forget_bias,
                        S.seeds[0]).W_hh_norm()


# ============================================================================ sequence tasks
def pad_batch(xs: list[torch.Tensor], ys: list[torch.Tensor]):
    """Pad a batch of sequences (batch-first) and return the mask of real steps."""
    x, y = pad_sequence(xs, batch_first=True), pad_sequence(ys, batch_first=True)
    mask = pad_sequence([torch.ones(len(a)) for a in xs], batch_first=True)
    return x, y, mask


def jsb_pairs(seqs: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """x = seq[:-1], y = seq[1:] (spec §7)."""
    return [s[:-1] for s in seqs], [s[1:] for s in seqs]


def seq_loss(task: str, logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor
             ) -> torch.Tensor:
    """Training loss per real step: BCE summed over 88 keys (JSB, per-frame mean) or token CE."""
    if task == "jsb":
        frame = F.binary_cross_entropy_with_logits(logits, y, reduction="none").sum(-1)
    else:
        frame = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")
    return (frame * mask).sum() / mask.sum()


def evaluate_jsb(net: Net, seqs: list[torch.Tensor], k: int | None = None) -> float:
    """Test NLL per frame (nats), all chorales padded into one batch."""
    with torch.no_grad():
        x, y, mask = pad_batch(*jsb_pairs(seqs))
        total, n = datasets.jsb_nll(net(x, k), y, mask)
    return total / n


def evaluate_atis(net: Net, data: datasets.Atis, split: str = "test", k: int | None = None) -> float:
    """conlleval slot F1 (%) of the argmax tags."""
    words = [torch.tensor(w) for w in data.words[split]]
    tags = [torch.tensor(t) for t in data.tags[split]]
    with torch.no_grad():
        x, _, _ = pad_batch(words, tags)
        pred = net(x, k).argmax(-1)
    name = data.tag_vocab
    gold = [[name[i] for i in t.tolist()] for t in tags]
    guess = [[name[i] for i in p[:len(t)].tolist()] for p, t in zip(pred, tags)]
    return datasets.conlleval_f1(gold, guess)


def train_sequences(task: str, net: Net, cfg: TaskConfig, data, constraint: str | None,
                    seed: int, k: int | None = None, snapshots: bool = False,
                    log: Callable[[str], None] | None = None) -> Trained:
    """(Projected) SGD on JSB or ATIS: shuffled minibatches of ``cfg.batch`` padded sequences,
    loss per real step, clipping, then the projection after every step (spec §3)."""
    if task == "jsb":
        xs, ys = jsb_pairs(data["train"])
        evaluate = lambda split: evaluate_jsb(net, data[split], k)  # noqa: E731
    else:
        xs = [torch.tensor(w) for w in data.words["train"]]
        ys = [torch.tensor(t) for t in data.tags["train"]]
        evaluate = lambda split: evaluate_atis(net, data, split, k)  # noqa: E731
    opt = torch.optim.SGD(net.parameters(), lr=cfg.lr)
    sched = Schedule(cfg.schedule, opt, lower_is_better=task == "jsb")
    gen = torch.Generator().manual_seed(seed)
    c1, norms, snaps = 0.0, [], [flat_weights(net)] if snapshots else []
    for epoch in range(cfg.epochs):
        order = torch.randperm(len(xs), generator=gen).tolist()
        for s in range(0, len(order), cfg.batch):
            idx = order[s:s + cfg.batch]
            x, y, mask = pad_batch([xs[i] for i in idx], [ys[i] for i in idx])
            c1 = max(c1, sgd_step(net, opt, seq_loss(task, net(x, k), y, mask), cfg.clip,
                                  constraint))
        norms.append(net.W_hh_norm())
        if snapshots:
            snaps.append(flat_weights(net))
        if cfg.schedule and sched.update(net, evaluate("valid"), epoch):
            break
    sched.restore(net)
    c1 = max(norms) if constraint == "spectral" else c1  # the projected RNN's logged ‖W‖₂
    return Trained(net, evaluate("test"), norms, c1, snaps)


# ============================================================================ language models
def batchify(ids: torch.Tensor, batch: int) -> torch.Tensor:
    """The token stream cut into ``batch`` parallel streams (batch x L)."""
    L = len(ids) // batch
    return ids[:L * batch].view(batch, L)


def lm_chunks(stream: torch.Tensor, bptt: int, k: int | None):
    """(input, target, context) chunks; a truncated model gets the ``k-1`` previous inputs."""
    L = stream.shape[1]
    for s in range(0, L - 1, bptt):
        n = min(bptt, L - 1 - s)
        ctx = None
        if k is not None:
            lo = max(0, s - k + 1)
            ctx = stream[:, lo:s]
        yield stream[:, s:s + n], stream[:, s + 1:s + 1 + n], ctx


def detach(state):
    if state is None:
        return None
    return tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()


def evaluate_lm(net: Net, ids: torch.Tensor, bptt: int, k: int | None = None,
                batch: int = 10) -> tuple[float, int]:
    """Total NLL (nats) and token count of a split, eval batch 10, state carried (spec §7)."""
    net.eval()
    stream, total, n, state = batchify(ids, batch).to(next(net.parameters()).device), 0.0, 0, None
    with torch.no_grad():
        for x, y, ctx in lm_chunks(stream, bptt, k):
            h, state = net.forward_state(x, state, k, ctx)
            total += float(net.token_nll(h, y))
            n += y.numel()
    net.train()
    return total, n


def train_lm(task: str, net: Net, cfg: TaskConfig, corpus: datasets.Corpus, constraint: str | None,
             k: int | None = None, device: torch.device = torch.device("cpu"),
             log_every: int = 50, snapshots: bool = False) -> Trained:
    """Truncated-BPTT (projected) SGD over the training stream, state carried between chunks;
    ``‖W_hh‖₂`` is logged every ``log_every`` steps (E1), :math:`W_{hh}` after every epoch if
    ``snapshots`` (F5). Metric: bpc (char) or ppl (words)."""
    net.to(device)
    opt = torch.optim.SGD(net.parameters(), lr=cfg.lr)
    sched = Schedule(cfg.schedule, opt, lower_is_better=True)
    stream = batchify(corpus.ids["train"], cfg.batch).to(device)
    metric = datasets.bpc if task == "ptb_char" else datasets.ppl
    c1, norms, step = 0.0, [], 0
    snaps = [flat_weights(net, recurrent_only=True)] if snapshots else []
    for epoch in range(cfg.epochs):
        state = None
        for x, y, ctx in lm_chunks(stream, cfg.bptt, k):
            h, state = net.forward_state(x, detach(state), k, ctx)
            loss = net.token_nll(h, y) / y.numel()
            c1 = max(c1, sgd_step(net, opt, loss, cfg.clip, constraint))
            step += 1
            if step % log_every == 0:
                norms.append(net.W_hh_norm())
        if snapshots:
            snaps.append(flat_weights(net, recurrent_only=True))
        if cfg.schedule and sched.update(net, metric(*evaluate_lm(net, corpus.ids["valid"],
                                                                  cfg.bptt, k)), epoch):
            break
    sched.restore(net)
    norms.append(net.W_hh_norm())
    c1 = max(norms) if constraint == "spectral" else c1
    return Trained(net, metric(*evaluate_lm(net, corpus.ids["test"], cfg.bptt, k)), norms, c1,
                   snaps)


# ============================================================================ Fig. 3: gradient decay
def gradient_decay(net: Net, ids: torch.Tensor, n_windows: int = 64, length: int = 101,
                   seed: int = 0) -> np.ndarray:
    """Fig. 3: :math:`g(i) = \\mathrm{mean}\\,\\|\\partial \\ell_t / \\partial x_{t-i}\\|` for
    i = 0..length-1, with :math:`\\ell_t` the loss of the window's last step and :math:`x` the
    embedded inputs; float64 (flushing would zero the smallest gradients)."""
    net64 = copy.deepcopy(net).double().cpu().eval()
    gen = torch.Generator().manual_seed(seed)
    start = torch.randint(0, len(ids) - length - 1, (n_windows,), generator=gen)
    win = torch.stack([ids[s:s + length + 1] for s in start.tolist()])
    x = net64.embed(win[:, :-1]).detach().requires_grad_()
    out, _ = net64.rnn(x)
    loss = net64.token_nll(out[:, -1], win[:, -1])
    (g,) = torch.autograd.grad(loss, x)
    return g.norm(dim=-1).mean(0).flip(0).numpy()  # index i = distance back from t


# ============================================================================ §4.3: contraction
def cell_map(net: Net) -> tuple[Callable, Callable, int]:
    """:math:`\\phi_w(s, x)` on the full state s (``h``; ``(h, c)`` stacked for the LSTM), from the
    trained weights, as ``phi(s, p)`` of the input part ``p = project(x)`` (:math:`Ux + b`, computed
    once for every step), and the state's dimension."""
    r = net.rnn
    W, U, b = r.weight_hh_l0.detach(), r.weight_ih_l0.detach(), (r.bias_ih_l0 + r.bias_hh_l0).detach()
    H = r.hidden_size

    def project(x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, U, b)
    if net.cell == "rnn":
        return (lambda s, p: torch.tanh(s @ W.T + p)), project, H

    def lstm(s, p):
        h, c = s[..., :H], s[..., H:]
        i, f, z, o = (h @ W.T + p).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(z)
        return torch.cat([torch.sigmoid(o) * torch.tanh(c), c], -1)
    return lstm, project, 2 * H


def reachable_box(net: Net, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-coordinate range of the states the net reaches on the (embedded) data ``x``."""
    phi, project, n = cell_map(net)
    with torch.no_grad():
        p, s, states = project(x), x.new_zeros(x.shape[0], n), []
        for t in range(x.shape[1]):
            s = phi(s, p[:, t])
            states.append(s)
        S = torch.cat(states)
    return S.min(0).values, S.max(0).values


def contraction_estimate(net: Net, x: torch.Tensor, rs: list[int], starts: int, steps: int,
                         seed: int = 0, lr: float = 0.05) -> dict[int, float]:
    """§4.3 data-dependent stability: :math:`\\hat S_r = \\max \\|\\phi^r(s, x) - \\phi^r(s', x)\\|
    / \\|s - s'\\|` by gradient ascent (Adam on :math:`\\log S`) over pairs of states in the
    reachable box, ``starts`` random starts × ``steps`` steps, inputs :math:`x_{1..r}` taken from
    the data (``x``: windows × T × m, embedded). A lower bound on the true constant."""
    phi, project, n = cell_map(net)
    lo, hi = reachable_box(net, x)
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for r in rs:
        pick = torch.randint(0, x.shape[0], (starts,), generator=gen)
        t0 = torch.randint(0, x.shape[1] - r + 1, (starts,), generator=gen)
        xr = torch.stack([x[p, t:t + r] for p, t in zip(pick.tolist(), t0.tolist())])
        pr = project(torch.cat([xr, xr]))  # a pair's two states see the same inputs: one batch
        s1 = (lo + (hi - lo) * torch.rand(starts, n, generator=gen)).requires_grad_()
        s2 = (lo + (hi - lo) * torch.rand(starts, n, generator=gen)).requires_grad_()
        opt = torch.optim.Adam([s1, s2], lr=lr * float((hi - lo).mean()))
        best = 0.0
        for _ in range(steps):
            z = torch.cat([s1, s2])
            for t in range(r):
                z = phi(z, pr[:, t])
            a, b = z.chunk(2)
            logS = torch.log((a - b).norm(dim=-1) + 1e-300) - torch.log((s1 - s2).norm(dim=-1))
            best = max(best, float(logS.detach().max().exp()))
            opt.zero_grad()
            (-logS.sum()).backward()
            opt.step()
            with torch.no_grad():
                s1.copy_(torch.maximum(torch.minimum(s1, hi), lo))
                s2.copy_(torch.maximum(torch.minimum(s2, hi), lo))
        out[r] = best
    return out


def smallest_contracting_r(S_hat: dict[int, float]) -> int | None:
    """C8: the smallest r with :math:`\\hat S_r < 1`, if any."""
    return min((r for r, s in S_hat.items() if s < 1), default=None)


def log_slope(i: np.ndarray, g: np.ndarray) -> float:
    """Per-step decay factor of g fitted in log space (display only)."""
    return float(math.exp(np.polyfit(i, np.log(g), 1)[0]))


# ============================================================================ cached runs
@dataclass
class TaskData:
    """A task's data with its input and output sizes."""

    task: str
    data: object
    n_in: int
    n_out: int


def load_task(task: str, S: Settings) -> TaskData:
    """The data of ``task`` (spec §7), LM training prefix as configured."""
    if task == "jsb":
        return TaskData(task, datasets.load_jsb(S.data_dir), 88, 88)
    if task == "atis":
        d = datasets.load_atis(S.data_dir)
        return TaskData(task, d, len(d.word_vocab), len(d.tag_vocab))
    c = datasets.load_corpus(task, S.data_dir, S.configs[task].max_train_tokens)
    return TaskData(task, c, len(c.vocab), len(c.vocab))


def fit_key(S: Settings, task: str, cell: str, stable: bool, seed: int, kwargs: dict
            ) -> tuple[str, dict]:
    """The cache name and configuration of one training run."""
    epochs, constraint = kwargs.get("epochs"), kwargs.get("constraint")
    cfg = S.configs[task] if epochs is None else replace(S.configs[task], epochs=epochs)
    if kwargs.get("snapshots"):  # F5: a constant step size and no dropout, so that runs differ
        cfg = replace(cfg, schedule=None, dropout=0.0)  # in k alone (our choice)
    fb = kwargs.get("forget_bias")
    return f"{task}-{cell}", {
        "task": task, "cell": cell, "k": kwargs.get("k"), "seed": seed,
        "constraint": constraint or constraint_of(cell, stable, S.lstm_constraint),
        "forget_bias": S.lstm_forget_bias if fb is None else fb, "cfg": cfg.__dict__,
        "snapshots": kwargs.get("snapshots", False)}


def fit(cache, S: Settings, td: TaskData, cell: str, stable: bool, seed: int,
        k: int | None = None, constraint: str | None = None, forget_bias: float | None = None,
        epochs: int | None = None, snapshots: bool = False, threads: int | None = None
        ) -> tuple[dict, Net]:
    """Train one model (or load it from ``cache``, keyed by task, model, constraint, k, seed and
    settings, so the full profile resumes) and return its summary and the trained net."""
    name, config = fit_key(S, td.task, cell, stable, seed, dict(
        k=k, constraint=constraint, forget_bias=forget_bias, epochs=epochs, snapshots=snapshots))
    cfg = TaskConfig(**config["cfg"])
    constraint, fb = config["constraint"], config["forget_bias"]

    def compute() -> dict:
        wall, cpu = time.perf_counter(), time.process_time()
        lm = cfg.bptt > 0
        torch.set_num_threads(threads or (2 if lm else 1))  # softmax-bound LM: 2 threads
        net = make_net(cell, cfg, td.n_in, td.n_out, fb, seed)
        if lm:
            tr = train_lm(td.task, net, cfg, td.data, constraint, k, S.lm_device,
                          snapshots=snapshots)
        else:
            tr = train_sequences(td.task, net, cfg, td.data, constraint, seed, k, snapshots)
        out = tr.summary() | {f"p.{n}": v.cpu().numpy() for n, v in net.state_dict().items()}
        out |= {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
        if snapshots:
            out["snapshots"] = torch.stack(tr.snapshots).numpy()
        return out

    res = cache.cached(name, config, compute)
    net = make_net(cell, cfg, td.n_in, td.n_out, fb, seed)
    net.load_state_dict({n[2:]: torch.from_numpy(np.asarray(v)) for n, v in res.items()
                         if n.startswith("p.")})
    return {n: v for n, v in res.items() if not n.startswith("p.")}, net.eval()


Job = tuple  # (task, cell, stable, seed, fit keyword arguments)
_WORKER_DATA: dict[str, TaskData] = {}


def _fit_job(args: tuple) -> None:
    """Worker of :func:`prefit`: train one model into the shared cache."""
    import rnnbook.cache as rc
    cache_dir, version, S, (task, cell, stable, seed, kwargs) = args
    fit(rc.Cache(cache_dir, version), S, worker_task(task, S), cell, stable, seed, threads=1,
        **kwargs)  # keyed by the parent's code version, even if lib/ changed since


def worker_task(task: str, S: Settings) -> TaskData:
    """A worker process's data of ``task``, loaded once; one thread, subnormals flushed."""
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    if task not in _WORKER_DATA:
        _WORKER_DATA[task] = load_task(task, S)
    return _WORKER_DATA[task]


def in_workers(fn: Callable[[tuple], None], args: list[tuple], workers: int,
               progress=lambda it, **kw: it) -> None:
    """``fn`` over ``args`` in ``workers`` processes, in order (two cores: two at a time)."""
    import concurrent.futures as cf
    import multiprocessing as mp
    with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("forkserver")) as ex:
        for _ in progress(ex.map(fn, args), total=len(args)):
            pass


def prefit(cache, S: Settings, jobs: list[Job], workers: int = 2,
           progress=lambda it, **kw: it) -> None:
    """Train independent models in ``workers`` processes, one thread each (two cores, two
    models at a time), longest first; each writes its cache entry, which :func:`fit` then loads."""
    todo = sorted((j for j in jobs if not cache.path(*fit_key(S, *j)).exists()),
                  key=lambda j: -job_cost(S, j))  # longest first: both workers stay busy
    if workers > 1 and len(todo) > 1:
        in_workers(_fit_job, [(cache.directory, cache.code, S, j) for j in todo], workers,
                   progress)


def fit_jobs(cache, S: Settings, tds: Mapping[str, TaskData], jobs: list[Job],
             progress=lambda it, **kw: it) -> list[tuple[dict, Net]]:
    """Train ``jobs`` in the workers (:func:`prefit`), then load each as :func:`fit` returns it
    (summary, net), in the order of ``jobs``; ``tds``: the data of every task the jobs train."""
    prefit(cache, S, jobs, S.workers, progress)
    return [fit(cache, S, tds[t], c, s, seed, **w) for t, c, s, seed, w in jobs]


def job_cost(S: Settings, job: Job) -> float:
    """A rough relative CPU cost of a training job, to start the longest first."""
    task, cell, stable, seed, kwargs = job
    per_epoch = {"ptb_word": 20.0, "ptb_char": 35.0, "wikitext2": 60.0, "atis": 4.0, "jsb": 1.7}
    epochs = kwargs.get("epochs") or S.configs[task].epochs
    return per_epoch[task] * epochs * (1 + (kwargs.get("k") or 0) / (8 if cell == "lstm" else 16))


def embedded_windows(net: Net, td: TaskData, n: int = 64, length: int = 128, seed: int = 0
                     ) -> torch.Tensor:
    """Data inputs for the contraction estimate: ``n`` windows of the test data (JSB: the test
    chorales joined end to end; LM: the test stream), embedded (n x length x m)."""
    stream = torch.cat(td.data["test"]) if td.task == "jsb" else td.data.ids["test"]
    gen = torch.Generator().manual_seed(seed)
    start = torch.randint(0, len(stream) - length, (n,), generator=gen).tolist()
    with torch.no_grad():
        return net.embed(torch.stack([stream[s:s + length] for s in start]))


def weight_gaps(snaps: dict[int, np.ndarray], ref: int) -> dict[int, list[float]]:
    """F5: :math:`\\|w_k - w_{ref}\\|_2` after each epoch (all parameters flattened)."""
    return {k: np.linalg.norm(s - snaps[ref], axis=1).tolist() for k, s in snaps.items()
            if k != ref}
