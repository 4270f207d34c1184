"""The stable-models chapter's tasks and parameters (Miller & Hardt 2019, §4, Table 1; spec §4, §7).

One :class:`TaskConfig` per task and profile (sizes, learning rates, clipping, epochs, schedules),
and :class:`Settings`, the chapter's resolved parameters: :func:`resolve` checks every parameter
before any compute and fills in the profile's defaults (the smoke run's toy sizes: :data:`SMOKE`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from rnnbook import params
from rnnbook.stable_models import constraints, datasets


TASKS = ("jsb", "atis", "ptb_char", "ptb_word", "wikitext2")
CELLS = ("rnn", "lstm")
METRIC = {"jsb": "NLL", "atis": "F1", "ptb_char": "bpc", "ptb_word": "ppl", "wikitext2": "ppl"}
TASK_NAMES = {"jsb": "JSB", "atis": "ATIS", "ptb_char": "PTB characters", "ptb_word": "PTB words",
              "wikitext2": "WikiText-2"}


# ============================================================================ settings
@dataclass(frozen=True)
class TaskConfig:
    """Training settings of one task (spec §4 table; every value but JSB's is our choice)."""

    task: str
    hidden: int
    lr: float
    clip: float
    epochs: int
    batch: int = 1
    emb: int = 0  # embedding size (0: the inputs are used as they are, JSB's 88 keys)
    bptt: int = 0  # language models: truncated-BPTT chunk length
    max_train_tokens: int | None = None
    schedule: str | None = None  # None, "fork" (÷10 if val > max of last 3), "plateau" (÷4)
    dropout: float = 0.0
    cutoffs: tuple[int, ...] = ()  # adaptive-softmax clusters of the word LM; () = full softmax
    max_sequences: int | None = None  # JSB, ATIS: the first n sequences of every split (smoke)
    max_eval_tokens: int | None = None  # language models: valid/test prefixes (smoke)


QUICK = {
    "jsb": TaskConfig("jsb", 128, lr=0.5, clip=1.0, epochs=15, batch=1),  # the fork: 1 chorale/step
    "atis": TaskConfig("atis", 128, lr=1.0, clip=1.0, epochs=12, batch=16, emb=64),
    "ptb_char": TaskConfig("ptb_char", 128, lr=2.0, clip=0.25, epochs=1, batch=32, emb=128,
                           bptt=100, max_train_tokens=1_500_000),
    "ptb_word": TaskConfig("ptb_word", 128, lr=5.0, clip=0.25, epochs=1, batch=20, emb=128,
                           bptt=35, max_train_tokens=200_000, cutoffs=(2000,)),
}
FULL = {
    "jsb": TaskConfig("jsb", 256, lr=0.5, clip=1.0, epochs=100, batch=1, schedule="fork"),
    "atis": TaskConfig("atis", 256, lr=1.0, clip=1.0, epochs=30, batch=16, emb=64,
                       schedule="best"),
    "ptb_char": TaskConfig("ptb_char", 512, lr=2.0, clip=0.25, epochs=20, batch=32, emb=128,
                           bptt=100, max_train_tokens=5_000_000, schedule="plateau"),
    "wikitext2": TaskConfig("wikitext2", 650, lr=20.0, clip=0.25, epochs=40, batch=20, emb=650,
                            bptt=35, schedule="plateau", dropout=0.2),
}

SMOKE = {
    # The smoke run's toy sizes (issue 24, item 2: `python -m rnnbook run stable_models --profile
    # full --smoke`, a test of the full profile's code in about half a minute of two CPU cores;
    # its numbers mean nothing). They replace the full profile's default sizes (explicit parameters
    # still win) and keep its branches: WikiText-2, schedules and best-validation selection, C9's
    # and C11's seeds, F4's LM panels, F5 and the contraction estimates on training inputs.
    "configs": {  # fields replaced in the task's full (ptb_word: quick) TaskConfig
        "jsb": dict(hidden=8, epochs=2, max_sequences=12),
        "atis": dict(hidden=8, emb=8, epochs=2, max_sequences=48),
        # language models: two training and two evaluation chunks (state carried between them)
        "ptb_char": dict(hidden=8, emb=8, epochs=2, max_train_tokens=6500, max_eval_tokens=2020),
        **{t: dict(hidden=8, emb=8, epochs=2, max_train_tokens=800, max_eval_tokens=400)
           for t in ("ptb_word", "wikitext2")}},  # the cost: a softmax over 33,278 words
    "n_seeds": 2,  # Table 1's seeds and C9's and C11's (standard deviations, medians: two at least)
    "settings": dict(lm_k=[5, 65], f5_k=[5, 40], f5_epochs=2,  # k below and above the chunk
                     contraction=(2, 3), e2_contraction=(2, 3)),  # (starts, steps)
    "theory": dict(c1_count=8, c1_Z=16, c1_lstms=2, c3_instances=2, c4_instances=2, c4_N=40,
                   c4_N_k=30),  # TheorySettings fields (rnnbook.stable_models.theory)
}


@dataclass
class Settings:
    """The chapter's resolved parameters (spec §4 parameters cell)."""

    profile: str
    tasks: list[str]
    configs: dict[str, TaskConfig]
    data_dir: str | None
    lstm_forget_bias: float
    lstm_constraint: str
    seeds: list[int]
    device: torch.device  # every model's training and the contraction estimates
    f2_k: list[int] = field(default_factory=list)  # training truncations of F2/F4 (JSB)
    c9_seeds: list[int] = field(default_factory=list)  # C9's unstable RNN at k = 2, 32
    c9_min_drop: float = 0.5  # C9: ‖W‖₂(k=2) − ‖W‖₂(k=32), mean over c9_seeds (quick: 0.2)
    c9_nll: bool = False  # C9's NLL half checked over c9_seeds (full), else reported
    c11_cells: tuple[str, ...] = ("rnn",)  # C11's models judged on medians over c9_seeds
    f5_k: list[int] = field(default_factory=list)
    f5_epochs: int = 6
    f5_ref: int = 65
    f5_task: str = "jsb"  # full profile: wikitext2, for the RNN and the LSTM (spec §4)
    f5_cells: tuple[str, ...] = ("rnn",)
    f3_task: str = "ptb_char"  # full profile: wikitext2
    lm_k: list[int] = field(default_factory=list)  # F4's language-model truncations (full)
    workers: int = 2  # training processes (one thread each)
    contraction: tuple[int, int] = (20, 200)  # C8: starts x ascent steps
    e2_contraction: tuple[int, int] = (10, 100)


def resolve(profile, device, seed, tasks, hidden_size, epochs, max_train_tokens, data_dir,
            lstm_forget_bias, lstm_constraint, n_seeds, smoke=False) -> Settings:
    """Check every parameter before any compute (raising :class:`rnnbook.ParameterError`, or
    :class:`rnnbook.data.DataError` naming ``data_dir`` and the file) and fill in the defaults;
    ``smoke`` (full profile only): :data:`SMOKE`'s toy sizes, below the explicit parameters."""
    params.choice("profile", profile, params.PROFILES)
    params.smoke(smoke, profile)
    dev = params.device(device)
    params.integer("seed", seed, lo=0)
    full = profile == "full"
    base = FULL if full else QUICK
    if tasks is None:
        tasks = list(base)
    tasks = [params.choice("tasks", t, TASKS) for t in params.sequence("tasks", tasks)]
    if len(set(tasks)) != len(tasks):
        raise params.ParameterError("tasks", tasks, f"distinct names among {list(TASKS)}")
    configs = {t: base.get(t, (QUICK | FULL)[t]) for t in tasks}
    if smoke:
        configs = {t: replace(c, **SMOKE["configs"][t]) for t, c in configs.items()}
    if hidden_size is not None:
        h = params.integer("hidden_size", hidden_size, lo=1)
        configs = {t: replace(c, hidden=h, emb=h if c.bptt and c.task != "ptb_char" else c.emb)
                   for t, c in configs.items()}
    if epochs is not None:
        per = epochs if isinstance(epochs, dict) else {t: epochs for t in tasks}
        for t, e in per.items():
            params.choice("epochs", t, tasks)
            configs[t] = replace(configs[t], epochs=params.integer("epochs", e, lo=1))
    if max_train_tokens is not None:
        n = params.integer("max_train_tokens", max_train_tokens, lo=1000)
        configs = {t: replace(c, max_train_tokens=n) if c.bptt else c for t, c in configs.items()}
    if data_dir is not None and not isinstance(data_dir, str):
        raise params.ParameterError("data_dir", data_dir, "None or a directory path")
    lstm_forget_bias = params.real("lstm_forget_bias", lstm_forget_bias)
    params.choice("lstm_constraint", lstm_constraint, constraints.LSTM_CONSTRAINTS)
    c9_min = SMOKE["n_seeds"] if smoke else 3  # C9's and C11's seeds at least; the full default
    if n_seeds is None:
        n_seeds = c9_min if full else 1
    n_seeds = params.integer("n_seeds", n_seeds, lo=1)
    for t in tasks:
        datasets.check_files(t, data_dir)
    wt2 = full and "wikitext2" in tasks  # the full profile's F3 and F5 task (spec §4)
    S = Settings(profile, tasks, configs, data_dir, lstm_forget_bias, lstm_constraint,
                 list(range(seed, seed + n_seeds)), dev,
                 f2_k=[1, 2, 4, 8, 16, 32, 64] if full else [2, 8, 32],
                 c9_seeds=list(range(seed, seed + max(c9_min, n_seeds))),
                 c9_min_drop=0.5 if full else 0.2, c9_nll=full,
                 c11_cells=CELLS if full else ("rnn",),
                 f5_k=[5, 10, 20, 40] if full else [5, 10, 40],
                 f5_epochs=20 if full else 6,
                 f5_task="wikitext2" if wt2 else "jsb",
                 f5_cells=CELLS if wt2 else ("rnn",),
                 f3_task="wikitext2" if wt2 else "ptb_char",
                 lm_k=[5, 10, 20, 40, 65] if full else [],
                 contraction=(20, 1000) if full else (20, 200),
                 e2_contraction=(20, 1000) if full else (10, 100))
    return replace(S, **SMOKE["settings"]) if smoke else S
