#!/usr/bin/env bash
# Prepare what bench/device_check.sh needs on the GPU machine (no network there). Run HERE, with
# network, from anywhere in the checkout that the session's `run` tool sends (normally /work/main):
#
#     bash bench/device_prepare.sh
#
# 1. .whl/      cp312 manylinux x86_64 wheels (--no-deps, each named) of what `python -m rnnbook run`
#               needs beyond the device image's packages (/work/.library/device/KINDS.md): papermill,
#               jupytext, nbformat, nbclient, ipykernel, IPython, myst-nb's glue and their needs,
#               at the versions constraints.txt pins.
# 2. .devdata/  data.tar.gz: the datasets (jsb-chorales, atis, ptb, wikitext-2) as data/...
# 3. /.whl/ and /.devdata/ in the shared .git/info/exclude, so that they travel only when carried.
# Prints the size of what travels (tracked files + .whl + .devdata; the limit is 64 MiB).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
PY=${PY:-python3}
DATA=${RNNBOOK_DATA:-$(pwd)/../shared/data}

# The image has: aiohttp click pyyaml requests tqdm attrs python-dateutil typing-extensions packaging
# psutil pygments markdown-it-py mdurl numpy scipy matplotlib sympy torch. Everything else below.
WHEELS=(
  papermill==2.7.0 entrypoints==0.4.2 tenacity==9.2.1                      # papermill
  nbformat==5.11.1 fastjsonschema==2.22.3 jsonschema==4.26.0               # nbformat
  jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
  jupyter_core==5.9.1 platformdirs==4.14.9 traitlets==5.16.1
  nbclient==0.11.0 jupyter_client==8.10.0 pyzmq==27.3.0 tornado==6.6.1     # the kernel's client
  ipykernel==7.4.0 comm==0.2.3 debugpy==1.8.22 nest-asyncio2==1.7.4        # the kernel
  matplotlib-inline==0.2.2
  ipython==9.18.1 ipython_pygments_lexers==1.1.1 jedi==0.20.1 parso==0.8.7 # IPython
  pexpect==4.9.0 ptyprocess==0.7.0 prompt_toolkit==3.0.53 wcwidth==0.9.4
  stack-data==0.6.3 executing==2.3.0 asttokens==3.0.2 pure_eval==0.2.4
  jupytext==1.19.6 mdit-py-plugins==0.7.0                                  # chapters/*.md
  myst-nb==1.4.0 docutils==0.21.2                                          # `from myst_nb import glue`
  submitit==1.5.4 cloudpickle==3.1.3                                       # --executor local:N
)

# The recipe of /work/.library/device/README.md: one version of each, binaries for CPython 3.12.
rm -rf .whl && mkdir -p .whl
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  --platform manylinux_2_5_x86_64 -d .whl "${WHEELS[@]}"
[ "$(ls .whl/*.whl | wc -l)" -eq "${#WHEELS[@]}" ] || { echo "expected ${#WHEELS[@]} wheels:"; ls .whl; exit 1; }

# The data, unpacked there by device_check.sh into /tmp/data (RNNBOOK_DATA=/tmp/data).
rm -rf .devdata && mkdir -p .devdata
tar -C "$(dirname "$DATA")" -czf .devdata/data.tar.gz --transform "s,^$(basename "$DATA"),data," \
  "$(basename "$DATA")"

exclude="$(git rev-parse --git-common-dir)/info/exclude"
mkdir -p "$(dirname "$exclude")"
for p in /.whl/ /.devdata/; do grep -qxF "$p" "$exclude" 2>/dev/null || echo "$p" >>"$exclude"; done

ls .whl
tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
carried=$(du -cb .whl .devdata | tail -1 | cut -f1)
untracked=$(git ls-files -z --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -1 | cut -f1)
mib() { echo "$(( ($1 + 1048575) / 1048576 )) MiB"; }
echo "wheels: $(ls .whl | wc -l) files, $(du -sh .whl | cut -f1); data: $(du -sh .devdata | cut -f1)"
echo "carried (.whl + .devdata): $(mib "$carried"); tracked: $(mib "$tracked");" \
     "untracked, not ignored: $(mib "${untracked:-0}"); total $(mib $((carried + tracked + ${untracked:-0}))) of 64 MiB"
