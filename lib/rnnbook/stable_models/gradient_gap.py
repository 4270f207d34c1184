"""The stable-models chapter's check of App. B.1.1 (Miller & Hardt, ICLR 2019): truncating
backpropagation to the last k steps changes the gradient of a stable recurrent model by
:math:`O(k\\lambda^k)`, whatever the sequence length T (C15).

On C4's model (:mod:`rnnbook.stable_models.theory`: a student tanh RNN, a teacher of the same form,
squared error on the last output), at a student whose :math:`\\|W\\|_2` is set to a given norm, the
gap :math:`\\|\\nabla L_k - \\nabla L_T\\|` over (W, U, c) is measured for every k of C4 and several
T; the control sets :math:`\\|W\\|_2` above 1, where nothing bounds it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from rnnbook.stable_models.constraints import spectral_norm
from rnnbook.stable_models.theory import (DTYPE, TheorySettings, _student_init, decay_rate, tanh_forward,
                                          tanh_rnn_instances, truncated_stack_grads)

LENGTHS = (40, 80, 160)  # the sequence lengths T compared


def gradient_gaps(S: TheorySettings, seed: int, norms: Sequence[float] | None = None,
                  lengths: Sequence[int] = LENGTHS) -> dict[str, np.ndarray]:
    """App. B.1.1: :math:`\\|\\nabla L_k - \\nabla L_T\\|` (all of W, U, c) for every k of ``S.c4_ks``
    and T of ``lengths``, at C4's initial students with W rescaled to each spectral norm of ``norms``
    (default: C4's :math:`\\lambda` and the control's ``S.c4_control_norm``), on one batch of C4's teacher data per
    instance; ``gap`` has shape (norms, lengths, instances, ks), k increasing."""
    norms = (S.c4_lam, S.c4_control_norm) if norms is None else tuple(norms)
    gen = torch.Generator().manual_seed(seed)
    ks = sorted(S.c4_ks, reverse=True)
    gap = np.empty((len(norms), len(lengths), S.c4_instances, len(ks)))
    for i in range(S.c4_instances):
        W_t, U_t = tanh_rnn_instances(1, (S.c4_teacher_norm,), S.c4_n, S.c4_m, gen)
        c_t = torch.randn(S.c4_n, generator=gen, dtype=DTYPE) / math.sqrt(S.c4_n)
        W0, U, c = _student_init(S, gen)
        x = torch.randn(S.c4_batch, max(lengths), S.c4_m, generator=gen, dtype=DTYPE)
        for a, norm in enumerate(norms):
            W = W0 * (norm / spectral_norm(W0))
            for b, T in enumerate(lengths):
                x_T = x[:, -T:]
                y = tanh_forward(W_t[0, 0], U_t[0, 0], x_T)[..., -1, :] @ c_t
                k = torch.tensor([T] + ks)  # the recurrent model first, then k descending
                M = len(k)
                _, grads = truncated_stack_grads(W.expand(M, -1, -1), U.expand(M, -1, -1), c.expand(M, -1),
                                                 x_T.expand(M, -1, -1, -1), y.expand(M, -1), k)
                flat = torch.cat([g.flatten(1) for g in grads], 1)
                gap[a, b, i] = torch.linalg.vector_norm(flat[1:] - flat[0], dim=1).numpy()[::-1]
    return {"gap": gap, "ks": np.array(ks[::-1]), "norms": np.array(norms), "lengths": np.array(lengths)}


def c15_summary(S: TheorySettings, res: dict[str, np.ndarray]) -> dict:
    """C15's rules on the median over instances, per norm: (a) the fitted per-step ratio of the gap
    over k in C4's fit range at the shortest T, which must be at most :math:`\\lambda` for the stable
    model; (b) the largest ratio over that range of the gap at any longer T to the gap at the
    shortest T, at most 2 (independent of T). The control (the second norm) must fail (a)."""
    med = np.median(res["gap"], axis=2)  # (norms, lengths, ks)
    lo, hi = S.c4_k_fit
    fit = (res["ks"] >= lo) & (res["ks"] <= hi)
    ratio = [decay_rate(res["ks"][fit], m[0, fit]) for m in med]
    growth = [float((m[1:, fit] / m[:1, fit]).max()) for m in med]
    stable = ratio[0] <= S.c4_lam and growth[0] <= 2.0
    return {"ratio per k (stable)": ratio[0], "max gap(T) / gap(T = %d) (stable)" % res["lengths"][0]: growth[0],
            "ratio per k (control, ||W||2 = %g)" % res["norms"][1]: ratio[1],
            "control refused": bool(ratio[1] > S.c4_lam), "passed": bool(stable and ratio[1] > S.c4_lam)}
