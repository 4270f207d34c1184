"""The extrapolation chapter's parameters, sweeps and claim checks (Cohen-Karlik et al., ICLR 2023).

:class:`Settings` and :func:`resolve` (the profiles' defaults, every parameter checked before any
compute), the default teachers, the sweeps of students through the results cache, and the checks
behind the claims: the transition at :math:`k = 2\\hat d` (C1, C2; F1, F2), Prop. 3 (C3), the
convergence checkpoints (C4, F4), the initial imbalance (C5, F5), the bound across runs and the rank
link (C6), the moments (C7), the GRU students (C8, F3), the student sizes (C10, F7), far from balance
(C11), low-dimensional state and long memory (C12), the spectra (E1) and the diagonal students (E2),
with the chapter's tables.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rnnbook import claims, params
from rnnbook.display import table
from rnnbook.extrapolation.theory import (DTYPE, TEACHERS, conserved, hankel_rank, impulse_response, off_support_mass,
                                          prop3_student, short_memory_student, spectrum, tail_share,
                                          teacher_impulse, w1_distance)
from rnnbook.extrapolation.sweeps import (GRU_LENGTHS, GRU_LONG_TEACHER, GRU_TEACHER,  # the chapter's
                                          diagonal_sweep, gru_sweep, train_sweep)  # through this module
from rnnbook.extrapolation.train import (FREEZE_LOSS, INIT_SCALE, LR, STALL_DROP, STALL_WINDOW, VARIANTS,
                                         RunConfig, init_student, run_seed, train_students)




def moment_check(teachers: dict[int, tuple[Sequence[float], Sequence[float]]]) -> dict:
    """C7: :func:`off_support_mass` for k = 1 .. 2 d_hat + 3, for the default teachers d_hat = 1..3
    and every given teacher; <= 1e-6 is required for k >= 2 d_hat + 1 and >= 0.1 for k <= 2 d_hat.
    The table has one row per k and one column per teacher (narrow enough for a page)."""
    todo = {f"default d_hat={dh}": TEACHERS[dh] for dh in (1, 2, 3)}
    for dh, (lam, w) in teachers.items():  # the full profile's default d_hat = 4 too
        if (tuple(lam), tuple(w)) not in todo.values():
            todo[f"default d_hat={dh}" if TEACHERS.get(dh) == (tuple(lam), tuple(w))
                 else f"d_hat={dh}: lam={tuple(lam)}"] = (tuple(lam), tuple(w))
    cols, worst = {}, {"above": 0.0, "below": math.inf}
    for name, (lam, w) in todo.items():
        dh = len(lam)
        cols[name] = {k: abs(off_support_mass(lam, w, k))  # the solver's zero is +-1e-12 or so
                      for k in range(1, 2 * dh + 4)}
        worst["above"] = max([worst["above"]] + [m for k, m in cols[name].items() if k >= 2 * dh + 1])
        worst["below"] = min([worst["below"]] + [m for k, m in cols[name].items() if k <= 2 * dh])
    rows = [{"k": k, **{name: c.get(k, "–") for name, c in cols.items()}}
            for k in range(1, max(max(c) for c in cols.values()) + 1)]
    passed = worst["above"] <= 1e-6 and worst["below"] >= 0.1
    return {"max_off_mass": {"k >= 2 d_hat + 1 (max)": worst["above"],
                             "k <= 2 d_hat (min)": worst["below"]},
            "passed": passed, "table": table(rows)}


# ----------------------------------------------------------------------------- parameters
@dataclass(frozen=True)
class Settings:
    """The chapter's resolved parameters (None replaced by the profile's defaults, spec §4)."""

    teachers: dict[int, tuple[tuple[float, ...], tuple[float, ...], list[int]]]
    ds: list[int]
    n_seeds: int
    init_scale: float
    lr: float
    steps: int | None
    horizon_q: int
    gate: float  # loss gate for judging extrapolation (C1, C2)
    tol: float  # eps tolerance above 2 d_hat (C1, C2)
    scales: tuple[float, ...]  # F5 init scales
    gru_hidden: int
    gru_steps: int
    gru_batch: int
    gru_ks: list[int]
    gru_seeds: int
    chunk_size: int | None
    sizes: list[int]  # C10/F7: student sizes d
    size_ks: tuple[int, ...]  # C10/F7: k values, both sides of 2 d_hat = 4
    size_steps: int  # C10/F7: step budget
    far_ks: tuple[int, ...]  # C11: k values
    gru_long: bool = False  # C8: also the long-memory GRU teacher (full profile)
    step_scale: float = 1.0  # default step budgets and F4's checkpoint spacing x this (SMOKE)

    def steps_for(self, d_hat: int, profile: str, variant: str = "sym_bal") -> int:
        return self.steps or max(1, round(default_steps(d_hat, profile, variant) * self.step_scale))


# The smoke run's toy sizes (issue 24, item 2: ``python -m rnnbook run extrapolation --profile full
# --smoke``), each replacing a full default that -p did not set. Every full-profile branch still
# runs: its teachers d_hat = 1..4 with every k, several student sizes d (the smallest above
# max k = 11), its loss gate, tolerance, F5 scales and chunking; the step budgets (and F4's
# checkpoint spacing) are the full ones x step_scale, and the GRU keeps the smallest, the
# largest and k = 2 of full's k = 1..12.
SMOKE = {"d": [12, 14], "d_sizes": [8, 14], "n_seeds": 2, "horizon_q": 20, "step_scale": 1e-3, "gru_hidden": 4,
         "gru_steps": 20, "gru_batch": 16, "gru_ks": [1, 2, 12], "gru_seeds": 4}


def resolve(profile: str, d, d_hat, k_values, teacher_eigs, teacher_weights, init_scale: float,
            lr: float, steps, n_seeds, horizon_q, gru_hidden, gru_steps, d_sizes=None,
            smoke: bool = False, chunk_size=None) -> Settings:
    """Check every chapter parameter, raising :class:`rnnbook.ParameterError` before any compute,
    and fill in the profile's defaults (with ``smoke``, the full profile's at the toy sizes of
    :data:`SMOKE`)."""
    params.choice("profile", profile, params.PROFILES)
    full = profile == "full"
    toy = SMOKE if params.smoke(smoke, profile) else {}
    if d_hat is None:
        d_hat = [1, 2, 3, 4] if full else [1, 2]
    d_hat = [params.integer("d_hat", x, lo=1) for x in params.sequence("d_hat", d_hat)]
    if d is None:
        d = toy.get("d", [20, 50, 100] if full else [20])
    ds = [params.integer("d", x, lo=2) for x in (d if isinstance(d, (list, tuple)) else [d])]
    params.real("init_scale", init_scale, lo=0, lo_open=True)
    params.real("lr", lr, lo=0, lo_open=True)
    if steps is not None:
        steps = params.integer("steps", steps, lo=1)
    if chunk_size is not None:
        chunk_size = params.integer("chunk_size", chunk_size, lo=1)
    for name, given in (("teacher_eigs", teacher_eigs), ("teacher_weights", teacher_weights)):
        if given is not None and len(params.sequence(name, given)) != len(d_hat):
            raise params.ParameterError(name, given, f"None or one list per d_hat ({len(d_hat)})")
    if k_values is not None:
        k_values = [params.integer("k_values", x, lo=1) for x in params.sequence("k_values", k_values)]
    teachers = {dh: _teacher(i, dh, teacher_eigs, teacher_weights, k_values)
                for i, dh in enumerate(d_hat)}
    for dh, (_, _, ks) in teachers.items():
        if min(ds) <= max(ks) or min(ds) <= dh:
            raise params.ParameterError("d", d, f"integers > max k ({max(ks)}) and > d_hat ({dh}): "
                                        "an overparameterized student")
    ref = reference_d_hat(teachers)  # F4's example run and E1 read its run at k = 2 d_hat + 1
    if 2 * ref + 1 not in teachers[ref][2]:
        raise params.ParameterError("k_values", k_values, f"integers that include 2 d_hat + 1 = "
                                    f"{2 * ref + 1} for the reference teacher d_hat = {ref}")
    pick = (lambda quick, big: big if full else quick)
    size = (lambda name, quick, big: toy.get(name, pick(quick, big)))  # SMOKE's, if a smoke run
    size_ks = pick((3, 5), (2, 3, 4, 5, 6, 7))
    if d_sizes is None:
        d_sizes = size("d_sizes", [8, 20, 50, 100, 200], [8, 20, 50, 100, 200, 400])
    sizes = [params.integer("d_sizes", x, lo=max(size_ks) + 1) for x in params.sequence("d_sizes", d_sizes)]
    return Settings(
        teachers, ds,
        n_seeds=params.integer("n_seeds", n_seeds if n_seeds is not None else size("n_seeds", 3, 5), lo=1),
        init_scale=init_scale, lr=lr, steps=steps,
        horizon_q=params.integer("horizon_q", horizon_q if horizon_q is not None
                                 else size("horizon_q", 60, 100), lo=max_k(teachers)),
        gate=pick(1e-6, 1e-8), tol=pick(0.05, 0.01),
        scales=pick((1e-1, 1e-2, 1e-3), (1e-1, 1e-2, 1e-3, 1e-4)),
        gru_hidden=params.integer("gru_hidden", gru_hidden if gru_hidden is not None
                                  else size("gru_hidden", 16, 64), lo=1),
        gru_steps=params.integer("gru_steps", gru_steps if gru_steps is not None
                                 else size("gru_steps", 2000, 5000), lo=1),
        gru_batch=size("gru_batch", 128, 256),  # quick: half the spec's batch (our choice, shorter)
        gru_ks=size("gru_ks", [2, 6, 10], list(range(1, 13))),
        gru_seeds=toy.get("gru_seeds", 16),  # C8: 16 students per k
        chunk_size=chunk_size or pick(None, 64), sizes=sizes, size_ks=size_ks,
        size_steps=max(1, round(pick(25_000, FULL_SIZE_STEPS) * toy.get("step_scale", 1.0))),
        far_ks=pick((2, 3, 4, 5), (1, 2, 3, 4, 5, 6, 7)), gru_long=full, step_scale=toy.get("step_scale", 1.0))


def max_k(teachers: dict) -> int:
    """The longest training length of the sweep (the teachers' k values and E3's 1..7): the
    horizon q of eps_q must cover it."""
    return max(7, *(max(ks) for _, _, ks in teachers.values()))


def _teacher(i: int, dh: int, eigs, weights, k_values) -> tuple[tuple[float, ...], tuple[float, ...], list[int]]:
    """The i-th teacher (lam, w) and its k values: the spec's table unless given."""
    if eigs is None and dh not in TEACHERS:
        raise params.ParameterError("d_hat", dh, f"1..{max(TEACHERS)} unless teacher_eigs is given")
    lam = tuple(float(x) for x in (eigs[i] if eigs is not None else TEACHERS[dh][0]))
    if weights is not None:
        w = tuple(float(x) for x in weights[i])
    elif eigs is None:
        w = TEACHERS[dh][1]
    else:
        w = (1.0 / dh,) * dh
    if len(lam) != dh or len(w) != dh:
        raise params.ParameterError("teacher_eigs", lam, f"{dh} eigenvalue(s) and weight(s) for d_hat={dh}")
    if len(set(lam)) != dh or any(abs(x) > 1 for x in lam):
        raise params.ParameterError("teacher_eigs", lam, "distinct eigenvalues with |lam| <= 1")
    if any(x <= 0 for x in w):
        raise params.ParameterError("teacher_weights", w, "weights > 0 (a balanced teacher)")
    ks = list(k_values) if k_values is not None else list(range(1, 2 * dh + 4))
    return lam, w, ks


# ----------------------------------------------------------------------------- sweeps and claims
FULL_SIZE_STEPS = 400_000  # C10's step budget in the full profile (quick: 2.5e4), see default_steps
SIGNED_TEACHER = (TEACHERS[2][0], (0.8, -0.3))  # E3: unbalanced, the moment argument fails


def build_sweep(teachers: dict[int, tuple[tuple[float, ...], tuple[float, ...], list[int]]],
                ds: Sequence[int], n_seeds: int, seed: int, init_scale: float, lr: float,
                steps: Callable[[int], int], horizon_q: int, profile: str,
                scales: Sequence[float], step_scale: float = 1.0) -> list[RunConfig]:
    """Every linear run of the chapter's specification: F1 (symmetric, balanced), F2 (non-symmetric,
    unbalanced), F5 (symmetric A, independent B, C, several init scales; reference d_hat,
    k = 2 d_hat + 1, + 2) and E3 (the signed teacher). ``teachers`` maps d_hat to (lam, w, k values);
    ``steps(d_hat, variant)`` gives the step budget; ``step_scale`` scales the full profile's
    checkpoint spacing (SMOKE). The runs added later (C10, C11) are :func:`later_sweep`'s. Only the
    runs at the first size ``ds[0]`` keep their final A (E1's spectra read it there)."""
    out = []
    runs = lambda e, d, *a: out.extend(_runs(e, d, *a, n_seeds=n_seeds, seed=seed, lr=lr,
                                             horizon_q=horizon_q, profile=profile,
                                             step_scale=step_scale, keep_A=d == ds[0]))
    for d in ds:
        for dh, (lam, w, ks) in teachers.items():
            runs("F1", d, lam, w, ks, "sym_bal", [init_scale], steps(dh, "sym_bal"))
            runs("F2", d, lam, w, ks, "nonsym", [init_scale], steps(dh, "nonsym"))
    dh = reference_d_hat(teachers)
    lam, w, _ = teachers[dh]
    runs("F5", ds[0], lam, w, [2 * dh + 1, 2 * dh + 2], "sym_ind", scales, steps(dh, "sym_ind"))
    runs("E3", ds[0], *SIGNED_TEACHER, range(1, 8), "sym_ind", [init_scale], steps(2, "sym_ind"))
    return out


def later_sweep(S: "Settings", seed: int, profile: str) -> list[RunConfig]:
    """The runs added after the specification (issue 43), on the d_hat = 2 teacher whatever the
    chapter's teachers: F7 (C10: symmetric, balanced students of every size in ``S.sizes`` at
    ``S.size_ks``, on both sides of 2 d_hat) and C11's non-symmetric students at the first d, far
    from balance ("F2-far": the conserved Q of order one) and on E3's signed teacher ("F2-signed"),
    at ``S.far_ks``; and C12's runs at :func:`memory_ks`: F1's and F2's students of the d_hat = 2
    teacher where the chapter does not run them ("F1-mem", "F2-mem", :func:`memory_reuses`) and
    its control, the same students of the teacher with its eigenvalues halved (:func:`short_teacher`;
    "F1-short", "F2-short"). As in :func:`build_sweep`, only the runs at ``S.ds[0]`` keep their final A."""
    out = []
    runs = lambda e, d, *a: out.extend(_runs(e, d, *a, n_seeds=S.n_seeds, seed=seed, lr=S.lr,
                                             horizon_q=S.horizon_q, profile=profile,
                                             step_scale=S.step_scale, keep_A=d == S.ds[0]))
    lam, w = TEACHERS[2]
    for d in S.sizes:
        runs("F7", d, lam, w, S.size_ks, "sym_bal", [S.init_scale], S.steps or S.size_steps)
    runs("F2-far", S.ds[0], lam, w, S.far_ks, "nonsym_far", [S.init_scale], S.steps_for(2, profile, "nonsym"))
    runs("F2-signed", S.ds[0], *SIGNED_TEACHER, S.far_ks, "nonsym", [S.init_scale],
         S.steps_for(2, profile, "nonsym"))
    ks = memory_ks(2)  # C12: the d_hat = 2 teacher's F1 and F2 students at k = 3, 4 (F1's and F2's own
    if not memory_reuses(S):  # where the chapter runs them), and its control, the eigenvalues halved
        for e, v in (("F1-mem", "sym_bal"), ("F2-mem", "nonsym")):
            runs(e, S.ds[0], lam, w, ks, v, [S.init_scale], S.steps_for(2, profile, v))
    for e, v in (("F1-short", "sym_bal"), ("F2-short", "nonsym")):
        runs(e, S.ds[0], *short_teacher(lam, w), ks, v, [S.init_scale], S.steps_for(2, profile, v))
    return out


def memory_reuses(S: "Settings") -> bool:
    """Whether C12 reads F1's and F2's own runs (the default d_hat = 2 teacher swept with k = 3 and 4)
    rather than runs of its own ("F1-mem", "F2-mem")."""
    lam, w = TEACHERS[2]
    t = S.teachers.get(2)
    return t is not None and (t[0], t[1]) == (lam, w) and set(memory_ks(2)) <= set(t[2])


def _runs(experiment: str, d: int, lam, w, ks: Sequence[int], variant: str, scales: Sequence[float],
          n_steps: int, *, n_seeds: int, seed: int, lr: float, horizon_q: int, profile: str,
          step_scale: float, keep_A: bool) -> list[RunConfig]:
    """The runs of one (experiment, d, teacher, variant): every k, init scale and seed."""
    return [RunConfig(experiment, d, tuple(lam), tuple(w), k, variant, s, lr, n_steps,
                      run_seed(seed, experiment, d, lam, w, k, s, i), horizon_q,
                      checkpoint_steps(n_steps, profile, step_scale), keep_A)
            for k in ks for s in scales for i in range(n_seeds)]


def reference_d_hat(teachers: dict) -> int:
    """The teacher size of the single-teacher figures (F4b, F5, F6, E1): 2 as in the spec, if swept."""
    return 2 if 2 in teachers else max(teachers)


def default_steps(d_hat: int, profile: str, variant: str = "sym_bal") -> int:
    """Step budget: the spec's (§4) 5e4 for d_hat <= 2, 1.5e5 for 3 and 3e5 for 4 and more, but 1e6
    for non-symmetric students from d_hat = 3 on (our trials: at d_hat = 3 their k = 7 runs need
    about 6e5 steps to bring eps_q under the tolerance); x4 in the full profile, but C10's
    :data:`FULL_SIZE_STEPS` for symmetric, balanced students of d_hat <= 2 (at 2e5 their loss, which
    falls slowly at the end, stopped at 1.0-1.3e-8 just above the full gate 1e-8 at k = 2 d_hat + 1
    and + 2 in the run of 7 December 2026, where C10's students of the d_hat = 2 teacher reached
    2.8e-9 or less at every size). Runs stop earlier at the freeze loss or when they stall
    (:func:`rnnbook.extrapolation.train.train_students`)."""
    if profile == "full" and variant == "sym_bal" and d_hat <= 2:
        return FULL_SIZE_STEPS
    base = 50_000 if d_hat <= 2 else 1_000_000 if variant == "nonsym" else 150_000 if d_hat == 3 else 300_000
    return base * (4 if profile == "full" else 1)


def checkpoint_steps(steps: int, profile: str, scale: float = 1.0) -> tuple[int, ...]:
    """F4 checkpoints: 1e3, 3e3, 1e4, 3e4, ... and the last step (quick), or every 2e4 x ``scale``
    steps (full; the smoke run's ``scale`` shrinks it with its step budgets, :data:`SMOKE`)."""
    if profile == "full":
        every = max(1, round(20_000 * scale))
        return tuple(range(every, steps + 1, every)) or (steps,)  # a short -p steps: its last
    grid = [m * 10 ** e for e in range(3, 8) for m in (1, 3)]
    return tuple(t for t in grid if t < steps) + (steps,)


def select(rows: Sequence[dict], **where: object) -> list[dict]:
    return [r for r in rows if all(r[key] == val for key, val in where.items())]


def converged(row: dict, gate: float) -> bool:
    """A run counts for extrapolation only if it reached the loss gate and did not diverge."""
    return (not row["diverged"]) and row["loss"] <= gate


def transition_check(rows: Sequence[dict], d_hat: int, gate: float, tol: float) -> dict:
    """C1/C2 (§5.1, §5.2): the phase transition at k = 2 d_hat, judged on converged runs only.

    (a) median eps >= 0.1 for every k with 2 <= k < 2 d_hat (at k = 1 the loss involves only
    h_0 = CB, A gets no gradient and eps is about 1 whatever GD does, so k = 1 cannot test (a); for
    d_hat = 1 no k can, and ``a_testable`` is False); (b) median eps <= tol for every
    k >= 2 d_hat + 1 whose seeds all pass the loss gate; (c) at least 2/3 of the runs with
    k >= 2 d_hat + 1 pass it. k = 2 d_hat is reported, not judged. A failed (a) is "not reproduced"
    whatever the convergence (the spec: FAIL if any k < 2 d_hat extrapolates), and so is a failed
    (b): a k above the line whose runs all converged and did not extrapolate is a failure that more
    converged runs elsewhere cannot undo; otherwise too few converged runs, or no converged k above
    the line, gives "inconclusive". An untestable (a) leaves the verdict to (b) and (c)."""
    ks = sorted({r["k"] for r in rows})
    below = [k for k in ks if 2 <= k < 2 * d_hat]
    above = [k for k in ks if k >= 2 * d_hat + 1]
    med, loss, n_ok = {}, {}, {}
    for k in ks:
        ok = [r["eps"] for r in rows if r["k"] == k and converged(r, gate)]
        med[k] = float(np.median(ok)) if ok else math.nan
        loss[k] = max(r["loss"] for r in rows if r["k"] == k)
        n_ok[k] = f"{len(ok)}/{sum(r['k'] == k for r in rows)}"
    runs_above = [r for r in rows if r["k"] in above]
    frac = np.mean([converged(r, gate) for r in runs_above]) if runs_above else 0.0
    judged_above = [k for k in above if all(converged(r, gate) for r in rows if r["k"] == k)]
    judged_below = [k for k in below if not math.isnan(med[k])]
    a = all(med[k] >= 0.1 for k in judged_below)
    b = all(med[k] <= tol for k in judged_above)
    c = frac >= 2 / 3
    enough = (bool(judged_below) or not below) and bool(judged_above) and c
    if (judged_below and not a) or not b:  # fails whatever else converged
        verdict = "not reproduced"
    else:
        verdict = "reproduced" if enough else "inconclusive"
    return {"median_eps": med, "max_loss": loss, "converged": n_ok,
            "converged_frac_above": float(frac), "judged_below": judged_below,
            "judged_above": judged_above, "a": a, "b": b, "c": c, "a_testable": bool(below),
            "tol": tol, "verdict": verdict, "passed": enough and a and b}


def transition_claim(run, rows: Sequence[dict], S: "Settings", cid: str, experiment: str,
                     statement: str, source: str, *, paper: str):
    """Record C1/C2 from :func:`transition_check` over every (d_hat, d) of ``experiment``
    (:func:`record_transitions`). Returns the table."""
    checks = {(dh, d): transition_check(select(rows, experiment=experiment, d_hat=dh, d=d),
                                        dh, S.gate, S.tol)
              for dh in S.teachers for d in S.ds}
    edge = {f"d_hat={dh}, d={d}": edge_balance(select(rows, experiment=experiment, d_hat=dh, d=d, k=2 * dh + 1))
            for dh in S.teachers for d in S.ds}
    record_transitions(run, {f"d_hat={dh}, d={d}": c for (dh, d), c in checks.items()}, S, cid,
                       statement, source, paper=paper, scope=f"d̂ = {', '.join(map(str, S.teachers))}; "
                       f"d = {', '.join(map(str, S.ds))}", extra=edge)
    return transition_table(checks)


def edge_balance(edge: Sequence[dict]) -> dict:
    """At the first k above the line (k = 2 d_hat + 1, the runs ``edge``): the median eps_q of its
    runs that reached the loss floor (:data:`FREEZE_LOSS`), where a lower loss cannot explain it, and
    the median norm of the conserved Q over all its runs (C2: the imbalance that GD cannot undo)."""
    floor = [r["eps"] for r in edge if r["loss"] <= FREEZE_LOSS * 1.01 and not r["diverged"]]
    return {"at k = 2d̂+1: median ε_q at the loss floor": float(np.median(floor)) if floor else math.nan,
            "at k = 2d̂+1: runs at the loss floor": len(floor),
            "at k = 2d̂+1: median ‖Q‖": float(np.median([r["Q_norm"] for r in edge])) if edge else math.nan}


def record_transitions(run, checks: dict[str, dict], S: "Settings", cid: str, statement: str, source: str,
                       *, paper: str, scope: str, extra: dict[str, dict] | None = None) -> str:
    """Record a claim judged by C1's rules (:func:`transition_check`) on every group of ``checks``
    as evidence (:mod:`rnnbook.claims`) with the ``paper``'s statement beside ours (the worst judged
    median above the line and the best below it, over ``scope``): :func:`group_verdict` of the
    groups' verdicts (reason: not at this scale if inconclusive, else differs). A group where (a)
    cannot be tested (d_hat = 1: below the line there is only k = 1, where failure is certain) is
    judged on (b) and (c), and its value says so; ``extra`` adds measures to a group's value.
    Returns the verdict."""
    verdict = group_verdict([c["verdict"] for c in checks.values()])
    value = {name: {
        "verdict": c["verdict"], "median_eps": c["median_eps"], "judged_above": c["judged_above"],
        "converged_above": c["converged_frac_above"],
        "(a)": (f"judged at k = {', '.join(map(str, c['judged_below']))}" if c["judged_below"]
                else "not testable (no k with 2 <= k < 2 d_hat)" if not c["a_testable"]
                else "no converged k below the line"), **(extra or {}).get(name, {})}
        for name, c in checks.items()}
    above = [c["median_eps"][k] for c in checks.values() for k in c["judged_above"]]
    below = [c["median_eps"][k] for c in checks.values() for k in c["judged_below"]]
    ours = (f"median ε_q ≤ {max(above):.3g} at every converged k > 2d̂" if above
            else "no k > 2d̂ converged")
    ours += (f", ≥ {min(below):.3g} at 2 ≤ k < 2d̂" if below else ", no k with 2 ≤ k < 2d̂ to judge")
    reason = {"reproduced": None, "inconclusive": "not-at-scale"}.get(verdict, "differs")
    run.claim(cid, statement, source, value,
              f"(a) median eps >= 0.1 for 2 <= k < 2 d_hat (k = 1 cannot test it); (b) <= {S.tol} "
              f"for k > 2 d_hat (loss gate {S.gate:g}); (c) >= 2/3 of runs above converge",
              passed=all(c["passed"] for c in checks.values()), verdict=verdict, kind="evidence",
              paper=paper, ours=f"{ours} ({scope})", reason=reason)
    return verdict


def group_verdict(verdicts: Sequence[str]) -> str:
    """One verdict from the groups' (teacher, size) verdicts of C1's rules: "reproduced" if every
    group reproduces, "partly" if some reproduce and some fail, "not reproduced" if some fail and
    none reproduces, else (no failure, some group undecided) "inconclusive"."""
    seen = set(verdicts)
    if seen == {"reproduced"}:
        return "reproduced"
    if "not reproduced" in seen:
        return "partly" if "reproduced" in seen else "not reproduced"
    return "inconclusive"


def size_claim(run, rows: Sequence[dict], S: "Settings"):
    """C10 (§1, §4 intro: "irrespective of" the student's size d): C1's rules on F7's runs, one group
    per d of ``S.sizes`` (d_hat = 2; its k below the line, 3, is the control: the same rule must
    see failure there at every d). Returns the table."""
    checks = {(2, d): transition_check(select(rows, experiment="F7", d=d), 2, S.gate, S.tol)
              for d in S.sizes}
    record_transitions(
        run, {f"d={d}": c for (_, d), c in checks.items()}, S, "C10",
        "Extrapolation above 2 d_hat, and its failure below, whatever the student's size d "
        "(symmetric A, balanced init).", "§1; §4 intro; §5 intro",
        paper="§1 and §4 intro: GD from a balanced initialisation extrapolates 'irrespective of how "
        "large its state space dimension is' (no number); not readable: any d of the paper's runs",
        scope=f"d̂ = 2, k = {', '.join(map(str, S.size_ks))}; d = {', '.join(map(str, S.sizes))}")
    return transition_table(checks)


def far_claim(run, rows: Sequence[dict], S: "Settings"):
    """C11 (§5 intro on §5.2, beyond the start; our extension): C1's rules on the non-symmetric students far from balance
    ("F2-far") and on E3's signed teacher ("F2-signed"), d_hat = 2, the first d. Returns the table."""
    names = {"F2-far": "far from balance", "F2-signed": "signed teacher"}
    checks = {(e, 2, S.ds[0]): transition_check(select(rows, experiment=e), 2, S.gate, S.tol) for e in names}
    record_transitions(
        run, {f"{names[e]}, d_hat=2, d={d}": c for (e, _, d), c in checks.items()}, S, "C11",
        "The same transition without balance beyond the start: non-symmetric students whose conserved "
        "Q is of order one, and an unbalanced (signed) teacher.", "§5 intro, describing §5.2 (our extension)",
        paper="§5 intro, describing §5.2: the same phenomenon without 'some of the assumptions', in "
        "particular symmetric transition matrices and balancedness; not readable: how far from "
        "balance §5.2's runs were, and their teacher",
        scope=f"d̂ = 2, d = {S.ds[0]}; Q of order one, and the signed teacher ŵ = (0.8, −0.3)")
    return transition_table({(2, d, names[e]): c for (e, _, d), c in checks.items()})


def balance_table(rows: Sequence[dict], experiments: Sequence[str]):
    """C2/C11: per experiment, medians over its runs of the final imbalance
    :math:`\\|B-C^\\top\\|/\\|B\\|`, the final asymmetry :math:`\\|A-A^\\top\\|/\\|A\\|`, and the Frobenius
    norm of the conserved :math:`Q` (:func:`~rnnbook.extrapolation.theory.conserved`) at the start and
    at the end: how far from balance the students were, not only where they started."""
    fields = RunConfig.__dataclass_fields__
    out = []
    for e in experiments:
        sel = select(rows, experiment=e)
        start = [init_student(RunConfig(**{f: r[f] for f in fields})) for r in sel]
        out.append({
            "students": f"{e} ({VARIANTS[sel[0]['variant']]})",
            "imbalance (end)": float(np.median([np.linalg.norm(r["B"] - r["C"]) / np.linalg.norm(r["B"]) for r in sel])),
            "asymmetry (end)": float(np.median([r["asymmetry"] for r in sel])),
            "‖Q‖ (start)": float(np.median([np.linalg.norm(conserved(*(x.numpy() for x in a))) for a in start])),
            "‖Q‖ (end)": float(np.median([r["Q_norm"] for r in sel]))})
    return table(out)


def transition_table(checks: dict[tuple, dict], verdict: bool = True):
    """One row per (d_hat, d, k) of :func:`transition_check` results: which rule judges that k, the
    median eps_q over converged runs, the largest final loss and how many runs passed the loss gate;
    the verdict of each (d_hat, d) on its first row. Column ``d`` only when several d are run; a
    key (d_hat, d, students) adds a column naming the students."""
    several_d = len({key[1] for key in checks}) > 1
    rows = []
    for key, c in checks.items():
        dh, d = key[:2]
        for i, k in enumerate(sorted(c["median_eps"])):
            if k == 1:
                rule = "none (k = 1)"
            elif k < 2 * dh:
                rule = "(a) >= 0.1"
            elif k == 2 * dh:
                rule = "none (k = 2 d_hat)"
            else:
                rule = f"(b) <= {c['tol']:g}" if k in c["judged_above"] else "none (unconverged)"
            row = {**({"students": key[2]} if len(key) > 2 else {}), "d_hat": dh,
                   **({"d": d} if several_d else {}), "k": k, "judged by": rule,
                   "median eps": c["median_eps"][k], "largest final L": c["max_loss"][k],
                   "converged": c["converged"][k]}
            if verdict:
                untestable = "; (a) not testable" if not c["a_testable"] else ""
                row["verdict"] = c["verdict"] + untestable if i == 0 else ""
            rows.append(row)
    return table(rows)


def converged_table(rows: Sequence[dict], gate: float):
    """The runs of F1 and F2 that passed the loss gate, per (experiment, d_hat, d) and k, as
    "passed/runs", with how many stalled or diverged: whether a verdict rests on converged runs."""
    out = []
    for (e, dh, d) in sorted({(r["experiment"], r["d_hat"], r["d"]) for r in rows if r["experiment"] in ("F1", "F2")}):
        sel = select(rows, experiment=e, d_hat=dh, d=d)
        row = {"students": f"{e} ({VARIANTS[sel[0]['variant']]})", "d_hat": dh, "d": d}
        for k in sorted({r["k"] for r in sel}):
            at = select(sel, k=k)
            row[f"k={k}"] = f"{sum(converged(r, gate) for r in at)}/{len(at)}"
        row["stalled"] = sum(r["stalled"] and not converged(r, gate) for r in sel)
        row["diverged"] = sum(r["diverged"] for r in sel)
        out.append(row)
    return table(out)


def prop3_check(lam: Sequence[float], w: Sequence[float], k: int,
                alphas: Sequence[float] = (0.1, 1.0, 10.0)) -> dict:
    """C3: for each alpha, the construction fits j < k and departs by exactly alpha at j = k, to
    float64 round-off: each error at most 10 machine epsilons times the largest sum that cancels,
    :math:`\\max_{j\\le k}\\sum_i|B_iC_i||A_{ii}|^j` (the extra modes' :math:`|v_i||\\mu_i|^j`
    dominate; it grows with k and alpha, while a wrong construction errs by order alpha). (That it
    is unbalanced needs no check: the j = 0 equation forces :math:`\\sum_i v_i = 0`, so some
    :math:`v_i < 0`.)"""
    fit, jump, bound = [], [], []
    h_hat = teacher_impulse(lam, w, k + 1)
    j = torch.arange(k + 1, dtype=DTYPE)[:, None]
    for alpha in alphas:
        A, B, C, _ = prop3_student(lam, w, k, alpha)
        h = impulse_response(A[None], B[None], C[None], k + 1)[0]
        fit.append((h[:k] - h_hat[:k]).abs().max().item())
        jump.append(abs((h[k] - h_hat[k]).item() - alpha))
        terms = (B * C).abs() * torch.diagonal(A).abs() ** j  # h_j's terms, A diagonal
        bound.append(10 * torch.finfo(DTYPE).eps * terms.sum(1).max().item())
    worst = max(max(f, j) / b for f, j, b in zip(fit, jump, bound))
    return {"max_fit_error": max(fit), "max_jump_error": max(jump), "worst error / bound": worst,
            "passed": worst <= 1}


def spearman_link(rows: Sequence[dict]) -> dict:
    """C6 (§4.2): per run, Spearman correlation of log L and log eps over the checkpoints; runs whose
    checkpoints are all equal (frozen before the first) have none and are counted apart."""
    rhos, worse, flat = [], [], 0
    for r in rows:
        L, e = np.log(r["ck_loss"]), np.log(r["ck_eps"])
        if np.ptp(L) == 0 or np.ptp(e) == 0 or not np.all(np.isfinite(e)):
            flat += 1
            continue
        rhos.append(claims.spearman(L, e))
        worse.append(bool(r["ck_eps"][-1] > r["ck_eps"][0]))
    med = float(np.median(rhos)) if rhos else math.nan
    return {"median_rho": med, "min_rho": min(rhos, default=math.nan), "n_runs": len(rhos),
            "n_flat": flat, "n_eps_rose": int(sum(worse)),
            "meets_rule": bool(rhos) and med >= 0.8 and not any(worse)}


def seed_positions(rows: Sequence[dict]) -> list[int]:
    """Each run's seed index i (0, 1, ...) within its (experiment, d, teacher, k, variant, init
    scale) group, read from the order of the rows: :func:`_runs` lists a group's seeds last, in
    order, and :func:`train_sweep` and :func:`select` keep it."""
    seen: dict[tuple, int] = {}
    out = []
    for r in rows:
        key = (r["experiment"], r["d"], tuple(r["lam"]), tuple(r["w"]), r["k"], r["variant"], r["init_scale"])
        out.append(seen.get(key, 0))
        seen[key] = out[-1] + 1
    return out


def loss_bound(above: Sequence[dict], below: Sequence[dict], gate: float, factor: float = 2.0) -> dict:
    """C6 across runs (§4.2, F4a): a bound :math:`\\epsilon_q \\le c\\sqrt L` on the final values.
    ``c`` is fitted on the first seed's runs of ``above`` (runs with k > 2 d_hat: every run that did
    not diverge, converged or not, since the statement is about approximate convergence) as their
    largest :math:`\\epsilon_q/\\sqrt L`; each other seed's largest ratio ``c_s`` must be at most
    ``factor`` times it. The control: on ``below`` (runs with 2 <= k < 2 d_hat that passed the
    loss gate, whose :math:`\\epsilon_q` stays of order one however small L gets) the median ratio
    must exceed ``factor`` times c, so that the same bound is seen to fail where the theory says
    nothing vanishes. Also the rank correlation of log L and log eps across the runs above."""
    def ratios(rows):
        return [(i, r["eps"] / math.sqrt(r["loss"])) for r, i in zip(rows, seed_positions(rows))
                if not r["diverged"] and r["loss"] > 0 and math.isfinite(r["eps"])]
    up = ratios(above)
    per_seed = {}
    for i, c in up:
        per_seed[i] = max(per_seed.get(i, 0.0), c)
    c0 = per_seed.get(0, math.nan)
    others = {i: c for i, c in per_seed.items() if i > 0}
    held = bool(others) and all(c <= factor * c0 for c in others.values())
    low = [c for _, c in ratios([r for r in below if converged(r, gate)])]
    control = float(np.median(low)) if low else math.nan
    fails_below = bool(low) and control > factor * c0
    ok = [r for r in above if not r["diverged"] and r["loss"] > 0 and math.isfinite(r["eps"])]
    rho = (claims.spearman(np.log([r["loss"] for r in ok]), np.log([r["eps"] for r in ok]))
           if len(ok) > 2 else math.nan)
    return {"c fitted (seed 1)": c0, "c per seed": {f"seed {i + 1}": c for i, c in sorted(per_seed.items())},
            "worst c / fitted c": max(others.values(), default=math.nan) / c0,
            "below the line: median eps/sqrt(L)": control,
            "below / fitted c": control / c0, "runs above": len(up), "runs below": len(low),
            "Spearman across runs": rho, "factor": factor,
            "decades of sqrt(L)": (0.5 * math.log10(max(r["loss"] for r in ok) / min(r["loss"] for r in ok))
                                   if ok else math.nan),
            "testable": bool(others) and bool(low), "held": held, "control fails": fails_below,
            "passed": held and fails_below}


def imbalance_scaling(rows: Sequence[dict], scales: Sequence[float]) -> dict:
    """C5 (§4.3): median final imbalance :math:`\\|B-C^\\top\\|/\\|B\\|` per init scale sigma; it must
    fall with sigma, with log-log slope >= 1.5 between 1e-2 and 1e-3, and be <= 10 sigma at 1e-2."""
    med = {}
    for s in scales:
        vals = [np.linalg.norm(r["B"] - r["C"]) / np.linalg.norm(r["B"])
                for r in rows if r["init_scale"] == s]
        med[s] = float(np.median(vals))
    ss = sorted(scales)
    decreasing = all(med[a] < med[b] for a, b in zip(ss, ss[1:]))
    slope = (math.log(med[1e-2] / med[1e-3]) / math.log(10)
             if 1e-2 in med and 1e-3 in med else math.nan)
    at_1e2 = med.get(1e-2, math.nan)
    passed = decreasing and slope >= 1.5 and at_1e2 <= 10 * 1e-2
    return {"median_imbalance": med, "slope": slope, "passed": passed}


def ratio_along_runs(rows: Sequence[dict]) -> dict:
    """C6 (reported): along each run's checkpoints, how much :math:`\\epsilon_q/\\sqrt L` moves
    (largest over smallest, median and largest over runs) while L falls (median decades from the
    first checkpoint to the last): a ratio that stays put while L falls is what the bound
    :math:`\\epsilon_q \\le c\\sqrt L` of :func:`loss_bound` reads across runs."""
    moves, falls = [], []
    for r in rows:
        L, e = np.asarray(r["ck_loss"], dtype=float), np.asarray(r["ck_eps"], dtype=float)
        ok = (L > 0) & np.isfinite(e) & np.isfinite(L)
        if ok.sum() < 2 or r["diverged"]:
            continue
        ratio = e[ok] / np.sqrt(L[ok])
        moves.append(float(ratio.max() / ratio.min()))
        falls.append(float(math.log10(L[ok][0] / L[ok][-1])))
    return {"median move": float(np.median(moves)) if moves else math.nan,
            "largest move": max(moves, default=math.nan),
            "median decades of L": float(np.median(falls)) if falls else math.nan, "runs": len(moves)}


# ----------------------------------------------------------------------------- C12 (§1, §6)
MEMORY_LINE = 0.1  # C12: long memory when the tail share (theory.tail_share) is at least this
RANK_REL = 1e-2  # C12: a Hankel singular value counts from this fraction of the largest


def short_teacher(lam: Sequence[float], w: Sequence[float]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """C12's control teacher: the same weights, every eigenvalue halved, so its memory decays at
    least like :math:`0.5^j` (the paper's footnote 1: where the teacher's memory is short, a
    low-dimensional solution has short memory too)."""
    return tuple(0.5 * x for x in lam), tuple(w)


def memory_ks(d_hat: int) -> list[int]:
    """C12's training lengths: just below and at the line, k = 2 d_hat - 1 and 2 d_hat (never k = 1,
    where A gets no gradient)."""
    return [k for k in (2 * d_hat - 1, 2 * d_hat) if k >= 2]


def memory_group(rows: Sequence[dict], gate: float) -> dict:
    """C12 on one group of runs (one k, one kind of student, one teacher): over the runs that passed
    the loss gate, the median Hankel rank (:func:`~rnnbook.extrapolation.theory.hankel_rank`, at
    :data:`RANK_REL`), the median tail share (:func:`~rnnbook.extrapolation.theory.tail_share`)
    and the median eps_q; "converged" as passed/ran."""
    ok = [r for r in rows if converged(r, gate)]
    med = lambda f: float(np.median([f(r) for r in ok])) if ok else math.nan
    return {"converged": f"{len(ok)}/{len(rows)}", "n_ok": len(ok),
            "Hankel rank": med(lambda r: hankel_rank(r["h"], RANK_REL)),
            "tail share": med(lambda r: tail_share(r["h"])), "median eps": med(lambda r: r["eps"])}


def memory_check(rows: Sequence[dict], d_hat: int, d: int, gate: float, lam: Sequence[float],
                 w: Sequence[float], q: int) -> dict:
    """C12 (§1, §6: low-dimensional state spaces, not short-term memory). At k = 2 d_hat - 1 and 2 d_hat
    (:func:`memory_ks`), where the fit leaves the student undetermined, the converged students of
    F1 (symmetric, balanced) and F2 (non-symmetric, independent B, C: students that can realise a
    zero-loss solution of short memory, :func:`~rnnbook.extrapolation.theory.short_memory_student`)
    on the reference teacher must be low-dimensional (median Hankel rank <= d_hat, against the d
    available) and keep long memory (median tail share >= :data:`MEMORY_LINE`). The control, the same
    students of the teacher with its eigenvalues halved ("F1-short", "F2-short"), must *fail* the
    memory half (median tail share < the line): where the teacher's memory is short, so is the
    learned one. Inconclusive when a group has no converged run, or when the reference teacher
    itself has no long memory (its tail share below the line). Returns per-group results, the
    short-memory construction's rank and tail share at each k, and the verdict."""
    ks = memory_ks(d_hat)
    main = {(e, k): memory_group([r for r in rows if r["experiment"] in (e, e + "-mem") and r["d"] == d
                                  and r["k"] == k and tuple(r["lam"]) == tuple(lam)], gate)
            for e in ("F1", "F2") for k in ks}
    control = {(e, k): memory_group(select(rows, experiment=e, d=d, k=k), gate)
               for e in ("F1-short", "F2-short") for k in ks}
    h_hat = teacher_impulse(lam, w, q).numpy()
    built = {k: short_memory_student(lam, w, k, q) for k in ks}
    construction = {k: {"Hankel rank": hankel_rank(h, RANK_REL), "tail share": tail_share(h),
                        "fit error": float(np.abs(h[:k] - h_hat[:k]).max())} for k, h in built.items()}
    teacher_long = tail_share(h_hat) >= MEMORY_LINE
    groups = {**main, **control}
    enough = teacher_long and bool(ks) and all(g["n_ok"] > 0 for g in groups.values())
    low = all(g["Hankel rank"] <= d_hat for g in main.values())
    long_ = all(g["tail share"] >= MEMORY_LINE for g in main.values())
    control_fails = all(g["tail share"] < MEMORY_LINE for g in control.values())
    passed = enough and low and long_ and control_fails
    verdict = "reproduced" if passed else ("inconclusive" if not enough else "not reproduced")
    return {"ks": ks, "main": main, "control": control, "construction": construction,
            "teacher tail share": tail_share(h_hat), "low": low, "long": long_,
            "control fails": control_fails, "verdict": verdict, "passed": passed}


def memory_table(check: dict, d_hat: int):
    """C12: one row per group of :func:`memory_check` (the learned students, the control and the
    short-memory construction), with the rule each must meet."""
    who = {"F1": "F1 (symmetric, balanced)", "F2": "F2 (non-symmetric)",
           "F1-short": "F1, teacher's eigenvalues halved", "F2-short": "F2, teacher's eigenvalues halved"}
    rows = []
    for part, rule in (("main", f"rank <= {d_hat}, tail >= {MEMORY_LINE:g}"),
                       ("control", f"tail < {MEMORY_LINE:g} (control)")):
        for (e, k), g in check[part].items():
            rows.append({"students": who[e], "k": k, "converged": g["converged"],
                         "median Hankel rank": g["Hankel rank"], "median tail share": g["tail share"],
                         "median eps": g["median eps"], "rule": rule})
    for k, c in check["construction"].items():
        rows.append({"students": "short-memory construction", "k": k, "converged": "exact fit",
                     "median Hankel rank": c["Hankel rank"], "median tail share": c["tail share"],
                     "median eps": math.nan, "rule": "none (what short memory looks like)"})
    return table(rows)


def memory_claim(run, rows: Sequence[dict], S: "Settings") -> dict:
    """Record C12 from :func:`memory_check` on the d_hat = 2 teacher (E1's by default) at the first d."""
    dh = 2
    lam, w = TEACHERS[dh]
    c = memory_check(rows, dh, S.ds[0], S.gate, lam, w, S.horizon_q)
    main = [g for g in c["main"].values() if g["n_ok"]]
    ctrl = [g for g in c["control"].values() if g["n_ok"]]
    fmt = lambda gs, key, f: f(g[key] for g in gs) if gs else math.nan
    ours = (f"at k = {', '.join(map(str, c['ks']))} (d̂ = {dh}, d = {S.ds[0]}): median Hankel rank ≤ "
            f"{fmt(main, 'Hankel rank', max):g}, tail share ≥ {fmt(main, 'tail share', min):.2g} "
            f"(F1 and F2 students); with the teacher's eigenvalues halved, tail share ≤ "
            f"{fmt(ctrl, 'tail share', max):.2g}")
    value = {"k": c["ks"], "teacher tail share": c["teacher tail share"],
             **{f"{e}, k={k}": {"Hankel rank": g["Hankel rank"], "tail share": g["tail share"],
                                "converged": g["converged"]}
                for part in ("main", "control") for (e, k), g in c[part].items()}}
    run.claim("C12", "Below and at the line GD's students learn a low-dimensional state with long "
              "memory, not short-term memory (teacher with λ̂ = 1).", "§1 (footnote 1); §6",
              value, f"median Hankel rank <= d_hat and tail share >= {MEMORY_LINE:g} (F1, F2, k = 2d̂ - 1, "
              f"2d̂, loss gate {S.gate:g}); control, the teacher's eigenvalues halved: tail share < "
              f"{MEMORY_LINE:g}", passed=c["passed"], verdict=c["verdict"], kind="evidence",
              paper="§6: where low-dimensional state and short-term memory contradict, 'the implicit "
              "extrapolation chooses the former over the latter'; footnote 1: learning yields "
              "low-dimensional solutions 'that do not result in short-term memory' (no number)",
              ours=ours, reason=None if c["passed"] else "setting" if c["teacher tail share"] < MEMORY_LINE
              else "not-at-scale" if c["verdict"] == "inconclusive" else "differs")
    return c


# ----------------------------------------------------------------------------- GRU (§5.3)
def gru_subset(res: dict[str, np.ndarray], n_seeds: int) -> dict[str, np.ndarray]:
    """The runs of the first ``n_seeds`` seeds of each k (seeds do not depend on how many ran)."""
    keep = res["seed_index"] < n_seeds
    return {key: val[keep] for key, val in res.items()}


def gru_check(res: dict[str, np.ndarray]) -> dict:
    """C8 (§5.3), medians over seeds: at k = 2 (else the smallest k) rel-MSE(20) within [0.8, 1.2] x the
    silent-beyond-k reference; at the largest k rel-MSE(20) <= 0.6 x reference and beyond-window
    rel-MSE(20) <= 0.6; training relative loss <= 1e-2 at every k."""
    ks = np.unique(res["k"])
    med = {name: {int(k): float(np.median(res[name][res["k"] == k])) for k in ks}
           for name in ("rel_mse_20", "beyond_20", "ref_20", "rel_mse_40", "ref_40", "train_rel_loss")}
    lo, hi = (2 if 2 in ks else int(ks.min())), int(ks.max())
    small = med["rel_mse_20"][lo] / med["ref_20"][lo]
    large = med["rel_mse_20"][hi] / med["ref_20"][hi]
    fitted = max(med["train_rel_loss"].values())
    passed = 0.8 <= small <= 1.2 and large <= 0.6 and med["beyond_20"][hi] <= 0.6 and fitted <= 1e-2
    return {"k_small": lo, "ratio_small": small, "k_large": hi, "ratio_large": large,
            "beyond_large": med["beyond_20"][hi], "max_train_rel_loss": fitted,
            "ratio_large_40": med["rel_mse_40"][hi] / med["ref_40"][hi], "medians": med,
            "passed": passed}


# ----------------------------------------------------------------------------- extensions E1, E2
def off_teacher_mass(mu: np.ndarray, wts: np.ndarray, lam: Sequence[float], radius: float = 0.05
                     ) -> float:
    """E1: learned mass :math:`\\sum|w_i|` on atoms farther than ``radius`` from every teacher atom."""
    far = np.min(np.abs(mu[:, None] - np.asarray(lam)[None, :]), axis=1) > radius
    return float(np.abs(wts[far]).sum())


def spectrum_summary(rows: Sequence[dict], lam: Sequence[float], w: Sequence[float]) -> list[dict]:
    """E1: per k, median off-teacher mass and W1 distance to the teacher over seeds."""
    out = []
    for k in sorted({r["k"] for r in rows}):
        spectra = [spectrum(r["A"], r["B"], r["C"]) for r in rows if r["k"] == k]
        out.append({"k": k,
                    "off-teacher mass": float(np.median([off_teacher_mass(*s, lam) for s in spectra])),
                    "W1 to teacher": float(np.median([w1_distance(*s, lam, w) for s in spectra]))})
    return out


def spectrum_table(rows: Sequence[dict], lam: Sequence[float], w: Sequence[float]):
    """E1: :func:`spectrum_summary` as a table."""
    return table(spectrum_summary(rows, lam, w))


def diagonal_rows(res: dict[str, np.ndarray], gate: float) -> list[dict]:
    """E2: per k and student (real, complex), the median eps_q over the seeds that passed the loss
    gate, how many passed, and how many ran."""
    out = []
    for k in np.unique(res["k"]):
        row = {"k": int(k), "runs": int((res["k"] == k).sum())}
        for name in ("real", "complex"):
            sel = (res["k"] == k) & (res[f"{name}_loss"] <= gate) & ~res[f"{name}_diverged"]
            row[f"{name}: median eps"] = float(np.median(res[f"{name}_eps"][sel])) if sel.any() else math.nan
            row[f"{name}: converged"] = int(sel.sum())
        out.append(row)
    return out


def diagonal_table(res: dict[str, np.ndarray], gate: float):
    """E2: :func:`diagonal_rows` as a table ("converged" as passed/ran)."""
    return table([{"k": r["k"], **{f"{n}: {q}": (f"{r[f'{n}: converged']}/{r['runs']}"
                                                 if q == "converged" else r[f"{n}: {q}"])
                                   for n in ("real", "complex") for q in ("median eps", "converged")}}
                  for r in diagonal_rows(res, gate)])


def diagonal_summary(res: dict[str, np.ndarray], gate: float, d_hat: int) -> dict:
    """E2, above the line (k > 2 d_hat): per k the complex students' median eps_q, whether it
    falls as k grows, and how many real and complex runs passed the loss gate."""
    above = [r for r in diagonal_rows(res, gate) if r["k"] > 2 * d_hat]
    med = {r["k"]: r["complex: median eps"] for r in above}
    finite = [v for v in med.values() if not math.isnan(v)]
    return {"complex_median": med, "complex_monotone": all(b <= a for a, b in zip(finite, finite[1:])),
            "real_converged": sum(r["real: converged"] for r in above),
            "complex_converged": sum(r["complex: converged"] for r in above),
            "runs_above": sum(r["runs"] for r in above)}


def settings_table(S: Settings, profile: str):
    """The settings of this run (all our choices), for the chapter's opening: one short row each,
    one row per teacher."""
    rows = [{"setting": "student sizes d", "value": ", ".join(map(str, S.ds))}]
    for dh, (lam, w, ks) in S.teachers.items():
        rows.append({"setting": f"teacher d_hat = {dh}: eigs; weights; k; steps",
                     "value": f"{', '.join(f'{x:g}' for x in lam)}; {', '.join(f'{x:g}' for x in w)}; "
                              f"{_span(ks)}; {_budget(S, dh, profile)}"})
    rows += [
        {"setting": "seeds per (d_hat, k, variant)", "value": S.n_seeds},
        {"setting": "init scale sigma; step size", "value": f"{S.init_scale:g}; {S.lr:g}"},
        {"setting": "runs frozen once", "value": f"L < {FREEZE_LOSS:g}, or stalled (L down by < "
                                                  f"{STALL_DROP:.0%} in {STALL_WINDOW:,} steps)"},
        {"setting": "horizon q of eps_q", "value": S.horizon_q},
        {"setting": "loss gate; eps tolerance above 2 d_hat", "value": f"{S.gate:g}; {S.tol:g}"},
        {"setting": "F5 init scales", "value": ", ".join(f"{x:g}" for x in S.scales)},
        {"setting": "GRU: hidden size H; Adam steps; batch", "value": f"{S.gru_hidden}; {S.gru_steps}; {S.gru_batch}"},
        {"setting": "GRU: k values; seeds per k", "value": f"{_span(S.gru_ks)}; {S.gru_seeds}"},
    ]
    return table(rows)


def survey_margins(path: Path):
    """The headline values of a committed seed survey (:func:`rnnbook.claims.survey`), one row per
    variation, each column headed by its thresholds: for C1 and C2 the worst converged median
    eps_q above the line and the best below it, C3's worst error over its round-off bound, C5's
    slope, and C8's error ratio and beyond-window error at the largest k (quick thresholds); where
    the survey has them, C6's worst other seed's c over the fitted c and the control's, and C12's
    largest median Hankel rank, smallest tail share of the learned students and largest of the
    control's."""
    def sides(value: dict) -> str:
        above, below = [], []
        for key, v in value.items():
            dh = int(key.split(",")[0].split("=")[1])
            for k, e in ((int(k), e) for k, e in v["median_eps"].items() if not isinstance(e, str)):
                if k > 2 * dh:
                    above.append(e)
                elif 2 <= k < 2 * dh:
                    below.append(e)
        return f"{max(above):.3f} | " + (f"{min(below):.2f}" if below else "—")
    rows = []
    for name, v in claims.survey_values(path).items():
        rows.append({"run": name, "C1 (≤ 0.05 | ≥ 0.1)": sides(v["C1"]), "C2 (≤ 0.05 | ≥ 0.1)": sides(v["C2"]),
                     "C3 (≤ 1)": f"{max(x['worst error / bound'] for x in v['C3'].values()):.3f}",
                     "C5 (≥ 1.5)": f"{v['C5']['slope']:.2f}",
                     "C8 (≤ 0.6 | ≤ 0.6)": f"{v['C8']['ratio_large']:.2f} | {v['C8']['beyond_large']:.2f}"})
        bound = v["C6"].get("across runs (judged)") if isinstance(v["C6"], dict) else None
        if bound:  # surveys made since C6's across-run rule and C12 (issue 43)
            rows[-1]["C6 (≤ 2 | > 2)"] = f"{bound['worst c / fitted c']:.2f} | {bound['below / fitted c']:.2g}"
        if "C12" in v:
            groups = [g for key, g in v["C12"].items() if isinstance(g, dict)]
            main = [g["tail share"] for key, g in v["C12"].items() if isinstance(g, dict) and "short" not in key]
            ctrl = [g["tail share"] for key, g in v["C12"].items() if isinstance(g, dict) and "short" in key]
            rows[-1]["C12 rank; tail (≥ 0.1 | < 0.1)"] = (
                f"{max(g['Hankel rank'] for g in groups):g}; {min(main):.2f} | {max(ctrl):.1e}")
    return table(rows)


def _budget(S: Settings, d_hat: int, profile: str) -> str:
    """The step budget of a teacher's runs (as 1.5e5), with F2's (non-symmetric students) where it
    differs."""
    sym, nonsym = (f"{S.steps_for(d_hat, profile, v):.2g}".replace("e+0", "e").replace("e+", "e")
                   for v in ("sym_bal", "nonsym"))
    return sym if sym == nonsym else f"{sym} (F2: {nonsym})"


def _span(ks: Sequence[int]) -> str:
    """k values, a run of consecutive integers written as 'a..b'."""
    ks = list(ks)
    if len(ks) > 2 and ks == list(range(ks[0], ks[-1] + 1)):
        return f"{ks[0]}..{ks[-1]}"
    return ", ".join(map(str, ks))


def transition_margins(rows: Sequence[dict], S: Settings, groups: Sequence[tuple[int, int]] | None = None
                       ) -> dict[str, float]:
    """C1/C2 (C10 with ``groups``) margins over every (d_hat, d) of ``groups`` (default: the
    chapter's teachers and sizes): the worst converged median eps_q above the line, the best below
    it (2 <= k < 2 d_hat, as (a) is judged), the largest at k = 2 d_hat, and that largest per d_hat
    (over d; nan where no run converged)."""
    above, below, at = [], [], {}
    for dh, d in groups or [(dh, d) for dh in S.teachers for d in S.ds]:
        med = transition_check(select(rows, d_hat=dh, d=d), dh, S.gate, S.tol)["median_eps"]
        above += [v for k, v in med.items() if k >= 2 * dh + 1 and not math.isnan(v)]
        below += [v for k, v in med.items() if 2 <= k < 2 * dh and not math.isnan(v)]
        at.setdefault(dh, []).extend(v for k, v in med.items() if k == 2 * dh and not math.isnan(v))
    at_by = {dh: max(v, default=math.nan) for dh, v in at.items()}
    return {"worst_above": max(above, default=math.nan), "best_below": min(below, default=math.nan),
            "at_line_by_d_hat": at_by}


def by_d_hat(values: dict[int, float]) -> str:
    """Values per d_hat as prose: '0.08 (d\u0302 = 1) and 0.04 (d\u0302 = 2)'."""
    parts = [f"{v:.3g} (d\u0302 = {dh})" for dh, v in values.items()]
    return " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else "".join(parts)


def scale_table(rows: Sequence[dict], scales: Sequence[float], gate: float):
    """F5/C5: per init scale, the median imbalance, median eps_q, largest final loss and how many
    runs passed the loss gate."""
    out = []
    for s in sorted(scales, reverse=True):
        sub = [r for r in rows if r["init_scale"] == s]
        out.append({"sigma": s,
                    "median imbalance": float(np.median([np.linalg.norm(r["B"] - r["C"]) / np.linalg.norm(r["B"]) for r in sub])),
                    "median eps_q": float(np.median([r["eps"] for r in sub])),
                    "largest final L": max(r["loss"] for r in sub),
                    "converged": f"{sum(converged(r, gate) for r in sub)}/{len(sub)}"})
    return table(out)
