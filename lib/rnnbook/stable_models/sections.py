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
from rnnbook.stable_models.experiments import estimate, estimates, f5_jobs, mean_test
from rnnbook.stable_models.settings import CELLS, METRIC, TASK_NAMES
from rnnbook.stable_models.train import fit, fit_jobs, gradient_decay, weight_gaps

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


def f3_gradients(run, S: Settings, td: TaskData | None, res: dict) -> dict:
    """F3/C10: gradient decay of the unstable RNN and LSTM of ``S.f3_task`` (``td``: its data;
    PTB characters, full profile WikiText-2), averaged over windows of the training set as the
    paper's Fig. 3; checks g(40)/g(1) < 1e-2 for both and the LSTM's ratio above the RNN's at
    i = 20, 40."""
    if td is None:
        return {"value": f"{S.f3_task} not in tasks", "passed": False, "verdict": "inconclusive"}
    g = {f"unstable {c.upper()}": gradient_decay(res[(td.task, c, False)][0][1],
                                                 td.data.ids["train"], seed=S.seeds[0])
         for c in CELLS}
    run.save_figure(plots.plot_f3(g), "F3", "As the paper's Fig. 3: mean gradient norm of the loss at "
                    f"the last step of 64 training windows ({TASK_NAMES[td.task]}) with respect to the "
                    "embedded input $i$ steps back, unconstrained models, float64.")
    ratio = {name: {i: float(v[i] / v[1]) for i in (20, 40)} for name, v in g.items()}
    r, l = ratio["unstable RNN"], ratio["unstable LSTM"]
    ok = r[40] < 1e-2 and l[40] < 1e-2 and l[20] > r[20] and l[40] > r[40]
    return {"value": {f"{n} g({i})/g(1)": v for n, d in ratio.items() for i, v in d.items()},
            "passed": bool(ok)}


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
    nets = {n: fit(run.cache, S, tds[e.task], e.cell, e.stable, S.seeds[0], **e.kwargs)[1]
            for n, e in e2.items()}
    rows = [{"model": n, "‖W_hh‖₂": nets[n].W_hh_norm(), **{f"Ŝ_{r}": v for r, v in d.items()}}
            for n, d in out.items()]
    return {"S_hat": out, "rows": rows}


def f5_weight_gaps(run, S: Settings, td: TaskData | None) -> dict:
    """F5/C12: models trained with truncation k and the reference k = ``S.f5_ref`` (same init and
    data order; ``td``: the data of ``S.f5_task``); for every model the final gap must decrease
    strictly in k and, for every k, end above its value after the first epoch (growth over
    training; single epochs may dip, the largest dip is reported)."""
    if td is None:
        return {"value": f"{S.f5_task} not in tasks", "passed": False, "verdict": "inconclusive"}
    jobs = f5_jobs(S)
    snaps: dict[str, dict[int, np.ndarray]] = {}
    for (_, c, _, _, w), (summary, _) in zip(jobs, fit_jobs(run.cache, S, {td.task: td}, jobs,
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
    value, in_k, in_epochs = {}, True, True
    for c, by_k in gaps.items():
        final = [by_k[k][-1] for k in S.f5_k]
        in_k &= all(a > b for a, b in zip(final, final[1:]))
        in_epochs &= all(v[-1] > v[1] for v in by_k.values())
        value |= {f"{c.upper()} final k={k}": by_k[k][-1] for k in S.f5_k}
        value |= {f"{c.upper()} largest drop over an epoch, k={k}":
                  max(0.0, *(a - b for a, b in zip(v, v[1:]))) for k, v in by_k.items()}
    return {"value": value, "passed": bool(in_k and in_epochs),
            "verdict": None if in_k and in_epochs else "partly" if in_k or in_epochs
            else "not reproduced"}
