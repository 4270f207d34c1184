"""The stable-models chapter: Miller & Hardt, "Stable Recurrent Models", ICLR 2019.

A recurrent model :math:`h_t = \\phi_w(h_{t-1}, x_t)` is *stable* when :math:`\\phi_w` contracts in
:math:`h` (Def. 1); the chapter checks what stability costs and whether unstable models behave
stably on data.

- :mod:`~rnnbook.stable_models.constraints`: the stable set, the projection onto it (App. C) and the
  LSTM's row constraints (Prop. 2); truncated forward passes (§3.1).
- :mod:`~rnnbook.stable_models.theory`: the theory half, float64 and batched: C1 (projections), C2
  (App. A.1; F7), C3 (Prop. 3; F8), C4 (Prop. 4; F6).
- :mod:`~rnnbook.stable_models.datasets`: JSB, ATIS, PTB and WikiText-2, and their metrics (§4).
- :mod:`~rnnbook.stable_models.settings`: the tasks' configurations (Table 1's settings) and the
  chapter's parameters.
- :mod:`~rnnbook.stable_models.models`: the tanh RNN and LSTM networks, stable or not, the tanh
  recurrence's hand-written BPTT and the learning-rate schedule.
- :mod:`~rnnbook.stable_models.stack`: many models of one task, cell and truncation trained as one
  batched program (projected SGD per member).
- :mod:`~rnnbook.stable_models.train`: cached runs, grouped into stacks in worker processes, the
  gradient-decay probe (Fig. 3) and the contraction estimate :math:`\\hat S_r` (§4.3).
- :mod:`~rnnbook.stable_models.experiments`: Table 1 (C5, C6, C7), the truncation sweeps (C9, C11),
  E3's fork-style LSTM, the contraction claims (C8, E2) and F5's runs (C12).
- :mod:`~rnnbook.stable_models.sections`: the sections that compute, draw and check: F2 and F4, F3
  (C10), E2, F5 (C12).
- :mod:`~rnnbook.stable_models.plots`: figures F2-F8, E1, E2 (presentation only).
"""
