#!/usr/bin/env bash
# Smoke runs of every chapter, the stable-models bench and the next unfinished pieces of the full
# profiles (paper_scale.md, "Pieces and progress") on the lent GPU machine.
#
# ---- proposed for paper_scale.md ("On a lent GPU machine") ------------------------------------
# A session that is lent a GPU machine (the `run` tool: one H200, no network, Python 3.12 with
# CUDA torch but without papermill, jupytext, IPython, ipykernel, myst-nb) checks the full profile
# on it in one call of under ten minutes:
#
# 1. Here, once, with network: `bash bench/device_prepare.sh`. It puts the missing packages as
#    cp312 wheels in .whl/ (39 wheels, 16 MiB) and the datasets in .devdata/data.tar.gz (9 MiB),
#    both ignored by git, and prints what will travel (37 MiB with the book's tracked files, of
#    the 64 MiB allowed).
# 2. The call: run(command="bash bench/device_check.sh", carry=[".whl", ".devdata"],
#    timeout_s=600). The script keeps to BUDGET_S=540 seconds in all (e.g.
#    command="BUDGET_S=300 bash bench/device_check.sh" for a shorter one), so it returns before the
#    call's limit with what it has. It installs the wheels into /tmp/site, unpacks the data into
#    /tmp/data (RNNBOOK_DATA), runs `python3 -m rnnbook run <chapter> --profile full --smoke
#    --device cuda` for the five chapters (SMOKE_LIMIT_S=150 s each), then `bench/stable_models.py
#    --device cuda` (BENCH_LIMIT_S=120 s; the stacks against the author-style loop, the ratio issue
#    21 asks for; BENCH_LIMIT_S=0 skips it), then the full profiles of FULL_CHAPTERS (default
#    extrapolation, curse of memory, stable models) whose committed run has not finished at this
#    code's results version (`python -m rnnbook status --unfinished`), each for an equal share of the time left
#    (SMOKE_CHAPTERS="" BENCH_LIMIT_S=0 gives them all of it; extrapolation on the CPU, its chunks
#    as `--executor local:$(nproc)` jobs, FULL_FLAGS_<chapter> to change), each resuming from the pieces
#    committed in data/results/full/<chapter>/cache/. A run cut short keeps its finished pieces:
#    unpack the returned pieces-<chapter>.tar.gz into data/results/full/ and commit them, and the
#    next call goes on from there, as long as the code that computes them is the same (the cache is
#    keyed by the results version).
# 3. What comes back in $OUT (files_at): summary.json and summary.csv (per run: exit status, ok /
#    failed / timeout / skipped, wall seconds, peak GPU memory in MiB from nvidia-smi polled every
#    200 ms), env.txt (nvidia-smi, torch.cuda, the install's output), tails.txt (the last lines of
#    each run's log), logs.tar.gz (the whole logs) and pieces-<chapter>.tar.gz per full run (the
#    pieces it added, and claims.json, figures/ and run.json, a partial one if it stopped at its
#    share, `python -m rnnbook partial`); env.txt ends with
#    each chapter's `python -m rnnbook status`.
# The device time of a session is 15 minutes, a machine's start included: one such call, with no
# time to repeat it. A missing wheel or a broken install shows within the first minute (env.txt's
# import line fails and every run fails at once): fix it here and call again while the machine is
# still warm.
# ------------------------------------------------------------------------------------------------
#
# Here, without a GPU, in a Python 3.12 venv holding only packages of the device image (torch 2.11.0,
# numpy, scipy, matplotlib, sympy, pyyaml, tqdm, pandas, pillow, markdown-it-py, ...):
#     PY=/tmp/py312/bin/python3 DEVICE=cpu OUT=/tmp/out SCRATCH=/tmp/dc bash bench/device_check.sh
# No `set -e`: a failing run must not skip the others or the summary.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PY:-python3}                    # the interpreter (the device image's python3: 3.12, CUDA torch)
DEVICE=${DEVICE:-cuda}               # --device of every run
BUDGET_S=${BUDGET_S:-540}            # the whole script, installs and packing included
SMOKE_LIMIT_S=${SMOKE_LIMIT_S:-150}  # one smoke run at most
BENCH_LIMIT_S=${BENCH_LIMIT_S:-120}  # bench/stable_models.py at most (0: skipped)
# SMOKE_CHAPTERS: the chapters smoke-run first (default all five; "" for none)
SCRATCH=${SCRATCH:-/tmp}             # site/, data/, smoke/, full/, logs/ go here
OUT=${OUT:-$SCRATCH/out}
RESERVE_S=25                         # kept back at the end for packing $OUT
read -ra SMOKE <<<"${SMOKE_CHAPTERS-curse_of_memory extrapolation learning_dynamics stable_models synthesis}"
START=$(date +%s)
left() { echo $(( BUDGET_S - ($(date +%s) - START) - RESERVE_S )); }
LOGS=$SCRATCH/logs
mkdir -p "$OUT" "$LOGS"
echo "name,rc,status,wall_s,limit_s,gpu_peak_mib,gpu_base_mib,last_line" >"$OUT/summary.csv"

have_smi() { command -v nvidia-smi >/dev/null 2>&1; }
gpu_used() {  # MiB in use on the GPU now, or n/a
  have_smi && timeout 10 nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null \
    | head -1 | tr -d ' ' || echo n/a
}

# Processes of one run carry DEVICE_CHECK_TAG in their environment, the Jupyter kernel too (it
# runs in a session of its own, out of timeout's reach): end those still alive after the run.
end_tagged() {
  local tag=$1 sig pids p
  for sig in TERM KILL; do
    pids=""
    for p in /proc/[0-9]*; do
      grep -qsz "^DEVICE_CHECK_TAG=$tag\$" "$p/environ" && pids="$pids ${p#/proc/}"
    done
    [ -z "$pids" ] && return
    echo "ending leftover processes of $tag ($sig):$pids"
    kill -s "$sig" $pids 2>/dev/null
    sleep 3
  done
}

# run NAME LIMIT CMD...: CMD within LIMIT seconds, one line in summary.csv.
run() {
  local name=$1 limit=$2 log=$LOGS/$1.log status rc t0 t1 base peak poller="" last
  shift 2
  if [ "$limit" -lt 20 ]; then
    echo "$name,,skipped,0,$limit,n/a,n/a,no time left" >>"$OUT/summary.csv"
    echo "== $name: skipped (${limit} s left)"; return
  fi
  base=$(gpu_used); base=${base:-n/a}; peak=n/a
  if have_smi; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$LOGS/$name.mem" 2>/dev/null &
    poller=$!
  fi
  echo "== $name: $* (limit ${limit} s)"
  t0=$(date +%s%N)
  DEVICE_CHECK_TAG=$name.$$ timeout -k 15 "$limit" "$@" >"$log" 2>&1
  rc=$?
  t1=$(date +%s%N)
  end_tagged "$name.$$"
  if [ -n "$poller" ]; then
    kill "$poller" 2>/dev/null; wait "$poller" 2>/dev/null
    peak=$(sort -n "$LOGS/$name.mem" | tail -1 | tr -d ' '); peak=${peak:-n/a}
  fi
  case $rc in 0) status=ok ;; 124|137) status=timeout ;; *) status=failed ;; esac
  last=$(tr '\r' '\n' <"$log" | grep -v '^\s*$' | tail -1 | tr -d ',"' | cut -c1-150)
  local wall=$(( (t1 - t0) / 1000000 ))
  printf '%s,%s,%s,%d.%03d,%s,%s,%s,%s\n' "$name" "$rc" "$status" $((wall / 1000)) $((wall % 1000)) \
    "$limit" "$peak" "$base" "$last" >>"$OUT/summary.csv"
  echo "   $status (exit $rc) in $((wall / 1000)) s, GPU peak ${peak} MiB (before: ${base}); $last"
}

# summary.json from summary.csv, tails.txt and logs.tar.gz; also when the script is stopped.
finish() {
  trap - EXIT INT TERM
  "$PY" - "$OUT/summary.csv" "$OUT/summary.json" "$BUDGET_S" "$(( $(date +%s) - START ))" "$DEVICE" <<'EOF' \
    || echo "summary.json not written (see summary.csv)"
import csv, json, sys
src, dst, budget, total, device = sys.argv[1:]
rows = list(csv.DictReader(open(src)))
for r in rows:
    for k in ("rc", "wall_s", "limit_s", "gpu_peak_mib", "gpu_base_mib"):
        try: r[k] = None if r[k] == "" else float(r[k]) if "." in r[k] else int(r[k])
        except ValueError: pass  # n/a
json.dump({"device": device, "budget_s": int(budget), "script_s": int(total), "runs": rows},
          open(dst, "w"), indent=1)
EOF
  for f in "$LOGS"/*.log; do
    [ -e "$f" ] || continue
    echo "===== $(basename "$f") (last 40 lines)"; tr '\r' '\n' <"$f" | grep -v '^\s*$' | tail -40
  done >"$OUT/tails.txt"
  for f in "$LOGS"/*.log; do  # progress bars can make long logs: their last 4 MB are enough
    [ "$(stat -c %s "$f" 2>/dev/null || echo 0)" -gt 4000000 ] && tail -c 4000000 "$f" >"$f.tmp" && mv "$f.tmp" "$f"
  done
  tar -C "$SCRATCH" -czf "$OUT/logs.tar.gz" logs 2>/dev/null
  echo "== done in $(( $(date +%s) - START )) s; $OUT:"; ls -la "$OUT"
  cat "$OUT/summary.csv"
}
trap finish EXIT
trap 'exit 130' INT TERM

# ---- the packages and the data ----------------------------------------------------------------
{
  echo "== $(date -u +%FT%TZ) $(uname -srm); $(nproc) cores; python: $("$PY" -V 2>&1)"
  if have_smi; then timeout 20 nvidia-smi; else echo "nvidia-smi: n/a"; fi
  echo "== wheels into $SCRATCH/site"
  timeout 180 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SCRATCH/site" .whl/*.whl 2>&1 | grep -v "WARNING: Target directory"
  echo "pip install: exit ${PIPESTATUS[0]}"
  mkdir -p "$SCRATCH" && rm -rf "$SCRATCH/data" && timeout 60 tar -C "$SCRATCH" -xzf .devdata/data.tar.gz
  echo "data: exit $?, $(du -sh "$SCRATCH/data" 2>&1 | cut -f1)"
} 2>&1 | tee "$OUT/env.txt"
export RNNBOOK_DATA=$SCRATCH/data PYTHONPATH=$ROOT/lib:$SCRATCH/site RNNBOOK_QUIET=1 PYTHONUNBUFFERED=1
export JUPYTER_RUNTIME_DIR=$SCRATCH/jupyter-runtime IPYTHONDIR=$SCRATCH/ipython
timeout 120 "$PY" - <<'EOF' 2>&1 | tee -a "$OUT/env.txt"
import torch, numpy, papermill, jupytext, ipykernel, IPython, markdown_it, myst_nb.ext.glue, submitit
from jupytext.myst import is_myst_available  # the image's markdown-it-py with our mdit-py-plugins
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "| numpy", numpy.__version__, "| papermill", papermill.__version__, "| jupytext",
      jupytext.__version__, "| ipykernel", ipykernel.__version__, "| IPython", IPython.__version__,
      "| markdown-it-py", markdown_it.__version__, "MyST readable" if is_myst_available() else "NO MyST")
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"cuda:{i} {p.name}, {p.total_memory / 2**30:.0f} GiB, {p.multi_processor_count} SMs, "
          f"capability {p.major}.{p.minor}")
EOF

# ---- the runs -----------------------------------------------------------------------------------
for chapter in "${SMOKE[@]}"; do
  limit=$(left); [ "$limit" -gt "$SMOKE_LIMIT_S" ] && limit=$SMOKE_LIMIT_S
  run "smoke_$chapter" "$limit" "$PY" -m rnnbook run "$chapter" --profile full --smoke \
    --device "$DEVICE" --results-dir "$SCRATCH/smoke"
done
limit=$(left); [ "$limit" -gt "$BENCH_LIMIT_S" ] && limit=$BENCH_LIMIT_S
run bench_stable_models "$limit" "$PY" bench/stable_models.py --device "$DEVICE"
# The full profiles' next unfinished pieces: each chapter of FULL_CHAPTERS in turn, with an equal
# share of the time left, resuming from the pieces committed in data/results/full/<chapter>/cache/
# (they travel with the working tree). What comes back per chapter, in pieces-<chapter>.tar.gz:
# the pieces this call added (and plans), and the results (claims.json, run.json, figures/), a
# partial run record if the run did not finish; `tar -C data/results/full -xzf pieces-<chapter>.tar.gz` here puts them in place.
# Of those, only the chapters whose committed full run is not finished at this code's results
# version (`python -m rnnbook status --unfinished`): a finished one has nothing left to run.
read -ra WANT <<<"${FULL_CHAPTERS-extrapolation curse_of_memory stable_models}"
FULL=()
[ ${#WANT[@]} -gt 0 ] && read -ra FULL <<<"$("$PY" -m rnnbook status --unfinished "${WANT[@]}" | xargs)"
echo "full profiles with pieces left: ${FULL[*]:-none}" | tee -a "$OUT/env.txt"
# Each chapter's device and executor (FULL_FLAGS_<chapter> overrides; default --device $DEVICE).
# Extrapolation's linear students are faster on one CPU thread than on the GPU (paper_scale.md), so
# its chunks run as jobs on every core of the machine, one thread each.
FULL_FLAGS_extrapolation=${FULL_FLAGS_extrapolation:---device cpu --executor local:$(nproc)}
mkdir -p "$SCRATCH/full"
for i in "${!FULL[@]}"; do
  chapter=${FULL[$i]} dir=$SCRATCH/full/${FULL[$i]}
  rm -rf "$dir" && mkdir -p "$dir/cache"
  [ -d "data/results/full/$chapter/cache" ] && cp -a "data/results/full/$chapter/cache/." "$dir/cache/"
  find "$dir/cache" -type f | sed "s|^$SCRATCH/full/||" | sort >"$LOGS/$chapter.before"
  echo "$chapter: resuming from $(grep -c '\.npz$' "$LOGS/$chapter.before") committed pieces" | tee -a "$OUT/env.txt"
  share=$(( $(left) / (${#FULL[@]} - i) ))
  flags_var=FULL_FLAGS_$chapter
  read -ra flags <<<"${!flags_var:---device $DEVICE}"
  run "full_$chapter" "$share" "$PY" -m rnnbook run "$chapter" --profile full "${flags[@]}" \
    --results-dir "$SCRATCH/full"
  # a run stopped at its share: the record of its claims so far (partial results, issue 47; a run
  # that failed is refused, with the reason in env.txt); then status, which names that record
  [ -f "$dir/run.json" ] || "$PY" -m rnnbook partial "$chapter" --results-dir "$SCRATCH/full" 2>&1 \
    | tee -a "$OUT/env.txt"
  "$PY" -m rnnbook status "$chapter" --results-dir "$SCRATCH/full" 2>&1 | tee -a "$OUT/env.txt"
  # (not the stable-models weights, up to 187 MB a model: what the chapter reads from them is
  # cached, and a run that needs them trains their run again; paper_scale.md, "What a piece holds")
  (cd "$SCRATCH/full" && find "$chapter" -type f ! -path "*/cache/jobs/*" ! -name "*.ipynb" \
     ! -name "*-weights-*" | sort \
    | comm -13 "$LOGS/$chapter.before" - >"$LOGS/$chapter.new")
  if [ -s "$LOGS/$chapter.new" ]; then
    tar -C "$SCRATCH/full" -czf "$OUT/pieces-$chapter.tar.gz" -T "$LOGS/$chapter.new"
    echo "$chapter: $(wc -l <"$LOGS/$chapter.new") new files, $(du -h "$OUT/pieces-$chapter.tar.gz" | cut -f1) packed" | tee -a "$OUT/env.txt"
  fi
done
