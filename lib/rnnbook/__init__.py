"""rnnbook: the shared library of the rnn-theory-book.

Foundation (every chapter): :mod:`rnnbook.params` (profiles, parameters, seeding),
:mod:`rnnbook.run` (the per-chapter run: claims, figures, cache, progress),
:mod:`rnnbook.data` (dataset registry), :mod:`rnnbook.execute` (papermill reruns).
Chapter computations live in one module per chapter (e.g. :mod:`rnnbook.extrapolation`).
"""
from rnnbook.params import ParameterError
from rnnbook.display import show_code, table
from rnnbook.run import Run, setup

__all__ = ["ParameterError", "Run", "setup", "show_code", "table"]
