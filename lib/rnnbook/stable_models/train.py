"""Training runs and stability diagnostics of the stable-models chapter (Miller & Hardt 2019, §3-§4).

:func:`fit`, one training run through the results cache, and :func:`prefit`, which groups a
sweep's runs into stacks (:mod:`rnnbook.stable_models.stack`: one batched program per task, cell
and configuration) and trains the stacks two at a time in worker processes; the gradient-decay
probe of Fig. 3 and the data-dependent contraction estimate :math:`\\hat S_r` (§4.3), both on
training-set inputs (App. C).
"""
from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from rnnbook import engine
from rnnbook.stable_models import datasets
from rnnbook.stable_models.models import constraint_of, make_net
from rnnbook.stable_models.settings import TaskConfig
from rnnbook.stable_models.stack import Member, train_members

if TYPE_CHECKING:
    from rnnbook.stable_models.models import Net
    from rnnbook.stable_models.settings import Settings

# The results-cache pieces computed here (:func:`fit`'s runs, ``<task>-<cell>``, and their weights,
# ``<task>-<cell>-weights``; TASKS x CELLS of :mod:`~rnnbook.stable_models.settings`): keyed by
# this module's version and those it imports (rnnbook.paths.PIECES), so that a change to how the
# chapter judges or shows them keeps hours of paper-scale training (issue 47).
PIECES = ("jsb-rnn", "jsb-lstm", "atis-rnn", "atis-lstm", "ptb_char-rnn", "ptb_char-lstm",
          "ptb_word-rnn", "ptb_word-lstm", "wikitext2-rnn", "wikitext2-lstm",
          "jsb-rnn-weights", "jsb-lstm-weights", "atis-rnn-weights", "atis-lstm-weights",
          "ptb_char-rnn-weights", "ptb_char-lstm-weights", "ptb_word-rnn-weights",
          "ptb_word-lstm-weights", "wikitext2-rnn-weights", "wikitext2-lstm-weights")


def initial_W_hh_norm(S: Settings, td: TaskData, cell: str) -> float:
    """E1's starting point: :math:`\\|W_{hh}\\|_2` of a freshly initialised model of ``td``'s
    task, drawn without touching the global random generator."""
    with torch.random.fork_rng():
        return make_net(cell, S.configs[td.task], td.n_in, td.n_out, S.lstm_forget_bias,
                        S.seeds[0]).W_hh_norm()


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
    the data (``x``: windows × T × m, embedded). A lower bound on the true constant. Runs on
    ``x``'s device (the net's), with the random starts drawn on the CPU (the same on any device)
    and no host sync inside the ascent."""
    phi, project, n = cell_map(net)
    lo, hi = reachable_box(net, x)
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for r in rs:
        pick = torch.randint(0, x.shape[0], (starts,), generator=gen)
        t0 = torch.randint(0, x.shape[1] - r + 1, (starts,), generator=gen)
        xr = torch.stack([x[p, t:t + r] for p, t in zip(pick.tolist(), t0.tolist())])
        pr = project(torch.cat([xr, xr]))  # a pair's two states see the same inputs: one batch
        s1, s2 = ((lo + (hi - lo) * torch.rand(starts, n, generator=gen).to(x.device))
                  .requires_grad_() for _ in range(2))
        opt = torch.optim.Adam([s1, s2], lr=lr * float((hi - lo).mean()))
        best = torch.tensor(-math.inf, device=x.device)  # max log S over the ascent
        for _ in range(steps):
            z = torch.cat([s1, s2])
            for t in range(r):
                z = phi(z, pr[:, t])
            a, b = z.chunk(2)
            logS = torch.log((a - b).norm(dim=-1) + 1e-300) - torch.log((s1 - s2).norm(dim=-1))
            best = torch.maximum(best, logS.detach().max())
            opt.zero_grad()
            (-logS.sum()).backward()
            opt.step()
            with torch.no_grad():
                s1.copy_(torch.maximum(torch.minimum(s1, hi), lo))
                s2.copy_(torch.maximum(torch.minimum(s2, hi), lo))
        out[r] = max(0.0, float(best.exp()))
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
    """The data of ``task`` (spec §7), LM training prefix as configured; the smoke run's toy sizes
    (:data:`~rnnbook.stable_models.settings.SMOKE`) also cut every split's sequences (JSB, ATIS)
    or the LM's valid and test streams."""
    cfg = S.configs[task]
    n = cfg.max_sequences
    if task == "jsb":
        return TaskData(task, {s: v[:n] for s, v in datasets.load_jsb(S.data_dir).items()}, 88, 88)
    if task == "atis":
        d = datasets.load_atis(S.data_dir)
        d = replace(d, words={s: v[:n] for s, v in d.words.items()},
                    tags={s: v[:n] for s, v in d.tags.items()})
        return TaskData(task, d, len(d.word_vocab), len(d.tag_vocab))
    c = datasets.load_corpus(task, S.data_dir, cfg.max_train_tokens, cfg.max_eval_tokens)
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


def member_of(S: Settings, job: Job) -> tuple[tuple, Member, str, dict]:
    """A job's stack (task, cell, configuration, snapshots, truncation k), its member, and its
    cache name and configuration."""
    task, cell, stable, seed, kwargs = job
    name, config = fit_key(S, task, cell, stable, seed, kwargs)
    m = Member(seed, config["constraint"], config["k"], config["forget_bias"])
    key = (task, cell, json.dumps(config["cfg"], sort_keys=True), config["snapshots"], config["k"])
    return key, m, name, config


WEIGHTS = "-weights"  # the cache name suffix of a run's trained parameters, a piece of their own


def split_weights(res: dict) -> tuple[dict, dict]:
    """A trained member's result (:func:`~rnnbook.stable_models.stack.train_members`) as its
    summary and its parameters (``p.<Net name>``): apart, a full run's summaries stay small enough
    to commit, while WikiText-2's weights take about 180 MB a model (issue 47)."""
    return ({k: v for k, v in res.items() if not k.startswith("p.")},
            {k: v for k, v in res.items() if k.startswith("p.")})


def train_group(cache, S: Settings, td: TaskData, jobs: list[Job]) -> None:
    """Train the jobs of one stack (those not cached yet) as one batched program into ``cache``:
    each run's summary under the stack's name, its parameters under that name + :data:`WEIGHTS`."""
    parts = [member_of(S, j) for j in jobs]
    (task, cell, cfg, snapshots, _), name = parts[0][0], parts[0][2]
    config = TaskConfig(**json.loads(cfg))
    member = {json.dumps(c, sort_keys=True): m for _, m, _, c in parts}

    def compute(configs: list[dict]) -> list[dict]:
        todo = [member[json.dumps(c, sort_keys=True)] for c in configs]
        out = []
        for c, res in zip(configs, train_members(task, cell, config, td.data, td.n_in, td.n_out,
                                                 todo, S.device, snapshots)):
            summary, weights = split_weights(res)
            cache.put(name + WEIGHTS, c, weights)
            out.append(summary)
        return out
    cache.cached_batch(name, [c for *_, c in parts], compute)


def fit(cache, S: Settings, td: TaskData, cell: str, stable: bool, seed: int,
        k: int | None = None, constraint: str | None = None, forget_bias: float | None = None,
        epochs: int | None = None, snapshots: bool = False) -> dict:
    """One model's summary (test metric, :math:`\\|W_{hh}\\|_2` per epoch and at the end, its
    share of the training time, the snapshots if asked), from ``cache`` (keyed by task, model,
    constraint, k, seed and settings, so the full profile resumes); trained alone if not there
    yet. The trained model itself: :func:`trained_net`."""
    job = (td.task, cell, stable, seed, dict(k=k, constraint=constraint, forget_bias=forget_bias,
                                             epochs=epochs, snapshots=snapshots))
    _, _, name, config = member_of(S, job)
    train_group(cache, S, td, [job])
    return dict(cache.get(name, config))


def trained_net(cache, S: Settings, td: TaskData, cell: str, stable: bool, seed: int,
                **kwargs) -> Net:
    """The trained model of :func:`fit`'s run (same arguments), from its parameters' piece. A run
    resumed from committed summaries, whose parameters were too large to commit, trains the model
    again, alone, for them: the same run, up to the float rounding of a batch of other size."""
    fit(cache, S, td, cell, stable, seed, **kwargs)
    job = (td.task, cell, stable, seed, {"snapshots": False} | kwargs)
    _, m, name, config = member_of(S, job)
    cfg = TaskConfig(**config["cfg"])
    weights = cache.get(name + WEIGHTS, config)
    if weights is None:
        start = time.perf_counter()
        (res,) = train_members(td.task, cell, cfg, td.data, td.n_in, td.n_out, [m], S.device,
                               config["snapshots"])
        weights = split_weights(res)[1]
        cache.put(name + WEIGHTS, config, weights, time.perf_counter() - start)
    net = make_net(cell, cfg, td.n_in, td.n_out, m.forget_bias, seed)
    net.load_state_dict({n[2:]: torch.from_numpy(np.asarray(v)) for n, v in weights.items()})
    return net.eval()


Job = tuple  # (task, cell, stable, seed, fit keyword arguments)
_WORKER_DATA: dict[str, TaskData] = {}


def _group_job(args: tuple) -> None:
    """Worker of :func:`prefit`: train one stack into the shared cache, then run the work that
    uses its models (``after``: ``fn(cache, S, td, arg)`` pairs)."""
    import rnnbook.cache as rc
    cache_dir, version, S, jobs, after = args
    cache, td = rc.Cache(cache_dir, version), worker_task(jobs[0][0], S)
    train_group(cache, S, td, jobs)  # keyed by the parent's code version, even if lib/ changed
    for fn, arg in after:
        fn(cache, S, td, arg)


def _stack_done(args: tuple) -> bool:
    """Whether every model of a :func:`_group_job` is in the cache."""
    import rnnbook.cache as rc
    cache_dir, version, S, jobs, _ = args
    cache = rc.Cache(cache_dir, version)
    return all(cache.path(*fit_key(S, *j)).exists() for j in jobs)


def worker_task(task: str, S: Settings) -> TaskData:
    """A worker process's data of ``task``, loaded once; one thread, subnormals flushed."""
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    if task not in _WORKER_DATA:
        _WORKER_DATA[task] = load_task(task, S)
    return _WORKER_DATA[task]


class Workers:
    """Jobs running in worker processes (:func:`start_workers`) while the caller goes on."""

    def __init__(self, executor=None, futures: list | None = None):
        self.executor, self.futures = executor, futures or []

    def wait(self, progress=lambda it, **kw: it) -> None:
        """Show the jobs' progress and return when all have finished (raising a job's error)."""
        import concurrent.futures as cf
        try:
            for f in progress(cf.as_completed(self.futures), total=len(self.futures)):
                f.result()
        finally:
            if self.executor is not None:
                self.executor.shutdown()


def start_workers(fn: Callable[[tuple], None], args: list[tuple], workers: int) -> Workers:
    """``fn`` over ``args`` in ``workers`` processes, started in order (two cores: two at a time)."""
    import concurrent.futures as cf
    import multiprocessing as mp
    ex = cf.ProcessPoolExecutor(workers, mp_context=mp.get_context("forkserver"))
    return Workers(ex, [ex.submit(fn, a) for a in args])


def stacks(S: Settings, jobs: list[Job]) -> list[list[Job]]:
    """The jobs grouped into stacks (:func:`member_of`), duplicates dropped, costliest first."""
    groups: dict[tuple, list[Job]] = {}
    for j in jobs:
        group = groups.setdefault(member_of(S, j)[0], [])
        if j not in group:
            group.append(j)
    return sorted(groups.values(), key=lambda g: -stack_cost(S, g))


def prefit(cache, S: Settings, jobs: list[Job], workers: int = 2,
           progress=lambda it, **kw: it, wait: bool = True,
           after: Callable[[list[Job]], list[tuple]] = lambda group: []) -> Workers | engine.Jobs:
    """Train the jobs not cached yet, grouped into stacks, as jobs where an executor is set
    (:mod:`rnnbook.engine`, one stack a job), else in ``workers`` processes with one
    thread each (two cores: two stacks at a time), costliest first; each stack writes its cache
    entries, which :func:`fit` then loads, and then runs ``after(stack)`` (work on its models, as
    :func:`_group_job` takes it) in the same process. With ``wait=False`` the stacks train while
    the caller goes on, until :meth:`Workers.wait`."""
    todo = [j for j in jobs if not cache.path(*fit_key(S, *j)).exists()]
    groups = stacks(S, todo)
    args = [(cache.directory, cache.code, S, g, after(g)) for g in groups]
    if groups and engine.current().kind != "inline":  # as jobs (rnnbook.engine)
        running: Workers | engine.Jobs = engine.submit(_group_job, args, _stack_done,
                                                       cache.directory / "jobs", label="training")
    elif workers <= 1 or len(groups) <= 1:
        return Workers()
    else:
        running = start_workers(_group_job, args, workers)
    if wait:
        running.wait(progress)
    return running


def fit_jobs(cache, S: Settings, tds: Mapping[str, TaskData], jobs: list[Job],
             progress=lambda it, **kw: it) -> list[dict]:
    """Train ``jobs`` as stacks (:func:`prefit`, or here if one stack), then load each one's
    summary as :func:`fit` returns it, in the order of ``jobs``; ``tds``: the data of every task
    the jobs train."""
    prefit(cache, S, jobs, S.workers, progress)
    for g in stacks(S, [j for j in jobs if not cache.path(*fit_key(S, *j)).exists()]):
        train_group(cache, S, tds[g[0][0]], g)
    return [fit(cache, S, tds[t], c, s, seed, **w) for t, c, s, seed, w in jobs]


def job_cost(S: Settings, job: Job) -> float:
    """A rough relative CPU cost of a training job, to start the longest first."""
    task, cell, stable, seed, kwargs = job
    per_epoch = {"ptb_word": 20.0, "ptb_char": 35.0, "wikitext2": 60.0, "atis": 4.0, "jsb": 1.7}
    epochs = kwargs.get("epochs") or S.configs[task].epochs
    return per_epoch[task] * epochs * (1 + (kwargs.get("k") or 0) / (8 if cell == "lstm" else 16))


def stack_cost(S: Settings, jobs: list[Job]) -> float:
    """A stack's rough cost: its members' (:func:`job_cost`); stacking makes each cheaper, alike."""
    return sum(job_cost(S, j) for j in jobs)


def embedded_windows(net: Net, td: TaskData, n: int = 64, length: int = 128, seed: int = 0
                     ) -> torch.Tensor:
    """Data inputs for the contraction estimate: ``n`` windows of the training data (App. C: the
    paper's estimate uses training-set inputs; JSB: the training chorales joined end to end; LM:
    the training stream), embedded (n x length x m)."""
    stream = torch.cat(td.data["train"]) if td.task == "jsb" else td.data.ids["train"]
    gen = torch.Generator().manual_seed(seed)
    start = torch.randint(0, len(stream) - length, (n,), generator=gen).tolist()
    with torch.no_grad():
        windows = torch.stack([stream[s:s + length] for s in start])
        return net.embed(windows.to(next(net.parameters()).device))


def weight_gaps(snaps: dict[int, np.ndarray], ref: int) -> dict[int, list[float]]:
    """F5: :math:`\\|w_k - w_{ref}\\|_2` after each epoch (all parameters flattened)."""
    return {k: np.linalg.norm(s - snaps[ref], axis=1).tolist() for k, s in snaps.items()
            if k != ref}
