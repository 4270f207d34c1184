"""The reproduction report of the synthesis chapter (issue 42): the four papers' results that its
five predictions carry from one paper into another's setting, beside what our runs show, and its
summary box (:mod:`rnnbook.report`). None of the papers makes these comparisons, so the findings
name the results each section starts from, not a figure of a paper that the page redoes."""
from rnnbook.report import Finding, Summary

FINDINGS = [
    Finding("Proca et al. Lemma 3.2", "the regulariser c²a²(1 − b^2T)/(1 − b²) of a one-mode network",
            "S1, S1a", "same", "it is the second moment of Zucchet & Orvieto's hidden state at "
            "ρ = 0, times 2τ, to float64 round-off (our derivation, checked)"),
    Finding("Zucchet & Orvieto Fig. 1, eq. (cm-h2)", "E[h²] and E[(d_λ h)²] diverge as λ → 1",
            "S1, S1b, S3", "shape only", "at a finite length T they saturate at T and T³/3; the "
            "crossover 1 − b = κ/T is our prediction, measured within 1/T"),
    Finding("Miller & Hardt Prop. 3", "a λ-stable model is within O(λᵏ) of its depth-k truncation",
            "S2", "same", "no projected student followed the teacher beyond the bound's horizon t*"),
    Finding("Miller & Hardt §4.2, abstract", "stable models perform about as well as unstable ones",
            "S2", "differs", "not on a λ̂ = 1 teacher of Cohen-Karlik et al.: there the stable "
            "students stop following where the unconstrained ones extrapolate (a conflict of scope)"),
    Finding("Cohen-Karlik et al. §3-4", "GD from a balanced start learns a low-dimensional "
            "teacher and extrapolates", "S2, S4, S4b", "same", "S2's unconstrained students follow "
            "the teacher to the horizon q (median ε_q ≤ τ); S4b's wider students pass the zero-loss "
            "gate (ε_q reported)"),
    Finding("Proca et al. eq. 47", "the time at which one connectivity mode is learned", "S4a",
            "shape only", "holds on Cohen-Karlik et al.'s trainer within the drift of b that "
            "eq. 47 neglects, with b frozen at its initial value; frozen at λ̂ (the learning-dynamics "
            "chapter's F1 reading) it misses by 0.3 at best, several times at worst (the chapter's range)"),
    Finding("Proca et al. App. F", "a one-mode network stops at its energy's floor on a "
            "two-mode task", "S4b", "same", "the d = 1 students end at a minimum of the energy, "
            "never below the floor"),
    Finding("the three papers' memory costs", "each grows with 1/(1 − λ) by its own formula",
            "S5", "same", "one scale M = 1/(1 − λ) with exponents 1, 1, 1, 3, 1, 3 and Miller & Hardt's "
            "raw depth 1 + 1/ln(B₀/ε) (our reading; their two rows are identities of the rebuilt "
            "bound): one scale, not one exponent"),
]

SUMMARY = Summary(
    read="The four papers as their chapters read them; the comparisons are ours: no paper makes "
         "them, so each section derives its prediction from both papers' equations.",
    easy="Closed forms: the regulariser, the moments and the memory scale join in a few lines of "
         "algebra and check to float64 round-off (S5's exponents to their derived 1/M bias).",
    hard="Tolerances for claims no paper states: each section justifies its own, and checks "
         "that a wrong derivation (a missing factor 2, the wrong moment) fails them.",
    full_cost="measured 7 December 2026 on 2 CPU cores (x86_64): 874 s from scratch on one "
              "thread beside three other runs (at 1658d11; the committed run, at cdaef65, resumed "
              "from its cache in 191 s); 398 s beside one, 621 s "
              "beside two (1,115 s on 6 December beside three; 17 min on 3 December at low priority, "
              "most of it S2's training; resumed from its cache, 159 s).",
)
