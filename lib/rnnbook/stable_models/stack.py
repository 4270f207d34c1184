"""Many models of the stable-models chapter trained as one program (Miller & Hardt 2019, §3-§4).

A :class:`Stack` holds M one-layer tanh RNNs or LSTMs of one task, size and truncation length
:math:`k` (§3.1) with their parameters stacked on a leading model axis (the parameter names are
:class:`~rnnbook.stable_models.models.Net`'s, so a member's slice loads into a ``Net``). Members
differ in seed (initialisation and data order), constraint (none, §2.2's projection
:math:`\\|W\\|_2 \\le 1`, the LSTM's row or column bounds) and forget-gate bias; every step is
batched matmuls over the members, with each member's own clipping, step size, projection and schedule (App. C: the stable
model keeps the unstable one's hyperparameters). :func:`train_stack` trains the sequence tasks (JSB,
ATIS) and the language models (PTB, WikiText-2) this way.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from rnnbook.stable_models import constraints, datasets
from rnnbook.stable_models.models import Net, Schedule, StackedTanh, make_net
from rnnbook.stable_models.settings import TaskConfig


LSTM_WEIGHTS = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
# Devices whose stacks project by matmuls (constraints.project_spectral_ns); elsewhere one SVD per
# member, so that the CPU's results (the quick profile's verdicts) stay as they were.
MATMUL_PROJECTION = {"cuda"}


@dataclass(frozen=True)
class Member:
    """One model of a stack: its seed, constraint (None, ``"spectral"``, ``"row"``, ``"col_fork"``),
    truncation ``k`` (None: recurrent) and the LSTM's forget-gate bias."""

    seed: int
    constraint: str | None
    k: int | None
    forget_bias: float


# ============================================================================ the recurrences
# ============================================================================ the stacked model
class Stack(nn.Module):
    """M :class:`Net` s of one cell and configuration, parameters stacked (leading axis M); the
    forward passes mirror ``Net``'s, every member in one batched program."""

    def __init__(self, nets: list[Net], members: list[Member], cfg: TaskConfig):
        super().__init__()
        self.cell, self.members, self.cfg = nets[0].cell, members, cfg
        self.names = [n for n, _ in nets[0].named_parameters()]
        for n in self.names:
            self.register_parameter(n.replace(".", "__"), nn.Parameter(torch.stack(
                [dict(net.named_parameters())[n].detach() for net in nets])))
        self.M, self.H = len(nets), nets[0].rnn.hidden_size
        ks = {m.k for m in members}
        if len(ks) != 1:
            raise ValueError(f"the members of a stack share their truncation k, got {sorted(ks, key=str)}")
        self.k = ks.pop()
        if self.cell == "lstm":  # a template for functional_call, its own weights never used
            self._lstm = [nn.LSTM(nets[0].rnn.input_size, self.H, batch_first=True)]
        self.cutoff = cfg.cutoffs[0] if cfg.cutoffs else None
        for mode in {m.constraint for m in members} - {None}:  # buffers: on the stack's device
            self.register_buffer(f"members_{mode}", torch.tensor(
                [j for j, m in enumerate(members) if m.constraint == mode]), persistent=False)

    def p(self, name: str) -> torch.Tensor:
        return getattr(self, name.replace(".", "__"))

    def member_state(self, j: int) -> dict[str, torch.Tensor]:
        """Member j's parameters under ``Net``'s names (a copy)."""
        return {n: self.p(n)[j].detach().clone() for n in self.names}

    def load_member_(self, j: int, state: dict[str, torch.Tensor]) -> None:
        with torch.no_grad():
            for n in self.names:
                self.p(n)[j].copy_(state[n])

    # ---------------------------------------------------------------- forward
    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Inputs per member (M x N x T [x 88]): the embedding rows, or JSB's frames as they are."""
        if "encoder.weight" not in self.names:
            return x
        E = self.p("encoder.weight")
        e = E[torch.arange(self.M, device=x.device)[:, None, None], x]
        return F.dropout(e, self.cfg.dropout, self.training)

    def inputs(self, x: torch.Tensor) -> torch.Tensor:
        """What the recurrence reads at every step (M x N x T x d): for the tanh RNN the
        pre-activations :math:`p_t = Ux_t + b` (computed once per step, also under truncation), for
        the LSTM the embedded inputs."""
        e = self.embed(x)
        if self.cell == "lstm":
            return e
        M, N, T, m = e.shape
        b = self.p("rnn.bias_ih_l0") + self.p("rnn.bias_hh_l0")
        return torch.baddbmm(b[:, None], e.reshape(M, N * T, m),
                             self.p("rnn.weight_ih_l0").transpose(1, 2)).view(M, N, T, -1)

    def recur(self, z: torch.Tensor, state=None):
        """The outputs (M x N x T x H) over the step inputs ``z`` of :meth:`inputs` from ``state``
        (zero if None), and the last state. The tanh RNN: one batched recurrence
        (:class:`~rnnbook.stable_models.models.StackedTanh`). The LSTM: PyTorch's fused LSTM
        kernel once per member on its slice of the stacked weights (on a CPU, oneDNN's kernel beats
        a batched step-by-step loop about fourfold here, 1 December 2026)."""
        M, N = z.shape[:2]
        if self.cell == "rnn":
            h0 = z.new_zeros(M, N, self.H) if state is None else state
            out = StackedTanh.apply(z.permute(2, 0, 1, 3).contiguous(), self.p("rnn.weight_hh_l0"), h0)
            return out.permute(1, 2, 0, 3), out[-1]
        outs, hs, cs = [], [], []
        for j in range(M):
            w = {n: self.p(f"rnn.{n}")[j] for n in LSTM_WEIGHTS}
            hx = () if state is None else ((state[0][j][None], state[1][j][None]),)
            out, (h, c) = functional_call(self._lstm[0], w, (z[j], *hx))
            outs.append(out)
            hs.append(h[0])
            cs.append(c[0])
        return torch.stack(outs), (torch.stack(hs), torch.stack(cs))

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The outputs (M x N x T x H) of the recurrent model, or of its depth-k truncation (§3.1):
        :math:`h^k_t` runs the map from :math:`h = 0` over :math:`x_{t-k+1..t}`; the first
        :math:`k-1` outputs are the recurrent ones, the later windows one batch of length-k
        sequences (as :func:`~rnnbook.stable_models.constraints.truncated_forward`)."""
        z = self.inputs(x)
        M, N, T, d = z.shape
        k = self.k
        if k is None or k >= T:
            return self.recur(z)[0]
        head = self.recur(z[:, :, :k - 1])[0] if k > 1 else z.new_zeros(M, N, 0, self.H)
        windows = z.unfold(2, k, 1).permute(0, 1, 2, 4, 3).reshape(M, N * (T - k + 1), k, d)
        tail = self.recur(windows)[0][:, :, -1].reshape(M, N, T - k + 1, self.H)
        return torch.cat([head, tail], 2)

    def decode(self, h: torch.Tensor) -> torch.Tensor:
        """Logits of the linear decoder (M x ... x n_out)."""
        W, b = self.p("decoder.weight"), self.p("decoder.bias")
        flat = h.reshape(self.M, -1, h.shape[-1])
        return torch.baddbmm(b[:, None], flat, W.transpose(1, 2)).view(*h.shape[:-1], -1)

    def token_nll(self, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Language models: each member's summed NLL of the targets ``y`` (N x T, shared by the
        members) given its outputs ``h`` (M x N x T x H); the adaptive softmax of ``Net`` (the
        frequent words in the head, the rest through its one cluster token) or the full one."""
        h, y = F.dropout(h, self.cfg.dropout, self.training).reshape(self.M, -1, self.H), y.flatten()
        if self.cutoff is None:
            logp = self.decode(h).log_softmax(-1)
            return -logp.gather(2, y.expand(self.M, -1)[..., None]).sum((1, 2))
        head = torch.bmm(h, self.p("decoder.head.weight").transpose(1, 2)).log_softmax(-1)
        rare = y >= self.cutoff
        nll = -head.gather(2, y.clamp(max=self.cutoff).expand(self.M, -1)[..., None]).sum((1, 2))
        if rare.any():
            z = torch.bmm(h[:, rare], self.p("decoder.tail.0.0.weight").transpose(1, 2))
            tail = torch.bmm(z, self.p("decoder.tail.0.1.weight").transpose(1, 2)).log_softmax(-1)
            idx = (y[rare] - self.cutoff).expand(self.M, -1)[..., None]
            nll = nll - tail.gather(2, idx).sum((1, 2))
        return nll

    # ---------------------------------------------------------------- the projected SGD step
    def sgd_step_(self, loss: torch.Tensor, lr: torch.Tensor) -> torch.Tensor:
        """One step of projected SGD for every member: backpropagate the summed losses, clip each
        member's gradient to norm ``cfg.clip`` (as ``clip_grad_norm_``), step with its own rate
        ``lr`` (M), then project (:meth:`stabilize_`). Returns the members' C1-train quantities."""
        params = [self.p(n) for n in self.names]
        for q in params:
            q.grad = None
        loss.sum().backward()
        with torch.no_grad():
            norm = torch.sqrt(sum(q.grad.flatten(1).square().sum(1) for q in params))
            scale = lr * (self.cfg.clip / (norm + 1e-6)).clamp(max=1.0)
            for q in params:
                q.sub_(q.grad * scale.view(-1, *[1] * (q.dim() - 1)))
        return self.stabilize_()

    def stabilize_(self) -> torch.Tensor:
        """App. C after every step, per member: the RNN's :math:`W` projected onto
        :math:`\\|W\\|_2 \\le 1` (left as it is where already feasible), the LSTM's row or column
        bounds (:mod:`~rnnbook.stable_models.constraints`). Returns each member's largest LSTM
        row sum over its bound (0 for the others). On a GPU (``MATMUL_PROJECTION``) the projection
        is :func:`~rnnbook.stable_models.constraints.project_spectral_ns` (matmuls, no SVD)."""
        W, U = self.p("rnn.weight_hh_l0"), self.p("rnn.weight_ih_l0")
        c1 = torch.zeros(self.M, device=W.device)  # on the device: no host sync every step
        project = (constraints.project_spectral_ns if W.device.type in MATMUL_PROJECTION
                   else constraints.project_spectral_feasible)
        with torch.no_grad():
            for mode in {m.constraint for m in self.members} - {None}:
                j = getattr(self, f"members_{mode}")
                if mode == "spectral":
                    W[j] = project(W[j])
                    continue
                W[j], U[j] = constraints.constrain_lstm(W[j], U[j], mode)
                c1[j] = constraints.lstm_row_ratios(W[j], U[j])
        return c1

    def W_hh_norms(self) -> torch.Tensor:
        """:math:`\\|W_{hh}\\|_2` of every member (E1, C7)."""
        with torch.no_grad():
            return constraints.spectral_norm(self.p("rnn.weight_hh_l0")).cpu()

    def flat_weights(self, recurrent_only: bool) -> torch.Tensor:
        """F5's weight vectors, one row per member (``models.flat_weights``'s order)."""
        if recurrent_only:
            return self.p("rnn.weight_hh_l0").detach().flatten(1).cpu()
        return torch.cat([self.p(n).detach().flatten(1) for n in self.names], 1).cpu()


def make_stack(cell: str, cfg: TaskConfig, n_in: int, n_out: int, members: list[Member],
               device: torch.device = torch.device("cpu")) -> Stack:
    """Each member initialised as :func:`~rnnbook.stable_models.models.make_net` would (its seed,
    PyTorch's defaults), then stacked."""
    nets = [make_net(cell, cfg, n_in, n_out, m.forget_bias, m.seed) for m in members]
    return Stack(nets, members, cfg).to(device)


# ============================================================================ sequence tasks
def padded(seqs: list[list[torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Every member's minibatch (``seqs[j]``: its sequences) padded to one length: M x N x T [x d],
    and the mask of real steps (M x N x T)."""
    T = max(len(s) for batch in seqs for s in batch)
    x = torch.stack([torch.stack([F.pad(s, (0, 0) * (s.dim() - 1) + (0, T - len(s))) for s in b])
                     for b in seqs])
    mask = torch.stack([torch.stack([(torch.arange(T) < len(s)).float() for s in b]) for b in seqs])
    return x, mask


def seq_losses(task: str, logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each member's training loss per real step: BCE summed over the 88 keys (JSB) or token CE."""
    if task == "jsb":
        frame = F.binary_cross_entropy_with_logits(logits, y, reduction="none").sum(-1)
    else:
        frame = F.cross_entropy(logits.flatten(0, 2), y.flatten(), reduction="none").view(y.shape)
    return (frame * mask).sum((1, 2)) / mask.sum((1, 2))


def sequence_data(task: str, data, split: str) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Inputs and targets of a split: JSB's x = seq[:-1], y = seq[1:] (spec §7); ATIS's words, tags."""
    if task == "jsb":
        return [s[:-1] for s in data[split]], [s[1:] for s in data[split]]
    return ([torch.tensor(w) for w in data.words[split]], [torch.tensor(t) for t in data.tags[split]])


def evaluate_sequences(stack: Stack, task: str, data, split: str, chunk: int = 16) -> list[float]:
    """Each member's test NLL per frame (JSB, nats) or conlleval slot F1 (ATIS, %), the split's
    sequences ``chunk`` at a time, each chunk padded into one batch shared by the members."""
    xs, ys = sequence_data(task, data, split)
    nll, frames, pred = torch.zeros(stack.M, dtype=torch.float64), 0, [[] for _ in range(stack.M)]
    dev = next(stack.parameters()).device
    stack.eval()
    with torch.no_grad():
        for s in range(0, len(xs), chunk):
            (x, mask), (y, _) = padded([xs[s:s + chunk]] * stack.M), padded([ys[s:s + chunk]])
            logits = stack.decode(stack.hidden(x.to(dev)))
            if task == "jsb":
                bce = F.binary_cross_entropy_with_logits(logits, y.to(dev).expand_as(logits),
                                                         reduction="none")
                nll += (bce.sum(-1) * mask.to(dev)).sum((1, 2)).double().cpu()
                frames += int(mask[0].sum())
            else:
                for j, p in enumerate(logits.argmax(-1).cpu()):
                    pred[j] += [p[i, :len(t)].tolist() for i, t in enumerate(ys[s:s + chunk])]
    stack.train()
    if task == "jsb":
        return (nll / frames).tolist()
    name = data.tag_vocab
    gold = [[name[i] for i in t.tolist()] for t in ys]
    return [datasets.conlleval_f1(gold, [[name[i] for i in p] for p in pj]) for pj in pred]


@dataclass(frozen=True)
class Split:
    """A split's inputs and targets padded once to its longest sequence, on the training device
    (S x T_max [x d]), with the lengths on the host and on the device."""

    x: torch.Tensor
    y: torch.Tensor
    lengths: torch.Tensor
    lengths_dev: torch.Tensor


def device_split(xs: list[torch.Tensor], ys: list[torch.Tensor], device: torch.device) -> Split:
    """:func:`padded` once for the whole split, copied to ``device`` once."""
    (x, _), (y, _) = padded([xs]), padded([ys])
    lengths = torch.tensor([len(s) for s in xs])
    return Split(x[0].to(device), y[0].to(device), lengths, lengths.to(device))


def sequence_epoch(stack: Stack, split: Split, gens: list[torch.Generator]
                   ) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """One epoch's minibatches, every member shuffling with its own generator (its seed): the
    tensors :func:`padded` gives, gathered on the device from ``split`` with no host sync per step
    (the orders go to the device once per epoch; each step's length is found on the host)."""
    orders = torch.stack([torch.randperm(len(split.lengths), generator=g) for g in gens])
    on_dev, B = orders.to(split.x.device), stack.cfg.batch
    steps = torch.arange(split.x.shape[1], device=split.x.device)
    for s in range(0, orders.shape[1], B):
        T, idx = int(split.lengths[orders[:, s:s + B]].max()), on_dev[:, s:s + B]
        mask = (steps[:T] < split.lengths_dev[idx][..., None]).float()
        yield split.x[:, :T][idx], split.y[:, :T][idx], mask


# ============================================================================ language models
def lm_chunks(stream: torch.Tensor, bptt: int, k: int | None):
    """(input, target, context) chunks of the stream (N x L, shared by the members); a truncated
    model gets the ``k - 1`` previous inputs as context."""
    L = stream.shape[1]
    for s in range(0, L - 1, bptt):
        n = min(bptt, L - 1 - s)
        ctx = None if k is None else stream[:, max(0, s - k + 1):s]
        yield stream[:, s:s + n], stream[:, s + 1:s + 1 + n], ctx


def lm_hidden(stack: Stack, x: torch.Tensor, state, ctx: torch.Tensor | None):
    """Outputs over a chunk (M x N x n x H) with the state carried from the last chunk; truncated
    members see the context instead (§3.1, no state)."""
    if stack.k is None:
        return stack.recur(stack.inputs(x.expand(stack.M, *x.shape)), state)
    full = torch.cat([ctx, x], 1)
    return stack.hidden(full.expand(stack.M, *full.shape))[:, :, ctx.shape[1]:], None


def detach(state):
    if state is None:
        return None
    return tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()


def evaluate_lm(stack: Stack, ids: torch.Tensor, batch: int = 10) -> list[tuple[float, int]]:
    """Each member's total NLL (nats) and token count of a split, eval batch 10, state carried."""
    stream = batchify(ids, batch).to(next(stack.parameters()).device)
    total, n, state = torch.zeros(stack.M, dtype=torch.float64), 0, None
    stack.eval()
    with torch.no_grad():
        for x, y, ctx in lm_chunks(stream, stack.cfg.bptt, stack.k):
            h, state = lm_hidden(stack, x, state, ctx)
            total += stack.token_nll(h, y).double().cpu()
            n += y.numel()
    stack.train()
    return [(float(t), n) for t in total]


def batchify(ids: torch.Tensor, batch: int) -> torch.Tensor:
    """The token stream cut into ``batch`` parallel streams (batch x L)."""
    L = len(ids) // batch
    return ids[:L * batch].view(batch, L)


# ============================================================================ training
@dataclass
class Record:
    """One member's run: test metric, ‖W_hh‖₂ log (E1), largest C1-train quantity, snapshots (F5)."""

    test: float
    w_norms: list[float]
    c1_max: float
    snapshots: list[np.ndarray]


def train_stack(task: str, stack: Stack, data, snapshots: bool = False, log_every: int = 50
                ) -> list[Record]:
    """(Projected) SGD for every member of ``stack`` at once (spec §3): the sequence tasks with
    shuffled minibatches of ``cfg.batch`` padded sequences per member (``‖W_hh‖₂`` logged after
    every epoch), the language models by truncated BPTT over the shared training stream with the
    state carried between chunks (logged every ``log_every`` steps); each member's schedule
    (full profile) decays its own step size and stops it, and its best-validation state is kept."""
    cfg, M, lm = stack.cfg, stack.M, stack.cfg.bptt > 0
    lower = task != "atis"
    scheds = [Schedule(cfg.schedule, cfg.lr, lower) for _ in range(M)]
    lr = torch.full((M,), cfg.lr, device=next(stack.parameters()).device)
    c1, norms = torch.zeros(M, device=lr.device), [[] for _ in range(M)]
    snaps = [[s] for s in stack.flat_weights(lm).numpy()] if snapshots else [[] for _ in range(M)]
    active = [True] * M
    if lm:
        stream = batchify(data.ids["train"], cfg.batch).to(lr.device)
    else:
        split = device_split(*sequence_data(task, data, "train"), lr.device)
        gens = [torch.Generator().manual_seed(m.seed) for m in stack.members]
    for epoch in range(cfg.epochs):
        step_lr = lr * torch.tensor(active, dtype=lr.dtype, device=lr.device)
        if lm:
            state, step = None, 0
            for x, y, ctx in lm_chunks(stream, cfg.bptt, stack.k):
                h, state = lm_hidden(stack, x, detach(state), ctx)
                c1 = torch.maximum(c1, stack.sgd_step_(stack.token_nll(h, y) / y.numel(), step_lr))
                step += 1
                if step % log_every == 0:
                    _log(norms, stack.W_hh_norms(), active)
        else:
            for x, y, mask in sequence_epoch(stack, split, gens):
                loss = seq_losses(task, stack.decode(stack.hidden(x)), y, mask)
                c1 = torch.maximum(c1, stack.sgd_step_(loss, step_lr))
            _log(norms, stack.W_hh_norms(), active)
        for j, s in enumerate(stack.flat_weights(lm).numpy() if snapshots else []):
            if active[j]:
                snaps[j].append(s)
        if cfg.schedule:
            vals = validation(stack, task, data)
            for j in range(M):
                if active[j] and scheds[j].update(vals[j], epoch, lambda: stack.member_state(j)):
                    active[j] = False
                lr[j] = scheds[j].lr
        if not any(active):
            break
    for j, s in enumerate(scheds):
        if s.best_state() is not None:
            stack.load_member_(j, s.best_state())
    if lm:
        _log(norms, stack.W_hh_norms(), [True] * M)
    tests = validation(stack, task, data, "test")
    return [Record(tests[j], norms[j], max(norms[j]) if stack.members[j].constraint == "spectral"
                   else float(c1[j]), snaps[j]) for j in range(M)]


def _log(norms: list[list[float]], values: torch.Tensor, active: list[bool]) -> None:
    for j, v in enumerate(values.tolist()):
        if active[j]:
            norms[j].append(v)


def validation(stack: Stack, task: str, data, split: str = "valid") -> list[float]:
    """Each member's metric on ``split``: NLL (JSB), F1 (ATIS), bpc (characters), ppl (words)."""
    if stack.cfg.bptt == 0:
        return evaluate_sequences(stack, task, data, split)
    metric = datasets.bpc if task == "ptb_char" else datasets.ppl
    return [metric(*r) for r in evaluate_lm(stack, data.ids[split])]


def train_members(task: str, cell: str, cfg: TaskConfig, data, n_in: int, n_out: int,
                  members: list[Member], device: torch.device, snapshots: bool = False
                  ) -> list[dict]:
    """Train ``members`` as one stack and return each one's cacheable result: summary (with the
    final :math:`\\|W_{hh}\\|_2`, after the schedule's best state is restored), parameters
    (``p.<Net name>``), its share of the stack's time, and the snapshots if asked."""
    wall, cpu = time.perf_counter(), time.process_time()
    stack = make_stack(cell, cfg, n_in, n_out, members, device)
    records = train_stack(task, stack, data, snapshots)
    share = {"wall_s": (time.perf_counter() - wall) / len(members),
             "cpu_s": (time.process_time() - cpu) / len(members), "stack_size": len(members)}
    out, final = [], stack.W_hh_norms()
    for j, r in enumerate(records):
        res = {"test": r.test, "w_norms": np.array(r.w_norms), "w_hh_final": float(final[j]),
               "c1_max": r.c1_max} | share
        res |= {f"p.{n}": v.cpu().numpy() for n, v in stack.member_state(j).items()}
        if snapshots:
            res["snapshots"] = np.stack(r.snapshots)
        out.append(res)
    return out

