"""The stable set and the projections onto it (Miller & Hardt, ICLR 2019, Def. 1, Prop. 2, App. C).

Serves the chapter "stable_models" (spec §3). For the tanh RNN :math:`h_t = \\tanh(Wh_{t-1} + Ux_t + b)`
a sufficient condition for stability is :math:`\\|W\\|_2 < 1`; projected SGD keeps :math:`W` in
:math:`\\{\\|W\\|_2 \\le 1\\}` after every step (App. C). For the LSTM, the sufficient :math:`\\ell_\\infty`
conditions of Prop. 2 become row-sum bounds on each recurrent block (and on the forget gate's input
block :math:`U_f`), enforced by rescaling rows, as the paper's implementation "normalizes" the rows
(App. C). The bounds are the authors' fork's (``millerjohnp/TCN``, ``TCN/poly_music/model.py`` at
``ecfd231``: "one set of weights satisfying stability requirement"), which rescales columns
instead (``col_fork``). Also the depth-k truncated forward pass (§3.1).
"""
from __future__ import annotations

import torch


# Bounds c of the stable LSTM, the authors' fork's constants (applied to rows here, as App. C;
# to columns in the fork), per gate of PyTorch's (i, f, g=z, o) layout.
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


def project_spectral_feasible(W: torch.Tensor, max_norm: float = 1.0) -> torch.Tensor:
    """The projection after a training step (batched over leading dimensions): one SVD per
    matrix, and a matrix already feasible is returned as it is. (Eigenvalues of
    :math:`W^\\top W` are cheaper but, in float32, overshoot :math:`\\|P(W)\\|_2 \\le 1` by up to 1e-4.)"""
    U, S, Vh = torch.linalg.svd(W, full_matrices=False)
    over = (S.amax(-1) > max_norm)[..., None, None]
    return torch.where(over, (U * S.clamp(max=max_norm).unsqueeze(-2)) @ Vh, W)


# Newton-Schulz steps of project_spectral_ns: quintic steps (Jordan's coefficients, the slope 3.4445 at
# 0), then cubic ones, for sign(X); coupled steps for N^(-1/2). Enough for 1e-7 on sigma for gamma <= 1e3
# (tests/test_stable_models.py checks the scalar bounds).
NS_QUINTIC = (3.4445, -4.7750, 2.0315)
NS_SIGN_STEPS = (15, 5)
NS_ISQRT_STEPS = 14


def _sign(X: torch.Tensor) -> torch.Tensor:
    """:math:`\\mathrm{sign}(X)` of symmetric X (B x n x n, spectrum in [-1, 1]) by matmuls only:
    :math:`X \\leftarrow aX + bX^3 + cX^5` (``NS_QUINTIC``), which maps (0, 1] into [0.68, 1.21] and
    multiplies small eigenvalues by 3.44, then :math:`X \\leftarrow X(3I - X^2)/2`, which converges
    quadratically to ±1 on (0, √3). Both are odd polynomials in X, so each eigenvalue x follows
    the scalar iteration :math:`s_k(x)`."""
    a, b, c = NS_QUINTIC
    quintic, cubic = NS_SIGN_STEPS
    for _ in range(quintic):
        X2 = torch.bmm(X, X)
        X = torch.baddbmm(X, X, torch.baddbmm(X2, X2, X2, beta=b, alpha=c), beta=a)
    for _ in range(cubic):
        X = torch.baddbmm(X, X, torch.bmm(X, X), beta=1.5, alpha=-0.5)
    return X


def _inverse_sqrt(N: torch.Tensor) -> torch.Tensor:
    """:math:`N^{-1/2}` of symmetric N (B x n x n, spectrum in [1/γ, 1]) by the coupled
    Newton-Schulz iteration :math:`T = (3I - ZY)/2,\\ Y \\leftarrow YT,\\ Z \\leftarrow TZ` from
    :math:`Y = N, Z = I` (Higham 2008, eq. 6.35): :math:`Y \\to N^{1/2}`, :math:`Z \\to N^{-1/2}`,
    per eigenvalue, since all are polynomials in N."""
    eye = torch.eye(N.shape[-1], dtype=N.dtype, device=N.device).expand_as(N)
    Y, Z = N, eye
    for _ in range(NS_ISQRT_STEPS):
        T = torch.baddbmm(eye, Z, Y, beta=1.5, alpha=-0.5)
        Y, Z = torch.bmm(Y, T), torch.bmm(T, Z)
    return Z


def project_spectral_ns(W: torch.Tensor, max_norm: float = 1.0) -> torch.Tensor:
    """App. C's projection, eq. (sm-proj) of the chapter stable_models,
    :math:`P(W) = U_W \\mathrm{diag}(\\min(\\sigma_i, \\lambda)) V_W^\\top`, by matmuls only (batched over
    leading dimensions; computed in float64, returned in W's dtype), for a GPU:

    .. math:: P(W) = W\\,\\max(C, I)^{-1/2},\\quad C = W^\\top W/\\lambda^2,\\quad
              \\max(C, I) = \\tfrac12\\big(C + I + (C - I)\\,\\mathrm{sign}(C - I)\\big),

    as :math:`W\\,V\\mathrm{diag}(\\min(1, \\lambda/\\sigma_i))V^\\top` is. With
    :math:`\\gamma = \\max(1, \\|C\\|_\\infty) \\ge \\|C\\|_2`, :func:`_sign` gets :math:`(C - I)/\\gamma`
    (spectrum in [-1, 1]) and :func:`_inverse_sqrt` gets :math:`\\max(C, I)/\\gamma` (spectrum in
    [1/γ, 1], well conditioned: the small :math:`\\sigma_i` of W never enter an iteration). Where
    the sign has not converged, at :math:`x = (\\sigma^2/\\lambda^2 - 1)/\\gamma` near 0, its error
    :math:`1 - s_k(x)` is weighted by :math:`\\sigma - \\lambda \\approx \\lambda\\gamma x/2`: the
    error in :math:`\\sigma` is about :math:`\\lambda\\gamma\\max_x x(1 - s_k(x))/4 < 10^{-7}` for
    :math:`\\gamma \\le 10^3` with ``NS_SIGN_STEPS``; ``NS_ISQRT_STEPS`` reach 1e-12 on [1e-3, 1].
    A feasible W (every :math:`\\sigma_i \\le \\lambda`) comes back as W to rounding."""
    W64 = W.reshape(-1, *W.shape[-2:]).double()
    C = torch.bmm(W64.transpose(1, 2), W64) / max_norm ** 2
    eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
    gamma = C.abs().sum(-1).amax(-1).clamp(min=1.0)[:, None, None]
    M = torch.baddbmm(C + eye, C - eye, _sign((C - eye) / gamma)) / 2
    return torch.bmm(W64, _inverse_sqrt(M / gamma) / gamma.sqrt()).to(W.dtype).reshape(W.shape)


def _rescale(block: torch.Tensor, c: float, mode: str) -> torch.Tensor:
    """Rows (``row``: :math:`\\min(1, c/\\sum_j|W_{ij}|)`, rows below their bound left as they are:
    our choice, where App. C's "normalizes" and the fork suggest always :math:`c/\\sum_j|W_{ij}|`) or
    columns (``col_fork``: always :math:`c/\\sum_i|W_{ij}|`, as the authors' fork does) of one
    block (batched over leading dimensions), rescaled."""
    if mode == "row":
        return block * (c / block.abs().sum(-1, keepdim=True).clamp(min=1e-30)).clamp(max=1.0)
    return block * (c / block.abs().sum(-2, keepdim=True).clamp(min=1e-30))


def constrain_lstm(weight_hh: torch.Tensor, weight_ih: torch.Tensor, mode: str = "row"
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The stable LSTM's constraint (rows: App. C; the fork's bounds) on PyTorch's stacked
    ``weight_hh`` (4H×H, gates i, f, z, o) and ``weight_ih`` (4H×m; only :math:`U_f` is bounded),
    batched over leading dimensions (the models of a stack)."""
    if mode not in LSTM_CONSTRAINTS:
        raise ValueError(f"lstm_constraint must be one of {LSTM_CONSTRAINTS}, got {mode!r}")
    blocks = weight_hh.chunk(4, dim=-2)
    weight_hh = torch.cat([_rescale(b, LSTM_W_BOUNDS[g], mode) for g, b in zip(GATES, blocks)], -2)
    U_i, U_f, U_z, U_o = weight_ih.chunk(4, dim=-2)
    weight_ih = torch.cat([U_i, _rescale(U_f, LSTM_U_F_BOUND, mode), U_z, U_o], -2)
    return weight_hh, weight_ih


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


def lstm_row_ratios(weight_hh: torch.Tensor, weight_ih: torch.Tensor) -> torch.Tensor:
    """C1-train: the largest row sum :math:`\\sum_j|W_{ij}|` of each constrained block divided by
    its bound c (at most 1 after :func:`constrain_lstm` in mode ``row``), per matrix of the
    leading dimensions."""
    with torch.no_grad():
        blocks = zip(GATES, weight_hh.chunk(4, -2))
        ratios = [b.abs().sum(-1).amax(-1) / LSTM_W_BOUNDS[g] for g, b in blocks]
        ratios.append(weight_ih.chunk(4, -2)[1].abs().sum(-1).amax(-1) / LSTM_U_F_BOUND)
        return torch.stack(ratios).amax(0)
