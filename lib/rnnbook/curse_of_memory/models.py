"""The curse-of-memory chapter's students, teacher and training (Zucchet & Orvieto, NeurIPS 2024).

Complex diagonal / LRU students :math:`h_t = \\lambda\\odot h_{t-1} + (\\gamma\\odot B)x_t`,
:math:`y_t = \\mathrm{Re}(Ch_t) + Dx_t` with :math:`\\lambda = \\exp(-e^{\\omega_\\nu} + i e^{\\omega_\\theta})`
(``exp``), :math:`\\nu e^{i\\theta}` (``polar``) or :math:`\\lambda_{re} + i\\lambda_{im}` (``default``);
dense (block-diagonal with ``n_heads`` blocks) students :math:`h_t = Ah_{t-1} + Bx_t`,
:math:`y_t = Ch_t + Dx_t`; the teacher.

Every linear time-invariant student is a causal convolution
:math:`y_t = \\sum_{k\\le t} K_k x_{t-k} + D x_t`, trained through the quadratic form of its kernel
error in the batch's lag moments, with all runs (learning rates,
seeds, nu0) stacked on a leading run axis and a batched Adam (spec §9), whose effective learning
rates are probed (K6).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from rnnbook.curse_of_memory.theory import DTYPE

if TYPE_CHECKING:
    from rnnbook.curse_of_memory.experiments import Settings

# results-cache pieces trained here (:func:`sweep`), keyed by this module's version (and those it
# imports): rnnbook.paths.PIECES
PIECES = ("teacher_student", "ladder", "e1")


TEACHER_SEED = 42  # spec §3: the teacher is fixed, run seeds vary the student and the data only
THETA0 = 3.14  # max_phase of the author repository


# ============================================================================ K6: Adam probe
def adam_effective_lr(m: torch.Tensor, v: torch.Tensor, k: int, lr: float | torch.Tensor,
                      betas=(0.9, 0.999), eps: float = 1e-8) -> torch.Tensor:
    """K6, Eq. cm-adam: the update Adam would apply to a gradient of ones from state (m, v, step k):
    :math:`\\eta\\frac{m'/(1-\\beta_1^{k'})}{\\sqrt{v'/(1-\\beta_2^{k'})}+\\epsilon}`, :math:`m'=\\beta_1m+1-\\beta_1`,
    :math:`v'=\\beta_2v+1-\\beta_2`, :math:`k'=k+1` (``source/train.py``)."""
    b1, b2 = betas
    m2, v2, k2 = b1 * m + (1 - b1), b2 * v + (1 - b2), k + 1
    return lr * (m2 / (1 - b1 ** k2)) / ((v2 / (1 - b2 ** k2)).sqrt() + eps)


def group_lr(eff: torch.Tensor) -> float:
    """K6 aggregate of one parameter group: :math:`10^{\\mathrm{mean}\\log_{10}(\\mathrm{relu(eff)}+10^{-8})}`."""
    return float(10 ** torch.log10(eff.clamp(min=0) + 1e-8).mean())


# ============================================================================ models
def eig_init(gen: torch.Generator, n: int, nu_min: float, nu_max: float, theta0: float = math.pi,
             heads: int = 1) -> torch.Tensor:
    """Dense recurrent matrix init of the repository (``recurrent_matrix_init``), per block:
    :math:`A_0\\sim\\mathcal N(0,1/n)`, eigenvalue moduli mapped to :math:`\\nu_{min}+(\\nu_{max}-\\nu_{min})\\tanh|l|`,
    phases scaled by θ0/π, :math:`A=\\mathrm{Re}(V\\mathrm{diag}(l')V^{-1})`. Returns (heads, n, n)."""
    out = []
    for _ in range(heads):
        A0 = torch.randn(n, n, generator=gen, dtype=DTYPE) / math.sqrt(n)
        l, V = torch.linalg.eig(A0)
        l2 = (nu_min + (nu_max - nu_min) * torch.tanh(l.abs())) * torch.exp(
            1j * torch.angle(l) * theta0 / math.pi)
        out.append((V @ torch.diag(l2) @ torch.linalg.inv(V)).real)
    return torch.stack(out)


@dataclass(frozen=True)
class ModelSpec:
    """A student (or teacher) architecture. kind "dense": block-diagonal A with ``heads`` blocks of
    size d/heads ("RNN" = 1 head). kind "diag": complex diagonal with parametrisation ``param``
    (exp / polar / default) and ``gamma`` (learned / none)."""

    name: str
    kind: str
    d: int
    heads: int = 1
    param: str = "exp"
    gamma: str = "learned"
    theta0: float = THETA0


def init_params(spec: ModelSpec, gen: torch.Generator, nu0: float) -> dict[str, torch.Tensor]:
    """Initial parameters of one student (spec §3): dense students get ν in [0, 1), diagonal ones
    :math:`\\nu=\\sqrt{U(1-\\nu_0^2)+\\nu_0^2}` (r_min = ν0, r_max = 1), θ = U[-θ0, θ0] mod 2π,
    :math:`B_{re},B_{im}\\sim\\mathcal N(0,1/d)`, :math:`C_{re},C_{im},D\\sim\\mathcal N(0,1)`."""
    d = spec.d
    if spec.kind == "dense":
        m = d // spec.heads
        A = eig_init(gen, m, 0.0, 1.0, spec.theta0, spec.heads)
        B = torch.randn(d, generator=gen, dtype=DTYPE)  # lecun normal, fan-in 1
        C = torch.randn(d, generator=gen, dtype=DTYPE) / math.sqrt(d)  # fan-in d
        D = torch.randn((), generator=gen, dtype=DTYPE)
        return {"A": A, "B": B, "C": C, "D": D}
    u = torch.rand(d, generator=gen, dtype=DTYPE)
    nu = torch.sqrt(u * (1 - nu0 ** 2) + nu0 ** 2).clamp(max=1 - 1e-7)
    theta = torch.remainder((2 * torch.rand(d, generator=gen, dtype=DTYPE) - 1) * spec.theta0,
                            2 * math.pi).clamp(min=1e-7)
    if spec.param == "exp":
        l1, l2 = torch.log(-torch.log(nu)), torch.log(theta)
    elif spec.param == "polar":
        l1, l2 = nu, theta
    else:
        l1, l2 = nu * torch.cos(theta), nu * torch.sin(theta)
    p = {"l1": l1, "l2": l2,
         "B_re": torch.randn(d, generator=gen, dtype=DTYPE) / math.sqrt(d),
         "B_im": torch.randn(d, generator=gen, dtype=DTYPE) / math.sqrt(d),
         "C_re": torch.randn(d, generator=gen, dtype=DTYPE),
         "C_im": torch.randn(d, generator=gen, dtype=DTYPE),
         "D": torch.randn((), generator=gen, dtype=DTYPE)}
    if spec.gamma == "learned":
        g = torch.sqrt(1 - nu ** 2)
        p["gamma"] = torch.log(g) if spec.param == "exp" else g
    return p


def diag_lambda(spec: ModelSpec, p: dict[str, torch.Tensor]) -> torch.Tensor:
    """λ of a diagonal student: exp :math:`\\exp(-e^{\\omega_\\nu}+ie^{\\omega_\\theta})`, polar
    :math:`\\nu e^{i\\theta}`, default :math:`\\lambda_{re}+i\\lambda_{im}` (``l1``, ``l2`` hold the two
    real parameters)."""
    if spec.param == "exp":
        return torch.exp(torch.complex(-torch.exp(p["l1"]), torch.exp(p["l2"])))
    if spec.param == "polar":
        return torch.complex(p["l1"] * torch.cos(p["l2"]), p["l1"] * torch.sin(p["l2"]))
    return torch.complex(p["l1"], p["l2"])


def input_weights(spec: ModelSpec, p: dict[str, torch.Tensor]) -> torch.Tensor:
    """:math:`\\gamma\\odot B` (complex) of a diagonal student."""
    B = torch.complex(p["B_re"], p["B_im"])
    if spec.gamma == "learned":
        g = torch.exp(p["gamma"]) if spec.param == "exp" else p["gamma"]
        B = g * B
    return B


def diag_polar(spec: ModelSpec, p: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """:math:`(\\log\\nu, \\theta)` of a diagonal student's λ, as real tensors: exp
    :math:`(-e^{\\omega_\\nu}, e^{\\omega_\\theta})` exactly, else the log-modulus and angle of
    :func:`diag_lambda`."""
    if spec.param == "exp":
        return -torch.exp(p["l1"]), torch.exp(p["l2"])
    lam = diag_lambda(spec, p)
    return torch.log(lam.abs()), lam.angle()


def kernel(spec: ModelSpec, p: dict[str, torch.Tensor], T: int) -> torch.Tensor:
    """Impulse response :math:`K_k`, k < T, batched over a leading run axis (Eq. cm-conv); see
    :func:`kernels`."""
    return kernels({spec: p}, T)


def kernels(P: dict[ModelSpec, dict[str, torch.Tensor]], T: int) -> torch.Tensor:
    """Eq. cm-conv for several architectures at once: every group's runs, in the order of ``P``.
    Dense: :math:`K_k = CA^kB`, the Krylov vectors :math:`A^kB` by doubling (:math:`\\log_2T`
    batched matmuls), one doubling for all groups of one block size. Diagonal, with
    :math:`c = C\\odot\\gamma\\odot B` and :math:`\\lambda = \\nu e^{i\\theta}`:
    :math:`K_k = \\sum_n\\nu_n^k(\\mathrm{Re}\\,c_n\\cos k\\theta_n - \\mathrm{Im}\\,c_n\\sin k\\theta_n)`,
    in real arithmetic (:func:`diag_polar`), one evaluation for all groups of one size."""
    buckets: dict[tuple, list[ModelSpec]] = {}
    for g, p in P.items():
        key = ("dense", p["A"].shape[-1]) if g.kind == "dense" else ("diag", p["C_re"].shape[-1])
        buckets.setdefault(key, []).append(g)
    out: dict[ModelSpec, torch.Tensor] = {}
    for (kind, m), gs in buckets.items():
        if kind == "dense":  # blocks of every group as one batch: (sum of R*H, m, m)
            Pw = torch.cat([P[g]["A"].flatten(0, 1) for g in gs])
            V = torch.cat([P[g]["B"].reshape(-1, m, 1) for g in gs])
            while V.shape[-1] < T:
                V = torch.cat([V, torch.bmm(Pw, V)], -1)
                if V.shape[-1] < T:
                    Pw = torch.bmm(Pw, Pw)
            Vs = V[..., :T].split([P[g]["A"].shape[0] * P[g]["A"].shape[1] for g in gs])
            for g, Vg in zip(gs, Vs):
                R = P[g]["A"].shape[0]
                out[g] = torch.einsum("rn,rnk->rk", P[g]["C"].reshape(R, -1), Vg.reshape(R, -1, T))
            continue
        polar = [diag_polar(g, P[g]) for g in gs]
        log_nu, theta = (torch.cat(t) for t in zip(*polar))
        c = torch.cat([torch.complex(P[g]["C_re"], P[g]["C_im"]) * input_weights(g, P[g]) for g in gs])
        k = torch.arange(T, device=log_nu.device, dtype=log_nu.dtype)
        kth = theta[..., None] * k  # (R, d, T)
        K = ((c.real[..., None] * torch.cos(kth) - c.imag[..., None] * torch.sin(kth))
             * torch.exp(log_nu[..., None] * k)).sum(-2)
        out.update(zip(gs, K.split([len(t[0]) for t in polar])))
    return torch.cat([out[g] for g in P])


def lag_moments(x: torch.Tensor) -> torch.Tensor:
    """Eq. cm-quad: the lag second moments of a batch, :math:`M_{kl}=\\mathrm{mean}_{b,t}\\,x_{t-k}x_{t-l}`
    (:math:`x_{t<0}=0`), for x (S, batch, T) -> (S, T, T). With :math:`G = x^\\top x`, M read
    backwards, :math:`\\tilde M_{ab} = M_{T-1-a,T-1-b}`, is a prefix sum along G's diagonals:
    :math:`\\tilde M_{ab} = \\sum_{s\\le\\min(a,b)}G_{s,s+|a-b|}/(\\text{batch}\\cdot T)`. One matmul, then
    O(T²) through strided views (no index tensors)."""
    S_, B, T = x.shape
    G = x.new_zeros(S_, 2 * T - 1, T)  # rows s + d < 2T - 1; the padding rows stay 0
    torch.matmul(x.transpose(1, 2), x, out=G[:, :T])
    P = G.as_strided((S_, T, T), (G.stride(0), T + 1, T)).cumsum(1)  # P[a, d] = sum_{s<=a} G[s+d, s]
    U = P.as_strided((S_, T, T), (T * T, T - 1, 1))  # U[a, b] = P[a, b - a] for b >= a
    return ((U.triu() + U.triu(1).mT) / (B * T)).flip(1, 2)


def batch_loss(dK: torch.Tensor, M: torch.Tensor, seed_of: torch.Tensor) -> torch.Tensor:
    """Eq. cm-quad: per run, :math:`\\tfrac12\\mathrm{mean}_{b,t}e_t^2` with
    :math:`e_t=\\sum_k\\Delta\\tilde K_kx_{t-k}`, as :math:`\\tfrac12\\Delta\\tilde K^\\top M\\Delta\\tilde K`;
    dK (R, T) the kernel errors (direct term in :math:`\\tilde K_0`), M (S, T, T) the
    :func:`lag_moments` of each seed's batch, ``seed_of`` (R,) the batch of each run (one matmul per
    seed, over that seed's runs)."""
    loss = dK.new_zeros(len(dK))
    for j in range(len(M)):
        idx = (seed_of == j).nonzero()[:, 0]
        d = dK[idx]
        loss = loss.index_put((idx,), 0.5 * ((d @ M[j]) * d).sum(-1))
    return loss


def kernel_error(K: torch.Tensor, D: torch.Tensor, K_star: torch.Tensor, D_star: torch.Tensor
                 ) -> torch.Tensor:
    """:math:`\\Delta\\tilde K = \\tilde K - \\tilde K^*` with :math:`\\tilde K_0 = K_0 + D` (the direct
    term acts at lag 0), K (R, T), D (R,)."""
    dK = K - K_star
    return torch.cat([dK[:, :1] + (D - D_star)[:, None], dK[:, 1:]], 1)


def predict_recurrent(spec: ModelSpec, p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The same outputs by the step-by-step recurrence (the reference for tests and the bench)."""
    R, nb, T = x.shape
    ys = []
    if spec.kind == "dense":
        H, m = p["A"].shape[1], p["A"].shape[2]
        h = x.new_zeros(R, nb, H, m)
        Bm, Cm = p["B"].reshape(R, 1, H, m), p["C"].reshape(R, 1, H, m)
        for t in range(T):
            h = torch.einsum("rhij,rbhj->rbhi", p["A"], h) + Bm * x[:, :, t, None, None]
            ys.append((h * Cm).sum((-1, -2)))
    else:
        lam = diag_lambda(spec, p)[:, None, :]
        Bg = input_weights(spec, p)[:, None, :]
        C = torch.complex(p["C_re"], p["C_im"])[:, None, :]
        h = torch.zeros(R, nb, spec.d, dtype=lam.dtype, device=x.device)
        for t in range(T):
            h = lam * h + Bg * x[:, :, t, None]
            ys.append((C * h).sum(-1).real)
    return torch.stack(ys, -1) + p["D"][:, None, None] * x


def stack_params(ps: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {k: torch.stack([p[k] for p in ps]) for k in ps[0]}


# ---------------------------------------------------------------------------- teachers
def teacher(nu0: float, d: int = 10, theta0: float = math.pi, seed: int = TEACHER_SEED
            ) -> dict[str, torch.Tensor]:
    """The dense teacher (``LinearSystem``, spec §3): d = 10, eigenvalue moduli in [ν0, 1),
    :math:`B, D\\sim\\mathcal N(0,1)`, :math:`C\\sim\\mathcal N(0,1/10)`; the draw is fixed (seed 42) and
    only the modulus map depends on ν0."""
    gen = torch.Generator().manual_seed(seed)
    A = eig_init(gen, d, nu0, 1.0, theta0)
    B = torch.randn(d, generator=gen, dtype=DTYPE)
    C = torch.randn(d, generator=gen, dtype=DTYPE) / math.sqrt(d)
    D = torch.randn((), generator=gen, dtype=DTYPE)
    return {"A": A, "B": B, "C": C, "D": D}


TEACHER_SPEC = ModelSpec("teacher", "dense", 10)


# ---------------------------------------------------------------------------- training
@dataclass(frozen=True)
class RunCfg:
    """One training run: a student ``spec`` on the teacher of ``nu0`` (θ0 ``teacher_theta0``),
    trained by ``opt`` ("adam", "adamw" with decoupled ``weight_decay``, or "sgd" with
    ``momentum``; E1)."""

    spec: ModelSpec
    nu0: float
    lr: float
    seed: int
    teacher_theta0: float = math.pi
    schedule: str = "cosine"  # or "constant" (the effective-lr probe of F5 follows a constant lr)
    opt: str = "adam"
    momentum: float = 0.0
    weight_decay: float = 0.0


def optimizer_step(p: dict, g: dict, st: dict, lr: torch.Tensor, k: int, sgd: torch.Tensor,
                   momentum: torch.Tensor, wd: torch.Tensor, betas=(0.9, 0.999),
                   eps: float = 1e-8) -> None:
    """One step on stacked parameters with per-run (R,) learning rate ``lr``, optimiser
    (``sgd`` True: SGD with ``momentum``, torch's convention :math:`m\\leftarrow\\mu m+g`,
    :math:`\\theta\\leftarrow\\theta-\\eta m`; else Adam) and decoupled weight decay ``wd``
    (AdamW: :math:`\\theta\\leftarrow\\theta(1-\\eta\\,wd)` first). SGD keeps its momentum in Adam's
    first-moment buffer."""
    b1, b2 = betas
    with torch.no_grad():
        for n, t in p.items():
            m, v = st[n]
            shape = (-1, *[1] * (t.dim() - 1))
            s_, mu = sgd.reshape(shape), momentum.reshape(shape)
            m.copy_(torch.where(s_, mu * m + g[n], b1 * m + (1 - b1) * g[n]))
            v.mul_(b2).addcmul_(g[n], g[n], value=1 - b2)
            adam = m / (1 - b1 ** k) / ((v / (1 - b2 ** k)).sqrt() + eps)
            t.mul_(1 - (lr * wd).reshape(shape))
            t.sub_(lr.reshape(shape) * torch.where(s_, m, adam))


def group_lr_batched(m: torch.Tensor, v: torch.Tensor, k: int, lr: torch.Tensor) -> torch.Tensor:
    """K6 per run: the authors' aggregate :func:`group_lr` of :func:`adam_effective_lr` over each
    run's entries of one parameter group (R, ...) -> (R,)."""
    eff = adam_effective_lr(m, v, k, lr.reshape(-1, *[1] * (m.dim() - 1)))
    return 10 ** torch.log10(eff.clamp(min=0) + 1e-8).reshape(len(eff), -1).mean(1)


def group_shares(m: torch.Tensor, v: torch.Tensor, k: int, lr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""F5/Fig. 9 per run: the shares of a group's entries (R, ...) whose :func:`adam_effective_lr` lies
    within 10% of Adam's ceiling (its value at m = v = 0, about :math:`3.16\eta`) and at or below 0
    (momentum against the probe: the entries the authors' log-scale scatter leaves out)."""
    shape = (-1, *[1] * (m.dim() - 1))
    eff = adam_effective_lr(m, v, k, lr.reshape(shape)).reshape(len(m), -1)
    ceiling = adam_effective_lr(torch.zeros(()), torch.zeros(()), k, lr).reshape(-1, 1)
    return (eff >= 0.9 * ceiling).double().mean(1), (eff <= 0).double().mean(1)


def _structure(spec: ModelSpec) -> ModelSpec:
    """The part of a spec that :func:`kernel` reads: runs whose specs differ only in name or θ0 (an
    initialisation setting) train in one stacked group."""
    return replace(spec, name=spec.kind, theta0=THETA0)


def _flatten(P: dict[ModelSpec, dict[str, torch.Tensor]], offsets: dict[ModelSpec, slice]
             ) -> tuple[torch.Tensor, list[tuple[ModelSpec, str, torch.Size]], torch.Tensor]:
    """Every group's stacked parameters as one flat vector (so that one optimiser step updates all
    runs), the layout (group, name, shape) of its pieces, and the run each entry belongs to."""
    layout = [(g, n, t.shape) for g, p in P.items() for n, t in p.items()]
    flat = torch.cat([P[g][n].reshape(-1) for g, n, _ in layout])
    run_of = torch.cat([torch.arange(offsets[g].start, offsets[g].stop).repeat_interleave(s[1:].numel())
                        for g, _, s in layout])
    return flat, layout, run_of


def _unflatten(flat: torch.Tensor, layout: list[tuple[ModelSpec, str, torch.Size]]
               ) -> dict[ModelSpec, dict[str, torch.Tensor]]:
    """The inverse of :func:`_flatten`, as views (one split: its backward is one concatenation)."""
    out: dict[ModelSpec, dict[str, torch.Tensor]] = {}
    for (g, n, s), t in zip(layout, flat.split([s.numel() for _, _, s in layout])):
        out.setdefault(g, {})[n] = t.view(s)
    return out


def train(cfgs: Sequence[RunCfg], T: int, steps: int, batch: int, tail: int = 100,
          device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32,
          progress: Callable[[Iterable], Iterable] = iter, probes: int = 50) -> dict[str, np.ndarray]:
    """Train R runs of any architectures as one tensor program (spec §3, §9). Each architecture
    computes the impulse responses of its runs (:func:`kernel`); the loss
    :math:`\\tfrac12\\mathrm{mean}_{b,t}(\\hat y-y)^2` on fresh N(0,1) inputs, drawn per step from
    each seed's own generator (runs of one seed see the same batches), is the quadratic form of
    the kernel error in the batch's lag moments (:func:`batch_loss`, :func:`lag_moments`);
    ONE optimiser step on all runs' parameters, flattened, with per-run optimiser and lr
    (:func:`optimizer_step`), cosine-decayed to 1e-7 or constant. float32 by default (losses are
    trustworthy above about 1e-10, spec §9). Returns, in the order of ``cfgs``, the final loss (mean
    of the last ``tail`` steps; inf if it diverged), thinned loss curves and Adam's effective lr per
    parameter group (K6, the authors' aggregate: ``eff_<name>`` at the end; ``effhist_<name>``, per
    unit learning rate, :math:`\\eta_{eff}/\\eta`, at ``probes`` evenly spaced steps
    ``probe_steps``; ``ceil_<name>`` and ``neg_<name>``, :func:`group_shares` at the end; NaN where a
    group does not exist or the run is SGD)."""
    dev = torch.device(device)
    groups: dict[ModelSpec, list[int]] = {}
    for i, c in enumerate(cfgs):
        groups.setdefault(_structure(c.spec), []).append(i)
    order = [i for idx in groups.values() for i in idx]  # run axis order: group by group
    offsets, o = {}, 0
    for g, idx in groups.items():
        offsets[g], o = slice(o, o + len(idx)), o + len(idx)
    P0 = {g: stack_params([init_params(cfgs[i].spec, torch.Generator().manual_seed(10_000 + cfgs[i].seed),
                                       cfgs[i].nu0) for i in idx]) for g, idx in groups.items()}
    flat, layout, run_of = _flatten(P0, offsets)
    theta = flat.to(dev, dtype).requires_grad_()
    run_of = run_of.to(dev)
    teachers = stack_params([teacher(cfgs[i].nu0, theta0=cfgs[i].teacher_theta0) for i in order])
    tp = {k: v.to(dev, dtype) for k, v in teachers.items()}
    with torch.no_grad():
        K_star = kernel(TEACHER_SPEC, tp, T)
    D_star = tp["D"]
    run_t = lambda f: torch.tensor([f(cfgs[i]) for i in order], device=dev)  # noqa: E731
    lr0 = run_t(lambda c: c.lr).to(dtype)
    cosine = run_t(lambda c: c.schedule == "cosine")
    sgd = run_t(lambda c: c.opt == "sgd")
    mom = run_t(lambda c: c.momentum).to(dtype)[run_of]
    wd = run_t(lambda c: c.weight_decay if c.opt == "adamw" else 0.0).to(dtype)[run_of]
    seeds = sorted({c.seed for c in cfgs})
    gens = [torch.Generator().manual_seed(20_000 + sd) for sd in seeds]
    seed_of = run_t(lambda c: seeds.index(c.seed))
    st = {"theta": (torch.zeros_like(theta), torch.zeros_like(theta))}
    R = len(cfgs)
    names = sorted({n for _, n, _ in layout})
    probe_at = sorted(set(np.linspace(1, steps, probes).round().astype(int).tolist()))
    hist = {n: np.full((R, len(probe_at)), np.nan) for n in names}
    losses = torch.zeros(R, steps, dtype=dtype, device=dev)  # on the device: no sync per step
    x = torch.empty(len(seeds), batch, T, dtype=dtype)
    for k in progress(range(1, steps + 1)):
        for j, gen in enumerate(gens):
            torch.randn(batch, T, generator=gen, dtype=dtype, out=x[j])
        M = lag_moments(x.to(dev))
        P = _unflatten(theta, layout)
        K = kernels(P, T)
        D = torch.cat([p["D"] for p in P.values()])
        loss = batch_loss(kernel_error(K, D, K_star, D_star), M, seed_of)
        (grad,) = torch.autograd.grad(loss.sum(), theta)
        ok = torch.isfinite(loss.detach())  # a diverged run stops moving
        lr = torch.where(cosine, 1e-7 + (lr0 - 1e-7) * 0.5 * (1 + math.cos(math.pi * (k - 1) / steps)),
                         lr0)
        optimizer_step({"theta": theta}, {"theta": torch.nan_to_num(grad) * ok[run_of]}, st, lr[run_of],
                       k, sgd[run_of], mom, wd)
        if k in probe_at:  # per unit learning rate: eta_eff / eta
            _group_rates(hist, probe_at.index(k), st["theta"], layout, offsets, k, torch.ones_like(lr))
        losses[:, k - 1] = loss.detach()
    eff = {n: np.full((R, 1), np.nan) for n in names}
    _group_rates(eff, 0, st["theta"], layout, offsets, steps, lr0)
    shares = _group_shares(st["theta"], layout, offsets, steps, lr0, names)
    is_sgd = sgd.cpu().numpy()
    losses = losses.cpu().double().numpy()
    final = losses[:, -tail:].mean(1)
    final = np.where(np.isfinite(final), final, np.inf)
    inv = np.argsort(order)  # back to the order of cfgs
    out = {"final": final[inv], "curve": _thin(losses)[inv], "probe_steps": np.array(probe_at)}
    for n in names:
        eff[n][is_sgd], hist[n][is_sgd] = np.nan, np.nan
        out[f"eff_{n}"], out[f"effhist_{n}"] = eff[n][inv, 0], hist[n][inv]
        for q in ("ceil", "neg"):
            shares[q][n][is_sgd] = np.nan
            out[f"{q}_{n}"] = shares[q][n][inv]
    return out


def _group_rates(out: dict[str, np.ndarray], j: int, state: tuple[torch.Tensor, torch.Tensor],
                 layout: list[tuple[ModelSpec, str, torch.Size]], offsets: dict[ModelSpec, slice],
                 k: int, lr: torch.Tensor) -> None:
    """K6: each run's :func:`group_lr_batched` of every parameter group, from the flat Adam state,
    into column ``j`` of ``out[name]`` (R, ·)."""
    m, v = (_unflatten(s, layout) for s in state)
    for g, n, _ in layout:
        sl = offsets[g]
        out[n][sl, j] = group_lr_batched(m[g][n], v[g][n], k, lr[sl]).cpu().numpy()


def _group_shares(state: tuple[torch.Tensor, torch.Tensor], layout: list[tuple[ModelSpec, str, torch.Size]],
                  offsets: dict[ModelSpec, slice], k: int, lr: torch.Tensor, names: Sequence[str]
                  ) -> dict[str, dict[str, np.ndarray]]:
    """F5/Fig. 9: each run's :func:`group_shares` of every parameter group, from the flat Adam state:
    ``{"ceil": {name: (R,)}, "neg": {name: (R,)}}`` (NaN where a run has no such group)."""
    m, v = (_unflatten(s, layout) for s in state)
    R = len(lr)
    out = {q: {n: np.full(R, np.nan) for n in names} for q in ("ceil", "neg")}
    for g, n, _ in layout:
        sl = offsets[g]
        c, z = group_shares(m[g][n], v[g][n], k, lr[sl])
        out["ceil"][n][sl], out["neg"][n][sl] = c.cpu().numpy(), z.cpu().numpy()
    return out


def _thin(losses: np.ndarray, points: int = 200) -> np.ndarray:
    """Loss curves averaged over windows (for plots)."""
    R, n = losses.shape
    w = max(n // points, 1)
    return losses[:, : n // w * w].reshape(R, -1, w).mean(-1)


def sweep(cache, name: str, cfgs: Sequence[RunCfg], S: Settings, device, progress,
          steps: int | None = None, batch: int | None = None) -> list[dict]:
    """Train ``cfgs`` (any architectures) as batched programs, one results-cache entry per seed (a
    piece of a full run, issue 47); one row per config with its final loss, loss curve and effective
    lrs. With ``S.by_seed`` (the full profile) each seed's runs are one program, stored as it ends,
    so a stopped run keeps every finished seed and an executor can run seeds side by side; else
    (quick) all seeds are one program. A run's result does not depend on its program: the runs of
    a seed draw the same input batches wherever they train (:func:`train`)."""
    if name not in PIECES:  # its entries are keyed by this module's version only
        raise ValueError(f"name: {name!r} is not a piece this module declares; allowed: {', '.join(PIECES)}")
    steps = steps or S.steps
    batch = batch or S.batch
    runs: dict[int, list[RunCfg]] = {}
    where: dict[int, list[int]] = {}  # each seed's runs' places in ``cfgs``
    for i, c in enumerate(cfgs):
        runs.setdefault(c.seed, []).append(c)
        where.setdefault(c.seed, []).append(i)
    keys = [{"steps": steps, "T": S.T, "batch": batch, "tail": S.tail, "seed": sd,
             "runs": [_run_key(c) for c in rs]} for sd, rs in runs.items()]

    def compute(chunk: list[dict]) -> list[dict]:
        res = train([c for k in chunk for c in runs[k["seed"]]], S.T, steps, batch, S.tail, device,
                    progress=progress)
        at = np.cumsum([0] + [len(runs[k["seed"]]) for k in chunk])
        return [{n: v if n == "probe_steps" else v[a:b] for n, v in res.items()}
                for a, b in zip(at[:-1], at[1:])]

    got = dict(zip(runs, cache.cached_batch(name, keys, compute, chunk_size=1 if S.by_seed else None)))
    rows: list[dict] = [{}] * len(cfgs)
    for sd, rs in runs.items():
        res = got[sd]
        for j, c in enumerate(rs):
            row = {"model": c.spec.name, "nu0": c.nu0, "lr": c.lr, "seed": c.seed,
                   "theta0": c.teacher_theta0, "schedule": c.schedule, "opt": c.opt,
                   "momentum": c.momentum, "final": float(res["final"][j]), "curve": res["curve"][j],
                   "probe_steps": res["probe_steps"]}
            for k, v in res.items():
                if k.startswith(("eff_", "ceil_", "neg_")) and np.isfinite(v[j]):
                    row[k] = float(v[j])
                if k.startswith("effhist_") and np.any(np.isfinite(v[j])):
                    row[k] = v[j]
            rows[where[sd][j]] = row
    return rows


def _run_key(c: RunCfg) -> tuple:
    """A run's configuration as plain values (its results-cache key)."""
    return (c.spec.__dict__, c.nu0, c.lr, c.seed, c.teacher_theta0, c.schedule, c.opt, c.momentum,
            c.weight_decay)
