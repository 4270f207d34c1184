"""Speed of the stable-models chapter's stacked training step against the author-style loop.

Stacks of M JSB tanh RNNs (nhid 128, one chorale per step, the quick profile's settings), half of
them stable (seeds 0..M/2-1, each unstable and projected onto ‖W‖₂ ≤ 1 after every step, as Table
1's pairs), at M = 8 and 32 by default. The baseline is the authors' fork's loop, model after
model: ``nn.RNN``, ``torch.optim.SGD``, gradient clipping, each chorale copied to the device, and
an SVD projection after every step of a stable model. The stack is the chapter's step
(:func:`rnnbook.stable_models.stack.sequence_epoch` on the split padded once on the device,
:meth:`~rnnbook.stable_models.stack.Stack.sgd_step_`; on CUDA the projection by matmuls,
:func:`~rnnbook.stable_models.constraints.project_spectral_ns`). Both train from the same weights
over the same ``--steps`` chorales in each member's order.

One untimed warm-up run of each first (a few steps: allocations, cuBLAS/cuSOLVER handles, oneDNN
kernels), then ``--repeats`` timed runs from fresh weights; the bench prints the median ms per
step (one step of all M models; the loop's is M model steps) with the range over repeats, the ratio
loop/stack, and the largest parameter difference between the two after the last run (float32
rounding, and on CUDA the two projections' ~1e-7 differences).

The GPU target (issue 47) is a ratio of at least 10 over the author-style loop, to be measured on a
lent H200 (``--device cuda``, called by ``bench/device_check.sh`` with a 120 s limit); on
4 December 2026 there, before the data and the projection moved to the device, epochs of eight
models gave 3.8x (all unstable) and 1.4x (half stable). On a CPU (one thread, subnormal floats
flushed) the ratio is reported, not judged: there the batched mat-vecs cost about as much per
model as one alone (MKL, memory-bound), so a stack gains little from more members.

    .venv/bin/python bench/stable_models.py [--device cpu|cuda] [--members 8 32] [--steps 16]
"""
from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from rnnbook.stable_models import constraints, datasets, models, settings, stack

WARMUP_STEPS = 3


def members_of(M: int) -> list[stack.Member]:
    """Seeds 0..M/2-1, each unstable and stable (Table 1's pairs)."""
    return [stack.Member(seed, c, None, 0.0) for seed in range(M // 2) for c in (None, "spectral")]


def author_loop(train: list[torch.Tensor], cfg: settings.TaskConfig, members: list[stack.Member],
                device: torch.device) -> Callable[[], list[dict[str, torch.Tensor]]]:
    """The fork's loop, model after model (built now, run by the returned function): one chorale
    per step in its seed's order, per-frame BCE summed over keys, SVD each stable step."""
    nets = []
    for m in members:
        net = models.make_net("rnn", cfg, 88, 88, 0.0, m.seed).to(device)
        rnn = nn.RNN(88, cfg.hidden, batch_first=True).to(device)
        rnn.load_state_dict(net.rnn.state_dict())
        nets.append((m, rnn, net.decoder))

    def run() -> list[dict[str, torch.Tensor]]:
        for m, rnn, decoder in nets:
            params = list(rnn.parameters()) + list(decoder.parameters())
            opt = torch.optim.SGD(params, lr=cfg.lr)
            for i in torch.randperm(len(train), generator=torch.Generator().manual_seed(m.seed)).tolist():
                x, y = train[i][None, :-1].to(device), train[i][None, 1:].to(device)
                loss = F.binary_cross_entropy_with_logits(decoder(rnn(x)[0]), y,
                                                          reduction="none").sum(-1).mean()
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(params, cfg.clip)
                opt.step()
                if m.constraint:
                    with torch.no_grad():
                        rnn.weight_hh_l0.copy_(constraints.project_spectral(rnn.weight_hh_l0))
        return [{"rnn.weight_hh_l0": rnn.weight_hh_l0, "decoder.weight": d.weight} for _, rnn, d in nets]
    return run


def stack_loop(train: list[torch.Tensor], cfg: settings.TaskConfig, members: list[stack.Member],
               device: torch.device) -> Callable[[], list[dict[str, torch.Tensor]]]:
    """The chapter's stacked steps over the same chorales (built now, run by the returned function)."""
    st = stack.make_stack("rnn", cfg, 88, 88, members, device)
    split = stack.device_split(*stack.sequence_data("jsb", {"train": train}, "train"), device)
    lr = torch.full((len(members),), cfg.lr, device=device)

    def run() -> list[dict[str, torch.Tensor]]:
        gens = [torch.Generator().manual_seed(m.seed) for m in members]
        for x, y, mask in stack.sequence_epoch(st, split, gens):
            st.sgd_step_(stack.seq_losses("jsb", st.decode(st.hidden(x)), y, mask), lr)
        return [st.member_state(j) for j in range(len(members))]
    return run


def timed(make: Callable, train, cfg, members, device, repeats: int) -> tuple[list[float], list[dict]]:
    """Seconds of ``--repeats`` runs from fresh weights after one warm-up run, and the last
    run's parameters."""
    sync = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    make(train[:WARMUP_STEPS], cfg, members, device)()
    sync()
    times = []
    for _ in range(repeats):
        run = make(train, cfg, members, device)
        t0 = time.perf_counter()
        params = run()
        sync()
        times.append(time.perf_counter() - t0)
    return times, params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--members", type=int, nargs="+", default=[8, 32], help="stack sizes (even)")
    ap.add_argument("--steps", type=int, default=16, help="chorales (steps) per timed run")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs (the median is reported)")
    args = ap.parse_args()
    device = torch.device(args.device)
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    train = datasets.load_jsb()["train"][:args.steps]
    cfg = settings.QUICK["jsb"]
    where = "one thread" if device.type == "cpu" else torch.cuda.get_device_name(device)
    print(f"JSB tanh RNNs (nhid {cfg.hidden}), half stable; {args.steps} chorales, one per step; "
          f"median of {args.repeats} after a warm-up; {where}")
    for M in args.members:
        members = members_of(M)
        (t_loop, ref), (t_stack, got) = (timed(make, train, cfg, members, device, args.repeats)
                                         for make in (author_loop, stack_loop))
        ms_loop, ms_stack = (1e3 * statistics.median(t) / args.steps for t in (t_loop, t_stack))
        spread = lambda t: f"{1e3 * min(t) / args.steps:.1f}-{1e3 * max(t) / args.steps:.1f}"  # noqa: E731
        diff = max(float((got[j][n] - r[n].detach()).abs().max()) for j, r in enumerate(ref) for n in r)
        print(f"{M} members: author-style loop {ms_loop:.2f} ms/step ({spread(t_loop)}), "
              f"stack {ms_stack:.2f} ms/step ({spread(t_stack)}), ratio {ms_loop / ms_stack:.1f}x; "
              f"largest parameter difference {diff:.1e}")


if __name__ == "__main__":
    main()
