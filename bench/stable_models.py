"""Speed of the stable-models chapter's stacked training against the author-style loop, same sweeps.

Two sweeps of JSB tanh RNNs (nhid 128), one epoch over the 229 training chorales, one chorale per
step, in this process, on one thread, subnormal floats flushed: *seeds*, eight unstable RNNs of
seeds 0-7 (as C9's and the seed survey's runs differ), and *stable/unstable*, seeds 0-3 each
unstable and stable (projected onto ‖W‖₂ ≤ 1 after every step, as Table 1's pairs). The baseline
is the authors' fork's loop, model after model: ``nn.RNN``, ``torch.optim.SGD``, gradient
clipping and an SVD projection after every step of a stable model. The chapter trains each sweep
as one stack (:func:`rnnbook.stable_models.stack.train_stack`). Both start from the same weights
and see the same chorales; the bench prints, per sweep, the largest parameter difference between
the two (float32 rounding only), both times and the ratio, and the ratio over both sweeps last.
Each stable model needs one SVD per step in both (the projected RNN sits on the boundary of the
stable set, so the SVD is rarely skipped), which stacking cannot share: it bounds the second ratio.

On a CPU the first ratio is bounded by memory, not by the loop: at one chorale per step every time
step of every model reads its 128 x 128 W once forward and once backward, and the batched
mat-vecs cost about as much per model as one alone (MKL, 2.2 us per 128 x 128 mat-vec here, 3
December 2026), so a stack of 32 gains less than a stack of 8 (``--models 32``). On a GPU
(``--device cuda``) the loop pays kernel launches per model, the stack once for all, yet on a lent
H200 (4 December 2026) the ratios were 3.8x and 1.4x, 2.2x over both, not the tenfold hoped for.
There the loop's ``nn.RNN`` runs cuDNN's fused recurrence, one call per chorale, and the stack
launches its kernels at every time step; where the time goes was not profiled.

    .venv/bin/python bench/stable_models.py [--device cpu|cuda] [--models 8]
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from rnnbook.stable_models import constraints, datasets, models, settings, stack

def sweeps(n: int) -> dict[str, list[stack.Member]]:
    """*seeds*: n unstable RNNs of seeds 0..n-1; *stable/unstable*: seeds 0..n/2-1, each both ways."""
    return {"seeds": [stack.Member(seed, None, None, 0.0) for seed in range(n)],
            "stable/unstable": [stack.Member(seed, constraint, None, 0.0) for seed in range(n // 2)
                                for constraint in (None, "spectral")]}


def author_loop(train: list[torch.Tensor], cfg: settings.TaskConfig, m: stack.Member,
                device: torch.device) -> dict[str, torch.Tensor]:
    """The fork's loop for one model: one chorale per step, per-frame BCE summed over keys, SVD each
    step (for the stable model); the chapter's initialisation and chorale order of ``m.seed``."""
    net = models.make_net("rnn", cfg, 88, 88, 0.0, m.seed).to(device)
    rnn = nn.RNN(88, cfg.hidden, batch_first=True).to(device)
    rnn.load_state_dict(net.rnn.state_dict())
    params = list(rnn.parameters()) + list(net.decoder.parameters())
    opt = torch.optim.SGD(params, lr=cfg.lr)
    gen = torch.Generator().manual_seed(m.seed)
    for _ in range(cfg.epochs):
        for i in torch.randperm(len(train), generator=gen).tolist():
            x, y = train[i][None, :-1].to(device), train[i][None, 1:].to(device)
            logits = net.decoder(rnn(x)[0])
            loss = F.binary_cross_entropy_with_logits(logits, y, reduction="none").sum(-1).mean()
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(params, cfg.clip)
            opt.step()
            if m.constraint:
                with torch.no_grad():
                    rnn.weight_hh_l0.copy_(constraints.project_spectral(rnn.weight_hh_l0))
    return {"rnn.weight_hh_l0": rnn.weight_hh_l0.detach(), "decoder.weight": net.decoder.weight}


def timed(cfg: settings.TaskConfig, data, members: list[stack.Member], device: torch.device
          ) -> tuple[float, float, float]:
    """Seconds of the author-style loop and of the stack for one sweep, and the largest parameter
    difference between the two."""
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    t0 = time.perf_counter()
    ref = [author_loop(data["train"], cfg, m, device) for m in members]
    sync()
    t_author = time.perf_counter() - t0
    t0 = time.perf_counter()
    st = stack.make_stack("rnn", cfg, 88, 88, members, device)
    stack.train_stack("jsb", st, data)
    sync()
    t_stack = time.perf_counter() - t0
    diff = max(float((st.member_state(j)[n] - r[n].detach()).abs().max())
               for j, r in enumerate(ref) for n in r)
    return t_author, t_stack, diff


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--models", type=int, default=8, help="models per sweep (at least 8)")
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    data = datasets.load_jsb()
    cfg = replace(settings.QUICK["jsb"], epochs=1)
    total = [0.0, 0.0]
    where = "one thread" if device.type == "cpu" else torch.cuda.get_device_name(device)
    for name, members in sweeps(max(8, args.models)).items():
        t_author, t_stack, diff = timed(cfg, data, members, device)
        total = [total[0] + t_author, total[1] + t_stack]
        print(f"sweep {name!r}: {len(members)} JSB RNNs, 1 epoch, {where}; largest parameter "
              f"difference, stack vs author-style loop: {diff:.1e}")
        print(f"  author-style loop, model after model (nn.RNN, SGD, SVD every stable step): "
              f"{t_author:.2f} s")
        print(f"  one stack (batched matmuls, hand-written BPTT; includes the test evaluation): "
              f"{t_stack:.2f} s  ratio {t_author / t_stack:.1f}x")
    print(f"speed-up over both sweeps: {total[0] / total[1]:.1f}x")


if __name__ == "__main__":
    main()
