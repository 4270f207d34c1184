"""The learning-dynamics chapter's sections that compute, draw and check (Proca et al., ICML 2025).

Each function takes the chapter's :class:`rnnbook.Run`, computes (through the results cache), saves
the figure drawn by :mod:`rnnbook.learning_dynamics.plots` and returns what its claim checks: F1
(C1), F6 (C7) and the full profile's A5/A7 panels, F7 (C8), F8 (C9).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from rnnbook.learning_dynamics import experiments, plots
from rnnbook.learning_dynamics.experiments import f1_runs
from rnnbook.learning_dynamics.networks import (ntk_by_T, rate_sweep_check, runs_at, sensory_check,
                                                 train_sensory)

if TYPE_CHECKING:
    from rnnbook.learning_dynamics.experiments import Settings
    from rnnbook.run import Run


def f1_figure(run: Run, S: Settings) -> list[dict]:
    """F1 (§3.2, App. E, Fig. A1; C1, K2, K4): :func:`f1_runs` at each T of the profile (T = 7 is
    Fig. A1's, inferred from its ticks), at the rates of
    :meth:`Settings.f1_lr_steps`, through the results cache (``F1-T{T}``), and the figure.
    Returns the runs, one per T."""
    f1s = []
    for T in S.f1_Ts:
        lr, steps = S.f1_lr_steps(T)
        f1s.append(run.cache.cached(f"F1-T{T}", {"T": T, "init": S.init_scale, "lr": lr, "steps": steps},
                                    lambda: f1_runs(T, S.init_scale, lr, steps)))

    run.save_figure(plots.plot_f1(f1s), "F1",
                    f"Learning of $ac$ (left) and $b$ (right) on the inverse-exponential task, T = {', '.join(map(str, S.f1_Ts))}, "
                    f"from $a=b=c={S.init_scale:g}$, GD rate {S.f1_lr_steps(5)[0]:g} (times $(5/T)^2$). Solid: "
                    "GD with the other variable frozen at its target; dashed: theory (the logistic "
                    "{eq}`ld-logistic`, the Taylor $b$-flow); dotted: joint GD of all three modes.")
    return f1s


def f6_figure(run: Run, S: experiments.Settings) -> dict[str, np.ndarray]:
    """F6 / C7 (§3.5, Figs. 5, A6): the kernel distances of :func:`ntk_by_T` over the profile's T, σ
    and seeds, on the run's device, through the results cache (``F6``), and the figure; the full profile adds the panels
    of Figs. A5 and A7 (:func:`a5_a7_figure`). Returns the sweep."""
    Ts, sigmas, seeds = S.f6
    seeds = [s + run.seed for s in seeds]
    ntk = ntk_by_T(run.cache, "F6", Ts, sigmas, seeds, device=run.device, progress=run.progress)
    run.save_figure(plots.plot_f6(ntk), "F6",
                    f"Kernel distance {{eq}}`ld-ntk` after training against $T$ and the initial scale "
                    f"$\\sigma$, aligned (left) and unaligned (right) initialisation, mean over "
                    f"{len(seeds)} seed(s), on Fig. 5's grid" + (" and Fig. A6's larger $\\sigma$" if S.full else
                                                                   " (every other $\\sigma$)")
                    + "; white: at least one seed did not converge. Numbers: D."
                    + (" The aligned network with $\\sigma = 1$ starts at the solution ($a = b = c = 1$) and does "
                       "not move." if S.full else ""))
    if S.full:
        (Ts_a5, Ts_a7), sig = S.f6_appendix
        a5_a7_figure(run, Ts_a5, Ts_a7, sig, seeds, S.a5_hidden)
    return ntk


def a5_a7_figure(run: Run, Ts_a5: Sequence[int], Ts_a7: Sequence[int], sigmas: Sequence[float],
                 seeds: Sequence[int], N_h: int = 300) -> None:
    """F6, full profile (Figs. A5, A7, App. J): unaligned networks with ``N_h`` hidden units (the
    paper's 300), and aligned and unaligned networks with separate initial
    scales of W_h (σ_b) and of W_x, W_y (σ) at ``Ts_a7``, through the results cache (``F6-A5``,
    ``F6-A7``), in one figure, on the run's device."""
    wide = ntk_by_T(run.cache, "F6-A5", Ts_a5, sigmas, seeds, N_h=N_h, inits=("unaligned",),
                    device=run.device, progress=run.progress)
    sep = ntk_by_T(run.cache, "F6-A7", Ts_a7, sigmas, seeds, sigma_b=sigmas, device=run.device,
                   progress=run.progress)
    run.save_figure(plots.plot_f6_extra(wide, sep), "F6-A5-A7",
                    f"Kernel distance, full profile. Top left (Fig. A5): unaligned networks with $N_h = {N_h}$ "
                    f"hidden units{' (the paper: 300)' if N_h != 300 else ''} against $T$ and $\\sigma$. Other "
                    "panels (Fig. A7, titled by initialisation and T): initial $W_h$ at scale $\\sigma_b$ "
                    "(aligned: $b = \\sigma_b$) and $W_x$, $W_y$ at $\\sigma$ (aligned: $a = c = \\sigma$). "
                    "White: not converged.")


def f7_sensory(run: Run, S: experiments.Settings) -> dict[str, dict]:
    """F7 / C8 (§3.6, Fig. 6): the sum and mean networks of the sensory task (:func:`train_sensory`, the
    mean's rate T times the sum's), trained at Fig. 6's T = 4 on each input variant of
    :attr:`~rnnbook.learning_dynamics.experiments.Settings.f7_variants` (NeuroGym's uncentred inputs, as
    the paper, and our centred ones), with the loss over training at T = 4, 50, 75, 100 and the final
    relative MSE at T_test = 1..3T, on the CPU, through the results cache (``F7-<variant>``),
    one figure each. Returns :func:`sensory_check` per variant."""
    T = S.f7_T
    T_test = list(range(1, 3 * T + 1))
    seeds = [s + run.seed for s in S.sensory_seeds]
    c8 = {}
    for name, (baseline, N_h, lr, steps) in S.f7_variants.items():
        sens = run.cache.cached(f"F7-{name}", {"T": T, "seeds": seeds, "init": S.init_scale, "N_h": N_h,
                                               "T_test": T_test, "T_track": list(S.f7_track), "steps": steps,
                                               "lr": lr, "baseline": baseline},
                                lambda: train_sensory(["sum", "mean"], T, seeds, N_h=N_h, init_scale=S.init_scale,
                                                      steps=steps, T_test=T_test, T_track=S.f7_track,
                                                      lr={"sum": lr, "mean": lr * T}, baseline=baseline))
        inputs = "NeuroGym's inputs, baseline 0.5 (the paper's)" if baseline else "centred inputs (our variant)"
        run.save_figure(plots.plot_f7(sens), "F7" if name == "neurogym" else f"F7-{name}",
                        f"Sensory task ({inputs}), trained at T = {T} (Fig. 6's), $N_h$ = {N_h}, GD rate {lr:.3g} "
                        f"(sum; mean: T times it), {steps} steps, first seed: "
                        "singular values of $W_h$ (solid) and $W_yW_x$ (dashed) during GD, with the theory's 1 "
                        "and $1/T$ (dotted), for the sum (a) and mean (b) targets; (c) relative MSE during "
                        f"training at T = {', '.join(map(str, S.f7_track))} (Fig. 6's lengths; solid: sum, dashed: mean, "
                        "median over seeds); (d) relative MSE after training at other lengths $T_\\mathrm{test}$ "
                        "(ours; the training length is dashed).")
        c8[name] = sensory_check(sens)
    return c8


def f8_stability(run: Run, S: experiments.Settings) -> dict[str, tuple[dict, dict]]:
    """F8 / C9 (App. L, Fig. A8): late against early importance on the sensory inputs
    (:func:`train_sensory`, on the CPU) of each variant of
    :attr:`~rnnbook.learning_dynamics.experiments.Settings.f8_variants` (NeuroGym's, as the paper, and
    our centred ones), at every rate of its sweep, one batch each, through the results cache
    (``F8-<variant>``), one figure each. Returns per variant :func:`stability_check` at our rate (the
    sweep's largest) and :func:`rate_sweep_check`."""
    seeds = [s + run.seed for s in S.sensory_seeds]
    out = {}
    for name, (baseline, rates, steps) in S.f8_variants.items():
        stab = run.cache.cached(f"F8-{name}", {"T": S.T, "seeds": seeds, "init": S.init_scale, "steps": steps,
                                               "rates": list(rates), "baseline": baseline},
                                lambda: train_sensory(["late", "early"], S.T, seeds, init_scale=S.init_scale,
                                                      lr={"late": rates, "early": rates}, steps=steps,
                                                      baseline=baseline))
        sweep = rate_sweep_check(stab)
        at = np.isclose(stab["lr"], max(rates))
        inputs = "NeuroGym's inputs, baseline 0.5 (the paper's)" if baseline else "centred inputs (our variant)"
        run.save_figure(plots.plot_f8(runs_at(stab, at), sweep), "F8" if name == "neurogym" else f"F8-{name}",
                        f"Late ($y_T = 0.1\\sum_t t\\,x_t$) against early ($y_T = \\sum_t x_t/t$) importance "
                        f"on {inputs}, T = {S.T}, {steps} GD steps, first seed. Top: plain GD at our rate "
                        f"{max(rates):.3g}: singular values of $W_h$, and App. L's $dH_T/dt_\\theta$ {{eq}}`ld-dhdt` "
                        "(solid; 0 at a fixed point, here round-off) with the specification's "
                        "$\\Vert\\partial L/\\partial h_{T+1}\\Vert$ (dotted, the residual). Bottom: the final "
                        "$dH_T/dt_\\theta$ (median over seeds) against the GD rate, with each network's stability "
                        "limit $2/\\lambda_\\max$ at the minimum reached at the smallest rate (dotted); grey: our rate.")
        out[name] = sweep["per rate"][float(stab["lr"][at][0])], sweep
    return out
