"""rnnbook: the shared library of the rnn-theory-book.

Foundation (every chapter): :mod:`rnnbook.params` (profiles, parameters, seeding),
:mod:`rnnbook.run` (the per-chapter run: claims, figures, cache, progress),
:mod:`rnnbook.data` (dataset registry), :mod:`rnnbook.execute` (papermill reruns).
Each chapter's science lives in its own package, named as the chapter (:mod:`rnnbook.extrapolation`,
:mod:`rnnbook.stable_models`, :mod:`rnnbook.learning_dynamics`, :mod:`rnnbook.curse_of_memory`);
models more than one chapter may use stay at the top (:mod:`rnnbook.gru`).
"""
from rnnbook.params import ParameterError
from rnnbook.display import show_code, survey_table, table
from rnnbook.run import Run, setup

__all__ = ["ParameterError", "Run", "setup", "show_code", "survey_table", "table"]
