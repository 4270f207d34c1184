"""The networks of the stable-models chapter (Miller & Hardt 2019, §3-§4).

One-layer tanh RNNs and LSTMs with an embedding (or input layer) and a readout, *unstable* (plain)
or *stable* (projected after every SGD step: :math:`\\|W\\|_2 \\le 1` for the RNN, the LSTM's row-sum
constraint; :mod:`rnnbook.stable_models.constraints`), the tanh recurrence with its hand-written
BPTT (shared with the stacked models of :mod:`rnnbook.stable_models.stack`, which train them) and
the learning-rate schedule.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from rnnbook import params
from rnnbook.stable_models import constraints
from rnnbook.stable_models.settings import CELLS

if TYPE_CHECKING:
    from rnnbook.stable_models.settings import TaskConfig


# ============================================================================ the model
class StackedTanh(torch.autograd.Function):
    """:math:`h_t = \\tanh(Wh_{t-1} + p_t)` for M models at once (time-major pre-activations
    :math:`p_t = Ux_t + b`: T x M x N x H, ``W``: M x H x H), with a hand-written backward pass
    (BPTT): one autograd node for the whole sequence, where ``nn.RNN`` on a CPU builds several per
    step (``bench/stable_models.py``)."""

    @staticmethod
    def forward(ctx, p: torch.Tensor, W: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        out, h, W_T = torch.empty_like(p), h0, W.transpose(1, 2).contiguous()  # bmm ~1/5 faster
        for t in range(p.shape[0]):
            h = torch.baddbmm(p[t], h, W_T, out=out[t]).tanh_()
        ctx.save_for_backward(out, W, h0)
        return out

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        out, W, h0 = ctx.saved_tensors
        g_p, dtanh, g_h = torch.empty_like(out), 1 - out * out, torch.zeros_like(h0)
        for t in range(out.shape[0] - 1, -1, -1):
            g_h = torch.bmm(torch.mul(g[t] + g_h, dtanh[t], out=g_p[t]), W)
        h_prev = torch.cat([h0[None], out[:-1]], 0)
        M, H = W.shape[0], W.shape[1]
        g_W = torch.bmm(g_p.transpose(0, 1).reshape(M, -1, H).transpose(1, 2),
                        h_prev.transpose(0, 1).reshape(M, -1, H))
        return g_p, g_W, g_h


class TanhRNN(nn.Module):
    """A drop-in for a one-layer, batch-first ``nn.RNN`` (same parameter names, initialisation
    and outputs): :math:`h_t = \\tanh(Wh_{t-1} + Ux_t + b)`, with :math:`W` = ``weight_hh_l0``."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        ref = nn.RNN(input_size, hidden_size)  # PyTorch's default initialisation
        self.hidden_size = hidden_size
        for name, p in ref.named_parameters():
            self.register_parameter(name, p)

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """The input part :math:`p_t = Ux_t + b` of every step (batch-first)."""
        return F.linear(x, self.weight_ih_l0, self.bias_ih_l0 + self.bias_hh_l0)

    def recur(self, pre: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
        """The states :math:`h_t = \\tanh(Wh_{t-1} + p_t)` from the pre-activations (batch-first)."""
        h0 = pre.new_zeros(pre.shape[0], self.hidden_size) if h0 is None else h0
        out = StackedTanh.apply(pre.transpose(0, 1)[:, None].contiguous(), self.weight_hh_l0[None],
                                h0[None])
        return out[:, 0].transpose(0, 1)

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None):
        out = self.recur(self.project(x), None if h0 is None else h0[0])
        return out, out[:, -1][None]


class Net(nn.Module):
    """:math:`h_t = \\phi_w(h_{t-1}, x_t)`, :math:`\\hat y_t = f(h_t)`: an optional embedding, a
    one-layer tanh RNN :math:`h_t = \\tanh(Wh_{t-1} + Ux_t + b)` or LSTM, and a linear decoder."""

    def __init__(self, cell: str, n_in: int, n_out: int, hidden: int, emb: int = 0,
                 forget_bias: float = 0.0, dropout: float = 0.0, cutoffs: tuple[int, ...] = ()):
        super().__init__()
        self.cell = params.choice("cell", cell, CELLS)
        self.encoder = nn.Embedding(n_in, emb) if emb else None
        m = emb or n_in
        self.rnn = nn.LSTM(m, hidden, batch_first=True) if cell == "lstm" else TanhRNN(m, hidden)
        self.drop = nn.Dropout(dropout)
        # adaptive softmax (Grave et al. 2017): the frequent words exactly, the rare ones through a
        # cluster token and a smaller projection; still a normalised distribution over the vocabulary
        self.decoder = (nn.AdaptiveLogSoftmaxWithLoss(hidden, n_out, list(cutoffs), div_value=4.0)
                        if cutoffs else nn.Linear(hidden, n_out))
        with torch.no_grad():
            if cell == "lstm":  # spec §3: the forget slice of both bias vectors
                for b in (self.rnn.bias_ih_l0, self.rnn.bias_hh_l0):
                    b[hidden:2 * hidden] = forget_bias
            if not emb:  # the fork's JSB decoder: U(-.1, .1), bias 0
                self.decoder.weight.uniform_(-0.1, 0.1)
                self.decoder.bias.zero_()

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.encoder(x)) if self.encoder is not None else x

    def forward(self, x: torch.Tensor, k: int | None = None) -> torch.Tensor:
        """Logits from the recurrent model (``k=None``) or its depth-k truncation (§3.1)."""
        return self.decoder(self.drop(constraints.truncated_forward(self.rnn, self.embed(x), k)))

    def token_nll(self, h: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Language models: the summed NLL of the target tokens ``y`` given the outputs ``h``."""
        h, y = h.flatten(0, -2), y.flatten()
        if isinstance(self.decoder, nn.AdaptiveLogSoftmaxWithLoss):
            return -self.decoder(h, y).output.sum()
        return F.cross_entropy(self.decoder(h), y, reduction="sum")

    def W_hh_norm(self) -> float:
        """:math:`\\|W_{hh}\\|_2` (the LSTM's four stacked blocks)."""
        with torch.no_grad():
            return float(constraints.spectral_norm(self.rnn.weight_hh_l0))


def make_net(cell: str, cfg: TaskConfig, n_in: int, n_out: int, forget_bias: float, seed: int
             ) -> Net:
    """PyTorch-default initialisation under ``seed`` (spec §3)."""
    torch.manual_seed(seed)
    return Net(cell, n_in, n_out, cfg.hidden, cfg.emb, forget_bias, cfg.dropout, cfg.cutoffs)


def constraint_of(cell: str, stable: bool, lstm_constraint: str) -> str | None:
    return None if not stable else ("spectral" if cell == "rnn" else lstm_constraint)


class Schedule:
    """One model's learning-rate decay and best-validation selection (full profile): ``fork``
    divides by 10 when the validation loss exceeds the max of the last three (after epoch 10) and
    stops after three decays; ``plateau`` divides by 4 when it does not improve; ``best`` only
    selects. ``lr`` is the current step size."""

    def __init__(self, kind: str | None, lr: float, lower_is_better: bool):
        self.kind, self.lr, self.sign = kind, lr, 1 if lower_is_better else -1
        self.history: list[float] = []
        self.best: tuple[float, dict] | None = None
        self.decays = 0

    def update(self, val: float, epoch: int, state: Callable[[], dict]) -> bool:
        """Record the epoch's validation metric (``state()``: the model's parameters, kept if best);
        return True to stop."""
        v = self.sign * val
        if self.best is None or v < self.best[0]:
            self.best = (v, state())
        decay = ((self.kind == "fork" and epoch >= 10 and len(self.history) >= 3
                  and v > max(self.history[-3:]))
                 or (self.kind == "plateau" and self.history and v >= min(self.history)))
        self.history.append(v)
        if decay:
            self.decays += 1
            self.lr /= 10 if self.kind == "fork" else 4
        return self.kind == "fork" and self.decays >= 3

    def best_state(self) -> dict | None:
        """The best-validation parameters to restore (None without a schedule)."""
        return self.best[1] if self.kind is not None and self.best is not None else None
