# rnn-theory-book: `make book` builds the book, `make test` runs the tests. Both set up .venv first.
#   make figures            every figure of the book as PNG + SVG in _build/figures/<chapter>/
#   make full               the full profiles into data/results/full/<chapter>/, then the book
#                           (DEVICE=auto: each chapter's own choice; DEVICE=cuda: all on the GPU)
#                           (EXECUTOR=local:N or slurm sends the sweeps out as jobs; RUN_FLAGS=
#                           takes further options, e.g. RUN_FLAGS="--slurm-config slurm.yaml")
#   make bench              every bench/*.py, one table of speed-up ratios
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
READY := $(VENV)/.ready
DEVICE ?= auto
EXECUTOR ?= inline
RUN_FLAGS ?=
CHAPTERS ?= $(sort $(basename $(notdir $(wildcard chapters/*.md))))
BOOK_FLAGS ?=
# Run last, in this order: the chapter executions start in the background when the tests are
# collected (tests/conftest.py) and test_chapters.py waits for them after the unit tests; the other
# two build the book (once, with no network where a namespace can be made) from those executions.
LAST_TESTS := tests/test_chapters.py tests/test_reliability.py tests/test_browser.py

.PHONY: book test venv clean figures full bench
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

venv: $(READY)

$(READY): requirements.txt constraints.txt lib/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	touch $@

# Every chapter executed in the quick profile on the CPU; executions left by `make test` are
# reused when the chapter's source and the library are unchanged (python -m rnnbook seed-book-cache).
book: $(READY)
	$(PY) -m rnnbook book $(BOOK_FLAGS)

test: $(READY)
	RNNBOOK_QUIET=1 CUDA_VISIBLE_DEVICES= $(PY) -m pytest --durations=15 \
		$(filter-out $(LAST_TESTS),$(wildcard tests/test_*.py)) $(LAST_TESTS)

figures: $(READY)
	$(PY) -m rnnbook book --if-stale
	$(PY) -m rnnbook figures

# A failed claim in one chapter does not stop the others; the exit status reports it.
full: $(READY)
	status=0; for chapter in $(CHAPTERS); do \
		$(PY) -m rnnbook run $$chapter --profile full --device $(DEVICE) \
			--executor $(EXECUTOR) $(RUN_FLAGS) --results-dir data/results/full || status=1; \
	done; $(PY) -m rnnbook book $(BOOK_FLAGS); exit $$status

bench: $(READY)
	$(PY) -m rnnbook bench

clean:
	rm -rf _build
