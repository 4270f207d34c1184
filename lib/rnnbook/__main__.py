"""Command line: ``python -m rnnbook run <chapter> [--profile full [--smoke]] [--device cuda]
[--results-dir DIR] [-p name value ...] [--executor inline|local:N|slurm [--slurm-* ...]]``, ``python -m rnnbook execute [chapter ...]``,
``python -m rnnbook book [--offline] [--if-stale]``,
``python -m rnnbook survey <chapter> --seeds 0-4 [-p name value ...]``,
``python -m rnnbook status [chapter ...] [--results-dir DIR]``,
``python -m rnnbook partial <chapter> --results-dir DIR``,
``python -m rnnbook collect <chapter> --results-dir DIR [--no-plans] [--prune]``,
``python -m rnnbook figures``, ``python -m rnnbook bench`` and ``python -m rnnbook seed-book-cache``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from rnnbook import engine
from rnnbook.claims import format_value
from rnnbook.params import ParameterError
from rnnbook.execute import (EXECUTED_DIR, FIGURES_EXPORT, RUN_RECORD, PartialRunError, build_book,
                             execute_chapter, execute_many, export_figures, partial_record,
                             seed_book_cache, survey_chapter)
from rnnbook.paths import FULL_RESULTS_DIR, chapters, default_results_dir, piece_versions, results_version


def parse_value(text: str):
    """A parameter value as YAML, with numbers such as 1e-3 and 5e4 read as numbers (YAML 1.1
    leaves them strings), also inside lists."""
    def number(x):
        if isinstance(x, list):
            return [number(v) for v in x]
        if isinstance(x, str):
            for kind in (int, float):
                try:
                    return kind(x)
                except ValueError:
                    pass
        return x
    return number(yaml.safe_load(text))


def parse_seeds(text: str) -> list[int]:
    """``0-4`` or ``0,2,5`` (or both: ``0-2,7``) as a list of distinct seeds."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.partition("-")
            seeds += list(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: allowed are ranges and lists such as 0-4 or 0,2,5")
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"--seeds {text!r}: allowed are distinct integers >= 0, such as 0-4")
    return seeds


def print_survey(record: dict) -> None:
    """Per claim, the verdict at every seed and whether it is the same at all."""
    from rnnbook.claims import unstable
    runs = record["variations"]
    moving = set(unstable(runs))
    for cid in sorted({c for v in runs.values() for c in v}, key=lambda c: (len(c), c)):
        cells = [(v[cid]["verdict"] + ("" if v[cid]["passed"] else " ✗")) if cid in v else "—"
                 for v in runs.values()]
        print(f"{cid:<6} {'moves ' if cid in moving else 'stable'}  " + " | ".join(cells))


def add_executor_options(p: argparse.ArgumentParser) -> None:
    """``--executor`` and the SLURM settings (:mod:`rnnbook.engine`)."""
    g = p.add_argument_group("where the sweeps compute (submitit)")
    g.add_argument("--executor", default="inline",
                   help="inline (default: in the chapter's process), local:N (N processes here, "
                   "one per GPU where there are GPUs) or slurm (a job array)")
    g.add_argument("--retries", type=int, default=2, help="resubmissions of a failed job (default 2)")
    g.add_argument("--slurm-config", metavar="FILE",
                   help=f"YAML with any of: {', '.join(engine.SLURM_KEYS)}; options below override it")
    g.add_argument("--slurm-partition")
    g.add_argument("--slurm-gpus", type=int, help="GPUs per job")
    g.add_argument("--slurm-cpus", type=int, help="CPUs per job (default 1)")
    g.add_argument("--slurm-time", type=int, help="minutes per job (default 60)")
    g.add_argument("--slurm-mem", help="memory per job, e.g. 16G")
    g.add_argument("--slurm-array-parallelism", type=int, help="jobs of an array at once (default 16)")
    g.add_argument("--slurm-option", action="append", default=[], metavar="NAME=VALUE",
                   help="any other sbatch option, e.g. account=myproject (repeatable)")


def executor_of(args: argparse.Namespace) -> engine.Executor:
    """The :class:`engine.Executor` the options name; a bad value is a ParameterError."""
    settings: dict = {}
    if args.slurm_config:
        try:
            settings = yaml.safe_load(Path(args.slurm_config).read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ParameterError("--slurm-config", args.slurm_config, f"a readable YAML file ({e})")
        if not isinstance(settings, dict):
            raise ParameterError("--slurm-config", args.slurm_config,
                                        f"a YAML mapping of {', '.join(engine.SLURM_KEYS)}")
    options = dict(settings.get("options") or {})
    for text in args.slurm_option:
        name, eq, value = text.partition("=")
        if not eq or not name:
            raise ParameterError("--slurm-option", text, "NAME=VALUE, e.g. account=myproject")
        options[name.lstrip("-")] = value
    settings.update({k: v for k, v in (("partition", args.slurm_partition), ("gpus", args.slurm_gpus),
                                      ("cpus", args.slurm_cpus), ("time", args.slurm_time),
                                      ("mem", args.slurm_mem),
                                      ("array_parallelism", args.slurm_array_parallelism))
                     if v is not None})
    if options:
        settings["options"] = options
    return engine.parse(args.executor, settings, args.retries)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 7200 \
        else f"{seconds / 3600:.1f} h"


def print_status(chapter: str, root: Path) -> None:
    """Which pieces (results cache entries) of ``chapter``'s runs in ``root`` are done and what
    is left, with the measured cost per piece (:func:`rnnbook.cache.progress`)."""
    from rnnbook.cache import progress
    from rnnbook.display import made_by_this_code
    directory, code = root / chapter / "cache", results_version(chapter)
    sweeps = progress(directory, code, piece_versions(chapter))
    print(f"{chapter}: {directory} (code version {code})")
    if not sweeps:
        print("  no sweep planned yet: nothing run, or run before plans were recorded")
    for p in sweeps:
        if not p.current:
            continue
        left = p.total - p.done
        print(f"  {p.name:<24} {p.done:>5}/{p.total:<5} done, {duration(p.per_piece)} per piece "
              f"(measured), {duration(p.left) if left else 'nothing'} left"
              f"{' (at the mean of the pieces done: an estimate)' if left and p.left is not None else ''}, "
              f"{p.size / 1e6:.1f} MB")
    record = root / chapter / RUN_RECORD
    if record.is_file():
        import json
        r = json.loads(record.read_text())
        part = r.get("partial")
        print(f"  results: {r['claims']['total']} claims, "
              + (f"partial (stopped in: {part['stopped_in']})" if part else "a finished run")
              + f", {r.get('finished', '?')[:10]}, commit {r.get('commit', '?')}"
              + ("" if made_by_this_code(chapter, r)
                 else ", of another results version: a run now recomputes it"))
    stale = [p for p in sweeps if not p.current]
    if stale:
        print(f"  {len(stale)} plans of other code versions ({sum(p.done for p in stale)} pieces): "
              "never used by this code")


def execute_defaults(names: list[str]) -> int:
    """Execute ``names`` with default parameters, side by side; 1 if any cell failed."""
    def report(chapter, seconds, error):
        print(f"{chapter}: {'FAILED' if error else 'executed'} ({seconds / 60:.1f} min in)",
              flush=True)
    print("executing", ", ".join(names), flush=True)
    runs = [(c, {}, default_results_dir("quick"), EXECUTED_DIR / f"{c}.ipynb") for c in names]
    errors = [f.exception() for f in execute_many(runs, report=report)]
    for chapter, error in zip(names, errors):
        if error:
            print(f"--- {chapter}:\n{error}", file=sys.stderr)
    return 1 if any(errors) else 0


RESULT_PARAMETERS = {"profile", "device", "threads", "chunk_size"}  # a run given only these (how the
# work is split and where it runs, not what it computes) is the chapter's full run


def _completeness(chapter: str, folder: Path) -> int:
    """How complete the full run recorded in ``folder`` is, of this code: 3 the whole profile
    finished, 2 a declared subset finished, 1 a partial record, 0 other code or a smoke run."""
    from rnnbook.display import SmokeResults, full_record, made_by_this_code, subset
    try:
        record = full_record(folder)
    except SmokeResults:
        return 0
    if not made_by_this_code(chapter, record):
        return 0
    return 1 if record.get("partial") else 2 if subset(record) else 3


def collect_run(chapter: str, source: Path, target: Path, plans: bool = True, prune: bool = False) -> int:
    """``python -m rnnbook collect``: the finished pieces of the run in ``source`` of this code that
    ``target`` (a chapter's committed full results) lacks (:func:`rnnbook.cache.collect`), and its
    run record, claims and figures if the record is this code's, of the full profile with default
    parameters or a declared subset (:data:`~rnnbook.display.SUBSET_PARAMETERS`), a partial record
    too, unless ``target``'s is of a more complete run (:func:`_completeness`); with ``prune``, the committed pieces of other versions go."""
    import shutil
    from rnnbook.cache import collect, prune as prune_cache
    from rnnbook.claims import atomic_write
    from rnnbook.display import SUBSET_PARAMETERS, SmokeResults, full_record, made_by_this_code
    code, pieces = results_version(chapter), piece_versions(chapter)
    try:
        record = full_record(source) if (source / RUN_RECORD).is_file() else None
    except SmokeResults as e:
        print(f"collect: {e}; nothing copied", file=sys.stderr)
        return 2
    got = collect(source / "cache", target / "cache", code, pieces, plans=plans)
    print(f"{chapter}: {len(got['added'])} files added to {target / 'cache'}"
          + "".join(f"\n  left out (over 1 MB or weights): {n}, {b / 1e6:.1f} MB" for n, b in got["too large"]))
    if prune:
        gone = prune_cache(target / "cache", code, pieces)
        print(f"  pruned {len(gone)} entries and plans of other code versions")
    if record is None:
        print("  no run record: pieces only")
        return 0
    extra = sorted(set(record.get("parameters", {})) - RESULT_PARAMETERS - set(SUBSET_PARAMETERS))
    if record["profile"] != "full" or extra or not made_by_this_code(chapter, record):
        print(f"  its results stay out: {'parameters ' + ', '.join(extra) if extra else 'another profile or code'}")
        return 0
    if (target / RUN_RECORD).is_file() and _completeness(chapter, target) > _completeness(chapter, source):
        print("  its results stay out: the committed ones are of a more complete run of this code")
        return 0
    for name in (RUN_RECORD, "claims.json"):
        atomic_write(target / name, (source / name).read_bytes())
    shutil.rmtree(target / "figures", ignore_errors=True)
    shutil.copytree(source / "figures", target / "figures")
    part = record.get("partial")
    print(f"  results: {record['claims']['total']} claims, {'a partial' if part else 'a finished'} run "
          f"(commit {record['commit']})")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rnnbook")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="execute a chapter with papermill and check its claims")
    r.add_argument("chapter", choices=chapters())
    r.add_argument("--profile", choices=["quick", "full"], default="quick")
    r.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    r.add_argument("--results-dir", default=None,
                   help="results land in DIR/<chapter>/ (default _build/results/<profile>)")
    r.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="a chapter parameter; VALUE is parsed as YAML (numbers, lists, null)")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.add_argument("--smoke", action="store_true",
                   help="with --profile full: its code paths at toy sizes, in a minute or two on "
                   "a CPU (a test: claims are recorded, not judged; never committed as results)")
    add_executor_options(r)
    e = sub.add_parser("execute", help="execute chapters (quick, default parameters) side by side "
                       "into _build/executed/, for the book to reuse")
    e.add_argument("chapters", nargs="*", metavar="chapter",
                   help=f"any of {', '.join(chapters())} (default: all)")
    sub.add_parser("seed-book-cache", help="let the book reuse fresh test executions")
    b = sub.add_parser("book", help="build the HTML book, reusing fresh test executions")
    b.add_argument("--offline", action="store_true", help="build in a network namespace with no network")
    b.add_argument("--if-stale", action="store_true",
                   help="keep _build/html if it was built from the current sources")
    sv = sub.add_parser("survey", help="run a chapter once per seed and show whether each claim's "
                        "verdict stays the same")
    sv.add_argument("chapter", choices=chapters())
    sv.add_argument("--seeds", type=parse_seeds, default=parse_seeds("0-4"), help="e.g. 0-4 (default) or 0,2,5")
    sv.add_argument("--profile", choices=["quick", "full"], default="quick")
    sv.add_argument("--results-dir", default=None,
                    help="runs land in DIR/seed-<n>/<chapter>/ (default _build/results/<profile>/survey)")
    sv.add_argument("-p", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                    help="a chapter parameter for every run (as for run)")
    sv.add_argument("--out", default=None, help="where survey.json goes (default: beside the runs)")
    add_executor_options(sv)
    st = sub.add_parser("status", help="which pieces of a chapter's (full) runs are done, what is "
                        "left and what each piece cost")
    st.add_argument("chapters", nargs="*", metavar="chapter",
                    help=f"any of {', '.join(chapters())} (default: all)")
    st.add_argument("--results-dir", default=str(FULL_RESULTS_DIR),
                    help="the runs' results folder (default data/results/full)")
    st.add_argument("--unfinished", action="store_true",
                    help="only name the chapters whose full run is not finished at this code's "
                         "results version, one per line (what bench/device_check.sh runs)")
    pa = sub.add_parser("partial", help="write the run record (run.json) of a full run that has not "
                        "finished, so that its claims so far can be committed and shown as partial")
    pa.add_argument("chapter", choices=chapters())
    pa.add_argument("--results-dir", required=True, help="the run's results folder (its DIR/<chapter>/)")
    co = sub.add_parser("collect", help="copy a full run's finished pieces of this code (at most 1 MB "
                        "each, no model weights) and, if its record is this code's with default "
                        "parameters, its results into data/results/full/<chapter>/, to commit")
    co.add_argument("chapter", choices=chapters())
    co.add_argument("--results-dir", required=True, help="the run's results folder (its DIR/<chapter>/)")
    co.add_argument("--into", default=str(FULL_RESULTS_DIR), help=argparse.SUPPRESS)  # tests
    co.add_argument("--no-plans", action="store_true",
                    help="leave the sweeps' plans out (a run with -p parameters plans sweeps of its own)")
    co.add_argument("--prune", action="store_true",
                    help="also delete the committed pieces and plans of other code versions")
    sub.add_parser("figures", help="export the book's figures to _build/figures/<chapter>/")
    sub.add_parser("bench", help="run every bench/*.py and print their speed-up ratios")
    args = ap.parse_args(argv)
    executor = None
    if args.command in ("run", "survey"):
        try:
            executor = executor_of(args)
        except ParameterError as e:
            ap.error(str(e))

    if args.command == "execute":
        unknown = sorted(set(args.chapters) - set(chapters()))
        if unknown:
            ap.error(f"unknown chapters {unknown}; chapters: {', '.join(chapters())}")
        return execute_defaults(args.chapters or chapters())
    if args.command == "status":
        unknown = sorted(set(args.chapters) - set(chapters()))
        if unknown:
            ap.error(f"unknown chapters {unknown}; chapters: {', '.join(chapters())}")
        if args.unfinished:
            from rnnbook.display import full_run_finished
            for chapter in args.chapters or chapters():
                if not full_run_finished(chapter, Path(args.results_dir)):
                    print(chapter)
            return 0
        for chapter in args.chapters or chapters():
            print_status(chapter, Path(args.results_dir))
        return 0
    if args.command == "partial":
        import json
        from rnnbook.claims import atomic_write
        folder = Path(args.results_dir) / args.chapter
        try:
            record = partial_record(args.chapter, folder)
        except PartialRunError as e:
            ap.error(str(e))
        atomic_write(folder / RUN_RECORD, json.dumps(record, indent=2).encode())
        part = record["partial"]
        print(f"{folder / RUN_RECORD}: {record['claims']['total']} claims, {part['cells_completed']} of "
              f"{part['cells']} code cells completed; stopped in: {part['stopped_in']}")
        return 0
    if args.command == "collect":
        return collect_run(args.chapter, Path(args.results_dir) / args.chapter, Path(args.into) / args.chapter,
                           plans=not args.no_plans, prune=args.prune)
    if args.command == "seed-book-cache":
        seeded = seed_book_cache()
        print("book reuses executions of:", ", ".join(seeded) or "none")
        return 0
    if args.command == "book":
        stamp = build_book(offline=args.offline, if_stale=args.if_stale)
        if stamp["reused"]:
            print("_build/html is up to date with the sources: kept")
        else:
            print("book reused executions of:", ", ".join(stamp["seeded"]) or "none",
                  f"({stamp['seconds']:.0f} s{', no network' if stamp['offline'] else ''})")
        return 0
    if args.command == "figures":
        entries = export_figures()
        for chapter in sorted({e["chapter"] for e in entries}):
            n = sum(e["chapter"] == chapter for e in entries)
            print(f"{FIGURES_EXPORT / chapter}: {n} figures (PNG + SVG), figures.json")
        return 0 if entries else 1
    if args.command == "bench":
        from rnnbook import bench
        return bench.main()
    if args.command == "survey":
        import json
        parameters = {"profile": args.profile, **{n: parse_value(v) for n, v in args.p}}
        root = Path(args.results_dir or default_results_dir(args.profile) / "survey")
        record = survey_chapter(args.chapter, args.seeds, parameters, root, executor=executor)
        out = Path(args.out or root / "survey.json")
        out.write_text(json.dumps(record, indent=1) + "\n")
        print_survey(record)
        print(f"survey of {len(args.seeds)} runs: {out}")
        return 0
    if args.smoke and args.profile != "full":
        ap.error("--smoke runs the full profile's code at toy sizes: it needs --profile full")
    parameters = {"profile": args.profile, "device": args.device, **({"smoke": True} if args.smoke else {})}
    parameters.update({name: parse_value(value) for name, value in args.p})
    found, out = execute_chapter(args.chapter, parameters, args.results_dir, quiet=args.quiet,
                                 executor=executor)
    for c in found:
        mark = "PASS" if c.passed else "FAIL"
        print(f"{mark}  {c.id:<6} {c.verdict:<15} {format_value(c.value)[:60]}")
    failed = [c.id for c in found if not c.passed]
    if not found:
        print("no claims were recorded: a chapter must check its claims")
        return 1
    if args.smoke:  # toy sizes: the claims' code ran, their verdicts mean nothing
        print(f"smoke run: every cell ran, {len(found)} claims recorded (not judged); notebook: {out}")
        return 0
    print(f"{len(found) - len(failed)} of {len(found)} claims passed; notebook: {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
