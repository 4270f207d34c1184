"""The reproduction report of the extrapolation chapter (issue 42): the results of Cohen-Karlik et
al. (ICLR 2023) that the chapter redoes or names, each beside our figures and claims that redo it,
and its summary box (:mod:`rnnbook.report`).

We read the paper's prose only (§1–3, the §4 and §5 introductions, §6; the chapter's opening and
``../shared/papers/extrapolation.check.md`` say what was read): none of its figures, displays,
theorem statements or Appendix B. No row can therefore be "same" for a number of the paper; "shape
only" is the best a row can be. Ranges quoted in the notes are those of the committed seed survey
(quick profile, 9 runs, 7 December 2026) unless a note says otherwise; the live values are in the
claims table. Rows with nothing of ours are the "Coverage" list of the third review
(``../shared/papers/extrapolation.review3.md``, 5 December 2026).
"""
import re
from functools import partial

from rnnbook.report import Finding, Summary

FINDINGS = [
    Finding("Abstract, §1 (footnote 1), §6", "GD's implicit extrapolation comes from learning "
            "low-dimensional state spaces, not short-term memory; where the two contradict, GD "
            "chooses the former (no number)", "C12, E1", "shape only",
            "just below and at the line (k = 2d̂ − 1, 2d̂) symmetric, balanced and non-symmetric "
            "students have Hankel rank ≤ d̂ and keep long memory (tail share ≥ 0.1), although the "
            "non-symmetric ones could fit with short memory; with the teacher's eigenvalues halved "
            "(the control) the learned memory is short (survey: tail share ≥ 0.42, control ≤ 6.3e-10); "
            "teachers, k and both measures are ours"),
    Finding("§1, §4 intro, §5 intro: any d", "the student extrapolates \"irrespective of how large "
            "its state space dimension is\" (no number)", "F7, C10", "shape only",
            "C1's rules at every d = 8, 20, 50, 100, 200 (d̂ = 2, k = 3 and 5, three seeds, quick "
            "profile): the line stays at 2d̂, and ε_q above it stays 3× or more under the "
            "tolerance though it rises a little with d (survey medians 0.0096–0.012 at d = 20, "
            "0.014–0.015 at d = 200); the full profile (five seeds, gate 1e-8, d = 8 to 400) reproduces "
            "it with no rise: median ε_q at k = 7 of 5.2e-4 to 5.5e-4 at every size"),
    Finding("§3, Prop. 3", "an overparameterized student (d > k, d > d̂) can reach zero loss on "
            "length k and fail to extrapolate; not readable: the paper's construction", "C3, F6",
            "shape only",
            "our construction fits j < k to round-off and is off by α at j = k, while a GD student "
            "at the same k extrapolates; a construction of ours, not evidence"),
    Finding("§3: MIMO", "the theory \"readily extends\" to multiple-input multiple-output networks",
            "", "not run", "every student of the chapter has one input and one output"),
    Finding("§4.1 (main theorem)", "not readable: its statement; the §4 intro: gradient flow from a "
            "balanced initialisation that reaches zero loss with k > 2d̂ extrapolates",
            "C1, C7", "shape only",
            "C7 verifies the moment lemma (Cohen & Yeredor, §1) that the proof rests on in our "
            "reading; C1 tests GD stopped at a loss gate, not gradient flow at zero loss"),
    Finding("Abstract: balancedness kept", "GD with small steps and near-zero initialisation "
            "\"strives to maintain\" a form of balancedness (no number)", "C4", "shape only",
            "with a symmetric A and B = Cᵀ our GD keeps balance to round-off (at most 9.8e-17 in the "
            "survey, exactly 0 in seven of nine runs), an identity of the gradient: a check, not evidence"),
    Finding("§4.2", "under mild conditions, approximate convergence gives approximate extrapolation; "
            "not readable: the bound and its conditions", "F4, C6", "shape only",
            "proxies of ours on the symmetric, balanced runs: across runs ε_q ≤ c√L with c fitted "
            "on the first seed (the other seeds within 2c, survey at most 1.14c; the runs below the "
            "line break it, the control, by 4.3e3c or more), and ε_q falls with the loss within each "
            "run (pooled with the non-symmetric "
            "runs that within-run rule held in 4 of 9 survey runs)"),
    Finding("§4.3", "random near-zero initialisation leads to balancedness with high probability; "
            "not readable: the bound", "F5, C5", "shape only",
            "the final imbalance falls about like σ² (survey slopes 2.06 to 2.42); the σ² law and the "
            "end-of-training measure are ours"),
    Finding("§5.1", "extrapolation when k > 2d̂, failure when k falls below 2d̂; not readable: the "
            "figure's values, axes and settings", "F1, C1", "shape only",
            "survey: converged median ε_q at most 0.024 above the line and at least 0.40 below it "
            "(C1's lines 0.05 and 0.1), with our teachers at d = 20 (one run at d = 50); the full "
            "profile (d̂ = 1 to 4, d = 20, 50, 100, tolerance 0.01): at most 0.0075 above, at least "
            "0.26 below"),
    Finding("§5.2", "the same transition without \"some of the assumptions\", in particular "
            "symmetric A and balancedness; not readable: the figure and which assumptions were "
            "dropped", "F2, C2", "shape only",
            "only the student's symmetry and balance at initialisation (σ = 1e-2) are relaxed: the "
            "conserved Q stays of order σ²d, so the students stay balanced in that generalised "
            "sense; the teacher stays balanced (our choice). Full profile: partly — at k = 2d̂ + 1 "
            "runs at the loss floor miss the tolerance 0.01 for d̂ = 1 at d ≥ 50 and d̂ = 3 (ε_q 0.028, "
            "0.15, 0.25 at d = 20, 50, 100, as ‖Q‖ grows 0.012, 0.05, 0.14), while d̂ = 2 passes"),
    Finding("§5.2: far from balance", "not readable: whether §5.2 also unbalanced the teacher or "
            "started far from balance", "C11", "shape only",
            "our choices of 'without balancedness': non-symmetric students whose conserved Q is of "
            "order one throughout, and F2's students on E3's signed teacher; C1's rules hold for "
            "both at d̂ = 2"),
    Finding("§5.3 (GRU)", "GRUs \"too exhibit a phase transition\" as k varies; where and how "
            "sharply is not stated; not readable: the figure and its setting", "F3, C8",
            "shape only",
            "16 students per k at k = 2, 6, 10: the error relative to a silent student is 1.02 to "
            "1.06 at k = 2 and 0.24 to 0.42 at k = 10 (beyond the window 0.24 to 0.44; survey), "
            "hence 'partly'; our GRU setup. The spec's k grid "
            "2, 4, ..., 10 and a long-memory teacher (λ̂ = 1) run in the full profile only: k = 1 to "
            "12, partly again (1.04 at k = 2 and 0.16 at k = 12; long-memory teacher 1.01 and 0.14)"),
    Finding("Appendix B", "not readable: implementation details and additional experiments", "",
            "not run", "we had no part of Appendix B"),
]

SUMMARY = Summary(
    read="The prose of §1 to §3, the §4 and §5 introductions and §6 (a seed text), and the stored "
         "abstract and opening of §1; not the equations, theorem statements, Prop. 3's "
         "construction, any figure or Appendix B, and there is no authors' code. Every setting "
         "(teachers, student size, initialisation, step sizes and budgets, error metric, the GRU "
         "setup) is therefore our choice.",
    easy="The linear setting: with the exact population loss, its closed-form gradient (checked "
         "against autograd) and all runs batched in float64, the transition at k = 2d̂ shows "
         "plainly at d = 20 within the quick run, and the moment argument can be checked directly "
         "with a linear programme.",
    hard="Nothing could be compared with a number of the paper, so every verdict rests on its "
         "prose. Symmetric, balanced students converge slowly (a loss of 1e-10 needs 2e5 to 4e5 "
         "steps), so judging needs a loss gate; GRU students scatter so widely that a stable median "
         "needs 16 of them per k; which assumptions §5.2 dropped is unknown.",
    full_cost="Finished on 7 December 2026 on this book's 2-core CPU machine, in pieces over two "
              "days: its 1,309 committed pieces (1,305 linear students, two GRU sweeps, E2) record "
              "11.2 hours of one thread in all, most of it beside other runs (GRU sweeps 1.6 and 1.7 h; "
              "the non-symmetric students of d̂ = 4 at d = 100 2.7 h, the last 32 four to a chunk); "
              "the claims from the pieces then take seconds. On one H200 (4 December 2026) a "
              "64-run chunk at d = 20 reached step 181,389 of 200,001 in 223 s (about 1.1 ms a "
              "step, launch-bound); the GPU has not run the rest.",
)


def _span(values: list[float]) -> str:
    """``values``' range as the survey text prints it (C1's and C10's per-seed medians, C4)."""
    lo, hi = f"{min(values):.2g}", f"{max(values):.2g}"
    return lo if lo == hi else f"{lo} to {hi}"


def survey_text(survey: dict[str, dict]) -> dict[str, str]:
    """Numbers of the committed survey (values as :func:`rnnbook.claims.survey_values` gives them)
    that the chapter's text quotes, as Markdown: C10's median ε_q above the line per student size
    over the seed runs (``c10_survey_by_d``), C4's largest imbalance and how many runs had exactly 0
    (``c4_survey_max``, ``c4_survey_zeros``), and C1's median ε_q at k = 2d̂ per teacher over every
    run (``c1_at_survey``)."""
    seeds = [v["C10"] for name, v in survey.items() if name.startswith("seed")]
    by_d = {g: [s[g]["median_eps"][max(s[g]["median_eps"], key=int)] for s in seeds]
            for g, c in seeds[0].items() if isinstance(c, dict)}
    at_line: dict[int, list[float]] = {}
    for v in survey.values():
        for g, c in v["C1"].items():
            if isinstance(c, dict) and "median_eps" in c:
                d_hat = int(g.split(",")[0].split("=")[1])
                at_line.setdefault(d_hat, []).append(c["median_eps"][str(2 * d_hat)])
    c4 = [v["C4"] for v in survey.values()]
    return {"c10_survey_by_d": ", ".join(f"{_span(m)} at ${g.replace('=', ' = ')}$" for g, m in by_d.items()),
            "c4_survey_max": f"{max(c4):.1e}", "c4_survey_zeros": str(sum(c == 0 for c in c4)),
            "c1_at_survey": "; ".join(f"{_span(m)} at $\\hat d$ = {d_hat}"
                                      for d_hat, m in sorted(at_line.items()))}


def _medians(cell: dict, d_hat: int) -> tuple[list[float], list[float]]:
    """One (d̂, d) cell of C1, C2 or C10 (:func:`~rnnbook.extrapolation.experiments.transition_check`'s
    recorded value): the finite median ε_q below the line (2 <= k < 2d̂) and above it (k > 2d̂)."""
    med = {int(k): float(v) for k, v in cell["median_eps"].items()}
    finite = {k: v for k, v in med.items() if v == v}
    return ([v for k, v in finite.items() if 2 <= k < 2 * d_hat],
            [v for k, v in finite.items() if k > 2 * d_hat])


def _cell(group: str) -> dict[str, int]:
    """A cell's name in C1, C2 or C10's value ("d_hat=2, d=20", "d=50") as numbers (d̂ = 2 if absent)."""
    return {"d_hat": 2, **{k: int(v) for k, v in (p.split("=") for p in group.replace(" ", "").split(","))}}


def _transition_sentence(cid: str, claim) -> str:
    """C1's, C2's or C10's sentence: its verdict over its cells, the extreme medians on both sides of
    the line against the rule's bounds (read from its tolerance), the cells short of converged runs."""
    cells = {g: c for g, c in claim.value.items() if isinstance(c, dict) and "median_eps" in c}
    below, above = [], []
    for g, c in cells.items():
        b, a = _medians(c, _cell(g)["d_hat"])
        below, above = below + b, above + a
    sizes = sorted({_cell(g)["d"] for g in cells})
    bound = {r: m.group(1) if (m := re.search(rf"\({r}\)[^0-9]*([0-9.e+-]+)", claim.tolerance)) else "?"
             for r in ("a", "b")}
    low = (f"the smallest median $\\epsilon_q$ below the line is {min(below):.2g} (rule: at least {bound['a']})"
           if below else "no $k$ below the line converged")
    high = (f"the largest above it {max(above):.2g} (tolerance {bound['b']}; the rule judges only the $k$ "
            "whose runs all converge)" if above else "no $k$ above it converged")
    short = sum(c.get("converged_above", 1.0) < 2 / 3 for c in cells.values())
    text = (f"In the full profile's run {cid} is *{claim.verdict}* over {len(cells)} cells ($d$ = "
            f"{', '.join(map(str, sizes))}): {low}, and {high}; in {short} of the cells fewer than "
            f"two thirds of the runs above the line reach the loss gate")
    if "verdict" in next(iter(cells.values()), {}) and claim.verdict != "reproduced":
        text += "; " + _cells_by_verdict(cells, bound["b"])
    edge = {g: c for g, c in cells.items() if c.get(EDGE_RUNS)}
    if cid == "C2" and edge:
        text += ("; at $k = 2\\hat d + 1$ the median $\\epsilon_q$ of the runs at the loss floor and the "
                 "median $\\|Q\\|$ are " + "; ".join(
                     f"{float(c[EDGE_EPS]):.2g} and {float(c[EDGE_Q]):.2g} at ({_cell(g)['d_hat']}, {_cell(g)['d']})"
                     for g, c in edge.items()) + " ($(\\hat d, d)$)")
    if cid == "C10" and above:  # does the small rise of eps_q with d go on?
        top = {_cell(g)["d"]: c["median_eps"][max(c["median_eps"], key=int)] for g, c in cells.items()}
        text += ("; at the largest $k$ the median by size is "
                 + ", ".join(f"{float(m):.2g} at $d$ = {d}" for d, m in sorted(top.items())))
    return text + "."


# the keys of experiments.edge_balance in a C2 cell's value
EDGE_EPS, EDGE_RUNS, EDGE_Q = ("at k = 2d̂+1: median ε_q at the loss floor", "at k = 2d̂+1: runs at the loss floor",
                               "at k = 2d̂+1: median ‖Q‖")


def _cells_by_verdict(cells: dict[str, dict], tol: str) -> str:
    """The cells of a claim judged by C1's rules grouped by verdict, each failed cell with its judged
    k above the line whose median missed the tolerance ``tol`` (as "(d̂ = 3, d = 50: k = 7, 0.15)")."""
    def name(g: str, c: dict) -> str:
        label = re.sub(r"d=(\d+)", r"$d$ = \1", re.sub(r"d_hat=(\d+)", r"$\\hat d$ = \1", g))
        bad = [(k, float(c["median_eps"][str(k)])) for k in c.get("judged_above", [])
               if c["verdict"] == "not reproduced" and tol != "?"
               and float(c["median_eps"][str(k)]) > float(tol)]
        return label + "".join(f": $k$ = {k}, {m:.2g}" for k, m in bad[:1])
    parts = []
    for verdict in ("reproduced", "not reproduced", "inconclusive"):
        got = [name(g, c) for g, c in cells.items() if c["verdict"] == verdict]
        if got:
            parts.append(f"*{verdict}* at " + "; ".join(f"({x})" for x in got))
    return ", ".join(parts)


def _c8_sentence(claim) -> str:
    v = claim.value
    long = v.get("long-memory teacher")
    text = (f"In the full profile's run ($k$ = 1 to {v['k_large']}) C8 is *{claim.verdict}*: the decaying "
            f"teacher's ratio is {v['ratio_small']:.2f} at $k$ = {v['k_small']} and {v['ratio_large']:.2f} "
            f"at $k$ = {v['k_large']} ({v['beyond_large']:.2f} beyond the window)")
    if isinstance(long, dict):
        text += (f"; the long-memory teacher's {long['ratio_small']:.2f} and {long['ratio_large']:.2f} "
                 f"({long['beyond_large']:.2f} beyond), its worst train rel. loss {long['max_train_rel_loss']:.2g}")
    return text + "."


def _c6_sentence(claim) -> str:
    across, within = claim.value["across runs (judged)"], claim.value["within runs, symmetric, balanced (judged)"]
    return (f"In the full profile's run C6 is *{claim.verdict}*: across runs every seed's largest "
            f"$\\epsilon_q/\\sqrt L$ is within {across['worst c / fitted c']:.2f} times the first seed's "
            f"$c$ = {across['c fitted (seed 1)']:.0f} (the control, below the line, "
            f"{across['below / fitted c']:.3g} times), and within runs the median rank correlation is "
            f"{within['median_rho']:.2f}, but {within['n_eps_rose']} of its {within['n_runs']} symmetric, "
            "balanced runs end with a larger $\\epsilon_q$ than at their first checkpoint.")


def full_text(full: dict) -> dict[str, str]:
    """Sentences, as Markdown, that quote the committed full-profile claims (``full``: id ->
    :class:`~rnnbook.claims.Claim`, :func:`rnnbook.display.full_claims`) where the chapter's text
    says what only the full profile can show: C1 and C2 at d = 50 and 100 and d̂ = 3, 4
    (``full_c1``, ``full_c2``), C10 up to d = 400 (``full_c10``), C8 on the grid k = 1 … 12 and the
    long-memory teacher (``full_c8``), C6's two rules over every size (``full_c6``); each says so where the full run has not reached its claim."""
    make = {**{cid: partial(_transition_sentence, cid) for cid in ("C1", "C2", "C10")}, "C8": _c8_sentence,
            "C6": _c6_sentence}
    return {f"full_{cid.lower()}": f(full[cid]) if cid in full else
            "The full profile's run has not reached this claim yet (no full results are committed)."
            for cid, f in make.items()}
