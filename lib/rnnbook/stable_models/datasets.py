"""Data and metrics of the stable-models chapter (Miller & Hardt 2019, §4; spec §7).

Four benchmarks, read from the verified files of :mod:`rnnbook.data` (MAT / text only, never
unpickled): JSB Chorales (polyphonic music, NLL per frame), ATIS (slot filling, conlleval F1),
Penn Treebank characters (bits per character) and words / WikiText-2 (perplexity).
"""
from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass

import numpy as np
import scipy.io
import torch
import torch.nn.functional as F

from rnnbook.data import fetch


SPLITS = ("train", "valid", "test")
DataDir = str | os.PathLike | None

# Which registered files each task reads, per split (spec §7).
FILES = {
    "jsb": ("jsb-chorales", {s: "JSB_Chorales.mat" for s in SPLITS}),
    "atis": ("atis", {"train": "jointslu/atis-2.train.w-intent.iob",
                      "valid": "jointslu/atis-2.dev.w-intent.iob",
                      "test": "jointslu/atis.test.w-intent.iob"}),
    "ptb_char": ("ptb", {s: f"ptb.char.{s}.txt" for s in SPLITS}),
    "ptb_word": ("ptb", {s: f"ptb.{s}.txt" for s in SPLITS}),
    "wikitext2": ("wikitext-2", {s: f"{s}.txt" for s in SPLITS}),
}


def check_files(task: str, data_dir: DataDir) -> None:
    """Resolve (and if needed download and verify) every file of ``task`` before any compute; a
    missing undownloadable or corrupted file raises :class:`rnnbook.data.DataError`."""
    dataset, names = FILES[task]
    for name in dict.fromkeys(names.values()):
        fetch(dataset, name, data_dir)


# ---------------------------------------------------------------------------------------------
# JSB Chorales: T x 88 binary piano rolls; x = seq[:-1], y = seq[1:]
# ---------------------------------------------------------------------------------------------
def load_jsb(data_dir: DataDir = None) -> dict[str, list[torch.Tensor]]:
    """The 229 / 76 / 77 chorales as float32 ``T x 88`` tensors (``loadmat(p)['traindata'][0]``)."""
    mat = scipy.io.loadmat(fetch("jsb-chorales", "JSB_Chorales.mat", data_dir))
    return {s: [torch.tensor(np.asarray(a, dtype=np.float32)) for a in mat[f"{s}data"][0]]
            for s in SPLITS}


def jsb_nll(logits: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> tuple[float, int]:
    """Summed NLL (nats) of the 88 keys over the frames where ``mask`` is set, and the number of
    frames: the metric is :math:`\\sum_t\\sum_{88}\\mathrm{BCE} / \\sum_i (T_i - 1)`."""
    bce = F.binary_cross_entropy_with_logits(logits, y, reduction="none").sum(-1)
    return float((bce * mask).sum()), int(mask.sum())


# ---------------------------------------------------------------------------------------------
# ATIS: slot filling, conlleval chunk F1
# ---------------------------------------------------------------------------------------------
@dataclass
class Atis:
    words: dict[str, list[list[int]]]  # word ids per utterance, per split
    tags: dict[str, list[list[int]]]   # tag ids (test-only tags are ids >= len(train tags))
    word_vocab: list[str]
    tag_vocab: list[str]               # train tags first, then tags seen only in valid/test


def read_iob(path) -> list[tuple[list[str], list[str], str]]:
    """``BOS w1..wn EOS<TAB>O t1..tn INTENT`` lines as (words, slot tags, intent); BOS/EOS and
    their tags dropped."""
    out = []
    for line in open(path, encoding="utf-8").read().splitlines():
        if not line.strip():
            continue
        left, right = line.split("\t")
        w, t = left.split()[1:-1], right.split()
        tags, intent = t[1:-1], t[-1]
        assert len(w) == len(tags), line
        out.append((w, tags, intent))
    return out


def load_atis(data_dir: DataDir = None) -> Atis:
    """ATIS (4,478 / 500 / 893). Words unseen in train map to ``<unk>``; tag vocabulary from train,
    extended by tags seen only in valid/test (a model can never predict those: misses)."""
    dataset, names = FILES["atis"]
    raw = {s: read_iob(fetch(dataset, names[s], data_dir)) for s in SPLITS}
    word_vocab = ["<pad>", "<unk>"] + sorted({w for ws, _, _ in raw["train"] for w in ws})
    tag_vocab = sorted({t for _, ts, _ in raw["train"] for t in ts})
    tag_vocab += sorted({t for s in ("valid", "test") for _, ts, _ in raw[s] for t in ts}
                        - set(tag_vocab))
    wi, ti = {w: i for i, w in enumerate(word_vocab)}, {t: i for i, t in enumerate(tag_vocab)}
    words = {s: [[wi.get(w, 1) for w in ws] for ws, _, _ in raw[s]] for s in SPLITS}
    tags = {s: [[ti[t] for t in ts] for _, ts, _ in raw[s]] for s in SPLITS}
    return Atis(words, tags, word_vocab, tag_vocab)


def chunks(tags: list[str]) -> set[tuple[int, int, str]]:
    """conlleval's chunks (start, end, type): a chunk starts at ``B-X``, or at ``I-X`` after ``O``
    or a chunk of another type; it ends before the next ``O``, ``B-`` or change of type."""
    out, start, typ = set(), None, None
    for i, t in enumerate(list(tags) + ["O"]):
        prefix, _, kind = t.partition("-")
        inside = prefix == "I" and start is not None and kind == typ
        if start is not None and not inside:
            out.add((start, i - 1, typ))
            start, typ = None, None
        if prefix in ("B", "I") and not inside:
            start, typ = i, kind
    return out


def conlleval_f1(gold: list[list[str]], pred: list[list[str]]) -> float:
    """Micro chunk F1 in percent (exact (start, end, type) matches), as conlleval.pl."""
    tp = n_gold = n_pred = 0
    for g, p in zip(gold, pred, strict=True):
        cg, cp = chunks(g), chunks(p)
        tp, n_gold, n_pred = tp + len(cg & cp), n_gold + len(cg), n_pred + len(cp)
    if tp == 0:
        return 0.0
    precision, recall = tp / n_pred, tp / n_gold
    return 100 * 2 * precision * recall / (precision + recall)


# ---------------------------------------------------------------------------------------------
# Language modelling: PTB characters, PTB words, WikiText-2
# ---------------------------------------------------------------------------------------------
def char_tokens(text: str) -> list[str]:
    """PTB characters: split on ``' '``, drop empty strings, ``\\n`` becomes ``<eos>``."""
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    return [c for line in lines for c in [*line.split(" "), "<eos>"] if c]


def word_tokens(text: str) -> list[str]:
    """Words: whitespace split plus one ``<eos>`` per line (pytorch/examples' corpus)."""
    return [w for line in text.splitlines() for w in [*line.split(), "<eos>"]]


@dataclass
class Corpus:
    ids: dict[str, torch.Tensor]  # int64 token ids per split
    vocab: list[str]


def load_corpus(task: str, data_dir: DataDir = None, max_train_tokens: int | None = None,
                max_eval_tokens: int | None = None) -> Corpus:
    """``ptb_char``, ``ptb_word`` or ``wikitext2`` as id tensors. The vocabulary is that of all
    three splits (the full training set's, as valid and test add no new type), most frequent in
    the full training set first (ties alphabetically), as an adaptive softmax's clusters need;
    ``max_train_tokens`` keeps a prefix of train, ``max_eval_tokens`` (smoke run) of valid and
    test."""
    dataset, names = FILES[task]
    tokenize = char_tokens if task == "ptb_char" else word_tokens
    text = {s: fetch(dataset, names[s], data_dir).read_text(encoding="utf-8") for s in SPLITS}
    tokens = {s: tokenize(text[s]) for s in SPLITS}
    counts = Counter(tokens["train"])
    vocab = sorted(set().union(*tokens.values()), key=lambda t: (-counts[t], t))
    index = {t: i for i, t in enumerate(vocab)}
    tokens["train"] = tokens["train"][:max_train_tokens]
    for s in ("valid", "test"):
        tokens[s] = tokens[s][:max_eval_tokens]
    ids = {s: torch.tensor([index[t] for t in tokens[s]]) for s in SPLITS}
    return Corpus(ids, vocab)


def bpc(total_nll: float, n: int) -> float:
    """Bits per character: mean NLL per symbol (``<eos>`` included) over ln 2."""
    return total_nll / n / math.log(2)


def ppl(total_nll: float, n: int) -> float:
    """Perplexity: exp of the mean NLL per token (``<eos>`` included)."""
    return math.exp(total_nll / n)
