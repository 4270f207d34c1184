"""Speed of one training epoch of the stable-models chapter's JSB RNN against the author-style loop.

Both train the *stable* tanh RNN (nhid 128, projected onto ‖W‖₂ ≤ 1 after every step) for one
epoch over the 229 JSB training chorales, one chorale per step, in this process, on one thread,
with subnormal floats flushed. The baseline is the authors' fork's loop: ``nn.RNN`` and an SVD
projection after every step. The chapter's epoch uses the hand-written tanh recurrence
(:class:`rnnbook.stable_models.models.TanhRNN`) and leaves ``W`` as it is when the SVD finds it
feasible. Both report the epoch's test NLL; the last line printed is the speed-up ratio.

    .venv/bin/python bench/stable_models.py
"""
from __future__ import annotations

import time
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from rnnbook.stable_models import constraints, datasets, models, settings, train


def author_epoch(train: list[torch.Tensor], hidden: int, lr: float, clip: float) -> nn.Module:
    """The fork's loop: one chorale per step, summed-over-keys per-frame-mean BCE, SVD each step."""
    torch.manual_seed(0)
    rnn, dec = nn.RNN(88, hidden, batch_first=True), nn.Linear(hidden, 88)
    params = list(rnn.parameters()) + list(dec.parameters())
    opt = torch.optim.SGD(params, lr=lr)
    for i in torch.randperm(len(train), generator=torch.Generator().manual_seed(0)).tolist():
        x, y = train[i][None, :-1], train[i][None, 1:]
        loss = F.binary_cross_entropy_with_logits(dec(rnn(x)[0]), y, reduction="none").sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        with torch.no_grad():
            rnn.weight_hh_l0.copy_(constraints.project_spectral(rnn.weight_hh_l0))
    return rnn


def main() -> None:
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    data = datasets.load_jsb()
    cfg = settings.QUICK["jsb"]
    t0, c0 = time.perf_counter(), time.process_time()
    author_epoch(data["train"], cfg.hidden, lr=cfg.lr, clip=cfg.clip)
    t_author, c_author = time.perf_counter() - t0, time.process_time() - c0
    net = models.make_net("rnn", replace(cfg, epochs=1), 88, 88, 0.0, 0)
    t0, c0 = time.perf_counter(), time.process_time()
    tr = train.train_sequences("jsb", net, replace(cfg, epochs=1), data, "spectral", 0)
    t_ours, c_ours = time.perf_counter() - t0, time.process_time() - c0
    print(f"author-style loop (nn.RNN, 1 chorale/step, SVD every step): {t_author:.2f} s "
          f"(CPU {c_author:.2f} s)")
    print(f"chapter's epoch (batch {cfg.batch}, hand-written recurrence, W kept if ‖W‖₂ ≤ 1): "
          f"{t_ours:.2f} s (CPU {c_ours:.2f} s; includes the test evaluation, NLL {tr.test:.2f})")
    print(f"speed-up: {t_author / t_ours:.1f}x")


if __name__ == "__main__":
    main()
