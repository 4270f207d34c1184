"""The stable-models chapter's experiments and claim checks (Miller & Hardt 2019, §4).

Table 1 (stable against unstable models on every task: C5, C6, C7), the truncation sweeps on JSB
and the language models (C9, C11; F2, F4), the fork-style LSTM (E3), the contraction estimates (C8,
C13, E2), the runs of F5 (C12) and the rules of C10 (Fig. 3), C12 (Fig. 5) and C14 (Prop. 2); every
training run goes through :func:`rnnbook.stable_models.train.fit`.
"""
from __future__ import annotations

import copy
import functools
import math
from pathlib import Path
from typing import Callable, NamedTuple, TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from rnnbook import claims
from rnnbook.display import Table, table
from rnnbook.stable_models import constraints
from rnnbook.stable_models.models import make_net
from rnnbook.stable_models.settings import CELLS, METRIC, TASK_NAMES
from rnnbook.stable_models.train import (Workers, contraction_estimate, embedded_windows,
                                         fit_jobs, fit_key, gradient_decay, prefit,
                                         smallest_contracting_r, trained_net)

if TYPE_CHECKING:
    from rnnbook.stable_models.models import Net
    from rnnbook.stable_models.settings import Settings
    from rnnbook.stable_models.train import Job, TaskData


def settings_rows(S: Settings, tds: dict[str, "TaskData"]) -> list[dict]:
    """The chapter's table of tasks, one row per setting and one column per task (so that it fits
    a page): training-set size (chorales, utterances or tokens of the prefix used), input and
    output sizes and the :class:`TaskConfig` values that apply ("—" where not)."""
    unit = {"jsb": "chorales", "atis": "utterances", "ptb_char": "characters"}
    cols = {}
    for t, td in tds.items():
        c = S.configs[t]
        n = len(td.data["train"]) if t == "jsb" else (
            len(td.data.words["train"]) if t == "atis" else len(td.data.ids["train"]))
        cols[t] = {"training set": f"{n:,} {unit.get(t, 'words')}", "inputs": td.n_in,
                   "outputs": td.n_out, "hidden": c.hidden, "embedding": c.emb or "—",
                   "lr": c.lr, "clip": c.clip, "epochs": c.epochs, "batch": c.batch,
                   "bptt": c.bptt or "—", "schedule": c.schedule or "—",
                   "dropout": c.dropout or "—",
                   "softmax": f"adaptive, cut at {c.cutoffs[0]}" if c.cutoffs else "full"}
    keys = next(iter(cols.values()), {}).keys()
    return [{"setting": k, **{t: v[k] for t, v in cols.items()}} for k in keys]


def train_all(cache, S: Settings, progress=lambda it, **kw: it, wait: bool = True) -> Workers:
    """Every training run of the chapter at once, longest first (Table 1; on JSB also the
    truncation sweep, C11's extra seeds and E2's fork-style LSTM; the word LSTMs of C13's seeds;
    F5; the full profile's language-model truncations of F4), so that no worker idles between sections; with
    ``wait=False`` in the background (:func:`~rnnbook.stable_models.train.prefit`)."""
    jobs = [(t, c, s, seed, {}) for t in S.tasks for c, s in MODELS for seed in S.seeds]
    if "jsb" in S.tasks:
        seed = S.seeds[0]
        jobs += [("jsb", c, s, seed, {"k": k}) for c, s, k in truncation_jobs(S)]
        jobs += [("jsb", "lstm", True, seed, FORK_LSTM)]
        jobs += c9_jobs(S) + c11_jobs(S)
    jobs += [estimate_job(e) for e in estimates(S).values()]  # C13's word LSTMs of C9's seeds
    jobs = [j for i, j in enumerate(jobs) if j not in jobs[:i]]
    est = [e for e in estimates(S).values() if not cache.path(e.name, e.config).exists()]

    def after(group: list[Job]) -> list[tuple]:  # C8's, C13's and E2's estimates follow their models
        return [(estimate, e) for e in est if estimate_job(e) in group]
    runs = jobs + f5_jobs(S) + lm_truncation_jobs(S)
    plan_runs(cache, S, runs)
    return prefit(cache, S, runs, S.workers, progress, wait, after)


def plan_runs(cache, S: Settings, jobs: list[Job]) -> None:
    """Record the runs of ``jobs`` as the cache's plan, one per piece name (``<task>-<cell>``), so that
    ``python -m rnnbook status stable_models`` says what is done, what is left and what a finished
    run cost (issue 47)."""
    by_name: dict[str, list[dict]] = {}
    for job in jobs:
        name, config = fit_key(S, *job)
        by_name.setdefault(name, []).append(config)
    for name, configs in by_name.items():
        cache.plan(name, configs)


# ============================================================================ Table 1
# Recalled Table 1 of the paper (spec §9): as recalled, unverified; shown, never a test target.
RECALLED_TABLE1 = {
    "jsb": {("rnn", False): 8.9, ("rnn", True): 8.9, ("lstm", False): 8.5, ("lstm", True): 8.5},
    "atis": {("rnn", False): 94.7, ("rnn", True): 94.7, ("lstm", False): 95.1,
             ("lstm", True): 94.6},
    "wikitext2": {("rnn", False): 146.7, ("rnn", True): 143.5, ("lstm", False): 95.7,
                  ("lstm", True): 113.2},
    "ptb_char": {("rnn", False): 1.8, ("rnn", True): 1.9, ("lstm", False): 1.4,
                 ("lstm", True): 1.9},
}
MODELS = [(c, s) for c in CELLS for s in (False, True)]
FORK_LSTM = {"constraint": "col_fork", "forget_bias": 10.0}  # the fork's "stable" LSTM (E2)
FORK_NAME = "jsb/lstm/fork (col, bias 10+10)"  # its name in E2 (C14's control)


def table1(cache, S: Settings, tds: dict[str, TaskData], progress=lambda it, **kw: it
           ) -> dict[tuple[str, str, bool], list[dict]]:
    """F1: every task × {RNN, LSTM} × {unstable, stable} × seed, trained (or loaded): their
    summaries (:func:`~rnnbook.stable_models.train.fit`), one per seed."""
    jobs = [(t, c, s, seed, {}) for t in S.tasks for c, s in MODELS for seed in S.seeds]
    out: dict = {}
    for (t, c, s, _, _), summary in zip(jobs, fit_jobs(cache, S, tds, jobs, progress)):
        out.setdefault((t, c, s), []).append(summary)
    return out


def committed_table1(S_full: Settings) -> dict[tuple[str, str, bool], list[dict]]:
    """F1 at the paper's sizes (``S_full``: the full profile's settings) from the pieces committed
    in ``data/results/full/stable_models/cache`` (issue 47: a full run's training runs are pieces of
    their own, kept before the run is judged), as :func:`table1` gives it, for each task whose runs
    are committed at every seed; {} if none."""
    from rnnbook.cache import Cache
    from rnnbook.paths import FULL_RESULTS_DIR, results_version
    cache = Cache(FULL_RESULTS_DIR / "stable_models" / "cache", results_version("stable_models"))
    res = {(t, c, s): [cache.get(*fit_key(S_full, t, c, s, seed, {})) for seed in S_full.seeds]
           for t in S_full.tasks for c, s in MODELS}
    done = {t for t in S_full.tasks if all(None not in res[(t, c, s)] for c, s in MODELS)}
    return {key: [dict(r) for r in runs] for key, runs in res.items() if key[0] in done}


def table1_rows(res: dict, S: Settings) -> list[dict]:
    """F1 as rows: test metric (mean ± sd over seeds), final ‖W_hh‖₂, recalled value; the tasks of
    ``S`` that ``res`` holds."""
    rows = []
    for t in (t for t in S.tasks if (t, CELLS[0], False) in res):
        for c, s in MODELS:
            tests = [r["test"] for r in res[(t, c, s)]]
            norms = [r["w_norms"][-1] for r in res[(t, c, s)]]
            sd = f" ± {np.std(tests, ddof=1):.2f}" if len(tests) > 1 else ""
            rows.append({"task": t, "metric": METRIC[t], "model": c.upper(),
                         "variant": "stable" if s else "unstable",
                         "ours": f"{np.mean(tests):.2f}{sd}", "final ‖W_hh‖₂": np.mean(norms),
                         "training CPU s": float(np.sum([r["cpu_s"] for r in res[(t, c, s)]])),
                         "paper (as recalled, unverified)": recalled(t, c, s)})
    return rows


def recalled(task: str, cell: str, stable: bool) -> float | str:
    """The recalled Table 1 entry; the quick profile's PTB words show the paper's WikiText-2 row,
    named as such (another corpus, shown for orientation only)."""
    if task == "ptb_word":
        return f"{RECALLED_TABLE1['wikitext2'][(cell, stable)]} (WikiText-2)"
    return RECALLED_TABLE1.get(task, {}).get((cell, stable), "—")


def mean_test(res: dict, task: str, cell: str, stable: bool) -> float:
    return float(np.mean([r["test"] for r in res[(task, cell, stable)]]))


# ============================================================================ claims of Table 1
COST_LINE = 0.05  # C5/C6: a stable model "pays" from a relative cost of 5 % of the unstable model's metric


def relative_cost(res: dict, task: str, cell: str) -> float:
    """C5/C6: how much worse the stable model is than the unstable one, relative to the unstable
    model's test metric (mean over seeds): (stable − unstable)/unstable for NLL, bpc and perplexity,
    (unstable − stable)/unstable for F1; negative: the stable model is better."""
    s, u = mean_test(res, task, cell, True), mean_test(res, task, cell, False)
    return _over(u - s if task == "atis" else s - u, u)


def _over(a: float, b: float) -> float:
    """a / b, NaN where b is 0 (a smoke run's F1 of 0)."""
    return a / b if b else float("nan")


def jsb_memory(trunc: dict, res: dict) -> float:
    """The whole effect of memory on JSB: the unstable LSTM's test NLL with no memory (k = 1, F2's
    run) minus the recurrent one's (Table 1), in nats; NaN without the runs."""
    if ("lstm", False, 1) not in trunc:
        return float("nan")
    return trunc[("lstm", False, 1)]["test"] - mean_test(res, "jsb", "lstm", False)


def c5_checks(gap: dict, res: dict, S: Settings, memory: float) -> dict:
    """C5: stable about as good as unstable. Slot filling (both cells) and the language models (the
    RNN): relative cost (:func:`relative_cost`) below :data:`COST_LINE`, the line from which C6
    says a model pays. JSB: the cost in nats below ``memory`` (:func:`jsb_memory`), the whole
    effect of memory there (means over seeds). Reproduced if every part holds, partly if some do."""
    value, held, text = {}, [], []
    for t in S.tasks:
        if t == "jsb":
            for c in CELLS:
                value[f"jsb/{c} cost (nats)"] = gap[t][c]
                held.append(gap[t][c] < memory)
            value["jsb memory effect (nats)"] = memory
            text.append("JSB cost < memory effect (LSTM, k = 1 − recurrent)")
            continue
        for c in c5_cells(t):
            value[f"{t}/{c} relative cost"] = relative_cost(res, t, c)
            held.append(value[f"{t}/{c} relative cost"] < COST_LINE)
        text.append(f"{t} ({'/'.join(c5_cells(t))}) relative cost < {COST_LINE:g}")
    verdict = None if held and all(held) else "partly" if any(held) else "not reproduced"
    return {"value": value, "tolerance": "; ".join(text), "passed": bool(held and all(held)),
            "verdict": verdict}


def c5_context(gap: dict, res: dict) -> dict[str, float | str]:
    """Glue values that put C5's gaps in context: the cost of stability per checked model (how much
    worse the stable model is, in the metric's units: F1 counted down, NLL and bpc up; negative:
    better), the unstable char RNN's bpc, ATIS's extra errors (100 − F1) of the stable models in
    per cent, and the same cost in the recalled Table 1 (as recalled, unverified)."""
    sign = {"atis": -1.0}  # F1: higher is better
    out: dict[str, float | str] = {}
    if "ptb_char" in gap:
        out["c5_char_u"] = mean_test(res, "ptb_char", "rnn", False)
    if "atis" in gap:
        err = {c: _over(mean_test(res, "atis", c, False) - mean_test(res, "atis", c, True),
                        100 - mean_test(res, "atis", c, False)) for c in CELLS}
        out["c5_atis_err"] = " and ".join(f"{100 * e:.0f}%" for e in err.values()) + " (RNN, LSTM)"
    for t, short in (("jsb", "jsb"), ("atis", "atis"), ("ptb_char", "char")):
        for c in c5_cells(t):
            out[f"cost_{short}_{c}"] = sign.get(t, 1.0) * gap[t][c] if t in gap else float("nan")
    unit = {"jsb": "nats", "atis": "F1 points", "ptb_char": "bpc"}
    out["c5_paper"] = ", ".join(
        f"{TASK_NAMES[t]} " + " and ".join(
            f"{round(sign.get(t, 1.0) * (R[(c, True)] - R[(c, False)]), 1) + 0.0:+.1f} ({c.upper()})"
            for c in c5_cells(t)) + f" {unit[t]}"
        for t, R in RECALLED_TABLE1.items() if t in unit)
    return out


def c5_cells(task: str) -> tuple[str, ...]:
    """C5 compares both models on music and slot filling, the RNN only on language modelling."""
    return CELLS if task in ("jsb", "atis") else ("rnn",)


def c6_check(res: dict, S: Settings) -> dict:
    """C6: the stable LSTM pays on language modelling: its relative cost (:func:`relative_cost`)
    on characters at least :data:`COST_LINE` (C5's line) and larger than the RNN's; full profile:
    also on WikiText-2. The quick word-level LSTM's cost is reported only."""
    value, ok, text = {}, True, []
    for t in ("ptb_char", "ptb_word", "wikitext2"):
        if t not in S.tasks:
            continue
        cost = {c: relative_cost(res, t, c) for c in CELLS}
        value |= {f"{t} LSTM relative cost": cost["lstm"], f"{t} RNN relative cost": cost["rnn"]}
        if t == "ptb_word":
            text.append("PTB-word LSTM reported only")
            continue
        ok &= cost["lstm"] >= COST_LINE and cost["lstm"] > cost["rnn"]
        text.append(f"{t} LSTM relative cost ≥ {COST_LINE:g} and > the RNN's")
    if "ptb_char" in S.tasks:
        value |= {f"char {c.upper()} gap (bpc)": mean_test(res, "ptb_char", c, True)
                  - mean_test(res, "ptb_char", c, False) for c in CELLS}
    if "ptb_char" not in S.tasks and "wikitext2" not in S.tasks:
        return {"value": "not run: no language-model task (ptb_char, wikitext2) among the tasks",
                "tolerance": "needs ptb_char or wikitext2", "passed": False, "verdict": "inconclusive"}
    return {"value": value, "tolerance": "; ".join(text), "passed": bool(ok), "verdict": None}


# ============================================================================ F2, F4, C9, C11, E3
def truncation_sweep(cache, S: Settings, td: TaskData | None, progress=lambda it, **kw: it
                     ) -> dict:
    """F2/F4: JSB RNN (unstable, stable) and unstable LSTM trained and tested with truncation k,
    for k in ``S.f2_k`` (and k = 1, 2 for the LSTM of E3), with Table 1's settings (so that the
    recurrent point is Table 1's model)."""
    if td is None:
        return {}
    jobs = [("jsb", c, s, S.seeds[0], {"k": k}) for c, s, k in truncation_jobs(S)]
    return {(c, s, w["k"]): summary for (_, c, s, _, w), summary
            in zip(jobs, fit_jobs(cache, S, {"jsb": td}, jobs, progress))}


def truncation_jobs(S: Settings) -> list[tuple[str, bool, int]]:
    """(cell, stable, k) of F2/F4/E3: both RNNs at every k of ``S.f2_k``, the unstable LSTM at
    those and at k = 1, 2."""
    jobs = [("rnn", False, k) for k in S.f2_k] + [("rnn", True, k) for k in S.f2_k]
    return jobs + [("lstm", False, k) for k in sorted(set(S.f2_k) | {1, 2})]


def lm_truncation_jobs(S: Settings) -> list[Job]:
    """F4's language-model panels (full profile, spec §4): the unstable RNN and LSTM of PTB
    characters and WikiText-2, trained and tested with truncation k in ``S.lm_k``."""
    return [(t, c, False, S.seeds[0], {"k": k}) for t in ("ptb_char", "wikitext2")
            if t in S.tasks for c in CELLS for k in S.lm_k]


def lm_truncation_sweep(cache, S: Settings, tds: dict[str, TaskData],
                        progress=lambda it, **kw: it) -> dict[tuple[str, str, int], float]:
    """The test metric of every run of :func:`lm_truncation_jobs`, keyed (task, cell, k)."""
    jobs = lm_truncation_jobs(S)
    return {(t, c, w["k"]): summary["test"] for (t, c, _, _, w), summary
            in zip(jobs, fit_jobs(cache, S, tds, jobs, progress))}


def c9_jobs(S: Settings) -> list[Job]:
    """C9's runs: the unstable JSB RNN at k = 2 and 32 for every seed of ``S.c9_seeds``, with
    Table 1's settings (so that the first seed's runs are F2's); with the NLL half (``S.c9_nll``,
    full profile) also the stable RNN."""
    return [("jsb", "rnn", s, seed, {"k": k}) for seed in S.c9_seeds
            for s in ((False, True) if S.c9_nll else (False,)) for k in (2, 32)]


def c9_runs(cache, S: Settings, td: TaskData | None, progress=lambda it, **kw: it
            ) -> dict[tuple[bool, int, int], dict]:
    """The runs of :func:`c9_jobs`, keyed (stable, k, seed)."""
    if td is None:
        return {}
    jobs = c9_jobs(S)
    return {(s, w["k"], seed): summary for (_, _, s, seed, w), summary
            in zip(jobs, fit_jobs(cache, S, {"jsb": td}, jobs, progress))}


def c9_check(S: Settings, trunc: dict, runs: dict) -> dict:
    """C9: ‖W‖₂ of the unstable JSB RNN at k = 2 exceeds that at k = 32 by at least
    ``S.c9_min_drop`` (full profile 0.5, the specification's; quick 0.2), as means over the seeds of
    ``runs`` (:func:`c9_runs`). The NLL half, NLL(stable) − NLL(unstable): with
    ``S.c9_nll`` its mean over seeds must exceed one standard deviation at k = 2 and be smaller at
    k = 32 ("partly" if only the norm half holds); otherwise (quick) it is reported from F2's runs
    (``trunc``, one seed, whose sign changes with the seed) and not judged, so that the verdict is
    at most "partly": the norm half alone."""
    if not runs:
        return {"value": "jsb not in tasks", "passed": False, "verdict": "inconclusive"}
    w2, w32 = (float(np.mean([runs[(False, k, seed)]["w_norms"][-1] for seed in S.c9_seeds]))
               for k in (2, 32))
    if S.c9_nll:
        adv = {k: [runs[(True, k, s)]["test"] - runs[(False, k, s)]["test"] for s in S.c9_seeds]
               for k in (2, 32)}
    else:
        adv = {k: [trunc[("rnn", True, k)]["test"] - trunc[("rnn", False, k)]["test"]]
               for k in (2, 32)}
    value = {"‖W‖₂ k=2": w2, "‖W‖₂ k=32": w32, "seeds": len(S.c9_seeds),
             "epochs": S.configs["jsb"].epochs,
             "NLL runs": "C9's" if S.c9_nll else f"F2's (seed {S.seeds[0]}), reported",
             "NLL(stable) − NLL(unstable), k=2": float(np.mean(adv[2])),
             "NLL(stable) − NLL(unstable), k=32": float(np.mean(adv[32]))}
    value["‖W‖₂ drop per seed"] = c9_drops(S, runs)
    sd = float(np.std(adv[2], ddof=1)) if S.c9_nll else 0.0
    nll_seen = bool(np.mean(adv[2]) > sd and np.mean(adv[32]) < np.mean(adv[2]))
    if S.c9_nll:
        value["NLL sd over seeds, k=2"] = sd
    falls = w2 - w32 >= S.c9_min_drop
    passed = falls and (nll_seen or not S.c9_nll)
    if S.c9_nll:
        verdict = None if passed else "partly" if w2 > w32 else "not reproduced"
    else:
        verdict = "partly" if falls else "not reproduced"
    return {"value": value, "passed": bool(passed), "verdict": verdict}


def c9_drops(S: Settings, runs: dict) -> list[float]:
    """C9: ‖W‖₂(k=2) − ‖W‖₂(k=32) of the unstable RNN at the end of training, one per seed."""
    w = {k: [runs[(False, k, s)]["w_norms"][-1] for s in S.c9_seeds] for k in (2, 32)}
    return [float(a - b) for a, b in zip(w[2], w[32])]


def c11_seeds(S: Settings, cell: str) -> list[int]:
    """The seeds of C11's runs of ``cell``: C9's for the models in ``S.c11_cells`` (the RNN in
    the quick profile, both cells in the full one), else the first seed."""
    return S.c9_seeds if cell in S.c11_cells else S.seeds[:1]


def c11_jobs(S: Settings) -> list[Job]:
    """C11's runs: each unstable JSB model at k = 8, 32 and recurrent (Table 1's settings) for
    every seed of :func:`c11_seeds` (the first seed's are F2's and Table 1's, the RNN's k = 32
    runs C9's)."""
    return [("jsb", c, False, seed, {"k": k} if k else {}) for c in CELLS
            for seed in c11_seeds(S, c) for k in C11_K]


def c11_runs(cache, S: Settings, td: TaskData | None, progress=lambda it, **kw: it
             ) -> dict[tuple[str, int | None, int], float]:
    """The test NLL of every run of :func:`c11_jobs`, keyed (cell, k, seed); k = None: recurrent."""
    if td is None:
        return {}
    jobs = c11_jobs(S)
    return {(c, w.get("k"), seed): summary["test"] for (_, c, _, seed, w), summary
            in zip(jobs, fit_jobs(cache, S, {"jsb": td}, jobs, progress))}


C11_K = (8, 32, None)  # None: the recurrent model


def c11_check(S: Settings, runs: dict, memory: float) -> dict:
    """C11: per unstable model, the spread (max − min) over k ∈ {8, 32, recurrent} of the median
    JSB test NLL over :func:`c11_seeds` (single seeds' NLL moves by about the spread) must stay
    below ``memory`` (:func:`jsb_memory`), the whole effect of memory on JSB: beyond k = 8, a longer
    view into the past is worth less than memory itself."""
    if not runs:
        return {"value": "jsb not in tasks", "tolerance": "spread < memory effect", "passed": False,
                "verdict": "inconclusive"}
    value: dict = {}
    for c in CELLS:
        med = [float(np.median([runs[(c, k, s)] for s in c11_seeds(S, c)])) for k in C11_K]
        value[f"unstable {c.upper()}"] = max(med) - min(med)
        value[f"{c.upper()} seeds"] = len(c11_seeds(S, c))
        value[f"{c.upper()} NLL per seed (k = 8, 32, recurrent)"] = [
            [round(runs[(c, k, s)], 3) for k in C11_K] for s in c11_seeds(S, c)]
    value["memory effect (nats)"] = memory
    spread = max(value["unstable RNN"], value["unstable LSTM"])
    return {"value": value, "tolerance": "max − min over k ∈ {8, 32, recurrent} of the median "
            "over seeds < the memory effect (unstable LSTM, NLL at k = 1 − recurrent)",
            "passed": bool(spread < memory), "verdict": None}


def fork_lstm_forward(lstm: nn.LSTM, x: torch.Tensor) -> torch.Tensor:
    """The fork's call: a chorale of shape (1, T, 88) into ``nn.LSTM`` *without* batch_first, read
    as T sequences of length 1 (no recurrence)."""
    lstm_tf = nn.LSTM(lstm.input_size, lstm.hidden_size)  # batch_first=False, as the fork
    lstm_tf.load_state_dict(lstm.state_dict())
    return lstm_tf(x)[0]


def e3_fork_lstm(cache, S: Settings, td: TaskData | None, trunc: dict, res: dict) -> dict:
    """E3: the fork's non-recurrent LSTM equals the k = 1 truncation (checked on random weights);
    its test NLL against the k = 2 truncation and the recurrent LSTM."""
    if td is None:
        return {"rows": [], "max_diff": float("nan")}
    torch.manual_seed(0)
    lstm, x = nn.LSTM(88, 16, batch_first=True), td.data["test"][0][None]
    with torch.no_grad():
        diff = float((fork_lstm_forward(lstm, x) - constraints.truncated_forward(lstm, x, 1)).abs().max())
    rows = [{"LSTM (unstable)": f"k = 1: the fork's call, our init (forget bias "
             f"{S.lstm_forget_bias:g}, not 10 + 10)", "test NLL": trunc[("lstm", False, 1)]["test"]},
            {"LSTM (unstable)": "k = 2", "test NLL": trunc[("lstm", False, 2)]["test"]},
            {"LSTM (unstable)": "recurrent (Table 1)", "test NLL": mean_test(res, "jsb", "lstm",
                                                                           False)}]
    return {"rows": rows, "max_diff": diff}


# ============================================================================ C8, E2: contraction; F5
class Estimate(NamedTuple):
    """One contraction estimate of C8 or E2: its cache entry, the model and the search."""

    name: str
    config: dict
    task: str
    cell: str
    stable: bool
    kwargs: dict
    rs: list[int]
    starts: int
    steps: int
    seed: int  # the model's seed and the search's


def estimates(S: Settings) -> dict[str, Estimate]:
    """The contraction estimates of C8 (key ``"c8"``: the unconstrained char LSTM, r = 1, 2, ...,
    128), C13 (keys ``"c13"`` and ``"c13/<seed>"``: the unconstrained word LSTM, PTB words quick,
    WikiText-2 full, at every seed of :func:`c13_seeds`, the same r and search) and E2 (keyed by model: every JSB and char model and the fork's "stable" LSTM, r = 1, 4,
    16, 64), each with its cache name and configuration."""
    seed, out = S.seeds[0], {}
    rs, (starts, steps) = [2 ** j for j in range(8)], S.contraction
    for claim, t, seeds in (("c8", "ptb_char", [seed]), ("c13", word_task(S), c13_seeds(S))):
        for s in seeds if t in S.tasks else []:
            config = {"rs": rs, "starts": starts, "steps": steps, "seed": s,
                      "cfg": S.configs[t].__dict__}
            key = claim if s == seed else f"{claim}/{s}"
            out[key] = Estimate(claim, config, t, "lstm", False, {}, rs, starts, steps, s)
    models = [(t, c, s, {}, f"{t}/{c}/{'stable' if s else 'unstable'}")
              for t in ("jsb", "ptb_char") if t in S.tasks for c, s in MODELS]
    if "jsb" in S.tasks:
        models.append(("jsb", "lstm", True, FORK_LSTM, FORK_NAME))
    rs, (starts, steps) = [1, 4, 16, 64], S.e2_contraction
    for t, c, s, kw, name in models:
        config = {"name": name, "rs": rs, "starts": starts, "steps": steps, "seed": seed,
                  "cfg": S.configs[t].__dict__}
        out[name] = Estimate("e2", config, t, c, s, kw, rs, starts, steps, seed)
    return out


def estimate(cache, S: Settings, td: TaskData, e: Estimate) -> dict[int, float]:
    """One estimate of :func:`estimates`: :math:`\\hat S_r` of the trained model on windows of
    its training data (:func:`contraction_estimate`, App. C), through the results cache, on the
    chapter's device (a GPU where there is one: the full profile's r = 128 composes the
    character LSTM 128 times per ascent step)."""
    def compute() -> dict:
        net = trained_net(cache, S, td, e.cell, e.stable, e.seed, **e.kwargs).to(S.device)
        x = embedded_windows(net, td, seed=e.seed)
        S_hat = contraction_estimate(net, x, e.rs, e.starts, e.steps, e.seed)
        return {str(r): v for r, v in S_hat.items()}
    return {int(r): float(v) for r, v in cache.cached(e.name, e.config, compute).items()}


def estimate_job(e: Estimate) -> Job:
    """The training job of an estimate's model."""
    return (e.task, e.cell, e.stable, e.seed, e.kwargs)


PAPER_R = {"c8": 80, "c13": 100}  # §4.3: char / word LSTM "iteratively stable" for about so many steps


def word_task(S: Settings) -> str:
    """The word-level language-modelling task of the run: WikiText-2 where it is run (full), else
    PTB words (quick)."""
    return "wikitext2" if "wikitext2" in S.tasks else "ptb_word"


def c13_seeds(S: Settings) -> list[int]:
    """C13's seeds: the first (quick, which reports r* only) or C9's three (full, which judges the
    median r*: single seeds' r* ranged from 16 to 128 in our quick runs)."""
    return S.c9_seeds if S.profile == "full" else S.seeds[:1]


def c8_contraction(cache, S: Settings, td: TaskData | None, claim: str = "c8") -> dict:
    """C8 (``claim`` "c8": the char LSTM, paper ≈80) and C13 ("c13": the word LSTM, paper ≈100,
    the median r* over :func:`c13_seeds`): Ŝ_r of the unconstrained LSTM for r = 1, 2, 4, ..., 128
    on training-set inputs (20 starts × 200 steps quick, × 1000 full, as App. C); contractive if
    r* (the smallest r ≤ 128 with Ŝ_r < 1; a median over seeds, the upper one of an even count)
    exists. Reproduced if r* is within a factor 2 of the paper's figure (r* = 64 or 128 on this
    grid), "partly" if it contracts far sooner or later; C13 in the quick profile judges only that
    the word LSTM contracts ("partly" at most: its single seed's r* is reported). ``value["Ŝ_r"]``
    is the first seed's."""
    if td is None:
        return {"value": f"{'ptb_char' if claim == 'c8' else 'the word task'} not in tasks",
                "passed": False, "verdict": "inconclusive"}
    S_hats = [estimate(cache, S, td, e) for e in estimates(S).values() if e.name == claim]
    r_stars = [smallest_contracting_r(h) for h in S_hats]
    r_star = sorted(r_stars, key=lambda r: math.inf if r is None else r)[len(r_stars) // 2]
    judged = claim == "c8" or S.profile == "full"
    near = judged and r_star is not None and PAPER_R[claim] / 2 <= r_star <= 2 * PAPER_R[claim]
    verdict = None if near else "partly" if r_star is not None else "not reproduced"
    value = {"Ŝ_r": S_hats[0], "r*": r_star, "paper (char / word)": "≈80 / ≈100"}
    if len(r_stars) > 1:
        value["r* per seed"] = r_stars
    return {"value": value, "passed": r_star is not None, "verdict": verdict}


def c8_reading(value: dict, paper_r: int = PAPER_R["c8"]) -> str:
    """C8's (C13's) r* against the paper's figure in words, for the text: how many times sooner or
    later the model contracts on data, or that it is within the factor 2, or that no r ≤ 128
    contracts."""
    r = value["r*"]
    if r is None:
        return "does not contract on data within 128 steps by our estimate"
    if paper_r / 2 <= r <= 2 * paper_r:
        return f"contracts from r* = {r} steps, within a factor 2 of the paper's ≈{paper_r}"
    ratio = paper_r / r if r < paper_r else r / paper_r
    return (f"contracts from r* = {r} steps, {ratio:.0f} times "
            f"{'sooner' if r < paper_r else 'later'} than the paper's ≈{paper_r}")


def f5_runs(S: Settings) -> list[dict]:
    """The F5 runs' :func:`fit` arguments: truncations ``S.f5_k`` and the reference, snapshots."""
    return [{"k": k, "epochs": S.f5_epochs, "snapshots": True} for k in S.f5_k + [S.f5_ref]]


def f5_jobs(S: Settings) -> list[Job]:
    """F5's training runs: the unconstrained models ``S.f5_cells`` of ``S.f5_task`` (JSB RNN;
    full profile: WikiText-2 RNN and LSTM), one per truncation; none if the task is not run."""
    if S.f5_task not in S.tasks:
        return []
    return [(S.f5_task, c, False, S.seeds[0], w) for c in S.f5_cells for w in f5_runs(S)]


# ============================================================================ rules of F3 (C10), F5 (C12), Prop. 2 (C14)
C10_I = (20, 40)  # C10: the distances back at which g(i)/g(1) is compared
VANISH = 1e-2  # C10-vanish: g(40)/g(1) below this (the specification's line)
FORGET_SHUT = -10.0  # C10's control: the forget gate's bias lowered by this much in all (f ≈ 0)


def decay_ratios(g: np.ndarray) -> dict[int, float]:
    """Fig. 3 (C10): :math:`g(i)/g(1)` at the distances :data:`C10_I` of a gradient-decay curve
    (:func:`~rnnbook.stable_models.train.gradient_decay`)."""
    return {i: float(g[i] / g[1]) for i in C10_I}


def forget_gate_shut(net: Net, shift: float = FORGET_SHUT) -> Net:
    """C10's control: a copy of the LSTM ``net`` with the forget gate's bias (slice [H, 2H) of
    ``nn.LSTM``'s i, f, g, o order) lowered by ``shift``, half on each bias vector, so that
    f ≈ 0 and the cell path :math:`c_t = f \\circ c_{t-1} + \\dots` no longer carries the past."""
    out, H = copy.deepcopy(net), net.rnn.hidden_size
    with torch.no_grad():
        for b in (out.rnn.bias_ih_l0, out.rnn.bias_hh_l0):
            b[H:2 * H] += shift / 2
    return out


def initial_net(S: Settings, td: TaskData, cell: str) -> Net:
    """The unconstrained model of ``td``'s task as training starts (seed ``S.seeds[0]``), drawn
    without touching the global random generator (C10 reports the ordering there)."""
    with torch.random.fork_rng():
        return make_net(cell, S.configs[td.task], td.n_in, td.n_out, S.lstm_forget_bias,
                        S.seeds[0]).eval()


def gradient_decays(cache, S: Settings, td: TaskData) -> dict[str, np.ndarray]:
    """Fig. 3 (C10): the gradient-decay curves (:func:`~rnnbook.stable_models.train.gradient_decay`)
    of Table 1's unconstrained RNN and LSTM of ``td``'s task (seed ``S.seeds[0]``), of that LSTM
    with its forget gate shut (:func:`forget_gate_shut`) and of both models at initialisation
    (:func:`initial_net`); a piece of the results cache, so that a resumed full run needs not the
    models' weights."""
    seed = S.seeds[0]
    config = {"fits": [fit_key(S, td.task, c, False, seed, {})[1] for c in CELLS], "seed": seed}

    def compute() -> dict[str, np.ndarray]:
        nets = {c: trained_net(cache, S, td, c, False, seed) for c in CELLS}
        def decay(net: Net) -> np.ndarray:
            return gradient_decay(net, td.data.ids["train"], seed=seed)
        return ({f"unstable {c.upper()}": decay(net) for c, net in nets.items()}
                | {"forget gate shut": decay(forget_gate_shut(nets["lstm"]))}
                | {f"initial {c.upper()}": decay(initial_net(S, td, c)) for c in CELLS})
    return dict(cache.cached("f3", config, compute))


def c10_check(ratio: dict[str, dict[int, float]], shut: dict[int, float],
              init: dict[str, dict[int, float]]) -> dict:
    """C10 (§4.4, Fig. 3): the trained unstable LSTM's gradients vanish more slowly than the RNN's,
    :math:`g(i)/g(1)` larger at every i of :data:`C10_I` (``ratio``, keyed "unstable RNN" and
    "unstable LSTM"). Control: the same LSTM with its forget gate shut (:func:`forget_gate_shut`,
    ratios ``shut``) must lose the ordering, or the rule decides nothing. ``init``: the ratios at
    initialisation per cell, reported. ``vanish``: C10-vanish's check, :math:`g(40)/g(1)` below
    :data:`VANISH` for both models (a sanity check: ours are orders of magnitude below)."""
    def slower(a: dict[int, float], b: dict[int, float]) -> bool:
        return all(a[i] > b[i] for i in C10_I)
    rnn, lstm = ratio["unstable RNN"], ratio["unstable LSTM"]
    value = {f"{n} g({i})/g(1)": v for n, d in ratio.items() for i, v in d.items()}
    value |= {f"control, LSTM with its forget gate shut: g({i})/g(1)": v for i, v in shut.items()}
    value |= {f"at initialisation: {c.upper()} g({i})/g(1)": v for c, d in init.items()
              for i, v in d.items()}
    ordered, refused = slower(lstm, rnn), not slower(shut, rnn)
    value |= {"control refused": refused,
              "ordered at initialisation": slower(init["lstm"], init["rnn"])}
    return {"value": value, "passed": bool(ordered and refused),
            "vanish": bool(max(d[40] for d in ratio.values()) < VANISH)}


def rise_and_growth(g: list[float]) -> tuple[float, float]:
    """C12, Fig. 5's shape ("rises at first, then grows slowly"): a curve's rise over its first
    epoch, g(1) − g(0), and its mean growth per later epoch, (g(E) − g(1))/(E − 1), from its
    values at the start (g(0)) and after each of E ≥ 2 epochs."""
    return float(g[1] - g[0]), float((g[-1] - g[1]) / (len(g) - 2))


def fig5_shape(g: list[float]) -> bool:
    """C12: the curve has Fig. 5's shape: its first epoch's rise exceeds its mean growth per later
    epoch, which is positive (:func:`rise_and_growth`; linear growth is the boundary)."""
    rise, later = rise_and_growth(g)
    return rise > later > 0


def c12_check(gaps: dict[str, dict[int, list[float]]], drift: dict[str, list[float]],
              S: Settings) -> dict:
    """C12 (§4.4, Fig. 5), per model (``gaps``: cell → k → ‖w_k − w_ref‖ at the start and after
    each epoch, :func:`~rnnbook.stable_models.train.weight_gaps`). The check: the final gap falls
    strictly in k (``S.f5_k``) and every gap ends above its first-epoch value. The verdict adds
    Fig. 5's shape (:func:`fig5_shape`) for every k: reproduced if it holds too, partly if only the
    ordering or only the shape does. Control of the shape rule: the reference model's drift from
    its own start, ‖w_ref(t) − w_ref(0)‖ (``drift``), which rises fast and then slowly, must pass
    it; without that the shape counts as not shown."""
    value, in_k, grows, shape = {}, True, True, True
    for c, by_k in gaps.items():
        final = [by_k[k][-1] for k in S.f5_k]
        in_k &= all(a > b for a, b in zip(final, final[1:]))
        grows &= all(v[-1] > v[1] for v in by_k.values())
        shape &= all(fig5_shape(by_k[k]) for k in S.f5_k)
        value |= {f"{c.upper()} final k={k}": by_k[k][-1] for k in S.f5_k}
        value |= {f"{c.upper()} largest drop over an epoch, k={k}":
                  max(0.0, *(a - b for a, b in zip(v, v[1:]))) for k, v in by_k.items()}
        value |= {f"{c.upper()} first rise / later growth, k={k}": _over(*rise_and_growth(by_k[k]))
                  for k in S.f5_k}
        value[f"{c.upper()} control (reference drift): first rise / later growth"] = _over(
            *rise_and_growth(drift[c]))
    control = all(fig5_shape(v) for v in drift.values())
    value |= {"Fig. 5's shape, every k": shape, "control has the shape": control}
    shown = shape and control
    verdict = None if in_k and grows and shown else "partly" if in_k or shown else "not reproduced"
    return {"value": value, "passed": bool(in_k and grows), "verdict": verdict}


PROP2_TASK = "jsb"  # C14: the task whose inputs are bounded (binary piano-roll frames), as Prop. 2 assumes


def prop2_r(d: int, rs: list[int]) -> int:
    """C14: the largest r that counts as "r = O(log d)": the first r of the grid ``rs`` at or above
    2 log₂ d (16 for d = 128 and 256 on E2's grid 1, 4, 16, 64; the next, 64, is d/2 at d = 128)."""
    return min((r for r in rs if r >= 2 * math.log2(d)), default=max(rs))


def c14_check(S: Settings, S_hat: dict[str, dict[int, float]]) -> dict:
    """C14 (Prop. 2): the row-constrained LSTM's r-fold map contracts for r = O(log d): on JSB, the
    smallest r of E2's grid with :math:`\\hat S_r < 1` (``S_hat``: E2's estimates by model name) is
    at most :func:`prop2_r` of its hidden size d. Control: the fork's LSTM (column constraint,
    forget bias 10 + 10) must not contract by then. The character-level constrained LSTM's r* is
    reported (its embedded inputs are unbounded). At most partly (reason: setting): the row
    constants are the fork's, not Prop. 2's (unread), and d is one size."""
    name = f"{PROP2_TASK}/lstm/stable"
    if name not in S_hat or S.lstm_constraint != "row":
        return {"value": f"needs {PROP2_TASK} and the row constraint", "passed": False,
                "verdict": "inconclusive"}
    d, rs = S.configs[PROP2_TASK].hidden, sorted(S_hat[name])
    bound = prop2_r(d, rs)
    r_star, r_fork = (smallest_contracting_r(S_hat[n]) for n in (name, FORK_NAME))
    value = {"d": d, "r bound": bound, "r*": r_star, "Ŝ_r": S_hat[name],
             "control r* (fork LSTM)": r_fork, "control Ŝ_r (fork LSTM)": S_hat[FORK_NAME],
             "PTB-character constrained LSTM r* (reported)":
                 smallest_contracting_r(S_hat["ptb_char/lstm/stable"])
                 if "ptb_char/lstm/stable" in S_hat else "not run"}
    held = r_star is not None and r_star <= bound
    refused = r_fork is None or r_fork > bound
    return {"value": value, "passed": bool(held and refused),
            "verdict": "partly" if held and refused else "not reproduced"}


# ============================================================================ the claims' records
# What the chapter's evidence claims record beside the paper's value (issue 42): ours in the
# paper's terms, three significant digits, and the coded reason of a verdict other than reproduced.
def _in_words(fn: Callable[..., str]) -> Callable[..., str]:
    """An evidence claim's ``ours`` from its value (a dict); a value that is a message (a task not
    run) is given as it is."""
    @functools.wraps(fn)
    def wrapper(value: dict | str, *args) -> str:
        return fn(value, *args) if isinstance(value, dict) else str(value)
    return wrapper


def evidence_reason(verdict: str | None, passed: bool, otherwise: str = "differs") -> str | None:
    """The coded reason (:data:`rnnbook.claims.REASONS`) of an evidence claim's ``verdict`` (None:
    the default, reproduced if ``passed``): none where it reproduced; "not-run" where it is
    inconclusive (its task was not among those run); else ``otherwise``."""
    if verdict == "reproduced" or (verdict is None and passed):
        return None
    return "not-run" if verdict == "inconclusive" else otherwise


@_in_words
def c5_ours(value: dict | str) -> str:
    """C5's measured costs in words: the relative cost of stability per judged task and cell (in
    per cent of the unstable model's metric; negative: the stable model is better) and JSB's cost
    in nats beside the memory effect."""
    rel = [f"{TASK_NAMES.get(k.split('/')[0], k)} {k.split('/')[1].split()[0].upper()} {100 * v:+.1f} %"
           for k, v in value.items() if k.endswith("relative cost")]
    jsb = [f"{k.split('/')[1].split()[0].upper()} {v:+.3f}" for k, v in value.items()
           if k.startswith("jsb/")]
    out = f"relative cost of stability: {', '.join(rel)}"
    if jsb:
        out += (f"; JSB cost {', '.join(jsb)} nats against a memory effect of "
                f"{value['jsb memory effect (nats)']:.3f} nats")
    return out


@_in_words
def c9_ours(value: dict | str) -> str:
    """C9's measured values in words: the unstable RNN's mean ‖W‖₂ at k = 2 and 32, and the NLL
    half, stable minus unstable test NLL at both k."""
    return (f"‖W‖₂ {value['‖W‖₂ k=2']:.3g} at k = 2, {value['‖W‖₂ k=32']:.3g} at k = 32 (mean of "
            f"{value['seeds']} seeds, {value['epochs']} epochs); NLL(stable) − NLL(unstable) "
            f"{value['NLL(stable) − NLL(unstable), k=2']:+.3g} at k = 2, "
            f"{value['NLL(stable) − NLL(unstable), k=32']:+.3g} at k = 32 (NLL runs: {value['NLL runs']})")


@_in_words
def c10_ours(value: dict | str, task: str) -> str:
    """C10's measured gradient ratios g(i)/g(1) at i = 20 and 40, per unstable model, and its
    control's (the LSTM with its forget gate shut)."""
    return "g(i)/g(1) at i = 20, 40: " + "; ".join(
        f"{c.upper()} {value[f'unstable {c.upper()} g(20)/g(1)']:.3g}, "
        f"{value[f'unstable {c.upper()} g(40)/g(1)']:.3g}" for c in CELLS) + (
        f" ({TASK_NAMES.get(task, task)}, training windows); control, the LSTM with its forget gate "
        f"shut: {value['control, LSTM with its forget gate shut: g(20)/g(1)']:.3g}, "
        f"{value['control, LSTM with its forget gate shut: g(40)/g(1)']:.3g}")


@_in_words
def c11_ours(value: dict | str) -> str:
    """C11's spreads of the median JSB NLL over k ∈ {8, 32, recurrent} beside the memory effect."""
    return (f"spread over k ∈ {{8, 32, recurrent}}: RNN {value['unstable RNN']:.3f} nats (median of "
            f"{value['RNN seeds']} seeds), LSTM {value['unstable LSTM']:.3f} (median of "
            f"{value['LSTM seeds']}); memory effect (LSTM, k = 1 − recurrent) "
            f"{value['memory effect (nats)']:.3f} nats (JSB)")


@_in_words
def c12_ours(value: dict | str, S: Settings) -> str:
    """C12's final weight gaps ‖w_k − w_ref‖ per model, in the order of ``S.f5_k``, and each gap's
    first-epoch rise over its mean later growth per epoch (Fig. 5's shape: above 1)."""
    per_cell = "; ".join(
        f"{c.upper()} final gap " + ", ".join(f"{value[f'{c.upper()} final k={k}']:.3g}" for k in S.f5_k)
        + ", first-epoch rise / later growth per epoch " + ", ".join(
            f"{value[f'{c.upper()} first rise / later growth, k={k}']:.2g}" for k in S.f5_k)
        + " (control, the reference's drift from its start: "
        + f"{value[f'{c.upper()} control (reference drift): first rise / later growth']:.2g})"
        for c in S.f5_cells)
    return per_cell + (f" at k = {', '.join(map(str, S.f5_k))} ({TASK_NAMES.get(S.f5_task, S.f5_task)}, "
                       f"against k = {S.f5_ref}, {S.f5_epochs} epochs)")


@_in_words
def c14_ours(value: dict | str) -> str:
    """C14's r* of the constrained JSB LSTM against its bound, the control's and the character
    model's."""
    def r(x) -> str:
        return "none ≤ 64" if x is None else str(x)
    return (f"the row-constrained JSB LSTM (d = {value['d']}) contracts on data from r* = "
            f"{r(value['r*'])} (bound {value['r bound']}); control, the fork's LSTM: r* = "
            f"{r(value['control r* (fork LSTM)'])}; the character-level constrained LSTM: r* = "
            f"{r(value['PTB-character constrained LSTM r* (reported)'])} (reported)")


# ============================================================================ the seed survey
def survey_ranges(survey: dict[str, dict]) -> dict[str, str]:
    """The ranges over the runs of a committed seed survey (:func:`rnnbook.claims.survey_values`)
    that the C8, C9 and C13 text quotes, formatted: C9's three-seed mean drop and its single seeds'
    drops, the mean ‖W‖₂ at k = 2 and 32, the NLL half at both k and the runs in which the stable
    RNN is better at k = 32, C8's r* and its factor, the char RNN's gap and the char LSTM's relative
    cost over the char RNN's (C6), C5's JSB costs (the
    RNN's in nats, the LSTM's as a fraction of the memory effect), C13's r* (runs that lack it, made before C13
    existed, are left out; "—" if none has it), C10's g(20)/g(1) (trained RNN, control, both models at
    initialisation), C11's largest spread as a fraction of the memory effect, C12's first rise over
    later growth (k = 5, 10, 40 and the control) and C14's Ŝ_16, r* per run and the control's Ŝ_16
    and Ŝ_64."""
    def span(xs, fmt: str) -> str:
        return f"{min(xs):{fmt}} to {max(xs):{fmt}}" if xs else "—"
    c9 = [v["C9"] for v in survey.values()]
    r = [v["C8"]["r*"] for v in survey.values()]
    adv32 = [c["NLL(stable) − NLL(unstable), k=32"] for c in c9]
    return {"c9_mean_drop": span([c["‖W‖₂ k=2"] - c["‖W‖₂ k=32"] for c in c9], ".2f"),
            "c9_seed_drop": span([d for c in c9 for d in c["‖W‖₂ drop per seed"]], ".2f"),
            "c9_runs": str(sum(len(c["‖W‖₂ drop per seed"]) for c in c9)),
            "c9_w2": span([c["‖W‖₂ k=2"] for c in c9], ".2f"),
            "c9_w32": span([c["‖W‖₂ k=32"] for c in c9], ".2f"),
            "c9_adv2": span([c["NLL(stable) − NLL(unstable), k=2"] for c in c9], "+.3f"),
            "c9_adv32": span(adv32, "+.3f"),
            "c9_adv32_won": f"{sum(a < 0 for a in adv32)} of {len(adv32)}",
            "c8_r": span(r, "d"), "c8_factor": span([PAPER_R["c8"] / x for x in r], ".0f"),
            "char_rnn_gap": span([v["C6"]["char RNN gap (bpc)"] for v in survey.values()], ".3f"),
            "c6_lstm_over_rnn": span([v["C6"]["ptb_char LSTM relative cost"]
                                      / v["C6"]["ptb_char RNN relative cost"]
                                      for v in survey.values()], ".2g"),
            "c5_jsb_rnn": span([v["C5"]["jsb/rnn cost (nats)"] for v in survey.values()
                                if "jsb/rnn cost (nats)" in v["C5"]], "+.2f"),
            "c5_jsb_lstm": span([v["C5"]["jsb/lstm cost (nats)"] / v["C5"]["jsb memory effect (nats)"]
                                 for v in survey.values() if "jsb/lstm cost (nats)" in v["C5"]], ".2f"),
            "c13_r": span([v["C13"]["r*"] for v in survey.values() if "C13" in v], "d"),
            **{f"c10_{key}": span([v["C10"][name] for v in survey.values()], ".0e") for key, name in (
                ("rnn20", "unstable RNN g(20)/g(1)"), ("ctrl20", "control, LSTM with its forget gate shut: g(20)/g(1)"),
                ("init_lstm20", "at initialisation: LSTM g(20)/g(1)"), ("init_rnn20", "at initialisation: RNN g(20)/g(1)"))},
            "c11_frac": f"{max(max(v['C11']['unstable RNN'], v['C11']['unstable LSTM']) / v['C11']['memory effect (nats)'] for v in survey.values()):.2f}",
            **{f"c12_k{k}": span([v["C12"][f"RNN first rise / later growth, k={k}"] for v in survey.values()], ".2f")
               for k in (5, 10)},
            "c12_k40": f"{max(v['C12']['RNN first rise / later growth, k=40'] for v in survey.values()):.0e}",
            "c12_ctrl": span([v["C12"]["RNN control (reference drift): first rise / later growth"]
                              for v in survey.values()], ".1f"),
            "c14_s16": span([v["C14"]["Ŝ_r"]["16"] for v in survey.values()], ".2f"),
            "c14_rstar": _r_star_counts({k: v["C14"] for k, v in survey.items()}),
            **{f"c14_ctrl{r}": span([v["C14"]["control Ŝ_r (fork LSTM)"][r] for v in survey.values()], ".2f")
               for r in ("16", "64")}}


def _r_star_counts(c14: dict[str, dict]) -> str:
    """C14's r* over the survey's runs (``c14``: run name -> value), as "1 in 2 runs, 4 in 4, 16 in 1
    (seed 0, where Ŝ at r = 4 is 1.04)": the runs of the largest r* named, with their Ŝ at the r before."""
    rs = sorted({v["r*"] for v in c14.values()})
    top = [k for k, v in c14.items() if v["r*"] == rs[-1]]
    prev = max(int(r) for r in c14[top[0]]["Ŝ_r"] if int(r) < rs[-1]) if rs[-1] > 1 else None
    n = {r: sum(v["r*"] == r for v in c14.values()) for r in rs}
    parts = [f"{r} in {n[r]}" + (f" run{'s' * (n[r] != 1)}" if i == 0 else "") for i, r in enumerate(rs)]
    if prev is not None:
        parts[-1] += (f" ({', '.join(top)}, where Ŝ at r = {prev} is "
                      + ", ".join(f"{c14[k]['Ŝ_r'][str(prev)]:.2f}" for k in top) + ")")
    return ", ".join(parts)


def _margin(v: dict, claim: str, fmt, default: str = "—") -> str:
    """One cell of :func:`survey_margins`: ``fmt`` of the run's value of ``claim``, or ``default``
    where the run lacks what it reads (a survey made before the claim's rule changed)."""
    try:
        return fmt(v[claim])
    except (KeyError, TypeError):
        return default


def survey_margins(path: Path) -> Table | str:
    """The values of a committed seed survey (:func:`rnnbook.claims.survey`) that sit nearest their
    thresholds (quick profile, in the column heads), one row per run: C4's largest α/t and smallest
    constant-step slope, C5's relative costs (slot filling's largest, the char and word RNN's),
    C6's char LSTM cost, C8's and C13's r*, C9's mean norm drop and C11's spreads over the memory
    effect."""
    if not path.exists():
        return f"No seed survey of this chapter is committed ({path.name})."
    rows = []
    for name, v in claims.survey_values(path).items():
        slopes = v["C4"]["slopes at k = 4"]
        rows.append({
            "run": name,
            "C4 slope, α/t (≤ 0.25) | constant (≥ 0.1)":
                f"{max(slopes['1/t'], slopes['2/t']):.2f} | "
                f"{min(slopes[a] for a in ('0.05', '0.2', '0.5')):.2f}",
            f"C5 relative cost, ATIS (largest) | char RNN | word RNN (< {COST_LINE:g})": _margin(
                v, "C5", lambda c: f"{max(c['atis/rnn relative cost'], c['atis/lstm relative cost']):.3f} | "
                f"{c['ptb_char/rnn relative cost']:.3f} | {c['ptb_word/rnn relative cost']:.3f}"),
            f"C6 char LSTM relative cost (≥ {COST_LINE:g})": _margin(
                v, "C6", lambda c: f"{c['ptb_char LSTM relative cost']:.3f}"),
            "C8 r* (paper ≈ 80)": v["C8"]["r*"],
            "C13 r* (paper ≈ 100)": _margin(v, "C13", lambda c: str(c["r*"])),
            "C9 ‖W‖₂ drop (≥ 0.2)": f"{v['C9']['‖W‖₂ k=2'] - v['C9']['‖W‖₂ k=32']:.2f}",
            "C11 spread / memory effect, RNN | LSTM (< 1)": _margin(
                v, "C11", lambda c: f"{c['unstable RNN'] / c['memory effect (nats)']:.2f} | "
                f"{c['unstable LSTM'] / c['memory effect (nats)']:.2f}")})
    return table(rows)
