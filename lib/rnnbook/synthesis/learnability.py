"""Synthesis chapter, section S4: Proca et al.'s learnability meets Cohen-Karlik et al.'s teachers.

With scalar input and output, Cohen-Karlik et al.'s (ICLR 2023) population loss over length k,
:math:`L=\\sum_{j<k}(h_j-\\hat h_j)^2` with :math:`h_j=CA^jB` (eq. ex-loss), is, for a student of
state dimension d = 1 (A = b, B = a, C = c), Proca et al.'s (ICML 2025) energy (eq. 8, ld-energy)
with T = k and temporal singular values :math:`s_i=\\hat h_{T-i}`, i = 1..T, times :math:`2\\tau`:
:math:`L=2\\tau E`. GD on L at rate η is then GD on E (τ = 1) at rate 2η. A one-mode teacher
:math:`\\hat h_j=\\hat w\\hat\\lambda^j` is Proca's inverse-exponential task
:math:`s_i=\\delta\\lambda^{T-i}` with :math:`(\\delta,\\lambda)=(\\hat w,\\hat\\lambda)` and zero-loss
solution :math:`(b, ac)=(\\hat\\lambda,\\hat w)` (ld-solutions); a two-mode teacher is a sum of two,
which no single exponential fits: Proca's minimum energy (C2) is the floor of a d = 1 student, and
Cohen-Karlik's wider students (d >= 2, several modes on one input and output direction: Proca's
alignment A3 broken) go below it.

This module checks the mapping on random points, trains every student (one-mode teachers with
d = 1; the two-mode teacher with d = 1, 2, 3; several seeds) in ONE call of the extrapolation
chapter's trainer, reruns the d = 1 students with the learning-dynamics chapter's ``mode_gd`` and
compares paths, zero-loss solutions, the logistic's learning time (eq. 47, ld-logistic) and the
floor (``min_energy``). Every formula is called from the two chapters' packages.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch
from scipy.optimize import least_squares

from rnnbook import params
from rnnbook.extrapolation import theory as ex
from rnnbook.extrapolation.theory import TEACHERS
from rnnbook.extrapolation.train import INIT_SCALE, LR, RunConfig, init_student, run_seed, train_students
from rnnbook.learning_dynamics import theory as ld

PIECES = ("S4",)  # the results-cache piece the chapter computes with train(): rnnbook.paths.PIECES

NORM = 2.0  # L = 2 tau E (tau = 1): the normalisation between the two losses
CONVENTIONS = ("T-i", "i-1")  # s_i = h_{T-i} (ours, derived) and a wrong one (a test)


@dataclass(frozen=True)
class Settings:
    """S4's sizes. ``ks``: training lengths k = T; ``one_mode``: one-mode teachers (λ̂, ŵ)
    (the extrapolation chapter's default and the learning-dynamics chapter's F1 tasks); the two-mode
    teacher is the extrapolation chapter's d̂ = 2 default; ``ds``: student sizes on it; ``steps_*``:
    GD budgets (one-mode runs, the d = 1 floor, the wider students); ``dense``: checkpoint spacing
    of the one-mode phase; tolerances: ``tol_round`` (round-off, relative), ``tol_solution``
    (zero-loss solution), ``tol_time`` (learning time, relative), ``tol_floor`` (floor, relative),
    ``gate`` (a wider student's 'zero' loss, the extrapolation chapter's quick gate)."""

    ks: tuple[int, ...]
    n_seeds: int
    steps_one: int
    steps_floor: int
    steps_wide: int
    one_mode: tuple[tuple[float, float], ...] = ((1.0, 1.0), (0.5, 1.1), (1.1, 0.5))
    two_mode: tuple[tuple[float, ...], tuple[float, ...]] = TEACHERS[2]
    ds: tuple[int, ...] = (1, 2, 3)
    init_scale: float = INIT_SCALE
    lr: float = LR
    horizon_q: int = 20
    dense: int = 5
    n_points: int = 64
    tol_round: float = 1e-12
    tol_solution: float = 1e-4
    tol_time: float = 0.15
    tol_floor: float = 1e-12
    gate: float = 1e-6

    def __post_init__(self):
        for k in self.ks:
            params.integer("ks", k, lo=2 * len(self.two_mode[0]) + 1)  # k > 2 d_hat (Cohen-Karlik)
        if 1 not in self.ds or max(self.ds) < len(self.two_mode[0]):
            raise params.ParameterError("ds", self.ds, "sizes including 1 and one >= d_hat = 2")
        for name in ("n_seeds", "steps_one", "steps_floor", "steps_wide", "dense", "n_points"):
            params.integer(name, getattr(self, name), lo=1)
        params.integer("horizon_q", self.horizon_q, lo=max(self.ks))
        for lam, w in self.one_mode:
            params.real("one_mode weight", w, lo=0, lo_open=True)
        params.real("lr", self.lr, lo=0, lo_open=True)
        params.real("init_scale", self.init_scale, lo=0, lo_open=True)


def settings(profile: str, smoke: bool = False) -> Settings:
    """S4's settings ("quick": k = 5 = 2 d̂ + 1, four seeds, the extrapolation chapter's σ and η,
    seconds on one CPU thread; "full": k = 5, 7, 10, ten seeds, longer budgets); ``smoke``: the full
    profile's code at toy sizes."""
    params.choice("profile", profile, params.PROFILES)
    if params.smoke(smoke, profile):
        return Settings(ks=(5, 7), n_seeds=1, steps_one=200, steps_floor=300, steps_wide=300,
                        dense=20, n_points=8)
    if profile == "quick":
        return Settings(ks=(5,), n_seeds=4, steps_one=2000, steps_floor=20_000, steps_wide=50_000)
    return Settings(ks=(5, 7, 10), n_seeds=10, steps_one=10_000, steps_floor=40_000,
                    steps_wide=200_000)


def config(S: Settings, seed: int) -> dict:
    """The results cache's key of :func:`train`."""
    return {**asdict(S), "seed": seed}


# ----------------------------------------------------------------------------- the mapping
def singular_values(h_hat: np.ndarray, convention: str = "T-i") -> np.ndarray:
    """Proca's temporal singular values from Cohen-Karlik's taps over T = k: eq. ld-rnn's
    :math:`\\hat y_T=\\sum_{i=1}^T s_i x_i` against :math:`y_k=\\sum_{j<k}\\hat h_jx_{k-1-j}` gives the
    lag :math:`j=T-i`, so :math:`s_i=\\hat h_{T-i}` (``"T-i"``); ``"i-1"`` (a test) is the wrong
    reading :math:`s_i=\\hat h_{i-1}`."""
    params.choice("convention", convention, CONVENTIONS)
    return np.ascontiguousarray(h_hat[..., ::-1] if convention == "T-i" else h_hat)


def mode_task(lam, w, k: int, convention: str = "T-i") -> np.ndarray:
    """s_i (i = 1..k) of a balanced diagonal teacher :math:`\\hat h_j=\\sum_m\\hat w_m\\hat\\lambda_m^j`
    (Cohen-Karlik §3, ``teacher_impulse``): a sum of Proca's inverse-exponential tasks (§3.3, Table A1)."""
    return singular_values(ex.teacher_impulse(lam, w, k).numpy(), convention)


def _random_points(seed: int, n: int):
    """Random d = 1 students (a, b, c), teachers with d̂ = 1 or 2 and lengths k for
    :func:`mapping_check`."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.rand(*s, generator=g, dtype=ex.DTYPE).numpy()  # noqa: E731
    a, c = (2 * r(n) - 1 for _ in range(2))
    b = 2.4 * r(n) - 1.2
    ks = 1 + (10 * r(n)).astype(int)
    teachers = [(tuple(2.4 * r(m) - 1.2), tuple(r(m))) for m in 1 + (2 * r(n)).astype(int)]
    return a, b, c, ks, teachers


def mapping_check(S: Settings, seed: int, convention: str = "T-i", norm: float = NORM) -> dict:
    """S4a (i): on random points, Cohen-Karlik's loss and closed-form gradient (eqs. ex-loss,
    ex-grad; ``population_loss``, ``loss_and_grads``) of the d = 1 student (A, B, C) = (b, a, c)
    against ``norm`` times Proca's energy and gradient (eqs. 5-8; ``energy``, ``mode_grads``) with
    :math:`s_i=\\hat h_{T-i}`: per quantity, the largest difference over the largest value.
    ``convention``/``norm`` (tests) give the wrong mapping, which must fail."""
    a, b, c, ks, teachers = _random_points(seed, S.n_points)
    K = int(ks.max())
    h_hat = np.stack([ex.teacher_impulse(lam, w, K).numpy() for lam, w in teachers])
    A, B, C = b[:, None, None], a[:, None], c[:, None]
    At, Bt, Ct, h_hat_t = (torch.from_numpy(x) for x in (A, B, C, h_hat))
    L_pop = ex.population_loss(ex.impulse_response(At, Bt, Ct, K), h_hat_t, torch.from_numpy(ks)).numpy()
    L, G_A, G_B, G_C = (x.numpy() for x in ex.loss_and_grads(At, Bt, Ct, h_hat_t, ks))
    s, kexp, m = ld.pad([singular_values(h_hat[r, :ks[r]], convention) for r in range(len(ks))])
    E, dEa, dEb, dEc = ld.mode_grads(a, b, c, s, kexp, m)
    rel = lambda x, y: float(np.max(np.abs(x - norm * y)) / np.max(np.abs(x)))  # noqa: E731
    out = {"L = 2E (population_loss)": rel(L_pop, E), "L = 2E (loss_and_grads)": rel(L, E),
           "dL/dA = 2 dE/db": rel(G_A[:, 0, 0], dEb), "dL/dB = 2 dE/da": rel(G_B[:, 0], dEa),
           "dL/dC = 2 dE/dc": rel(G_C[:, 0], dEc)}
    return {**out, "max": max(out.values()), "passed": bool(max(out.values()) <= S.tol_round)}


# ----------------------------------------------------------------------------- the runs
def configs(S: Settings, seed: int) -> list[RunConfig]:
    """Every S4 student as one of the extrapolation chapter's runs (balanced: symmetric A,
    B = C^T at init, its σ and η): d = 1 on each one-mode teacher, d in ``S.ds`` on the two-mode
    teacher, for each k and seed (a stable per-run seed). A one-mode run's η is lowered where the
    learning-dynamics chapter's ``stable_lr`` asks (GD's stability limit at the solution; never at
    k = 5, where it changes nothing)."""
    ck = tuple(sorted(set(range(0, S.steps_one + 1, S.dense)) | {S.steps_floor, S.steps_wide} | set(
        np.unique(np.geomspace(1, S.steps_wide, 80).astype(int)).tolist())))  # dense, then log
    out = []
    for k in S.ks:
        for i in range(S.n_seeds):
            for lam, w in S.one_mode:  # the LD chapter's rate rule at Proca's solution (b, u) = (λ̂, ŵ)
                lr = ld.stable_lr(NORM * S.lr, k, lam, w) / NORM
                out.append(RunConfig("S4", 1, (lam,), (w,), k, "sym_bal", S.init_scale, lr,
                                     S.steps_one, run_seed("S4", seed, k, i, lam, w), S.horizon_q, ck))
            for d in S.ds:
                out.append(RunConfig("S4", d, *S.two_mode, k, "sym_bal", S.init_scale, S.lr,
                                     S.steps_floor if d == 1 else S.steps_wide,
                                     run_seed("S4", seed, k, i, d), S.horizon_q, ck))
    return out


def padded_init(cfgs: list[RunConfig]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each run's near-zero init (``init_student``, Cohen-Karlik §3) zero-padded to the largest d:
    the padded coordinates have zero gradient (eq. ex-grad: :math:`u_m, v_n` vanish there), so a
    padded student is exactly its d-dimensional self and all sizes train in one batch."""
    D, R = max(c.d for c in cfgs), len(cfgs)
    A, B, C = np.zeros((R, D, D)), np.zeros((R, D)), np.zeros((R, D))
    for r, c in enumerate(cfgs):
        A0, B0, C0 = (x.numpy() for x in init_student(c))
        A[r, :c.d, :c.d], B[r, :c.d], C[r, :c.d] = A0, B0, C0
    return A, B, C


def mode_runs(cfgs: list[RunConfig], init, ck: np.ndarray, stops: np.ndarray,
              rate: float = NORM) -> dict[str, np.ndarray]:
    """The d = 1 students again, by Proca's GD on the modes (``mode_gd``, the Euler step of eqs.
    5-7) on the mapped energy, from the same init (a, b, c) = (B, A, C), at ``rate`` x the
    extrapolation chapter's η (2: the normalisation L = 2E), all runs in one batched program, run
    in segments between the checkpoints ``ck`` and each run's stop (``stops``): 2E at ``ck``,
    (a, b, c) at ``ck`` and each run's (a, b, c) at its stop."""
    A, B, C = init
    s, kexp, m = ld.pad([mode_task(c.lam, c.w, c.k) for c in cfgs])
    lr = rate * np.array([c.lr for c in cfgs])
    z = {"a": B[:, 0].copy(), "b": A[:, 0, 0].copy(), "c": C[:, 0].copy()}
    marks = np.union1d(ck[ck <= stops.max()], stops)
    rec, final, t = {n: [] for n in ("L", "a", "b", "c")}, {n: np.zeros(len(cfgs)) for n in z}, 0
    for t_next in marks:
        z = {n: v for n, v in ld.mode_gd(*z.values(), s, kexp, m, lr=lr, steps=int(t_next - t)).items()
             if n in z}
        t = t_next
        if t in ck:
            for n in z:
                rec[n].append(z[n])
            rec["L"].append(NORM * ld.energy(*z.values(), s, kexp, m))
        for n in z:
            final[n] = np.where(stops == t, z[n], final[n])
    out = {f"ld_{n}": np.full((len(cfgs), len(ck)), math.nan) for n in rec}
    for n, v in rec.items():
        out[f"ld_{n}"][:, :len(v)] = np.array(v).T
    return {**out, **{f"ld_{n}_final": v for n, v in final.items()}}


def train(S: Settings, seed: int, rate: float = NORM, device: str | torch.device = "cpu"
          ) -> dict[str, np.ndarray]:
    """All S4 students in ONE call of the extrapolation trainer (``train_students`` with a padded
    ``init``, on ``device``), and its d = 1 students in one NumPy program of ``mode_gd`` (``rate``:
    see :func:`mode_runs`). Returns plain arrays (the results cache's format)."""
    cfgs = configs(S, seed)
    init = padded_init(cfgs)
    res = train_students(cfgs, init=init, device=device)
    ck = np.array(sorted({t for c in cfgs for t in c.checkpoints}))
    ck_loss = np.full((len(cfgs), len(ck)), math.nan)
    for r, o in enumerate(res):
        ck_loss[r, np.searchsorted(ck, o["ck_steps"])] = o["ck_loss"]
    one = np.array([c.d == 1 for c in cfgs])
    steps_run = np.array([o["steps_run"] for o in res])
    modes = mode_runs([c for c, o in zip(cfgs, one) if o], tuple(x[one] for x in init), ck,
                      steps_run[one], rate)
    pad = lambda v: np.pad(np.asarray(v, float), (0, 2 - len(v)))  # noqa: E731
    return {"d": np.array([c.d for c in cfgs]), "d_hat": np.array([c.d_hat for c in cfgs]),
            "k": np.array([c.k for c in cfgs]), "lam": np.stack([pad(c.lam) for c in cfgs]),
            "w": np.stack([pad(c.w) for c in cfgs]), "lr": np.array([c.lr for c in cfgs]),
            "A0": init[0], "B0": init[1], "C0": init[2],
            **{x: np.stack([o[x] for o in res]) for x in ("A", "B", "C", "h", "loss", "eps", "stalled")},
            "steps_run": steps_run, "ck_steps": ck, "ck_loss": ck_loss, "one": one, **modes,
            "h_hat": np.stack([ex.teacher_impulse(c.lam, c.w, S.horizon_q).numpy() for c in cfgs])}


# ----------------------------------------------------------------------------- the checks
def _rows(res: dict, d: int, d_hat: int) -> np.ndarray:
    """Indices of the runs with student size d and teacher size d_hat."""
    return np.flatnonzero((res["d"] == d) & (res["d_hat"] == d_hat))


def _task(res: dict, r: int) -> np.ndarray:
    """Run r's s_i (i = 1..k)."""
    m = res["w"][r] > 0
    return mode_task(tuple(res["lam"][r][m]), tuple(res["w"][r][m]), int(res["k"][r]))


def path_check(res: dict, S: Settings) -> dict:
    """S4a (ii): the d = 1 students of both trainers, at every checkpoint up to each run's stop:
    largest :math:`|L_{CK}-2E_{P}|/L_{CK}(0)`, and the largest difference of the final
    (A, B, C) against Proca's (b, a, c) at the same step."""
    one = res["one"]
    live = res["ck_steps"][None, :] <= res["steps_run"][one][:, None]
    L = res["ck_loss"][one]
    dL = np.where(live, np.abs(L - res["ld_L"]), 0).max(1) / L[:, 0]
    dz = np.max(np.abs(np.stack([res["A"][one][:, 0, 0] - res["ld_b_final"], res["B"][one][:, 0]
                                 - res["ld_a_final"], res["C"][one][:, 0] - res["ld_c_final"]])), 0)
    worst = max(float(dL.max()), float(dz.max()))
    return {"loss path": float(dL.max()), "final (A, B, C)": float(dz.max()), "max": worst,
            "passed": bool(worst <= S.tol_round)}


def solution_check(res: dict, S: Settings) -> dict:
    """S4a (iii): the trained one-mode students (extrapolation trainer) against Proca's zero-loss
    solution of the inverse-exponential task (ld-solutions: :math:`(b, ac)=(\\lambda,\\delta)`),
    i.e. :math:`(A, CB)\\to(\\hat\\lambda,\\hat w)`: largest relative error; and their largest
    extrapolation error :math:`\\epsilon_q` (eq. ex-eps) at the horizon q."""
    r = _rows(res, 1, 1)
    b, u = ld.zero_loss_solution("inv_exp", res["k"][r], res["w"][r, 0], res["lam"][r, 0])
    err = np.maximum(np.abs(res["A"][r, 0, 0] / b - 1),
                     np.abs(res["B"][r, 0] * res["C"][r, 0] / u - 1))
    return {"per run": err, "max": float(err.max()), "max eps_q": float(res["eps"][r].max()),
            "passed": bool(err.max() <= S.tol_solution)}


def _crossing(t: np.ndarray, x: np.ndarray, level: float) -> float:
    """First time at which x reaches ``level`` (linear interpolation between samples; nan if never)."""
    i = np.flatnonzero(x >= level)
    if not len(i) or i[0] == 0:
        return math.nan
    j = i[0]
    return float(t[j - 1] + (level - x[j - 1]) * (t[j] - t[j - 1]) / (x[j] - x[j - 1]))


def learning_time(res: dict, S: Settings, frozen: str = "init", rate: float = NORM) -> dict:
    """S4a (iv): steps until u = ac reaches half the fixed point :math:`u^*=S_1/S_2` of eq. 47
    (ld-logistic; ``logistic_u``, :math:`u^*` from ``profile_energy``), predicted with b frozen at its
    initial value (``frozen="init"``) from :math:`u_0=B_0C_0`, :math:`t/\\tau=` ``rate`` ηn, and
    measured on the common GD path (both trainers' d = 1 students) at the dense checkpoints.
    ``frozen="target"`` freezes b at :math:`\\hat\\lambda` instead (the learning-dynamics chapter's
    F1 reading), reported beside it; as the prediction (a test) it must fail."""
    params.choice("frozen", frozen, ("init", "target"))
    one, ck = np.flatnonzero(res["one"]), res["ck_steps"]
    dense = ck <= S.steps_one
    rows = []
    for i in _rows(res, 1, 1):
        s, b0, u0 = _task(res, i), res["A0"][i, 0, 0], res["B0"][i, 0] * res["C0"][i, 0]
        u_half = ld.profile_energy(np.array([b0]), s)[1] / 2
        t = rate * res["lr"][i] * ck[dense]
        pred = {name: _crossing(ck[dense], ld.logistic_u(t, s, b, u0), u_half)
                for name, b in (("init", b0), ("target", res["lam"][i, 0]))}
        j = int(np.flatnonzero(one == i)[0])
        meas = _crossing(ck[dense], (res["ld_a"][j] * res["ld_c"][j])[dense], u_half)
        rows.append({"lam_hat": res["lam"][i, 0], "w_hat": res["w"][i, 0], "k": int(res["k"][i]),
                     "b0": b0, "u0": u0, "predicted (b = b0)": pred["init"],
                     "predicted (b = lam_hat)": pred["target"], "measured": meas,
                     "rel. error": meas / pred[frozen] - 1,
                     "rel. error (b = lam_hat)": meas / pred["target"] - 1})
    err, alt = (np.abs([x[key] for x in rows]) for key in ("rel. error", "rel. error (b = lam_hat)"))
    worst = float(np.max(err)) if np.isfinite(err).all() else math.inf
    return {"rows": rows, "max": worst, "median": float(np.median(err)),
            "min |rel. error (b = lam_hat)|": float(np.min(alt)), "passed": bool(worst <= S.tol_time)}


def profile_minima(s: np.ndarray, B: float = 3.0, n: int = 6001) -> list[tuple[float, float]]:
    """Local minima (b, E*) of Proca's profile energy :math:`E^*(b)` (u minimised, ``profile_energy``)
    on a b-grid of [-B, B] (``min_energy``'s grid): where GD from near zero may stop."""
    b = np.linspace(-B, B, n)
    E = ld.profile_energy(b[:, None], s[None, :])[0]
    i = np.flatnonzero((E[1:-1] < E[:-2]) & (E[1:-1] < E[2:])) + 1
    return [(float(b[j]), float(E[j])) for j in i]


def nearest_minimum(s: np.ndarray, b: float, u: float) -> tuple[float, float]:
    """The minimum of Proca's one-mode energy (eq. ld-energy, τ = 1) nearest a point (b, u): Levenberg-
    Marquardt on the residuals :math:`s_i - u\\,b^{T-i}` from there (as ``min_energy`` polishes its
    global minimum). Returns (E, b) at that minimum."""
    k = ld.powers(len(s))
    fit = least_squares(lambda p: s - p[1] * p[0] ** k, [b, u], xtol=1e-15, ftol=1e-15, gtol=1e-15, method="lm")
    return 0.5 * float((fit.fun ** 2).sum()), float(fit.x[0])


def floor_check(res: dict, S: Settings) -> dict:
    """S4b: on the two-mode teacher, per k: Proca's minimum energy (C2, ``min_energy``: the best single
    exponential, the floor) times 2; each d = 1 student's final loss against 2E at the minimum of the
    energy nearest its weights (:func:`nearest_minimum`; relative), which is the floor's b* or
    :math:`E^*(b)`'s other local minimum, depending on the basin its start lies in; and the median
    final loss of each wider d against the gate (zero loss) and the floor."""
    out, at_min, below = [], True, True
    for k in S.ks:
        r1 = [i for i in _rows(res, 1, 2) if res["k"][i] == k]
        s = _task(res, r1[0])
        E, b = ld.min_energy(s)
        u = float(ld.profile_energy(np.array([b]), s)[1])  # u* = S_1 / S_2 at b*
        near = [nearest_minimum(s, res["A"][i, 0, 0], res["B"][i, 0] * res["C"][i, 0]) for i in r1]
        min_err = np.abs(res["loss"][r1] / (NORM * np.array([e for e, _ in near])) - 1)
        at_floor = [abs(bm - b) <= 1e-6 for _, bm in near]
        row = {"k": k, "2E* (Proca floor)": NORM * E, "b*": b, "u*": u,
               "max |L_d=1 / 2E_min - 1|": float(min_err.max()),
               "min L_d=1 / 2E*": float(np.min(res["loss"][r1]) / (NORM * E)),
               "d=1 at b* (of n)": (int(sum(at_floor)), len(r1)),
               "eps_q d=1 (median)": float(np.median(res["eps"][r1])), "local minima (b, 2E)":
                   [(bb, NORM * e) for bb, e in profile_minima(s)]}
        at_min &= row["max |L_d=1 / 2E_min - 1|"] <= S.tol_floor and row["min L_d=1 / 2E*"] >= 1 - S.tol_floor
        for d in S.ds[1:]:
            rd = [i for i in _rows(res, d, 2) if res["k"][i] == k]
            row[f"median L d={d}"] = float(np.median(res["loss"][rd]))
            row[f"median eps_q d={d}"] = float(np.median(res["eps"][rd]))
            below &= row[f"median L d={d}"] <= S.gate
        out.append(row)
    return {"rows": out, "d=1 at a minimum": bool(at_min), "wider below": bool(below),
            "passed": bool(at_min and below)}


def check(res: dict, S: Settings, seed: int) -> dict:
    """Both claims: S4a (mapping, paths, zero-loss solution, learning time) and S4b (the floor).
    S4a is "inconclusive" when the mapping or the two trainers' identity fails (the bridge between
    the papers broke), "conflict" when GD misses Proca's solution, "partly" when only the half time
    misses; S4b is "partly" when only the wider students miss the gate, "conflict" otherwise."""
    parts = {"mapping": mapping_check(S, seed), "path": path_check(res, S),
             "solution": solution_check(res, S), "time": learning_time(res, S)}
    floor = floor_check(res, S)
    bridge = parts["mapping"]["passed"] and parts["path"]["passed"]
    exact = bridge and parts["solution"]["passed"]
    s4a = ("agree" if exact and parts["time"]["passed"] else "partly" if exact else "conflict" if bridge
           else "inconclusive")
    s4b = "agree" if floor["passed"] else "partly" if floor["d=1 at a minimum"] else "conflict"
    return {**parts, "floor": floor, "s4a_passed": bool(exact and parts["time"]["passed"]),
            "s4a_verdict": s4a, "s4b_passed": floor["passed"], "s4b_verdict": s4b}
