"""The reproduction report of the learning-dynamics chapter (issue 42): the figures, appendices and
numbers of Proca et al. (ICML 2025) that the chapter redoes or names, each beside our figures and
claims with an outcome, and its summary box (:mod:`rnnbook.report`).

What the paper shows is taken from its text and the figure text we read (the chapter's opening
admonition and ``../shared/papers/learning_dynamics.check.md`` say which); where a value was not
read the row says so. Rows with outcome "not run" are the paper's results that the chapter does not
redo in its quick profile (the third review's "Coverage" list among them)."""
from rnnbook.report import Finding, Summary

FINDINGS = [
    Finding("Fig. 2 (§3.2)", "theory (eq. 47; Taylor) against GD over about 40k steps: ac for several δ "
            "with b frozen, and b for f = 1, 0.7^(T-t), 0.7^t with ac frozen; a curve that converges smaller "
            "but is learned faster at first", "F11, C13", "shape only",
            "at T = 5 (ours): larger δ faster; 0.7^(T-t) ends below 0.7^t but takes the larger first step, set by "
            "s_(T-1), not s_T as the text says; fractions of the own target show no such order (F1)"),
    Finding("Fig. A1 (App. E)", "(δ, λ) = (1.1, 0.5), late importance, learned before (0.5, 1.1); T = 7 "
            "inferred from its ticks, about 500 steps", "F1, C1", "shape only",
            "the same order in joint GD at T = 7 (5 and 10 in full); step counts not comparable (rate unknown)"),
    Finding("App. C-D (eqs. 47, 49, 58-61)", "the logistic u(t) with b frozen and the Taylor b(t) with "
            "u frozen follow the simulation", "F1", "shape only",
            "K2 within 1e-3 of GD (full 1e-4) and K4 within 2e-2 on Fig. A1's task; on Fig. 2's tasks in "
            "F11 (C13)"),
    Finding("App. F.2", "only exponential-in-time task dynamics have zero-loss solutions (a theorem)",
            "C2", "same", "a numerical check: the exponential families reach round-off, 20 random tasks "
            "stay above 1e-8, the rule (the specification's 1e-4 reported; at least 0.006 in the seed "
            "survey of 7 December 2026)"),
    Finding("Fig. 3 (§3.3), solutions", "b* = 1, λ, 1/λ and ac* = δ, δ, δλ^T (constant, inverse-"
            "exponential, exponential); b* > 1 for early importance", "F2, C3", "same",
            "GD lands on the closed forms to about 1e-14"),
    Finding("Fig. 3 (§3.3), stability", "early-importance solutions are unstable, harder to learn as "
            "T grows; constant tasks with large δ are less stable", "C12", "same",
            "the stable rate 2/λ_max falls geometrically with T for λ > 1 and tends to a limit for λ < 1; "
            "it falls with δ; GD at one rate fails exactly where the rate exceeds it"),
    Finding("§3.3, App. F.1, extrapolation", "the exponential solution does not extrapolate to other "
            "lengths, its error growing with |ΔT|; the inverse-exponential one does", "C4", "same",
            "at ΔT = -3..6 the error equals K5's |λ^-ΔT - 1| and grows with |ΔT| (a check, given C3)"),
    Finding("Fig. 4 (§3.4)", "feedforward (b → 0, ac ≈ κ) to recurrent switch against δ, λ and β, "
            "sharper as T increases; κ bar 0-1.2", "F3, C6", "shape only",
            "on Fig. 4's x-ranges with κ up to 2 (ours); sharper means continuous at T = 3, a jump above"),
    Finding("Fig. A2 (App. G)", "data term, regulariser and energy over (b, ac) for the Dirac task",
            "F4", "shape only", "the regulariser confines (b, ac) near the origin, as App. G's text says; "
            "the paper's image was not seen"),
    Finding("App. H, eq. 107 (Fig. A3)", "second-order transition at T = 3, β_c = 1/√2; first order at "
            "β = 1 for T > 3", "F5, C5", "same",
            "exact minimiser: onset 0.7071 at T = 3 and 1.000 at T = 4, a jump for every T >= 4"),
    Finding("App. H, ≈ 1.08", "the simulated onset settles near β ≈ 1.08 over larger T", "E2",
            "shape only", "with |b| <= B the onset tends to (1 - B^-2)^(-1/4): 1.08 at B ≈ 1.94; "
            "unbounded, it is 1"),
    Finding("App. I (eqs. 114-134)", "the NTK of a finite-width linear RNN, without alignment "
            "assumptions", "C14", "differs", "eq. 125 (a scalar binomial expansion of a matrix power) holds "
            "for aligned weights and T <= 2 only: 3-22% off for unaligned ones at T = 4 (seeds 0-4); "
            "our kernel is closed-form from the Jacobians, checked against autodiff"),
    Finding("Fig. 5 (§3.5)", "kernel distance rises with T = 1..8 and falls with init scale 0.01-0.5, "
            "aligned and unaligned; colour bar 0-0.8", "F6, C7", "shape only",
            "same trends on a subsampled grid; D falls with σ at T = 2 (judged where not saturated); our D "
            "reaches 0.95 (0.99 in the full run), above the paper's bar, and saturates from T = 4"),
    Finding("Fig. A4 (App. J)", "kernel distance on a rotational task (φ = π/12, R = 1)", "", "not run",
            "not in our sweeps: optional in the check of our specification, and not added"),
    Finding("Figs. A5-A7 (App. J)", "width 300 moves the kernel less at larger init; aligned D falls as "
            "init → 1; the recurrent init dominates D", "F6", "shape only",
            "the full profile's panels beside F6 (its figure F6-A5-A7), read in the text on the "
            "committed full run (width 64), not judged by C7 or any claim: the first two "
            "hold; recurrent-init dominance shows in the aligned T = 2 panel only"),
    Finding("App. K", "errors in b enter the energy exponentially in time, errors in ac quadratically",
            "", "not run", "an argument in the text; no figure or number to redo"),
    Finding("Fig. 6 (§3.6)", "sensory task at T = 4 on unmodified NeuroGym inputs: sv(W_h) → 1, sv(W_yW_x) "
            "→ 1 (sum), 1/T (mean); the sum extrapolates to T = 50, 75, 100, the mean does not",
            "F7, C8", "shape only", "on the unmodified inputs at a 20x smaller rate (centred: a full-profile "
            "variant); step counts not comparable"),
    Finding("Fig. A8 (App. L)", "T = 6: dH_T/dt_θ below 1e-3 for late importance, about 0.3 and "
            "fluctuating for early importance", "F8, C9", "shape only",
            "on the unmodified inputs, at rates divided by their top second moment (κ ≈ 31 times the centred "
            "one's): the early minimum is 3-7x sharper (T = 8 to 4), so a window of rates learns late and not "
            "early; at a rate 3.3x below ours both converge (centred: a full-profile variant)"),
    Finding("Figs. A9-A11 (App. O)", "complex modes reach b = λ, ac = δ; the angle before the radius; "
            "R > 1 gives |b| > 1", "F9, C11", "shape only",
            "end points match to round-off; App. O's timing orders (angle first, larger R faster, "
            "-3π/4 slowest) are read on our table, reported, not judged: the paper gives no times"),
    Finding("App. M, rebuttal", "with an output at every step, pruning still depends on s_1 and s_T "
            "(no task, no figure)", "F10, C10", "shape only",
            "on our lag-consistent construction (threshold near √T); our first-input one only suppresses b"),
    Finding("App. M.1-M.2 (eqs. 157-158)", "closed forms of the T-output case", "", "not run",
            "only M.4's regulariser is checked (K6, in the symbolic table beside F4)"),
]

SUMMARY = Summary(
    read="The camera-ready text with all its appendices (A-P) in a text conversion, the figure text "
         "(ticks, legends) of the main text and App. A-F.2 in a second one, and the authors' OpenReview "
         "rebuttal; not the figure images or the figure text from App. F.3 on, and not the authors' "
         "code, which could not be obtained.",
    easy="The mode-level theory: the energy, its zero-loss solutions, the logistic and Taylor flows "
         "and the phase transition are a few lines each and match GD or sympy to round-off, and an "
         "aligned network reduces to the modes exactly.",
    hard="Every setting the paper does not print: the NTK sweep and the sensory networks diverge or "
         "stall at naive rates, NeuroGym's uncentred inputs need a 20 to 31 times smaller rate and five to ten times "
         "the steps, App. L's instability shows only in a window of GD rates (judged on the minima's "
         "sharpness), and the rebuttal's multi-output claim has no task, so we built one.",
    full_cost="measured 7 December 2026: 37 min (2,228 s) on 2 CPU cores (x86_64, 23.5 GiB; the "
              "chapter on one thread beside two or three other runs; 27 min on 6 December with one) with Fig. A5 at N_h = 64; at "
              "the paper's N_h = 300 it is a GPU job, not measured.",
)
