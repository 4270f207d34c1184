"""The extrapolation chapter: Cohen-Karlik et al., "Learning Low Dimensional State Spaces with
Overparameterized Recurrent Neural Nets", ICLR 2023.

Notation follows the paper (§3): a SISO linear RNN :math:`s_{t+1} = A s_t + B x_t`, :math:`y_t = C s_t`
with state dimension ``d``, impulse response :math:`h_j = C A^j B`, a teacher of state dimension
``d_hat`` and training on length-``k`` sequences.

- :mod:`~rnnbook.extrapolation.theory`: teachers, the extrapolation error (Def. 2), the population
  loss (Eq. 3.4, rebuilt from the whitened-input statement) and its closed-form gradient (C9), Prop. 3's non-extrapolating student (C3), the
  moment argument's mass off the teacher's support (C7), spectra (E1), the Hankel rank and tail share
  of an impulse response and a zero-loss student of short memory (C12), diagonal students' loss (E2).
- :mod:`~rnnbook.extrapolation.train`: one student run (:class:`RunConfig`), its initialisation and
  the batched GD trainer of all runs; the diagonal students of E2.
- :mod:`~rnnbook.extrapolation.sweeps`: the trained students through the results cache (linear,
  GRU and E2's diagonal), the pieces it declares kept when the rest of the chapter changes.
- :mod:`~rnnbook.extrapolation.experiments`: the chapter's parameters and default teachers, the
  sweeps' runs, and the claim checks: C1, C2 (F1, F2), C3 (F6), C4 (F4), C5
  (F5), C6 (its bound across runs and the rank link within them), C7, C8 (F3, with
  :mod:`rnnbook.gru`; a long-memory teacher in the full profile), C10 (F7), C11, C12, E1, E2, and
  the chapter's tables.
- :mod:`~rnnbook.extrapolation.plots`: figures F1-F7 and E1 (presentation only).
"""
