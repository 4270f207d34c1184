"""The curse-of-memory chapter's parameters and claim checks (Zucchet & Orvieto, NeurIPS 2024).

:class:`Settings` and :func:`resolve` (every parameter checked before any compute), the selection of
the teacher-student sweeps' runs (best learning rate, cosine schedule), and the checks: C3 (F3), C4
(F4), C5 (F5's Adam probe), C10 (F10), C11 (F11), E1 (SGD), the notebook's S (K8) and F9's ratios.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from rnnbook import claims, params
from rnnbook.display import Table, table
from rnnbook.curse_of_memory.models import (ModelSpec, RunCfg, batch_loss, init_params, kernel,
                                            kernel_error, lag_moments, predict_recurrent, stack_params)
from rnnbook.curse_of_memory.theory import S, S_notebook


RHO_DEFAULT = (0.0, 0.9, 0.99, 0.999, 1.0)  # the parameters cell's rho, T and hidden_size
T_DEFAULT, HIDDEN_DEFAULT = 300, 64
NU0_FULL = (0.36, 0.68, 0.84, 0.92, 0.96, 0.98, 0.99)
LRS_FULL = {"RNN": (3.2e-3, 1e-3, 3.2e-4, 1e-4, 3.2e-5), "LRU": (0.32, 0.1, 3.2e-2, 1e-2, 3.2e-3)}
MODELS = ("RNN", "LRU")
# F4, F11: the learning rates of the ladder (Fig. 3B) and heads (Fig. 11) runs. Full: the paper's
# scans (ablation_LRU_p1..p3.yaml, varying_number_heads.yaml; the RNN's is F3's). Quick: one rate
# per model, the best of a 3000-step pilot over five seeds (our choice).
_P1 = [1e-4, 3.2e-4, 1e-3, 3.2e-3, 1e-2, 3.2e-2, 0.1]
LADDER_LRS_FULL = {"RNN": list(LRS_FULL["RNN"]), "block 32x2": [3.2e-4, 1e-3, 3.2e-3, 1e-2],
                   "block 64x2": [3.2e-4, 1e-3, 3.2e-3, 1e-2], "complex diag": _P1, "+ gamma": _P1,
                   "LRU": _P1, "heads": [1e-4, 1e-3, 3.2e-3, 1e-2, 3.2e-2]}
LADDER_LRS_QUICK = {"RNN": [3.2e-4], "block 32x2": [3.2e-3], "block 64x2": [3.2e-3],
                    "complex diag": [1e-2], "+ gamma": [3.2e-3], "LRU": [1e-2], "4 heads": [1e-3],
                    "heads": [3.2e-3]}
E1_SGD_LRS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)  # E1: SGD grid, both models (our choice: brackets the
# best rate of every SGD row from above by a diverged one, in our pilot)
E1_MOMENTA = (0.9, 0.0)  # E1: SGD with and without momentum (spec §7: "± momentum")
E1_NU0 = (0.84, 0.99)
# The smoke run (issue 24, item 2: ``python -m rnnbook run curse_of_memory --profile full --smoke``):
# the full profile's code paths at toy sizes, a test, never results (about 20 s of cells on 2 cores).
SMOKE = {
    # parameters: replace their defaults (None, or the parameters cell's rho, T, hidden_size) unless
    # the user gave another value. rho keeps both ends (C2's and F9's rho = 1 branches); nu0 keeps
    # 0.99 (C3, F4, F10); d_h = 8 is even, with d_h/2 = 4 blocks of 2x2 and one head count between
    # (F11); every grid the full profile selects the best of keeps two points (two seeds: s.e.m.),
    # the LRU's below F10's 0.1 (F3's note on rates above the grid)
    "rho": [0.0, 0.9, 1.0], "nu0_values": (0.36, 0.84, 0.99), "T": 32, "hidden_size": 8,
    "steps": 20, "lrs": {"RNN": (1e-3, 3.2e-4), "LRU": (3.2e-2, 1e-2)}, "seeds": (0, 1),
    # Settings sizes: always replace the full profile's (the full theta0s, heads and tolerances stay)
    "mc_seqs": 200, "batch": 16, "ladder_seeds": 2, "probe_seeds": 2, "c6_teachers": 3,
    "hess_terms": 256, "f9_grid": (20, 50), "f8_steps": 200, "long_steps": 20,
    "ladder_lrs": {m: v[:2] for m, v in LADDER_LRS_FULL.items()}, "f10_cd_lrs": [3.2e-4, 1e-3],
    "f6": dict(d_in=8, d=8, tokens=32, seqs=4, batch=2),
    "f12": dict(d=16, samples=2, length=640, burn=320, jac_steps=16),  # F12: acf to lag 600, 16 probes
    "e1_batch": 16}
_SMOKE_PARAMS = ("rho", "nu0_values", "T", "hidden_size", "steps", "lrs", "seeds")


# ============================================================================ parameters
@dataclass
class Settings:
    """The chapter's resolved parameters (spec §5 parameters cell)."""

    profile: str
    rho: list[float]
    nu0_values: list[float]
    T: int
    hidden_size: int
    steps: int
    lrs: dict[str, list[float]]
    seeds: list[int]
    mc_seqs: int  # Monte-Carlo sequences for K1, K2 (C1)
    mc_tol: float  # relative MC tolerance (C1)
    batch: int = 128  # the authors' batch; 64 in the quick profile (our choice, CPU budget)
    tail: int = 100  # final loss = mean of the last `tail` training losses
    heads: list[int] = field(default_factory=list)  # F11: numbers of independent blocks of A
    ladder_lrs: dict[str, list[float]] = field(default_factory=dict)  # F4, F11: each model's grid
    ladder_seeds: int = 3  # F4, F11: seeds stacked in the ladder's program (C4, C11: medians)
    f9_grid: tuple[int, int] = (100, 250)
    f8_steps: int = 5000
    long_steps: int = 3000  # F4, F11 and C5's program (the paper's 10,000 in full)
    probe_seeds: int = 5  # C5: seeds of the Adam probe (the median ratio decides)
    hess_terms: int = 4096
    c6_teachers: int = 9  # C6: the medians over this many F5 teachers (one decides no verdict)
    theta0s: list[float] = field(default_factory=list)  # F10 phase ranges (teacher = student)
    f10_lrs: list[float] = field(default_factory=list)  # F10: the LRU's learning rates
    f10_lrs_small: list[float] = field(default_factory=list)  # ... at theta0 < pi
    f10_cd_lrs: list[float] = field(default_factory=list)  # F10: the complex diagonal network's
    f6: dict[str, int] = field(default_factory=dict)  # F6: d_in, d, tokens, seqs, batch
    f12: dict[str, int] = field(default_factory=dict)  # F12: d, samples, length, burn, jac_steps
    e1_lrs: dict[str, list[float]] = field(default_factory=dict)  # E1: SGD lrs (both momenta)
    e1_steps: int = 250  # E1 runs (their own program; our choice in the quick profile)
    e1_batch: int = 32
    by_seed: bool = False  # a sweep's runs train one seed per program, each stored as it ends (full)


def smoke_params(**given) -> dict:
    """The smoke run's parameters (issue 24, item 2): :data:`SMOKE`'s toy value for each parameter
    of ``given`` left at its default (None, or the parameters cell's value), the given one otherwise."""
    cell = {"rho": list(RHO_DEFAULT), "T": T_DEFAULT, "hidden_size": HIDDEN_DEFAULT}
    out = {}
    for k, v in given.items():
        v_ = list(v) if isinstance(v, tuple) else v
        out[k] = SMOKE[k] if v is None or (k in cell and v_ == cell[k]) else v
    return out


def resolve(profile, rho, nu0_values, T, hidden_size, steps, lrs, seeds, smoke=False) -> Settings:
    """Check every chapter parameter, raising :class:`rnnbook.ParameterError` before any compute
    (unknown profile or model, rho outside [0, 1], nu0 outside (0, 1), non-positive sizes, steps or
    learning rates), and fill in the profile's defaults (None -> profile default). ``smoke`` (full
    profile only): the full profile at :data:`SMOKE`'s toy sizes (:func:`smoke_params`)."""
    params.choice("profile", profile, params.PROFILES)
    full, smoke = profile == "full", params.smoke(smoke, profile)
    if smoke:
        rho, nu0_values, T, hidden_size, steps, lrs, seeds = smoke_params(
            rho=rho, nu0_values=nu0_values, T=T, hidden_size=hidden_size, steps=steps, lrs=lrs,
            seeds=seeds).values()
    if isinstance(rho, (int, float)) and not isinstance(rho, bool):
        rho = [rho]  # one value is a list of one
    if isinstance(nu0_values, (int, float)) and not isinstance(nu0_values, bool):
        nu0_values = [nu0_values]
    rho = [params.real("rho", r, lo=0.0, hi=1.0) for r in params.sequence("rho", rho)]
    if nu0_values is None:
        nu0_values = NU0_FULL if full else (0.36, 0.84, 0.96, 0.99)
    nu0 = [params.real("nu0_values", v, lo=0.0, hi=1.0, lo_open=True)
           for v in params.sequence("nu0_values", nu0_values)]
    if any(v >= 1.0 for v in nu0):
        raise params.ParameterError("nu0_values", nu0_values, "numbers in (0, 1)")
    if len(set(nu0)) != len(nu0):
        raise params.ParameterError("nu0_values", nu0_values, "distinct numbers in (0, 1)")
    T = params.integer("T", T, lo=8)
    hidden_size = params.integer("hidden_size", hidden_size, lo=2)
    if hidden_size % 2:
        raise params.ParameterError("hidden_size", hidden_size, "an even integer >= 2 (2x2 blocks)")
    if steps is None:
        steps = 10_000 if full else 1000
    steps = params.integer("steps", steps, lo=SMOKE["steps"] if smoke else 200)
    if lrs is None:
        lrs = LRS_FULL if full else {"RNN": (3.2e-4, 1e-3), "LRU": (1e-2, 3.2e-2)}
    if not isinstance(lrs, dict) or set(lrs) != set(MODELS):
        raise params.ParameterError("lrs", lrs, f"a dict with exactly the models {list(MODELS)}")
    lrs = {m: [params.real("lrs", x, lo=0.0, lo_open=True, hi=10.0)
               for x in params.sequence("lrs", lrs[m])] for m in MODELS}
    if seeds is None:
        seeds = tuple(range(10)) if full else (0,)
    seeds = [params.integer("seeds", s, lo=0) for s in params.sequence("seeds", seeds)]
    if len(set(seeds)) != len(seeds):
        raise params.ParameterError("seeds", seeds, "distinct integers >= 0")
    S_ = Settings(profile, rho, nu0, T, hidden_size, steps, lrs, seeds,
                  heads=[1, 2, 4, 8, 16, 32] if full else [1, 4, 16, 32],
                  mc_seqs=20_000 if full else 4000, mc_tol=0.03 if full else 0.10,
                  batch=128 if full else 64,
                  ladder_lrs=LADDER_LRS_FULL if full else LADDER_LRS_QUICK,
                  ladder_seeds=10 if full else 3,
                  f9_grid=(200, 500) if full else (100, 250), f8_steps=50_000 if full else 5000,
                  hess_terms=4096, long_steps=10_000 if full else 3000,
                  theta0s=[math.pi, 0.1 * math.pi, 0.01 * math.pi] if not full else
                  [math.pi, 10 ** -0.5 * math.pi, 0.1 * math.pi, 10 ** -1.5 * math.pi, 0.01 * math.pi],
                  f10_lrs=sorted(set(lrs["LRU"]) | {3.2e-3, 0.1}),  # brackets the LRU's best at pi
                  f10_lrs_small=sorted(set(lrs["LRU"]) | {0.1}) if full else sorted({max(lrs["LRU"]), 0.1}),
                  f10_cd_lrs=[3.2e-4, 1e-3, 3.2e-3, 1e-2] if full else [1e-3, 3.2e-3, 1e-2],
                  f6=dict(d_in=768, d=256, tokens=512, seqs=128, batch=16) if full else
                  dict(d_in=64, d=64, tokens=128, seqs=16, batch=16),
                  f12=dict(d=256, samples=100, length=4096, burn=2048, jac_steps=256) if full else
                  dict(d=64, samples=20, length=2048, burn=1536, jac_steps=64),
                  e1_lrs={m: list(E1_SGD_LRS) for m in MODELS}, e1_steps=steps if full else 250, e1_batch=128 if full else 32,
                  by_seed=full)
    return replace(S_, **{k: v for k, v in SMOKE.items() if k not in _SMOKE_PARAMS}) if smoke else S_


def cosine_runs(rows: Sequence[dict], **match) -> list[dict]:
    """The cosine-schedule runs whose fields equal ``match`` (Adam's unless ``opt`` is given); a
    field given a list or tuple matches any of its values. F3, F4, F10, F11 and C10 select by it."""
    match.setdefault("opt", "adam")
    hit = lambda r, k, v: r[k] in v if isinstance(v, (list, tuple)) else r[k] == v  # noqa: E731
    return [r for r in rows if r["schedule"] == "cosine" and all(hit(r, k, v) for k, v in match.items())]


def best_lr(rows: Sequence[dict], stat: Callable = np.mean, **match) -> dict:
    """Per (model, nu0, ...): the lr with the lowest ``stat`` (mean, as the authors' notebooks, or
    median) of the final losses over seeds of :func:`cosine_runs` ``(rows, **match)``; returns that
    value (``loss``), its s.e.m. and the losses per seed (``per_seed``, in seed order)."""
    by_lr: dict[float, list[tuple[int, float]]] = {}
    for r in cosine_runs(rows, **match):
        by_lr.setdefault(r["lr"], []).append((r["seed"], r["final"]))
    vals = {lr: float(stat([f for _, f in v])) if all(math.isfinite(f) for _, f in v) else math.inf
            for lr, v in by_lr.items()}
    lr = min(vals, key=vals.get)
    v = np.array([f for _, f in sorted(by_lr[lr])])
    sem = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else 0.0
    return {"lr": lr, "loss": vals[lr], "sem": sem, "n": len(v), "per_seed": v.tolist()}


LADDER = ("RNN", "block 32x2", "block 64x2", "complex diag", "+ gamma", "LRU")  # Fig. 3B, in order


def heads_name(h: int, d_h: int) -> str:
    """F11's model with ``h`` heads: 1 head is the RNN, d_h/2 heads block 32x2 (of F4's ladder)."""
    return "RNN" if h == 1 else ("block 32x2" if h == d_h // 2 else f"{h} heads")


def ladder_grid(S: Settings, model: str) -> list[float]:
    """F4, F11: the learning-rate grid of a ladder or heads model (``S.ladder_lrs``; a number of
    heads without its own entry takes ``"heads"``)."""
    return S.ladder_lrs.get(model, S.ladder_lrs.get("heads", []))


def ladder_configs(specs: dict[str, ModelSpec], S: Settings, nu0: float, seeds: Sequence[int]
                   ) -> list[RunCfg]:
    """F4 and F11 (Figs. 3B, 11): the ladder's models and the intermediate numbers of heads at
    ``nu0``, each on its :func:`ladder_grid`, over ``seeds`` (C4, C11 decide on the median over
    them)."""
    heads = {heads_name(h, S.hidden_size): ModelSpec(heads_name(h, S.hidden_size), "dense", S.hidden_size,
                                                     heads=h)
             for h in S.heads if 1 < h < S.hidden_size // 2 and S.hidden_size % h == 0}
    models = {**{m: specs[m] for m in LADDER}, **heads}
    return [RunCfg(sp, nu0, lr, sd) for m, sp in models.items()
            for lr in ladder_grid(S, m) for sd in seeds]


def lr_grid(lrs: Sequence[float]) -> str:
    """A learning-rate grid as the text and captions write it: ``{0.001, 0.0032}``."""
    return "{" + ", ".join(f"{x:g}" for x in lrs) + "}"


def f3_grid_notes(rows: Sequence[dict], f3: dict[str, dict[float, dict]], lrs: dict[str, list[float]],
                  nu0: float) -> dict[str, object]:
    """F3, for the text: the LRU's loss growth from the smallest ν0 to ``nu0`` (``lru_growth``), the
    learning-rate grids (``grids``), how many points chose their grid's
    largest rate (``top``), and (``above``) what runs of the same LRU at a rate above its grid
    elsewhere on the page (F10's, θ0 = π) say about the point at ``nu0``; and the full profile's top
    rates (``full_rnn``, ``full_lru``)."""
    top = sum(r["lr"] == max(lrs[m]) for m, t in f3.items() for r in t.values())
    n = sum(len(t) for t in f3.values())
    up = [r for r in cosine_runs(rows, model="LRU", nu0=nu0, theta0=math.pi) if r["lr"] > max(lrs["LRU"])]
    above = "; ".join(f"F10's runs include the LRU at ν0 = {nu0} and learning rate {r['lr']:g}, "
                      f"otherwise identical: it ends at {r['final']:.2g}" for r in up)
    if up:
        above += (", so for that point the grid's top is bracketed."
                  if min(r["final"] for r in up) > f3["LRU"][nu0]["loss"] else ".")
    return {"lru_growth": f3["LRU"][nu0]["loss"] / f3["LRU"][min(f3["LRU"])]["loss"],
            "grids": "; ".join(f"{m} {lr_grid(lrs[m])}" for m in f3),
            "top": f"all {n}" if top == n else f"{top} of the {n}",
            "above": above or "No other run of this page brackets them.",
            "full_rnn": max(LRS_FULL["RNN"]), "full_lru": max(LRS_FULL["LRU"])}


# ============================================================================ F10, E1 configurations
def f10_configs(specs: dict[str, ModelSpec], S: Settings, nu0: float, seeds: Sequence[int],
                made: Sequence[RunCfg]) -> tuple[list[RunCfg], dict[tuple[str, float], str]]:
    """F10 (Fig. 10): LRU, complex-diagonal and dense RNN students whose phases (and the teacher's)
    lie in [-θ0, θ0], for every θ0 of ``S.theta0s``, each on its learning-rate grid: the LRU on
    ``S.f10_lrs`` (at θ0 < π ``S.f10_lrs_small``: small phases allow larger ones), the complex
    diagonal network on ``S.f10_cd_lrs`` (the paper's grid in full) and the RNN on F3's. Runs
    already in ``made`` (F3's, at θ0 = π) are not repeated. Returns the new
    configs and, per (model, θ0), the model name of its runs."""
    grids = {"LRU": (S.f10_lrs, S.f10_lrs_small), "complex diag": (S.f10_cd_lrs, S.f10_cd_lrs),
             "RNN": (S.lrs["RNN"], S.lrs["RNN"])}
    names, cfgs, seen = {}, [], set(made)
    for m, (lrs, small) in grids.items():
        for th in S.theta0s:
            sp = specs[m]
            if th != math.pi:
                sp = replace(sp, name=f"{m}, theta0 = {th / math.pi:.3g} pi", theta0=th)
            names[m, th] = sp.name
            new = [RunCfg(sp, nu0, lr, sd, teacher_theta0=th) for lr in (lrs if th == math.pi else small)
                   for sd in seeds]
            cfgs += [c for c in new if c not in seen]
    return cfgs, names


def f10_table(rows: Sequence[dict], names: dict[tuple[str, float], str], nu0: float
              ) -> dict[str, dict[str, float]]:
    """F10: best-lr final loss per model and θ0 (label "<θ0/π>π")."""
    out: dict[str, dict[str, float]] = {}
    for (m, th), n in names.items():
        out.setdefault(m, {})[f"{th / math.pi:.3g}π"] = best_lr(rows, model=n, nu0=nu0, theta0=th)["loss"]
    return out


def f10_lr_table(rows: Sequence[dict], names: dict[tuple[str, float], str], nu0: float
                 ) -> list[dict]:
    """F10/C10: every run's final loss per (model, learning rate) and θ0 (columns "<θ0/π>π"; one
    seed, or the mean over seeds), so that θ0 can be compared at equal learning rates."""
    cells: dict[tuple[str, float], dict[str, list[float]]] = {}
    for (m, th), n in names.items():
        for r in cosine_runs(rows, model=n, nu0=nu0, theta0=th):
            cells.setdefault((m, r["lr"]), {}).setdefault(f"{th / math.pi:.3g}π", []).append(r["final"])
    return [{"model": m, "lr": lr, **{k: float(np.mean(v)) for k, v in t.items()}}
            for (m, lr), t in sorted(cells.items())]


def c10_check(f10: dict[str, dict[str, float]], by_lr: Sequence[dict], hi: str, lo: str,
              bound: float, flat: float | None) -> dict:
    """C10, "small phases help diagonal models": the LRU's best-lr L(θ0 = π)/L(θ0 = π/100) (``hi``,
    ``lo`` are the column labels of ``f10`` and of the per-lr table ``by_lr``) against ``bound``
    (spec: 3 quick, 10 full; FAIL at or below 1), and the same ratio for the complex diagonal
    network, which the paper draws flat. Reproduced if the LRU meets the bound and the complex
    diagonal network is not worse by more than the factor ``flat`` (ratio >= 1/flat; ``flat`` None:
    not judged, where its runs are too short to converge); partly if only the LRU improves (ratio
    > 1); not reproduced otherwise. Also reported: the LRU's ratio at an equal rate, the shared one
    at which θ0 = π does best."""
    lru, cd = f10["LRU"][hi] / f10["LRU"][lo], f10["complex diag"][hi] / f10["complex diag"][lo]
    at_pi = {r["lr"]: r[hi] for r in by_lr if r["model"] == "LRU" and hi in r}
    eq = {r["lr"]: r for r in by_lr if r["model"] == "LRU" and hi in r and lo in r}
    lr = min(eq, key=lambda x: eq[x][hi]) if eq else math.nan
    cd_ok = flat is None or cd >= 1 / flat
    verdict = "reproduced" if lru >= bound and cd_ok else "partly" if lru > 1 else "not reproduced"
    return {"L(pi)/L(pi/100), LRU": lru, "L(pi)/L(pi/100), complex diag": cd, "equal rate": lr,
            "equal-rate ratio, LRU": eq[lr][hi] / eq[lr][lo] if eq else math.nan,
            "best rate at pi": min(at_pi, key=at_pi.get), "grid at pi": sorted(at_pi),
            "passed": lru > 1, "verdict": verdict}


def c10_numbers(f10: dict[str, dict[str, float]], c10: dict, hi: str, lo: str, bound: float
                ) -> dict[str, object]:
    """C10, for the text: the complex diagonal network's and the RNN's losses at θ0 = π and π/100
    and the complex diagonal network's ratio; the LRU's best-lr and equal-rate ratios, that rate,
    and whether the equal-rate ratio meets ``bound``."""
    eq = c10["equal-rate ratio, LRU"]
    return {"f10_cd_pi": f10["complex diag"][hi], "f10_cd_small": f10["complex diag"][lo],
            "f10_rnn_pi": f10["RNN"][hi], "f10_rnn_small": f10["RNN"][lo],
            "c10_cd": c10["L(pi)/L(pi/100), complex diag"],
            "c10_ratio": c10["L(pi)/L(pi/100), LRU"], "c10_lr": c10["equal rate"], "c10_eq": eq,
            "c10_eq_side": "below the bound: most of the LRU's gain comes through the larger learning "
                           "rate that small phases allow" if eq < bound else "above the bound as well",
            "c10_pi_lr": c10["best rate at pi"],
            "c10_bracket": "the smallest of its grid, so a smaller one might do better still and the "
                           "best-rate ratio may overstate the effect" if c10["best rate at pi"] == min(
                               c10["grid at pi"]) else "inside its grid, so bracketed from below"}


def e1_configs(specs: dict[str, ModelSpec], S: Settings, seed: int) -> list[RunCfg]:
    """E1 (Rv1 asked): RNN and LRU at ν0 ∈ {.84, .99}, trained by Adam (``S.lrs``), SGD with momentum
    .9 and without (``S.e1_lrs``) and, at ν0 = .99, AdamW (decoupled weight decay 1e-2, torch's
    default) at every Adam lr; all as one program."""
    cfgs = []
    for m in MODELS:
        for nu in E1_NU0:
            cfgs += [RunCfg(specs[m], nu, lr, seed) for lr in S.lrs[m]]
            cfgs += [RunCfg(specs[m], nu, lr, seed, opt="sgd", momentum=mu) for mu in E1_MOMENTA
                     for lr in S.e1_lrs[m]]
        cfgs += [RunCfg(specs[m], E1_NU0[-1], lr, seed, opt="adamw", weight_decay=1e-2) for lr in S.lrs[m]]
    return cfgs


def e1_summary(rows: Sequence[dict]) -> tuple[dict[str, np.ndarray], dict[str, dict[float, float]]]:
    """E1: per (model, ν0, optimiser) the loss curve at its best lr and the final loss per lr."""
    label = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD"}
    sens: dict[str, dict[float, float]] = {}
    curves: dict[str, np.ndarray] = {}
    for r in rows:
        opt = label[r["opt"]] + ("+m" if r["opt"] == "sgd" and r["momentum"] > 0 else "")
        k = f"{r['model']}, nu0={r['nu0']}, {opt}"
        sens.setdefault(k, {})[r["lr"]] = r["final"]
        if k not in curves or r["final"] < sens[k].get("_best", math.inf):
            curves[k], sens[k]["_best"] = r["curve"], r["final"]
    for t in sens.values():
        t.pop("_best")
    return curves, sens


def e1_brackets(sens: dict[str, dict[float, float]]) -> list[dict]:
    """E1: per (model, ν0) the best final loss of each optimiser with its learning rate, and for each
    SGD variant whether its best learning rate is bracketed from above (the next rate of its grid
    diverged or did worse) and from below."""
    out = []
    for k, t in sens.items():
        lrs = sorted(t)
        i = min(range(len(lrs)), key=lambda j: t[lrs[j]])
        out.append({"run": k, "best lr": lrs[i], "best loss": t[lrs[i]],
                    "next lr up": "diverged" if i + 1 < len(lrs) and not math.isfinite(t[lrs[i + 1]])
                    else ("worse" if i + 1 < len(lrs) else "none (grid top)"),
                    "next lr down": "worse" if i > 0 else "none (grid bottom)"})
    return out


def e1_numbers(sens: dict[str, dict[float, float]], curves: dict[str, np.ndarray]) -> dict[str, object]:
    """E1, for the text: per run key (``"RNN_084_SGDm"`` for ``"RNN, nu0=0.84, SGD+m"``) its best final
    loss and, under ``lr_<key>``, its best learning rate; ``start_<model>_<nu0>`` the loss at the start
    (first point of the thinned curve); ``brk``: how many SGD rows have their best rate bracketed from
    above (the next rate diverged or did worse); ``bottom``: the SGD rows whose best rate is their
    grid's smallest; ``aw_lo``, ``aw_hi``: the range of AdamW's final loss over Adam's at equal rates."""
    key = lambda k: k.replace(", nu0=", "_").replace(", ", "_").replace("+", "").replace(".", "")  # noqa: E731
    out: dict[str, object] = {}
    rows = e1_brackets(sens)
    for r in rows:
        out[key(r["run"])], out["lr_" + key(r["run"])] = r["best loss"], r["best lr"]
    for k, c in curves.items():
        out["start_" + key(k.rsplit(", ", 1)[0])] = float(c[0])
    sgd = [r for r in rows if r["run"].rsplit(", ", 1)[1].startswith("SGD")]
    up = sum(r["next lr up"] != "none (grid top)" for r in sgd)
    out["brk"] = f"all {len(sgd)}" if up == len(sgd) else f"{up} of the {len(sgd)}"
    out["bottom"] = ", ".join(r["run"].replace("nu0=", "ν0 = ") for r in sgd
                              if r["next lr down"].startswith("none")) or "none"
    adam = {k: sens[k.replace("AdamW", "Adam")] for k in sens if k.endswith("AdamW")}
    aw = [t[lr] / adam[k][lr] for k, t in sens.items() if k in adam for lr in t if lr in adam[k]]
    out["aw_lo"], out["aw_hi"] = (min(aw), max(aw)) if aw else (math.nan, math.nan)
    return out


def heads_table(rows: Sequence[dict], heads: Sequence[int], nu0: float, d_h: int
                ) -> tuple[list[int], list[dict], dict[int, np.ndarray], np.ndarray]:
    """F11: per number of heads (:func:`heads_name`) the learning rate of lowest median final loss
    at ν0 (:func:`best_lr`, median: C11 decides on it), and the median over seeds, at that rate, of
    the effective-lr history of A (per unit lr)."""
    out_h, best, hist = [], [], {}
    for h in heads:
        name = heads_name(h, d_h)
        if not any(r["model"] == name and r["nu0"] == nu0 for r in rows):
            continue
        b = best_lr(rows, np.median, model=name, nu0=nu0)
        out_h.append(h)
        best.append(b)
        hist[h] = np.median([r["effhist_A"] for r in cosine_runs(rows, model=name, nu0=nu0, lr=b["lr"])], 0)
    return out_h, best, hist, rows[0]["probe_steps"]


# ============================================================================ claim checks
def c3_check(table: dict[str, dict[float, float]], quick: bool) -> dict:
    """C3: RNN(.99)/RNN(min ν0) >= 1e3 (1e4 full), RNN(.99)/LRU(.99) >= 1e2 (1e3), LRU(.99) <= 2e-2
    (1e-4); ``table[model][nu0]`` = best-lr loss. (The specification's quick LRU bound, 5e-3, lies
    inside the seed-to-seed spread of 1000-step runs, 9e-4 to 9e-3 in our pilot.)"""
    hi, lo = max(table["RNN"]), min(table["RNN"])
    r1 = table["RNN"][hi] / table["RNN"][lo]
    r2 = table["RNN"][hi] / table["LRU"][hi]
    lru = table["LRU"][hi]
    b1, b2, b3 = (1e3, 1e2, 2e-2) if quick else (1e4, 1e3, 1e-4)
    return {"RNN(max)/RNN(min)": r1, "RNN/LRU at max nu0": r2, "LRU at max nu0": lru,
            "nu0": [lo, hi], "passed": bool(r1 >= b1 and r2 >= b2 and lru <= b3 and hi >= 0.99)}


C11_RISE = 2.0  # C11: the largest rise of the median loss from one number of heads to the next


def c11_check(heads: Sequence[int], losses: Sequence[float], quick: bool) -> dict:
    """C11: more heads, lower loss, on the medians over seeds (heads ascending): L(1 head)/L(most
    heads) >= 1e2 (1e3 full), and no step to more heads raises the loss by more than
    :data:`C11_RISE` (neighbours closer than that are not ranked by three seeds); the Spearman
    correlation is reported."""
    rise = max(b / a for a, b in zip(losses, losses[1:]))
    ratio = float(losses[0] / losses[-1])
    return {"spearman": claims.spearman(heads, losses), "largest rise": float(rise),
            "L(1)/L(max heads)": ratio,
            "passed": bool(rise <= C11_RISE and ratio >= (1e2 if quick else 1e3))}


def c4_gain(L_rnn: float, L_block: float, L_lru: float) -> float:
    """C4, Eq. cm-gain: :math:`g = \\frac{\\log L_{RNN}-\\log L_{block}}{\\log L_{RNN}-\\log L_{LRU}}`."""
    return (math.log(L_rnn) - math.log(L_block)) / (math.log(L_rnn) - math.log(L_lru))


def c4_check(ladder: dict[str, dict], quick: bool) -> dict:
    """C4 over seeds: :func:`c4_gain` per seed from the per-seed losses of the RNN, block 32x2 and
    the LRU (each at its :func:`best_lr`), decided on the median g: reproduced from 0.7 (0.8 full),
    partly down to 0.5, not reproduced below."""
    runs = zip(*(ladder[m]["per_seed"] for m in ("RNN", "block 32x2", "LRU")))
    g = [c4_gain(*r) for r in runs]
    med = float(np.median(g))
    verdict = "reproduced" if med >= (0.7 if quick else 0.8) else "partly" if med >= 0.5 else None
    return {"g per seed": g, "g": med, "passed": med >= 0.5, "verdict": verdict}


def evidence_reason(verdict: str | None, passed: bool, why: str) -> str | None:
    """The coded reason (:data:`rnnbook.claims.REASONS`) of an evidence claim (issue 42): none
    where it reproduced (``verdict`` None: reproduced exactly when ``passed``, as
    :meth:`rnnbook.claims.Claims.add` decides), else ``why``."""
    if why not in claims.REASONS:
        raise ValueError(f"reason {why!r} is not one of {claims.REASONS}")
    return None if (verdict or ("reproduced" if passed else "not reproduced")) == "reproduced" else why


def oscillation(curve: np.ndarray, frac: float = 0.1) -> float:
    """C12: max/min of a loss curve over its last ``frac``, the loss floored at 1e-15 (the float64
    round-off of Eq. cm-loss, which subtracts terms of order 1/(1-|lambda|^2))."""
    tail = np.clip(curve[-max(int(len(curve) * frac), 2):], 1e-15, None)
    return float(tail.max() / tail.min())



# ----------------------------------------------------------------------------- chapter checks
def notebook_S_check(points=((0.5, 0.5, 0.5), (0.9, 0.3, 0.7), (0.3 + 0.4j, 0.6 - 0.2j, 0.9))) -> dict:
    """K8: the author notebook's S against the exact :math:`\\partial_1\\partial_2 f` (sympy).

    Returns the factored difference of the two numerators over the common denominator, the largest
    relative gap between sympy's derivative and :func:`S` at ``points``, and both at two points."""
    import sympy as sp

    a, b, r = sp.symbols("lambda_1 lambda_2 rho")
    f = (1 - r**2 * a * b) / ((1 - a * b) * (1 - r * a) * (1 - r * b))
    den = (1 - r * a) ** 2 * (1 - r * b) ** 2 * (1 - a * b) ** 3
    exact = sp.factor(sp.cancel(sp.diff(f, a, b) * den))
    notebook = sp.expand(sp.cancel(S_notebook(a, b, r) * den))
    d2f = sp.diff(f, a, b)
    sym_err = max(abs(complex(d2f.subs({a: x, b: y, r: z})) - S(x, y, z)) / abs(S(x, y, z))
                  for x, y, z in points)
    return {"gap": sp.factor(sp.expand(exact - notebook)), "sym_vs_closed": sym_err,
            "values": {p: (S(p, p, p), S_notebook(p, p, p)) for p in (0.5, 0.9)}}


def f9_grid(n_nu: int, n_theta: int) -> np.ndarray:
    """F9's polar grid on the disc: |λ| in [0, 0.99] (``n_nu``), phase in [-π, π] (``n_theta``)."""
    N, TH = np.meshgrid(np.linspace(0, 0.99, n_nu), np.linspace(-1, 1, n_theta) * np.pi)
    return N * np.exp(1j * TH)


def f9_ratios(rhos: Sequence[float], n_nu: int, n_theta: int, lam0=0.99 * np.exp(1j * np.pi / 4)
              ) -> list[dict]:
    """F9/K8: per ρ, the notebook's |S| over the exact one on F9's grid: its smallest and largest value
    (near the zeros of S, which the two formulas place differently, these depend on the grid), the
    1st and 99th percentiles, the ratio on the real segment [0, 0.99] and at the peak
    :math:`\\bar\\lambda_0`."""
    lam = f9_grid(n_nu, n_theta)
    real = np.linspace(0, 0.99, n_nu)
    out = []
    for rho in rhos:
        r = np.abs(S_notebook(lam, lam0, rho)) / np.abs(S(lam, lam0, rho))
        rr = np.abs(S_notebook(real, lam0, rho)) / np.abs(S(real, lam0, rho))
        p1, p99 = np.percentile(r, [1, 99])
        out.append({"rho": rho, "min": float(r.min()), "1st pct": float(p1), "99th pct": float(p99),
                    "max": float(r.max()), "real axis min": float(rr.min()),
                    "real axis max": float(rr.max()),
                    "at conj(lambda_0)": float(abs(S_notebook(np.conj(lam0), lam0, rho) / S(np.conj(lam0), lam0, rho)))})
    return out


def f9_summary(rows: Sequence[dict]) -> dict[str, float]:
    """F9: the extremes of :func:`f9_ratios` over 0 < ρ < 1 (lo, hi: smallest and largest ratio;
    p1, p99: the percentiles; pk_lo, pk_hi: at the peak) and the largest distance from 1 at
    ρ ∈ {0, 1} (end; NaN without those ρ)."""
    mid = [r for r in rows if 0 < r["rho"] < 1]
    ends = [max(abs(r["min"] - 1), abs(r["max"] - 1)) for r in rows if r["rho"] in (0, 1)]
    return {"lo": min(r["min"] for r in mid), "hi": max(r["max"] for r in mid),
            "p1": min(r["1st pct"] for r in mid), "p99": max(r["99th pct"] for r in mid),
            "pk_lo": min(r["at conj(lambda_0)"] for r in mid),
            "pk_hi": max(r["at conj(lambda_0)"] for r in mid),
            "end": max(ends) if ends else math.nan}


def quad_vs_recurrence(spec: "ModelSpec", seed: int) -> dict:
    """Bench/F3 check: the training loss as the quadratic form of the kernel error
    (:func:`~rnnbook.curse_of_memory.models.batch_loss`, Eq. cm-quad) and by the step-by-step
    recurrence give the same loss and gradients (float64, two random students against a zero
    target)."""
    gen = torch.Generator().manual_seed(seed)
    p = stack_params([init_params(spec, gen, 0.9) for _ in range(2)])
    x = torch.randn(2, 4, 64, generator=gen, dtype=torch.float64)
    q = {k: v.clone().requires_grad_() for k, v in p.items()}
    zero = torch.zeros(2, 64, dtype=torch.float64)
    quad = batch_loss(kernel_error(kernel(spec, q, 64), q["D"], zero, zero[:, 0]), lag_moments(x),
                      torch.arange(2))
    q2 = {k: v.clone().requires_grad_() for k, v in p.items()}
    rec = 0.5 * (predict_recurrent(spec, q2, x) ** 2).mean((1, 2))
    g1, g2 = (torch.autograd.grad(L.sum(), list(t.values())) for L, t in ((quad, q), (rec, q2)))
    return {"model": spec.name, "loss rel. err": ((quad - rec).abs() / rec).max().item(),
            "gradient rel. err": max(((a - b).norm() / b.norm()).item() for a, b in zip(g1, g2))}


PROBE_MODELS = ("RNN", "complex diag", "LRU")  # F5's probe (Fig. 4) and Fig. 9's LRU


def probe_groups(r: dict) -> dict[str, float]:
    """C5, Fig. 9: Adam's effective learning rate of each parameter group of a probe run (complex
    pairs: geometric mean of the real and imaginary parts; the LRU's ω_ν and ω_θ apart, as Fig. 9)."""
    if "eff_A" in r:
        return {g: r[f"eff_{g}"] for g in ("A", "B", "C", "D")}
    pairs = {"B": math.sqrt(r["eff_B_re"] * r["eff_B_im"]), "C": math.sqrt(r["eff_C_re"] * r["eff_C_im"]),
             "D": r["eff_D"]}
    if "eff_gamma" in r:
        return {"omega_nu": r["eff_l1"], "omega_theta": r["eff_l2"], "gamma": r["eff_gamma"], **pairs}
    return {"lambda": math.sqrt(r["eff_l1"] * r["eff_l2"]), **pairs}


def adam_probe_summary(prows: Sequence[dict]) -> tuple[list[float], dict[str, dict[str, float]]]:
    """C5: per seed, the ratio of the complex-diagonal lambda group's effective rate to the dense
    A's; and the median effective rate of every group per probe model (:data:`PROBE_MODELS`)."""
    per_seed = {m: [probe_groups(r) for r in prows if r["model"] == m] for m in PROBE_MODELS}
    ratios = [c["lambda"] / d["A"] for c, d in zip(per_seed["complex diag"], per_seed["RNN"])]
    eff = {m: {g: float(np.median([e[g] for e in v])) for g in v[0]} for m, v in per_seed.items() if v}
    return ratios, eff


PROBE_SHARE_GROUPS = {"RNN": {"A": "A"}, "complex diag": {"l1": "λ_re", "l2": "λ_im"},
                      "LRU": {"l1": "ω_ν", "l2": "ω_θ", "gamma": "γ", "B_re": "B_re", "C_re": "C_re"}}


def probe_shares(prows: Sequence[dict]) -> list[dict]:
    """C5, Fig. 9: per probe model and group of :data:`PROBE_SHARE_GROUPS`, the median over seeds of
    the share of entries within 10% of Adam's ceiling and of those at or below 0
    (:func:`~rnnbook.curse_of_memory.models.group_shares`), and of the group's aggregate rate."""
    out = []
    for m, groups in PROBE_SHARE_GROUPS.items():
        rs = [r for r in prows if r["model"] == m]
        out += [{"model": m, "group": label, "aggregate rate": float(np.median([r[f"eff_{g}"] for r in rs])),
                 "at the ceiling": float(np.median([r[f"ceil_{g}"] for r in rs])),
                 "at or below 0": float(np.median([r[f"neg_{g}"] for r in rs]))}
                for g, label in groups.items() if rs]
    return out


# ============================================================================ the seed survey
def survey_ranges(survey: dict[str, dict]) -> dict[str, str]:
    """The numbers of the seed runs (``seed N``) of a committed survey
    (:func:`rnnbook.claims.survey_values`) that the C4, C5 and C10 text quotes, formatted: C10's
    LRU ratios at the best and at the shared rate (and the seeds whose shared-rate ratio is under
    3), the complex diagonal network's best losses at π and π/100; C5's five-seed medians and
    single ratios; C4's median g per run."""
    runs = {k: v for k, v in survey.items() if k.startswith("seed")}
    def span(xs, fmt: str) -> str:
        return f"{min(xs):{fmt}} to {max(xs):{fmt}}"
    c10 = {k: v["C10"] for k, v in runs.items()}
    eq = {k: c["equal-rate ratio, LRU"] for k, c in c10.items()}
    cd = [c["losses"]["complex diag"] for c in c10.values()]
    return {"c10_best": span([c["L(pi)/L(pi/100), LRU"] for c in c10.values()], ".0f"),
            "c10_eq": span(eq.values(), ".2g"),
            "c10_eq_below": ", ".join(k for k, r in eq.items() if r < 3) or "none",
            "c10_cd_small": span([x["0.01π"] for x in cd], ".2g"),
            "c10_cd_pi": span([x["1π"] for x in cd], ".2g"),
            "c5_medians": span([v["C5"]["median ratio"] for v in runs.values()], ".0f"),
            "c5_single": span([r for v in runs.values() for r in v["C5"]["ratios per seed"]], ".3g"),
            "c4_g": ", ".join(f"{v['C4']['g (median)']:.2f}" for v in runs.values())}


def _num(x: float | None, fmt: str) -> str:
    """A survey value formatted, or "–" where the survey predates it."""
    return "–" if x is None else f"{x:{fmt}}"


def survey_margins(path: Path) -> Table | str:
    """The values of the committed seed survey (:func:`rnnbook.claims.survey`) that the quick checks
    compare with their thresholds (in the column heads), one row per run: C3's three, C4's median g,
    C5's median ratio, C6's medians and share, C7's LayerNorm spans, C10's LRU ratio, C11's largest
    rise and L(1)/L(d_h/2), C9's worst bin."""
    if not path.exists():
        return f"No seed survey of this chapter is committed ({path.name})."
    rows = []
    for name, v in claims.survey_values(path).items():
        c3, c11 = v["C3"], v["C11"]
        rows.append({
            "run": name,
            "C3 RNN ratio (≥ 1e3) | RNN/LRU (≥ 1e2) | LRU (≤ 2e-2)":
                f"{c3['RNN(max)/RNN(min)']:.2g} | {c3['RNN/LRU at max nu0']:.2g} | {c3['LRU at max nu0']:.2g}",
            "C4 g (≥ 0.7)": f"{v['C4']['g (median)']:.2f}",
            "C5 ratio (≥ 10)": f"{v['C5']['median ratio']:.3g}",
            "C6 gap (≥ 1e4) | spectra (≤ 1) | IPR > 1 (≥ 2/3)":
                f"{v['C6']['median eig9/eig10']:.2g} | {_num(v['C6'].get('median spectra distance (decades)'), '.2f')}"
                f" | {_num(v['C6'].get('share of IPR ratios > 1'), '.2f')}",
            "C7 LayerNorm rest (≤ 10) | λ (≤ 10^3.5)":
                f"{_num(v['C7'].get('all but lambda, max/min over tau', {}).get('layer'), '.2g')}"
                f" | {v['C7']['max/min over tau']['layer']:.3g}",
            "C10 LRU (≥ 3)": f"{v['C10']['L(pi)/L(pi/100), LRU']:.3g}",
            "C11 rise (≤ 2) | L1/L32 (≥ 1e2)": f"{c11['largest rise']:.2f} | {c11['L(1)/L(max heads)']:.2g}",
            "C9 worst bin (≤ 1.5)": f"{v['C9']['worst ratio']:.2f}"})
    return table(rows)
