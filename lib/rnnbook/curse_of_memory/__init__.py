"""The curse-of-memory chapter: Zucchet & Orvieto, "Recurrent neural networks: vanishing and
exploding gradients are not the end of the story", NeurIPS 2024.

Notation follows the paper: a scalar recurrence :math:`h_t = \\lambda h_{t-1} + x_t` driven by
wide-sense-stationary inputs with :math:`E[x_t x_{t-\\Delta}] = \\rho^{|\\Delta|}`; complex diagonal /
LRU students and dense (block-diagonal) students trained through their causal convolution.

- :mod:`~rnnbook.curse_of_memory.theory`: the closed forms K1-K5 (second moments and sensitivities,
  normalisation, the 1-D loss) and their checks: C1 (F1), C2 (F2), F9, E2.
- :mod:`~rnnbook.curse_of_memory.models`: the students, the teacher, the batched runs (trained through
  the quadratic form of their kernel error, Eq. cm-quad) and the Adam probe (K6).
- :mod:`~rnnbook.curse_of_memory.curvature`: Hessians: K7 (block Hessian), F10's theory Hessian, F7
  (reparametrisations), K9 (F5, C6) and F8 (learning θ, C12).
- :mod:`~rnnbook.curse_of_memory.propagation`: signal propagation in deep networks (F6; C7, C8) and
  GRUs (F12, C9; K10), on the specification's synthetic substitute inputs.
- :mod:`~rnnbook.curse_of_memory.experiments`: the chapter's parameters and the teacher-student
  sweeps' checks: C3 (F3), C4 (F4), C5 (F5), C10 (F10), C11 (F11), E1, and F9's ratios.
- :mod:`~rnnbook.curse_of_memory.plots`: figures F1-F12, E1, E2 (presentation only).
"""
