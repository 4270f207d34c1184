"""The stable set and the projections onto it (Miller & Hardt, ICLR 2019, Def. 1, Prop. 2, App. C).

Serves the chapter "stable_models" (spec §3). For the tanh RNN :math:`h_t = \\tanh(Wh_{t-1} + Ux_t + b)`
a sufficient condition for stability is :math:`\\|W\\|_2 < 1`; projected SGD keeps :math:`W` in
:math:`\\{\\|W\\|_2 \\le 1\\}` after every step (App. C). For the LSTM, the sufficient :math:`\\ell_\\infty`
conditions of Prop. 2 become row-sum bounds on each recurrent block (and on the forget gate's input
block :math:`U_f`), enforced by rescaling rows. Also the depth-k truncated forward pass (§3.1).
"""
from __future__ import annotations

import torch


# Row-sum bounds c of the stable LSTM (spec §3), per gate of PyTorch's (i, f, g=z, o) layout.
LSTM_W_BOUNDS = {"i": 0.395, "f": 0.155, "z": 0.099, "o": 0.395}
LSTM_U_F_BOUND = 0.25
LSTM_CONSTRAINTS = ("row", "col_fork")
GATES = ("i", "f", "z", "o")


def spectral_norm(W: torch.Tensor) -> torch.Tensor:
    """:math:`\\|W\\|_2` over the last two dimensions (batched)."""
    return torch.linalg.matrix_norm(W, ord=2)


def project_spectral(W: torch.Tensor, max_norm: float = 1.0) -> torch.Tensor:
    """App. C: :math:`P(W) = U_W \\mathrm{diag}(\\min(\\sigma_i, 1)) V_W^\\top`, the Frobenius-nearest
    point of :math:`\\{\\|W\\|_2 \\le 1\\}` (batched over leading dimensions)."""
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)
    return (U * S.clamp(max=max_norm).unsqueeze(-2)) @ Vh


def project_spectral_(W: torch.Tensor, max_norm: float = 1.0) -> None:
    """Project ``W`` in place (under ``no_grad``) after a training step: one SVD, and ``W`` is left
    as it is when already feasible. (Eigenvalues of :math:`W^\\top W` are cheaper but, in float32,
    overshoot :math:`\\|P(W)\\|_2 \\le 1` by up to 1e-4.)"""
    with torch.no_grad():
        U, S, Vh = torch.linalg.svd(W, full_matrices=False)
        if S.max() > max_norm:
            W.copy_((U * S.clamp(max=max_norm).unsqueeze(-2)) @ Vh)


def _rescale(block: torch.Tensor, c: float, mode: str) -> torch.Tensor:
    """Rows (``row``: :math:`\\min(1, c/\\sum_j|W_{ij}|)`) or columns (``col_fork``: always
    :math:`c/\\sum_i|W_{ij}|`, as the authors' fork does) of one block, rescaled."""
    if mode == "row":
        return block * (c / block.abs().sum(1, keepdim=True).clamp(min=1e-30)).clamp(max=1.0)
    return block * (c / block.abs().sum(0, keepdim=True).clamp(min=1e-30))


def constrain_lstm(weight_hh: torch.Tensor, weight_ih: torch.Tensor, mode: str = "row"
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The stable LSTM's constraint (spec §3, ``constrain_lstm``) on PyTorch's stacked
    ``weight_hh`` (4H×H, gates i, f, z, o) and ``weight_ih`` (4H×m; only :math:`U_f` is bounded)."""
    if mode not in LSTM_CONSTRAINTS:
        raise ValueError(f"lstm_constraint must be one of {LSTM_CONSTRAINTS}, got {mode!r}")
    blocks = weight_hh.chunk(4, dim=0)
    weight_hh = torch.cat([_rescale(b, LSTM_W_BOUNDS[g], mode) for g, b in zip(GATES, blocks)])
    U_i, U_f, U_z, U_o = weight_ih.chunk(4, dim=0)
    weight_ih = torch.cat([U_i, _rescale(U_f, LSTM_U_F_BOUND, mode), U_z, U_o])
    return weight_hh, weight_ih


def constrain_lstm_(lstm: torch.nn.LSTM, mode: str = "row") -> None:
    """Apply :func:`constrain_lstm` in place to a one-layer ``nn.LSTM`` after an SGD step."""
    with torch.no_grad():
        W, U = constrain_lstm(lstm.weight_hh_l0, lstm.weight_ih_l0, mode)
        lstm.weight_hh_l0.copy_(W)
        lstm.weight_ih_l0.copy_(U)


def truncated_forward(rnn: torch.nn.Module, x: torch.Tensor, k: int | None) -> torch.Tensor:
    """§3.1: the outputs :math:`h^k_t` of the depth-k truncated model, the state reached by running
    the map from :math:`h = 0` over :math:`x_{t-k+1..t}` only (``x``: batch x T x m, batch-first).

    For :math:`t < k` the window is the whole prefix, so :math:`h^k_t = h_t`; the later windows are
    unfolded into one batch of length-k sequences (cost T·k, one call). A model with a separate
    input map (``project``/``recur``, the tanh RNN) computes :math:`Ux_t + b` once per step and
    unfolds that instead. ``k=None`` is the recurrent model itself."""
    B, T, _ = x.shape
    if k is None or k >= T:
        return rnn(x)[0]
    if hasattr(rnn, "recur"):
        x, run = rnn.project(x), rnn.recur
    else:
        run = lambda z: rnn(z)[0]  # noqa: E731
    head = run(x[:, :k - 1]) if k > 1 else x.new_zeros(B, 0, rnn.hidden_size)
    windows = x.unfold(1, k, 1).permute(0, 1, 3, 2).reshape(B * (T - k + 1), k, x.shape[-1])
    tail = run(windows)[:, -1].reshape(B, T - k + 1, -1)
    return torch.cat([head, tail], 1)


def lstm_row_ratio(lstm: torch.nn.LSTM) -> float:
    """C1-train: the largest row sum :math:`\\sum_j|W_{ij}|` of each constrained block divided by
    its bound c (at most 1 after :func:`constrain_lstm_` in mode ``row``)."""
    with torch.no_grad():
        blocks = list(zip(GATES, lstm.weight_hh_l0.chunk(4, 0)))
        ratios = [b.abs().sum(1).max() / LSTM_W_BOUNDS[g] for g, b in blocks]
        ratios.append(lstm.weight_ih_l0.chunk(4, 0)[1].abs().sum(1).max() / LSTM_U_F_BOUND)
        return float(max(ratios))
