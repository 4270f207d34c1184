"""The learning-dynamics chapter: Proca, Dominé, Shanahan & Mediano, "Learning dynamics in linear
recurrent neural networks", ICML 2025.

Notation follows the paper (§2-3): one scalar connectivity mode (a, b, c) per singular-value
dimension, ``u = a*c``, task singular values ``s_t`` (t = 1..T) with ``delta``, ``lam``, ``kappa``,
``beta``, and the energy :math:`E=\\frac1{2\\tau}\\sum_i (s_i - c b^{T-i} a)^2`.

- :mod:`~rnnbook.learning_dynamics.theory`: tasks, the energy and its flow, zero-loss solutions,
  Dirac tasks' phase diagram, the symbolic checks (K2-K4), F4's landscape and E1's curvature.
- :mod:`~rnnbook.learning_dynamics.experiments`: the chapter's parameters, the mode-level runs and
  the claim checks C1-C6, C10, C11 (F1-F3, F9, F10, E2).
- :mod:`~rnnbook.learning_dynamics.networks`: full linear RNNs: the aligned network (K1), the NTK
  (F6, C7) and the sensory-integration task (F7, F8; C8, C9).
- :mod:`~rnnbook.learning_dynamics.sections`: the sections that compute, draw and return their
  checks: F1, F6 (and the full profile's A5/A7 panels), F7, F8.
- :mod:`~rnnbook.learning_dynamics.plots`: figures F1-F10, E1, E2 (presentation only).
"""
