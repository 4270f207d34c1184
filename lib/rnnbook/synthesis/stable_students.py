"""Synthesis chapter, section S2: extrapolation lives outside Miller & Hardt's stable regime.

Cohen-Karlik et al. (ICLR 2023) train linear students :math:`h_j = CA^jB` on the first k taps of a
teacher with :math:`\\hat\\lambda = 1` (memory that never decays) and find that they follow it to
the horizon q. Miller & Hardt (ICLR 2019) call a model stable when its state map contracts,
:math:`\\|A\\|_2 \\le \\lambda < 1`, and show it close to its truncation: started from 0 instead of
:math:`s`, a contraction is at most :math:`\\lambda^j\\|s\\|` away after j steps (the step behind
their Prop. 3, eq. sm-prop3), so an impulse gives :math:`|h_j| \\le \\|C\\|\\|B\\|\\lambda^j`. Against
:math:`|\\hat h_j|` that does not decay, the error :math:`|h_j - \\hat h_j| \\ge |\\hat h_j| -
\\|C\\|\\|B\\|\\lambda^j` passes any tolerance after a horizon :math:`t^*(\\lambda, \\tau)`.

This module trains the extrapolation chapter's balanced students with Miller & Hardt's projection
at several λ and without it, all in one batched call of
:func:`rnnbook.extrapolation.train.train_students` (its ``max_norm``), and checks that each
projected student stops following the teacher within :math:`t^*`, while the unconstrained one
follows to q.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from rnnbook import params
from rnnbook.extrapolation.theory import TEACHERS, teacher_impulse
from rnnbook.extrapolation.train import INIT_SCALE, LR, RunConfig, run_seed, train_students
from rnnbook.stable_models.constraints import spectral_norm

PIECES = ("S2",)  # the results-cache piece the chapter computes with train(): rnnbook.paths.PIECES


@dataclass(frozen=True)
class Settings:
    """S2's sizes (the extrapolation chapter's balanced students and teachers, Miller & Hardt's bounds)."""

    lams: tuple[float, ...]  # bounds λ of the projected students; an unconstrained one is added
    d_hats: tuple[int, ...]  # default teachers of the extrapolation chapter (λ̂ = 1), k = 2 d_hat + 3
    d: int  # student state dimension
    n_init: int  # students per (teacher, λ), stacked in the same call

    steps: int  # GD steps
    horizon_q: int  # the horizon q of eps_q
    tol: float  # the tolerance τ of eps_q (the extrapolation chapter's)
    init_scale: float = INIT_SCALE  # σ of the near-zero init (the chapter's)

    lr: float = LR  # step size (the chapter's)
    norm_tol: float = 1e-12  # relative round-off allowed on ||A||_2 <= λ

    def __post_init__(self):
        for lam in self.lams:
            if params.real("lams", lam, lo=0, hi=1, lo_open=True) == 1:
                raise params.ParameterError("lams", lam, "bounds 0 < lambda < 1 (stable students)")
        for dh in self.d_hats:
            params.choice("d_hats", dh, tuple(TEACHERS))
        params.integer("d", self.d, lo=2 * max(self.d_hats) + 4)  # overparameterized: d > k
        params.real("tol", self.tol, lo=0, hi=0.5, lo_open=True)
        params.integer("horizon_q", self.horizon_q, lo=2 * max(self.d_hats) + 4)
        params.integer("n_init", self.n_init, lo=1)
        params.integer("steps", self.steps, lo=1)


def settings(profile: str, smoke: bool = False) -> Settings:
    """S2's settings for ``profile`` ("quick": the extrapolation chapter's quick students, d = 20,
    q = 60, τ = 0.05, one teacher, 10^4 steps, seconds on one CPU thread; "full": its full horizon
    and tolerance, q = 100, τ = 0.01, two teachers, a finer λ grid, three students each, 2·10^5
    steps, minutes on one CPU thread); ``smoke``: the full profile's code at toy sizes."""
    params.choice("profile", profile, params.PROFILES)
    if params.smoke(smoke, profile):
        return Settings(lams=(0.9, 0.99), d_hats=(1, 2), d=12, n_init=2, steps=300, horizon_q=20,
                        tol=0.01)
    if profile == "quick":
        return Settings(lams=(0.9, 0.97, 0.99, 0.999), d_hats=(1,), d=20, n_init=1, steps=10_000,
                        horizon_q=60, tol=0.05)
    return Settings(lams=(0.8, 0.9, 0.95, 0.97, 0.99, 0.995, 0.999), d_hats=(1, 2), d=20, n_init=3,
                    steps=200_000, horizon_q=100, tol=0.01)


def config(S: Settings, seed: int) -> dict:
    """The results cache's key of :func:`train`."""
    return {**asdict(S), "seed": seed}


# ----------------------------------------------------------------------------- the bound
def impulse_bound(lam: float, cb: float, n: int) -> np.ndarray:
    """Miller & Hardt's contraction (ICLR 2019, §3.2, the step behind Prop. 3, eq. sm-prop3) for an
    impulse into a linear model with :math:`\\|A\\|_2 \\le \\lambda`:
    :math:`|h_j| = |CA^jB| \\le \\|C\\|\\|B\\|\\lambda^j`, j < n (``cb`` = :math:`\\|C\\|\\|B\\|`)."""
    return cb * lam ** np.arange(n)


def error_floor(h_hat: np.ndarray, lam: float, cb: float) -> np.ndarray:
    """The least error a λ-stable student can have at each tap: :math:`|h_j - \\hat h_j| \\ge
    |\\hat h_j| - \\|C\\|\\|B\\|\\lambda^j` (from :func:`impulse_bound`)."""
    return np.abs(h_hat) - impulse_bound(lam, cb, len(h_hat))


def bound_horizon(h_hat: np.ndarray, lam: float | None, cb: float, tol: float) -> int:
    """The truncation bound's horizon :math:`t^*`: the last tap j < q at which the error can still be
    within τ (normalised as :math:`\\epsilon_q`, Cohen-Karlik et al. Def. 2, eq. ex-eps), i.e.
    :math:`|\\hat h_j| - \\|C\\|\\|B\\|\\lambda^j \\le \\tau\\max|\\hat h|`; q - 1 if unconstrained
    (``lam`` None), -1 if no tap."""
    if lam is None:
        return len(h_hat) - 1
    ok = np.flatnonzero(error_floor(h_hat, lam, cb) <= tol * np.abs(h_hat).max())
    return int(ok[-1]) if len(ok) else -1


def reach(h: np.ndarray, h_hat: np.ndarray, tol: float) -> int:
    """The measured horizon: the last tap j < q with :math:`|h_j - \\hat h_j| \\le \\tau\\max|\\hat h|`
    (-1 if none), so that the student errs by more than τ at every later tap."""
    ok = np.flatnonzero(np.abs(h - h_hat) <= tol * np.abs(h_hat).max())
    return int(ok[-1]) if len(ok) else -1


def follow(h: np.ndarray, h_hat: np.ndarray, tol: float) -> int:
    """How far the student follows the teacher from the start: the last tap j with
    :math:`\\epsilon_{j+1} \\le \\tau` (Cohen-Karlik et al. Def. 2, eq. ex-eps, normalised by
    :math:`\\max_{j<q}|\\hat h_j|`), -1 if the first tap already misses."""
    miss = np.flatnonzero(np.abs(h - h_hat) > tol * np.abs(h_hat).max())
    return int(miss[0]) - 1 if len(miss) else len(h) - 1


def a_priori_horizon(h_hat: np.ndarray, lam: float, tol: float) -> int:
    """:func:`bound_horizon` before training, for a balanced student (:math:`C = B^\\top`, so that
    :math:`\\|C\\|\\|B\\| = \\|B\\|^2 = h_0`) that fits the first tap, :math:`h_0 \\le |\\hat h_0| + \\tau\\max|\\hat h|`:
    no such λ-stable student follows the teacher (:func:`follow`) past it (≈ 2τ/(1-λ) for
    :math:`\\hat h_j = 1`; capped at q - 1)."""
    return bound_horizon(h_hat, lam, abs(h_hat[0]) + tol * np.abs(h_hat).max(), tol)


def lambda_needed(h_hat: np.ndarray, tol: float) -> float:
    """The least :math:`\\|A\\|_2` of a balanced student that follows the teacher within τ at every tap
    j < q (from :func:`impulse_bound` with :math:`\\|C\\|\\|B\\| = h_0 \\le |\\hat h_0| + \\tau'`):
    :math:`\\max_{1 \\le j < q}((|\\hat h_j| - \\tau')_+/(|\\hat h_0| + \\tau'))^{1/j}`, :math:`\\tau' = \\tau\\max|\\hat h|`."""
    t = tol * np.abs(h_hat).max()
    j = np.arange(1, len(h_hat))
    return float(np.max((np.clip(np.abs(h_hat[1:]) - t, 0, None) / (abs(h_hat[0]) + t)) ** (1 / j)))


def saturated_fit(h_hat: np.ndarray, lam: float, k: int) -> float:
    """The best one-mode stable student at the boundary, :math:`h_j = w\\lambda^j`: the minimiser of
    Cohen-Karlik et al.'s population loss (eq. ex-loss) over w, :math:`w^* = \\sum_{j<k}\\hat h_j\\lambda^j /
    \\sum_{j<k}\\lambda^{2j}`. It attains :func:`impulse_bound` with :math:`\\|C\\|\\|B\\| = w^*`."""
    p = lam ** np.arange(k)
    return float(h_hat[:k] @ p / (p @ p))


# ----------------------------------------------------------------------------- the students
def student_configs(S: Settings, seed: int) -> tuple[list[RunConfig], list[float | None]]:
    """The extrapolation chapter's balanced students (Cohen-Karlik et al. §3: symmetric A, B = C^T,
    near-zero init) of every (teacher, λ, init), and their bounds λ (None: unconstrained)."""
    configs, bounds = [], []
    for dh in S.d_hats:
        lam_hat, w_hat = TEACHERS[dh]
        for lam in (*S.lams, None):
            for i in range(S.n_init):
                configs.append(RunConfig("S2", S.d, lam_hat, w_hat, 2 * dh + 3, "sym_bal", S.init_scale,
                                         S.lr, S.steps, run_seed(seed, "S2", dh, lam, i), S.horizon_q,
                                         (S.steps,)))
                bounds.append(lam)
    return configs, bounds


def train(S: Settings, seed: int, device: str | torch.device = "cpu") -> dict[str, np.ndarray]:
    """Train every student of :func:`student_configs` by (projected) full-batch GD on the population
    loss (Cohen-Karlik et al. eq. ex-loss), one batched call on ``device``; per run: teacher
    ``d_hat``, bound ``lam`` (nan: unconstrained), impulse responses ``h`` and ``h_hat`` (j < q),
    :math:`\\|A\\|_2`, :math:`\\|C\\|\\|B\\|`, loss, :math:`\\epsilon_q` and whether it diverged."""
    configs, bounds = student_configs(S, seed)
    out = train_students(configs, max_norm=bounds, device=device)
    A, B, C = (torch.from_numpy(np.stack([r[x] for r in out])) for x in "ABC")
    return {
        "d_hat": np.array([c.d_hat for c in configs]),
        "lam": np.array([math.nan if b is None else b for b in bounds]),
        "h": np.stack([r["h"] for r in out]),
        "h_hat": np.stack([teacher_impulse(c.lam, c.w, S.horizon_q).numpy() for c in configs]),
        "A_norm": spectral_norm(A).numpy(),
        "cb": (torch.linalg.vector_norm(B, dim=-1) * torch.linalg.vector_norm(C, dim=-1)).numpy(),
        "loss": np.array([r["loss"] for r in out]),
        "eps": np.array([r["eps"] for r in out]),
        "diverged": np.array([r["diverged"] for r in out]),
    }


def horizons(res: dict[str, np.ndarray], tol: float) -> dict[str, np.ndarray]:
    """Per run: the measured :func:`reach` and :func:`follow`, the bound's :func:`bound_horizon` with
    the student's own :math:`\\|C\\|\\|B\\|` and the :func:`a_priori_horizon` (q - 1 for
    unconstrained runs)."""
    lam = [None if math.isnan(x) else float(x) for x in res["lam"]]
    rows = zip(res["h"], res["h_hat"], lam, res["cb"])
    r, f, t, a = zip(*((reach(h, hh, tol), follow(h, hh, tol), bound_horizon(hh, lm, cb, tol),
                        len(hh) - 1 if lm is None else a_priori_horizon(hh, lm, tol))
                       for h, hh, lm, cb in rows))
    return {"reach": np.array(r), "follow": np.array(f), "t_star": np.array(t), "a_priori": np.array(a)}


def summary_rows(res: dict[str, np.ndarray], S: Settings) -> list[dict]:
    """S2's table: per teacher and bound λ (first student of each), :math:`\\|A\\|_2`,
    :math:`\\|C\\|\\|B\\|` against :func:`saturated_fit`'s :math:`w^*`, the horizons (a priori t°,
    the saturated fit's, t* with the student's own norms), the measured reach and follow, and eps_q."""
    hz, rows = horizons(res, S.tol), []
    for dh in S.d_hats:
        for lam in (*S.lams, None):
            r = int(np.flatnonzero((res["d_hat"] == dh) & (np.isnan(res["lam"]) if lam is None
                                                            else res["lam"] == lam))[0])
            w = math.nan if lam is None else saturated_fit(res["h_hat"][r], lam, 2 * dh + 3)
            pred = {"t° (a priori)": hz["a_priori"][r], "t* (w*)": bound_horizon(res["h_hat"][r], lam, w, S.tol),
                    "t* (own norms)": hz["t_star"][r]}
            rows.append({"d_hat": dh, "lambda": "none" if lam is None else lam,
                         "||A||_2 - 1": float(res["A_norm"][r] - 1), "||C|| ||B||": float(res["cb"][r]),
                         "w*": "–" if lam is None else w,
                         **{k: "–" if lam is None else int(v) for k, v in pred.items()},
                         "reach": int(hz["reach"][r]), "follow": int(hz["follow"][r]),
                         "eps_q": float(res["eps"][r])})
    return rows


# ----------------------------------------------------------------------------- the claim
def check(res: dict[str, np.ndarray], S: Settings) -> dict:
    """S2's rule: every projected student kept :math:`\\|A\\|_2 \\le \\lambda` (to ``norm_tol``), errs
    by more than τ at every tap after the bound's horizon (reach ≤ t*) and follows the teacher from
    the start no further than the a-priori horizon (follow ≤ t°); the unconstrained students
    (median over inits) follow to the chapter's horizon, :math:`\\epsilon_q \\le \\tau`. Also reports
    the slack t* - reach (how tight the bound is), the a-priori horizon and, against
    :func:`lambda_needed`, the unconstrained students' :math:`\\|A\\|_2`."""
    hz = horizons(res, S.tol)
    stable = ~np.isnan(res["lam"])
    norm_ok = bool(np.all(res["A_norm"][stable] <= res["lam"][stable] * (1 + S.norm_tol)))
    bound_ok = bool(np.all(hz["reach"][stable] <= hz["t_star"][stable]))
    prior_ok = bool(np.all(hz["follow"][stable] <= hz["a_priori"][stable]))
    per = {}
    for dh in S.d_hats:
        sel = res["d_hat"] == dh
        free = sel & ~stable
        row = {f"lambda={lam:g}": {
            "reach": int(hz["reach"][m].max()), "t*": int(hz["t_star"][m][np.argmax(hz["reach"][m])]),
            "max slack t*-reach": int((hz["t_star"][m] - hz["reach"][m]).max()),
            "follow": int(hz["follow"][m].max()), "a-priori horizon": int(hz["a_priori"][m].max()),
            "max ||A||_2/lambda - 1": float((res["A_norm"][m] / lam - 1).max())}
            for lam in S.lams for m in [sel & (res["lam"] == lam)]}
        row["unconstrained"] = {"median eps_q": float(np.median(res["eps"][free])),
                                "min reach": int(hz["reach"][free].min()),
                                "min ||A||_2": float(res["A_norm"][free].min()),
                                "lambda needed": lambda_needed(res["h_hat"][free][0], S.tol)}
        per[f"d_hat={dh}"] = row
    follow_ok = all(r["unconstrained"]["median eps_q"] <= S.tol for r in per.values())
    passed = norm_ok and bound_ok and prior_ok and follow_ok
    return {"teachers": per, "||A||_2 <= lambda": norm_ok, "reach <= t*": bound_ok,
            "follow <= a-priori horizon": prior_ok,
            "unconstrained eps_q <= tol": follow_ok, "passed": passed,
            "verdict": verdict(per, S, passed)}


def verdict(per: dict, S: Settings, passed: bool) -> str:
    """The claim's verdict (S2). Check passed: "conflict" when the grid has bounds with a margin
    wider than the horizon allows (λ < λ_needed of :func:`lambda_needed`) and no such projected
    student follows the teacher to q while the unconstrained ones do (Miller & Hardt's "stable is
    enough" fails on a λ̂ = 1 teacher for any fixed margin once q ≳ 2τ/(1-λ)); bounds above
    λ_needed may follow to q without changing it; "partly" when no bound of the grid tests that
    regime. Check failed: "inconclusive" when the unconstrained students did not follow to q (a
    budget to fix), "partly" otherwise (the bound or the projection failed)."""
    if not passed:
        free = all(r["unconstrained"]["median eps_q"] <= S.tol for r in per.values())
        return "partly" if free else "inconclusive"
    tight = [v for r in per.values() for k, v in r.items()
             if k != "unconstrained" and float(k.split("=")[1]) < r["unconstrained"]["lambda needed"]]
    return "conflict" if tight and all(v["reach"] < S.horizon_q - 1 for v in tight) else "partly"
