"""The stable-models chapter's sections that compute, draw and check (Miller & Hardt 2019, §4).

Each function takes the chapter's :class:`rnnbook.Run`, gets its results (through the results cache),
saves the figure drawn by :mod:`rnnbook.stable_models.plots` and returns its claim's check: F2 and F4
(the price of stability and truncation), F3 (gradient decay, C10), E2 (contraction estimates) and F5
(weight gaps, C12).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rnnbook.stable_models import plots
from rnnbook.stable_models.experiments import (c10_check, c12_check, decay_ratios, estimate,
                                               estimates, f5_jobs, gradient_decays, mean_test)
from rnnbook.stable_models.settings import CELLS, METRIC, TASK_NAMES
from rnnbook.stable_models.train import fit, fit_jobs, weight_gaps

if TYPE_CHECKING:
    from rnnbook.stable_models.settings import Settings
    from rnnbook.stable_models.train import TaskData


def f2_f4_figures(run, S: Settings, trunc: dict, res: dict, c9: dict,
                  lm: dict | None = None) -> None:
    """Draw F2 (NLL and ‖W‖₂ against k; ‖W‖₂ during C9's runs ``c9`` of :func:`c9_runs`) and F4
    (test metric against k, recurrent models dashed: JSB, and in the full profile the language
    models ``lm`` of :func:`lm_truncation_sweep`)."""
    if not trunc:
        return
    ks = S.f2_k
    nll = {"unstable RNN": [trunc[("rnn", False, k)]["test"] for k in ks],
           "stable RNN": [trunc[("rnn", True, k)]["test"] for k in ks]}
    w = [trunc[("rnn", False, k)]["w_norms"][-1] for k in ks]
    w_train = {k: [c9[(False, k, seed)]["w_norms"] for seed in S.c9_seeds] for k in (2, 32)}
    fig = plots.plot_f2(ks, nll, w, w_train, len(trunc[("rnn", False, ks[0])]["w_norms"]))
    run.save_figure(fig, "F2", "The price of stability (§4.3) on JSB: test NLL of the unstable and "
                    "stable RNN (left) and $\\|W\\|_2$ of the unstable RNN (middle) against the "
                    f"training truncation $k$ (seed {S.seeds[0]}, Table 1's epochs); right: "
                    "$\\|W\\|_2$ of the unstable RNN during C9's runs ($k$ = 2 and 32, one line per "
                    f"seed, {len(S.c9_seeds)} seeds; dotted: the epochs of the left and middle "
                    "panels).")
    name = {c: f"unstable {c.upper()}" for c in CELLS}
    panels = [plots.F4Panel("JSB", "test NLL per frame (nats)", ks,
                          {name[c]: [trunc[(c, False, k)]["test"] for k in ks] for c in CELLS},
                          {name[c]: mean_test(res, "jsb", c, False) for c in CELLS})]
    for t in sorted({t for t, _, _ in lm or {}}):
        panels.append(plots.F4Panel(TASK_NAMES[t], f"test {METRIC[t]}", S.lm_k,
                                  {name[c]: [lm[(t, c, k)] for k in S.lm_k] for c in CELLS},
                                  {name[c]: mean_test(res, t, c, False) for c in CELLS}))
    run.save_figure(plots.plot_f4(panels), "F4", "As the paper's Fig. 4: the test metric of models "
                    "trained and tested with truncation $k$ (" + ", ".join(p.title for p in panels)
                    + "); dashed: the recurrent model (Table 1).")


def f3_gradients(run, S: Settings, td: TaskData | None) -> dict:
    """F3/C10: gradient decay of the unstable RNN and LSTM of ``S.f3_task`` (``td``: its data;
    PTB characters, full profile WikiText-2), averaged over windows of the training set as the
    paper's Fig. 3 (:func:`~rnnbook.stable_models.experiments.gradient_decays`);
    :func:`~rnnbook.stable_models.experiments.c10_check` of their ratios, of the LSTM with its
    forget gate shut (the control) and of both models at initialisation."""
    if td is None:
        return {"value": f"{S.f3_task} not in tasks", "passed": False, "verdict": "inconclusive",
                "vanish": False}
    g = gradient_decays(run.cache, S, td)
    trained = {n: g[n] for n in (f"unstable {c.upper()}" for c in CELLS)}
    run.save_figure(plots.plot_f3(trained), "F3", "As the paper's Fig. 3: mean gradient norm of the loss at "
                    f"the last step of 64 training windows ({TASK_NAMES[td.task]}) with respect to the "
                    "embedded input $i$ steps back, unconstrained models, float64.")
    return c10_check({n: decay_ratios(v) for n, v in trained.items()}, decay_ratios(g["forget gate shut"]),
                     {c: decay_ratios(g[f"initial {c.upper()}"]) for c in CELLS})


def e2_contraction(run, S: Settings, tds: dict) -> dict:
    """E2: Ŝ_r, r ∈ {1, 4, 16, 64}, for every JSB and char model, and for the fork's "stable"
    LSTM on JSB (column constraint, forget bias 10 on each bias vector)."""
    e2 = {n: e for n, e in estimates(S).items() if e.name == "e2"}
    out = {n: estimate(run.cache, S, tds[e.task], e) for n, e in run.progress(list(e2.items()))}
    run.save_figure(plots.plot_e2(out), "E2", "Contraction estimates $\\hat S_r$ (a lower bound on "
                    "the $r$-step Lipschitz constant on reachable states) against $r$. Colour: task "
                    "and cell; solid: unconstrained, dashed: stable; black, dotted, diamonds: the "
                    f"fork's LSTM; grey dashed line: 1. Shaded: below {plots.E2_ROUNDING:.0e}, where "
                    "the two trajectories agree to float32 rounding (no contraction rate); open "
                    f"triangle: a value below {plots.E2_FLOOR:.0e} (or exactly 0), drawn there.")
    norms = {n: fit(run.cache, S, tds[e.task], e.cell, e.stable, S.seeds[0], **e.kwargs)["w_hh_final"]
             for n, e in e2.items()}
    rows = [{"model": n, "‖W_hh‖₂": float(norms[n]), **{f"Ŝ_{r}": v for r, v in d.items()}}
            for n, d in out.items()]
    return {"S_hat": out, "rows": rows}


def f5_weight_gaps(run, S: Settings, td: TaskData | None) -> dict:
    """F5/C12: models trained with truncation k and the reference k = ``S.f5_ref`` (same init and
    data order; ``td``: the data of ``S.f5_task``), their gaps judged by
    :func:`~rnnbook.stable_models.experiments.c12_check`, with the reference's drift from its
    start as the shape rule's control."""
    if td is None:
        return {"value": f"{S.f5_task} not in tasks", "passed": False, "verdict": "inconclusive"}
    jobs = f5_jobs(S)
    snaps: dict[str, dict[int, np.ndarray]] = {}
    for (_, c, _, _, w), summary in zip(jobs, fit_jobs(run.cache, S, {td.task: td}, jobs,
                                                            run.progress)):
        snaps.setdefault(c, {})[w["k"]] = summary["snapshots"]
    gaps = {c: weight_gaps(v, S.f5_ref) for c, v in snaps.items()}
    what = "the weights" if td.task == "jsb" else "$W_{hh}$"
    named = {f"unstable {c.upper()}": g for c, g in gaps.items()}
    run.save_figure(plots.plot_f5(named, S.f5_ref), "F5", f"As the paper's Fig. 5: distance between "
                    f"{what} of unconstrained {TASK_NAMES[td.task]} models "
                    f"({', '.join(c.upper() for c in S.f5_cells)}) trained with truncation $k$ and "
                    f"with $k = {S.f5_ref}$, same initialisation and data order, after each epoch; "
                    "right: the same from epoch 1 on a log scale.")
    drift = {c: np.linalg.norm(v[S.f5_ref] - v[S.f5_ref][0], axis=1).tolist()
             for c, v in snaps.items()}
    return c12_check(gaps, drift, S)
