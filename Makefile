# rnn-theory-book: `make book` builds the book, `make test` runs the tests. Both set up .venv first.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
READY := $(VENV)/.ready
JB_FLAGS := -W -n --keep-going

.PHONY: book test venv clean
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
	$(PY) -m rnnbook seed-book-cache
	RNNBOOK_QUIET=1 CUDA_VISIBLE_DEVICES= $(VENV)/bin/jupyter-book build . --all $(JB_FLAGS) \
		--config _build/_config.reuse.yml

test: $(READY)
	RNNBOOK_QUIET=1 CUDA_VISIBLE_DEVICES= $(PY) -m pytest

clean:
	rm -rf _build
