"""Full linear RNNs of the learning-dynamics chapter (Proca et al., ICML 2025).

The aligned network behind the mode equations (K1), the neural tangent kernel (F6, C7) and the
sensory-integration task (F7, F8; C8, C9). The scalar mode equations are in
:mod:`rnnbook.learning_dynamics.theory`.

Network (§2): :math:`h_{t+1}=W_hh_t+W_xx_t`, :math:`h_1=0`, :math:`\\hat y_T=W_yh_{T+1}`. Float64
torch, batched over configurations with a leading axis.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch

from rnnbook import claims
from rnnbook.learning_dynamics import theory


DTYPE = torch.float64


# ----------------------------------------------------------------------------- data and network
def whitened_inputs(P: int, T: int, N: int, rng: np.random.Generator) -> np.ndarray:
    """App. P.4 with our convention (A1 as a *sum*): Gaussian inputs, centred, and the stacked
    (P, T·N) matrix whitened so that :math:`\\sum_p x_{p,t}x_{p,t'}^\\top=\\delta_{tt'}I` exactly
    (needs P >= T·N + 1). Returns (P, T, N)."""
    Z = rng.standard_normal((P, T * N))
    Z -= Z.mean(0)
    w, V = np.linalg.eigh(Z.T @ Z)
    return (Z @ V @ np.diag(w ** -0.5) @ V.T).reshape(P, T, N)


def orthogonal(N: int, rng: np.random.Generator) -> np.ndarray:
    """A random orthogonal matrix (QR of a Gaussian, signs fixed)."""
    Q, R = np.linalg.qr(rng.standard_normal((N, N)))
    return Q * np.sign(np.diag(R))


def forward(Wx, Wh, Wy, X, return_h: bool = False):
    """:math:`\\hat y_T=W_yh_{T+1}=\\sum_{i=1}^TW_yW_h^{T-i}W_xx_i` (§2) for weights (C, ., .) and
    inputs (C, P, T, N_x) (or (P, T, N_x), shared). Returns (C, P, N_y) (and h_{T+1})."""
    h = X.new_zeros(Wx.shape[0], X.shape[-3], Wh.shape[-1])
    for t in range(X.shape[-2]):
        h = h @ Wh.transpose(-1, -2) + X[..., t, :] @ Wx.transpose(-1, -2)
    y = h @ Wy.transpose(-1, -2)
    return (y, h) if return_h else y


def aligned_weights(a, b, c, U, V, R):
    """A3 (eqs. 197-202): :math:`W_x=R\\,\\mathrm{diag}(a)V^\\top`, :math:`W_h=R\\,\\mathrm{diag}(b)R^\\top`,
    :math:`W_y=U\\,\\mathrm{diag}(c)R^\\top` (R orthogonal, :math:`R_y=R_x^{-1}`)."""
    return R @ np.diag(a) @ V.T, R @ np.diag(b) @ R.T, U @ np.diag(c) @ R.T


def modes_of(Wx, Wh, Wy, U, V, R):
    """The inverse maps: :math:`a=\\mathrm{diag}(R^\\top W_xV)`, :math:`b=\\mathrm{diag}(R^\\top W_hR)`,
    :math:`c=\\mathrm{diag}(U^\\top W_yR)`, and the largest off-diagonal entry (0 if aligned)."""
    M = [R.T @ Wx @ V, R.T @ Wh @ R, U.T @ Wy @ R]
    off = max(float(np.abs(m - np.diag(np.diag(m))).max()) for m in M)
    return [np.diag(m).copy() for m in M], off


def k1_check(T: int = 4, N: int = 3, lr: float = 0.05, seed: int = 0) -> dict:
    """K1: one GD step of the aligned network on :math:`L=\\frac1{2PN_y}\\sum_p\\lVert y_{p,T}-\\hat
    y_{p,T}\\rVert^2` (autograd) equals one Euler step of eqs. 5-7 with :math:`\\tau=PN_y/\\eta`
    (:func:`rnnbook.learning_dynamics.theory.mode_grads`). Returns the relative difference of the modes
    and the largest off-diagonal entry after the step."""
    rng = np.random.default_rng(seed)
    P = 2 * T * N
    X = whitened_inputs(P, T, N, rng)
    U, V, R = (orthogonal(N, rng) for _ in range(3))
    S = rng.uniform(0.5, 1.5, (T, N))  # S_t: one singular value per mode and time
    Y = sum(X[:, t] @ (U @ np.diag(S[t]) @ V.T).T for t in range(T))
    a, b, c = (rng.uniform(0.2, 0.8, N) for _ in range(3))
    W = [torch.tensor(w, requires_grad=True) for w in aligned_weights(a, b, c, U, V, R)]
    L = 0.5 * ((forward(*(w[None] for w in W), torch.tensor(X)) - torch.tensor(Y)) ** 2).sum() / (P * N)
    L.backward()
    W1 = [(w - lr * w.grad).detach().numpy() for w in W]
    (a1, b1, c1), off = modes_of(*W1, U, V, R)
    tau = P * N / lr
    _, ga, gb, gc = theory.mode_grads(a, b, c, S.T, theory.powers(T))
    euler = np.concatenate([a - ga / tau, b - gb / tau, c - gc / tau])
    net = np.concatenate([a1, b1, c1])
    start = np.concatenate([a, b, c])
    return {"rel diff": float(np.linalg.norm(net - euler) / np.linalg.norm(euler)), "off-diagonal": off,
            "rel step": float(np.linalg.norm(euler - start) / np.linalg.norm(start))}


# ----------------------------------------------------------------------------- NTK (F6, C7)
def f6_networks(T: int, sigmas: Sequence[float], seeds: Sequence[int], N: int = 4, N_h: int = 4,
                P: int = 64, inits: Sequence[str] = ("aligned", "unaligned"),
                sigma_b: Sequence[float | None] = (None,)
                ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """F6's networks at length T (see :func:`ntk_sweep`), in the order (seed, init, σ_b, σ): inputs X
    (C, P, T, N), targets Y (C, P, N) of the constant task and initial weights [Wx, Wh, Wy]."""
    Xs, Ys, W0 = [], [], []
    for seed in seeds:
        rng = np.random.default_rng([seed, T])
        X = whitened_inputs(P, T, N, rng)
        U, V, R = (orthogonal(N, rng) for _ in range(3))
        Y = X.sum(1) @ (U @ V.T).T
        for init in inits:
            for sb in sigma_b:
                for sg in sigmas:
                    if init == "aligned":
                        W0.append(aligned_weights(np.full(N, sg), np.full(N, sg if sb is None else sb),
                                                  np.full(N, sg), U, V, R))
                    else:  # W_h at σ_b when given (A7's unaligned row), else at σ
                        scales = (sg, sg if sb is None else sb, sg)
                        W0.append(tuple(rng.normal(0, sc / math.sqrt(n_in), (n_out, n_in))
                                        for sc, (n_out, n_in) in zip(scales, ((N_h, N), (N_h, N_h), (N, N_h)))))
                    Xs.append(X), Ys.append(Y)
    return np.array(Xs), np.array(Ys), [np.array(w) for w in zip(*W0)]


def f6_schedule(T: int, N: int = 4, N_h: int = 4, lr_c: float = 0.2, t_total: float = 40.0
                ) -> tuple[float, int]:
    """F6's GD on :math:`\\frac12\\sum_p\\lVert\\hat y_p-y_p\\rVert^2`: rate lr_c/T² · N/N_h (our choice,
    spec §9; the kernel grows like N_h) and the steps that make the time ``t_total``."""
    return lr_c / T ** 2 * N / N_h, int(math.ceil(t_total * T ** 2 * N_h / (lr_c * N)))


def ntk_sweep(Ts: Sequence[int], sigmas: Sequence[float], seeds: Sequence[int], N: int = 4,
              N_h: int | None = None, P: int = 64, lr_c: float = 0.2, t_total: float = 40.0,
              inits: Sequence[str] = ("aligned", "unaligned"), sigma_b: Sequence[float] | None = None,
              device: str | torch.device = "cpu", progress: Callable[[Iterable], Iterable] = iter
              ) -> dict[str, np.ndarray]:
    """F6 / C7 (§3.5): kernel distance :math:`D=1-\\frac{\\langle K_0,K\\rangle_F}{\\lVert K_0\\rVert
    \\lVert K\\rVert}` between the NTK :math:`K=JJ^\\top`, :math:`J=\\partial\\,\\mathrm{vec}\\hat Y_T/\\partial
    \\theta` (:func:`ntk`), at initialisation and after training, on the constant task :math:`s_t=1`
    (:math:`Y_T=\\sum_tUV^\\top x_t`), N_x = N_y = N, N_h = ``N_h`` (default N). Inits: "aligned" (all
    modes σ; with ``sigma_b``, A7: b = σ_b and a = c = σ for every σ_b) or "unaligned"
    (:math:`\\mathcal N(0,\\sigma^2/N_\\text{in})`, fan-in; with ``sigma_b``, A7's unaligned row: W_h at σ_b). GD by :func:`f6_schedule`. All
    configurations of one T (:func:`f6_networks`, drawn on the CPU) form one batch, trained in torch
    on ``device`` (the main sweep and Figs. A5, A7 on the chapter's). Returns D and the final loss
    over the zero network's, per (T, init, σ_b, σ, seed)."""
    N_h = N_h or N
    sig_b = [None] if sigma_b is None else list(sigma_b)
    shape = (len(inits), len(sig_b), len(sigmas), len(seeds))
    D = np.full((len(Ts),) + shape, np.nan)
    loss_ratio = np.full_like(D, np.nan)
    for it, T in enumerate(progress(Ts)):
        X, Y, W = f6_networks(T, sigmas, seeds, N, N_h, P, inits, sig_b)
        X, *W = (torch.from_numpy(a).to(device) for a in (X, *W))
        Xc, Yc = columns(X, torch.from_numpy(Y).to(device))
        K0 = ntk(*W, X)
        rate, steps = f6_schedule(T, N, N_h, lr_c, t_total)
        eta = rate * P  # loss_grads averages over P; this is GD on the sum
        for _ in range(steps):
            _, gx, gh, gy, *_ = loss_grads(*W, Xc, Yc)
            W = [w.add(g, alpha=-eta) for w, g in zip(W, (gx, gh, gy))]
        L = loss_grads(*W, Xc, Yc)[0] * P
        K = ntk(*W, X)
        cos = (K0 * K).sum((1, 2)) / (_norm(K0) * _norm(K))
        ratio = L / (0.5 * (Yc ** 2).sum((1, 2)))
        cos, ratio = (a.cpu().numpy() for a in (cos, ratio))
        D[it] = (1 - cos).reshape((len(seeds),) + shape[:3]).transpose(1, 2, 3, 0)
        loss_ratio[it] = ratio.reshape((len(seeds),) + shape[:3]).transpose(1, 2, 3, 0)
    out = {"T": np.array(Ts), "sigma": np.array(sigmas), "D": D, "loss_ratio": loss_ratio, "N_h": N_h}
    if sigma_b is None:  # (T, init, σ, seed), init 0 aligned / 1 unaligned as before
        out["D"], out["loss_ratio"] = D[:, :, 0], loss_ratio[:, :, 0]
    else:
        out["sigma_b"] = np.array(sigma_b)
    return out


def ntk_by_T(cache, name: str, Ts: Sequence[int], sigmas: Sequence[float], seeds: Sequence[int],
             progress: Callable[[Iterable], Iterable] = iter, **kw) -> dict[str, np.ndarray]:
    """F6: :func:`ntk_sweep` one T at a time through the results cache (``cache.cached_batch``), so
    that an interrupted full-profile sweep resumes after its last finished T; the results are
    joined along T. ``kw`` goes to :func:`ntk_sweep` (its ``device`` is not part of the key)."""
    key = {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items() if k != "device"}
    cfgs = [{"T": T, "sigmas": list(sigmas), "seeds": list(seeds), **key} for T in Ts]
    res = cache.cached_batch(name, cfgs, lambda cs: [ntk_sweep([c["T"]], sigmas, seeds, **kw) for c in cs],
                             chunk_size=1, progress=progress)
    out = {k: np.concatenate([r[k] for r in res]) for k in ("D", "loss_ratio")}
    out.update({"T": np.array(Ts), "sigma": np.array(sigmas), "N_h": int(res[0]["N_h"]),
                "inits": list(kw.get("inits", ("aligned", "unaligned")))})
    if "sigma_b" in res[0]:
        out["sigma_b"] = np.array(res[0]["sigma_b"])
    return out


def _norm(K: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of each matrix of a batch."""
    return (K * K).sum((1, 2)) ** 0.5


def ntk(Wx: torch.Tensor, Wh: torch.Tensor, Wy: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
    r"""F6: closed-form NTK :math:`K=JJ^\top` of the linear RNN, batched over configurations. With
    :math:`g_t=W_yW_h^{T-t}` (so :math:`\partial\hat y/\partial h_{t+1}=g_t`), the Jacobians are
    :math:`\partial\hat y_i/\partial W_y=e_ih_{T+1}^\top`,
    :math:`\partial\hat y_i/\partial W_h=\sum_tg_{t,i}h_t^\top`,
    :math:`\partial\hat y_i/\partial W_x=\sum_tg_{t,i}x_t^\top`, so
    :math:`K_{pi,qj}=\delta_{ij}\langle h_{p,T+1},h_{q,T+1}\rangle+\sum_{t,t'}\langle g_{t,i},g_{t',j}\rangle
    (\langle h_{p,t},h_{q,t'}\rangle+\langle x_{p,t},x_{q,t'}\rangle)`. Shapes: W (C, ., .), X (C, P, T, N_x);
    returns (C, P·N_y, P·N_y). Equal to the autodiff kernel (tests)."""
    C, P, T, _ = X.shape
    hs = [0 * (X[:, :, 0] @ Wx.swapaxes(1, 2))]
    for t in range(T):
        hs.append(hs[-1] @ Wh.swapaxes(1, 2) + X[:, :, t] @ Wx.swapaxes(1, 2))
    g = [Wy]
    for _ in range(T - 1):
        g.insert(0, g[0] @ Wh)  # g_t = W_y W_h^{T-t}, t = 1..T
    G = torch.einsum("ctin,csjn->ctisj", *(torch.stack(g, 1),) * 2)
    H = torch.stack(hs[:T], 2)
    HX = torch.einsum("cptn,cqsn->cptqs", H, H) + torch.einsum("cptn,cqsn->cptqs", X, X)
    Ny = Wy.shape[1]
    eye = torch.eye(Ny, dtype=X.dtype, device=X.device)
    K = torch.einsum("ctisj,cptqs->cpiqj", G, HX) + torch.einsum("cpn,cqn,ij->cpiqj", hs[T], hs[T], eye)
    return K.reshape(C, P * Ny, P * Ny)


def app_i_flow_check(T: int = 4, N: int = 4, seed: int = 0, eps: float = 1e-6) -> dict[str, float]:
    r"""App. I (eq. 125, the step from which eqs. 129-134 build the paper's NTK): under gradient flow
    the output moves by :math:`\sum_i(W_yW_h^{T-i}\dot W_x+(T-i)W_yW_h^{T-i-1}\dot W_hW_x+\dot W_yW_h^{T-i}W_x)x_i`,
    which writes :math:`\frac{d}{dt}W_h^n` as :math:`nW_h^{n-1}\dot W_h`: true only if :math:`W_h` and
    :math:`\dot W_h=-\partial L/\partial W_h` commute. Compared, for an aligned network (A3, whitened
    inputs: they commute) and an unaligned one (entries N(0, 0.5²/N)) on the constant task, with the
    exact first-order change of the output (central differences along the gradient, step ``eps``).
    Returns the relative error of eq. 125 per network."""
    rng = np.random.default_rng(seed)
    X = whitened_inputs(4 * T * N, T, N, rng)
    U, V, R = (orthogonal(N, rng) for _ in range(3))
    Y = X.sum(1) @ (U @ V.T).T
    nets = {"aligned": aligned_weights(*(rng.uniform(0.3, 0.8, N) for _ in range(3)), U, V, R),
            "unaligned": tuple(rng.normal(0, 0.5 / math.sqrt(N), (N, N)) for _ in range(3))}
    Xc, Yc = columns(torch.from_numpy(X)[None], torch.from_numpy(Y)[None])
    out = {}
    for name, W in nets.items():
        Wt = [torch.from_numpy(w)[None] for w in W]
        G = [-g[0].numpy() for g in loss_grads(*Wt, Xc, Yc)[1:4]]  # the flow's direction
        f = lambda e: forward(*(torch.from_numpy(w + e * g)[None] for w, g in zip(W, G)), torch.from_numpy(X))[0].numpy()
        exact = (f(eps) - f(-eps)) / (2 * eps)
        Wx, Wh, Wy = W
        Gx, Gh, Gy = G
        P = lambda n: np.linalg.matrix_power(Wh, n)  # noqa: E731
        eq125 = sum(X[:, i - 1] @ (Wy @ P(T - i) @ Gx + (T - i) * Wy @ P(max(T - i - 1, 0)) @ Gh @ Wx
                                   + Gy @ P(T - i) @ Wx).T for i in range(1, T + 1))
        out[name] = float(np.linalg.norm(eq125 - exact) / np.linalg.norm(exact))
    return out


def ntk_check(ntk: dict, gate: float = 1e-3, d_gain: float = 0.2, gap: float = 0.05) -> dict:
    """C7: over converged cells (loss ratio <= ``gate``, mean over seeds) with σ <= 0.2, the mean D at
    T = 4 minus that at T = 1 (>= ``d_gain``: 0.2 quick, 0.3 full); and the magnitude of the fall with
    σ where D is not saturated, at T = 2: the mean D over σ <= 0.12 minus that over σ >= 0.39
    (>= ``gap``); for the unaligned init and the aligned one. Reported beside: the median over T >= 2
    of Spearman(D, σ) over every converged σ (judged until 5 December 2026), the range of converged D
    (Fig. 5's colour bar runs 0-0.8), the smallest rise over T = 1, and the largest standard deviation
    of D over seeds among σ <= 0.2 (nan with one seed), the scale against which ``d_gain`` is read.
    Reproduced: the unaligned rise and both gaps hold; passed unless some T > 1 moves the kernel less
    than T = 1 (the spec's FAIL rule) for the unaligned init."""
    out = {}
    Ts, sig = list(ntk["T"]), ntk["sigma"]
    for init, name in ((1, "unaligned"), (0, "aligned")):
        D = np.where(ntk["loss_ratio"][:, init] <= gate, ntk["D"][:, init], np.nan).mean(-1)
        small = sig <= 0.2
        gain = float(np.nanmean(D[Ts.index(4), small]) - np.nanmean(D[Ts.index(1), small]))
        rhos = []
        for it, T in enumerate(Ts):
            ok = np.isfinite(D[it])
            if T >= 2 and ok.sum() >= 3:
                rhos.append(claims.spearman(sig[ok], D[it, ok]))
        rho = float(np.median(rhos)) if rhos else math.nan
        d1 = np.nanmean(D[Ts.index(1), small])
        min_gain = float(min(np.nanmean(D[it, small]) - d1 for it, T in enumerate(Ts) if T > 1))
        conv = float(np.mean(np.isfinite(D[:, small])))
        per_seed = ntk["D"][:, init][:, small]  # (T, σ <= 0.2, seed)
        sd = (np.nanmax(np.where(np.isfinite(D[:, small]), per_seed.std(-1, ddof=1), np.nan))
              if per_seed.shape[-1] > 1 and np.isfinite(D[:, small]).any() else math.nan)
        D2 = D[Ts.index(2)]
        sig_gap = float(np.nanmean(D2[sig <= 0.12]) - np.nanmean(D2[(sig >= 0.39) & (sig <= 0.5)]))
        fig5 = D[:, sig <= 0.5]
        out[name] = {"D(4)-D(1)": gain, "min D(T>1)-D(1)": min_gain, "D gap sigma T=2": sig_gap,
                     "median Spearman(D, sigma)": rho, "D range": [float(np.nanmin(fig5)), float(np.nanmax(fig5))],
                     "converged (sigma<=0.2)": conv, "max sd of D over seeds": float(sd)}
    u, a = out["unaligned"], out["aligned"]
    out["reproduced"] = bool(u["D(4)-D(1)"] >= d_gain and u["D gap sigma T=2"] >= gap and a["D gap sigma T=2"] >= gap)
    out["passed"] = bool(u["min D(T>1)-D(1)"] > 0)  # the spec's FAIL rule: D(T>1) <= D(1)
    out["inconclusive"] = u["converged (sigma<=0.2)"] < 0.5
    return out


# ----------------------------------------------------------------------------- sensory task
def sensory_inputs(P: int, T: int, rng: np.random.Generator, baseline: float = 0.5) -> np.ndarray:
    """Our reimplementation of NeuroGym's ``MultiSensoryIntegration`` stimulus (neurogym 2.3.1,
    spec §8; neurogym is not installed): per trial a target side :math:`\\theta_s\\in\\{0,\\pi\\}`,
    coh ∈ {5, 15, 50}, p ~ U(0, 1), :math:`c_1=\\mathrm{coh}\\,p`, :math:`c_2=\\mathrm{coh}(1-p)`;
    4 inputs :math:`0.5+\\cos(\\theta_k-\\theta_s)c_m/200` (ring angles θ_k ∈ {0, π} × 2 modalities)
    plus :math:`\\mathcal N(0,0.1^2)` noise per step; no fixation channel. ``baseline`` replaces
    NeuroGym's 0.5 (0: centred inputs). Returns (P, T, 4)."""
    theta_s = rng.choice([0.0, math.pi], P)
    coh = rng.choice([5.0, 15.0, 50.0], P)
    p = rng.uniform(0, 1, P)
    cm = np.stack([coh * p, coh * (1 - p)], 1)  # (P, 2 modalities)
    ring = np.cos(np.array([0.0, math.pi])[None, :] - theta_s[:, None])  # (P, 2 angles)
    mean = baseline + (ring[:, None, :] * cm[:, :, None] / 200).reshape(P, 4)  # modality-major
    return mean[:, None, :] + rng.normal(0, 0.1, (P, T, 4))


def input_moment_ratio(baseline: float = 0.5, P: int = 100_000) -> float:
    r"""C9's κ: the top eigenvalue of the sensory inputs' second moment :math:`E[x x^\top]` with
    ``baseline`` over the centred inputs' (:func:`sensory_inputs`, ``P`` draws of one step, seed 0):
    about 31 for NeuroGym's 0.5, where the baseline direction (:math:`4\cdot0.5^2`) dwarfs the
    signal's and the noise's variance. A minimum's sharpness scales with it, so C9's rates do too."""
    def top(b: float) -> float:
        x = sensory_inputs(P, 1, np.random.default_rng(0), b)[:, 0]
        return float(np.linalg.eigvalsh(x.T @ x / P)[-1])
    return top(baseline) / top(0.0)


SENSORY_TARGETS = {"sum": lambda t, T: np.ones_like(t, float), "mean": lambda t, T: np.ones_like(t, float) / T,
                   "late": lambda t, T: 0.1 * t, "early": lambda t, T: 1.0 / t}


def sensory_targets(X: np.ndarray, rule: str) -> np.ndarray:
    """:math:`y_T=\\sum_tw_tx_t` with :math:`w_t` = 1 (sum), 1/T (mean), 0.1 t (late, App. L) or 1/t
    (early, App. L's form; App. P.4.3's printed target differs in our text copy, probably a conversion
    artefact)."""
    T = X.shape[1]
    w = SENSORY_TARGETS[rule](np.arange(1, T + 1), T)
    return np.einsum("t,ptn->pn", w, X)


def columns(X: torch.Tensor, Y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """F6, C9: inputs (C, P, T, N_x) and targets (C, P, N_y) in the layout of :func:`loss_grads`,
    (C, N_x, T·P) (x_1 of every trial, then x_2, ...) and (C, N_y, P): trials along the last axis,
    where torch's CPU batched products of these small matrices are up to three times faster than
    with trials along the rows (our timing, 3 December 2026), and all time steps in one product."""
    C, P, T, N_x = X.shape
    return X.permute(0, 3, 2, 1).reshape(C, N_x, T * P), Y.transpose(1, 2).contiguous()


def loss_grads(Wx: torch.Tensor, Wh: torch.Tensor, Wy: torch.Tensor, X: torch.Tensor, Y: torch.Tensor
               ) -> tuple[torch.Tensor, ...]:
    r"""F6, C9's sharpness: half MSE :math:`L=\frac1{2P}\sum_p\lVert \hat y_{p,T}-y_{p,T}\rVert^2` of :func:`forward`
    and its gradients by hand-written backpropagation through time, batched over a leading axis:
    W (C, ., .), X (C, N_x, T·P) and Y (C, N_y, P) (:func:`columns`); ``bench/learning_dynamics.py``
    times the F6 sweep that uses it against autograd.
    Returns (L, dWx, dWh, dWy, dL/dh_{T+1}, h_{T+1}), the last two (C, N_h, P)."""
    P = Y.shape[-1]
    T = X.shape[-1] // P
    U = torch.bmm(Wx, X)  # W_x x_t for every t: (C, N_h, T·P)
    hs = [torch.zeros_like(U[..., :P])]  # h_1 = 0
    for t in range(T):
        hs.append(torch.baddbmm(U[..., t * P:(t + 1) * P], Wh, hs[-1]))  # h_{t+1} = W_h h_t + W_x x_t
    r = (torch.bmm(Wy, hs[-1]) - Y) / P
    L = 0.5 * P * (r * r).sum((1, 2))
    dWy = torch.bmm(r, hs[-1].mT)
    ds = [torch.bmm(Wy.mT, r)]  # dL/dh_{T+1}
    WhT = Wh.mT
    for _ in range(T - 1):
        ds.append(torch.bmm(WhT, ds[-1]))  # dL/dh_t = W_h^T dL/dh_{t+1}
    D = torch.cat(ds[::-1], 2)  # dL/dh_{t+1}, t = 1..T: (C, N_h, T·P)
    dWh = torch.bmm(D, torch.cat(hs[:T], 2).mT)
    dWx = torch.bmm(D, X.mT)
    return L, dWx, dWh, dWy, ds[0], hs[-1]


def sensory_moments(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""F7, F8: the moments that the half MSE of a linear RNN depends on: with the stacked inputs
    :math:`\bar x=(x_1,\dots,x_T)` of each trial, :math:`\Sigma_{xx}=\frac1P\sum_p\bar x_p\bar x_p^\top`
    (C, T·N_x, T·N_x) and :math:`\Sigma_{yx}=\frac1P\sum_py_p\bar x_p^\top` (C, N_y, T·N_x), from X
    (C, P, T, N_x) and Y (C, P, N_y)."""
    C, P, T, N_x = X.shape
    Xb = X.reshape(C, P, T * N_x)
    return Xb.swapaxes(1, 2) @ Xb / P, Y.swapaxes(1, 2) @ Xb / P


def moment_grads(Wx: np.ndarray, Wh: np.ndarray, Wy: np.ndarray, Sxx: np.ndarray, Syx: np.ndarray
                 ) -> tuple[np.ndarray, ...]:
    r"""F7, F8: the gradients of :func:`loss_grads`'s half MSE from :func:`sensory_moments`, batched over
    a leading axis. :math:`\hat y=G\bar x` with :math:`G=W_y[M_1\cdots M_T]`,
    :math:`M_t=W_h^{T-t}W_x`, so :math:`L=\frac12\operatorname{tr}(G\Sigma_{xx}G^\top)-
    \operatorname{tr}(\Sigma_{yx}G^\top)+\text{const}` and :math:`\partial L/\partial G=G\Sigma_{xx}-
    \Sigma_{yx}`; back through :math:`M_t=W_hM_{t+1}`. No trial axis: (T·N_x)² numbers per network
    instead of T·N_x·P, in NumPy (small matrices: fewer and cheaper calls than torch's; a GD step
    at C9's size 5.7 to 7.2 times faster than with :func:`loss_grads`,
    ``bench/learning_dynamics_sensory.py``, 7 December 2026). Returns
    (dWx, dWh, dWy, [M_1 ... M_T]), the last (C, N_h, T·N_x)."""
    N_x = Wx.shape[2]
    T = Sxx.shape[1] // N_x
    Ms = [Wx]  # M_T = W_x, M_t = W_h M_{t+1}
    for _ in range(T - 1):
        Ms.append(Wh @ Ms[-1])
    M = np.concatenate(Ms[::-1], 2)
    R = Wy @ M @ Sxx - Syx  # dL/dG
    dM = Wy.swapaxes(1, 2) @ R
    gs = [dM[..., :N_x]]  # dL/dM_1, then accumulated down to dL/dM_T = dL/dW_x
    for t in range(1, T):
        gs.append(dM[..., t * N_x:(t + 1) * N_x] + Wh.swapaxes(1, 2) @ gs[-1])
    dWh = np.concatenate(gs[:-1], 2) @ M[..., N_x:].swapaxes(1, 2)  # sum_t dL/dM_t M_{t+1}^T
    return gs[-1], dWh, R @ M.swapaxes(1, 2), M


def train_sensory(rules: Sequence[str], T: int, seeds: Sequence[int], N_h: int = 4, P: int = 256,
                  init_scale: float = 0.1, lr: float | dict = 0.1, steps: int = 3000, n_rec: int = 150,
                  T_test: Sequence[int] = (), T_track: Sequence[int] = (), P_test: int = 1024,
                  baseline: float = 0.0) -> dict[str, np.ndarray]:
    r"""F7 / F8 / C8 / C9: unaligned RNNs (:math:`\mathcal N(0,\sigma^2/N_\text{in})`, σ =
    ``init_scale``) trained on the sensory task by plain full-batch GD (the paper's optimiser) on the
    half MSE of :func:`loss_grads`, all (rule, rate, seed) as one batch, on the CPU in NumPy float64
    through :func:`moment_grads` (the inputs and initial weights the same at every rate); ``lr`` may
    be a dict per rule, whose values may be sequences of rates (C9's sweep). ``baseline`` 0 centres
    the inputs (our choice, see the chapter); 0.5 is NeuroGym's. Records, ``n_rec`` times,
    the singular values of :math:`W_h` and :math:`W_yW_x`, :math:`\lVert\partial L/\partial h_{T+1}\rVert`,
    :math:`\lVert\partial L/\partial W_h\rVert`, App. L's :math:`dH_T/dt_\theta` (the change of the
    final hidden states per unit of training time, :math:`\frac1P\sum_p\lVert h_{p,T+1}(n)-h_{p,T+1}(n-1)
    \rVert/\eta`) and the relative MSE at each length of ``T_track`` (Fig. 6's loss over training at
    T = 50, 75, 100); then the relative MSE at each T_test. Returns NumPy arrays."""
    Xs, Ys, W0, lrs, rules_r = [], [], [], [], []
    for rule in rules:
        for rate in np.atleast_1d(lr[rule] if isinstance(lr, dict) else lr):
            for seed in seeds:  # the same inputs and initial weights at every rate
                rng = np.random.default_rng([seed, T])
                X = sensory_inputs(P, T, rng, baseline)
                Xs.append(X), Ys.append(sensory_targets(X, rule))
                W0.append([rng.normal(0, init_scale / math.sqrt(n_in), (n_out, n_in))
                           for n_out, n_in in ((N_h, 4), (N_h, N_h), (4, N_h))])
                lrs.append(float(rate)), rules_r.append(rule)
    X, Y = np.array(Xs), np.array(Ys)
    Sxx, Syx = sensory_moments(X, Y)
    Xb = X.reshape(len(X), P, -1).swapaxes(1, 2)  # stacked inputs, trials along the last axis
    Wx, Wh, Wy = (np.array(w) for w in zip(*W0))
    eta = np.array(lrs)[:, None, None]
    rules_r = np.array(rules_r)
    track = [_test_set(Tt, P_test, baseline, rules_r) for Tt in T_track]
    every = max(steps // n_rec, 1)
    rec = {k: [] for k in ("step", "sv_h", "sv_yx", "grad_h", "grad_Wh", "dH_dt", "loss", "rel_mse_track")}
    M_prev = None
    with np.errstate(over="ignore", invalid="ignore"):  # a diverged run is recorded as such (nan, inf)
        for step in range(steps + 1):
            gx, gh, gy, M = moment_grads(Wx, Wh, Wy, Sxx, Syx)
            if step % every == 0 or step == steps:
                _record(rec, step, (Wx, Wh, Wy), gh, M, M_prev, Xb, Y, eta, track)
            if step == steps:
                break
            M_prev = M
            Wx, Wh, Wy = Wx - eta * gx, Wh - eta * gh, Wy - eta * gy
    out = {k: np.array(v) for k, v in rec.items()}
    out["rel_mse"] = np.array([_rel_mse(Wx, Wh, Wy, *_test_set(Tt, P_test, baseline, rules_r))
                               for Tt in T_test]).T.reshape(len(Xs), len(T_test))
    out.update({"T_test": np.array(T_test), "T_track": np.array(T_track), "rule": rules_r, "T": T,
                "Wh": Wh, "Wx": Wx, "Wy": Wy, "X": X, "Y": Y, "lr": np.array(lrs)})
    return out


def _record(rec: dict[str, list], step: int, W: tuple[np.ndarray, ...], gh: np.ndarray, M: np.ndarray,
            M_prev: np.ndarray | None, Xb: np.ndarray, Y: np.ndarray, eta: np.ndarray,
            track: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
    """F7, F8: one record of :func:`train_sensory`: the final hidden states :math:`h_{T+1}=[M_1\\cdots
    M_T]\\bar x` of every trial (now and one step before), the residual and the loss."""
    Wx, Wh, Wy = W
    h = M @ Xb  # (C, N_h, P)
    r = (Wy @ h - Y.swapaxes(1, 2)) / Y.shape[1]
    rec["step"].append(step)
    rec["sv_h"].append(_svals(Wh))
    rec["sv_yx"].append(_svals(Wy @ Wx))
    rec["grad_h"].append(np.linalg.norm(Wy.swapaxes(1, 2) @ r, axis=(1, 2)))  # dL/dh_{T+1}
    rec["grad_Wh"].append(np.linalg.norm(gh, axis=(1, 2)))
    rec["dH_dt"].append(np.full(len(h), np.nan) if M_prev is None else
                        np.linalg.norm(h - M_prev @ Xb, axis=1).mean(1) / eta[:, 0, 0])
    rec["loss"].append(0.5 * Y.shape[1] * (r * r).sum((1, 2)))
    rec["rel_mse_track"].append([_rel_mse(Wx, Wh, Wy, *t) for t in track])


def _test_set(T: int, P: int, baseline: float, rules: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """F7: fresh sensory inputs of length T (seeded by T, shared by every run) and each run's targets."""
    X = sensory_inputs(P, T, np.random.default_rng([10_000 + T]), baseline)
    return X, np.array([sensory_targets(X, rule) for rule in rules])


def _rel_mse(Wx: np.ndarray, Wh: np.ndarray, Wy: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    r"""F7: relative MSE :math:`\sum_p\lVert\hat y_p-y_p\rVert^2/\sum_p\lVert y_p\rVert^2` of each run (nan if
    diverged), with :math:`\hat y=\sum_tM_tx_t`, :math:`M_t=W_yW_h^{T-t}W_x` (§2; one product over long
    test sequences instead of T steps)."""
    P, T, N_x = X.shape
    G = [Wy]
    for _ in range(T - 1):
        G.append(G[-1] @ Wh)  # W_y W_h^k, k = 0..T-1
    M = np.stack(G[::-1], 1) @ Wx[:, None]  # (C, T, N_y, N_x), t = 1..T
    yhat = X.reshape(P, T * N_x) @ M.swapaxes(2, 3).reshape(len(M), T * N_x, -1)
    return ((yhat - Y) ** 2).sum((1, 2)) / (Y ** 2).sum((1, 2))


def sharpness(sens: dict, iters: int = 100, eps: float = 1e-5) -> np.ndarray:
    """C9: largest Hessian eigenvalue λ_max of the half MSE of :func:`loss_grads` at each run's final
    weights (power iteration on finite-difference Hessian-vector products, all runs batched, on the
    CPU; nan for a diverged run). GD at rate η can only settle where λ_max < 2/η."""
    W = [torch.from_numpy(sens[k]) for k in ("Wx", "Wh", "Wy")]
    X, Y = columns(torch.from_numpy(sens["X"]), torch.from_numpy(sens["Y"]))
    v = [torch.from_numpy(np.random.default_rng(0).standard_normal(w.shape)) for w in W]
    lam = torch.full((len(X),), math.nan, dtype=DTYPE)
    for _ in range(iters):
        norm = torch.sqrt(sum((x * x).sum((1, 2)) for x in v))[:, None, None]
        v = [x / norm for x in v]
        gp = loss_grads(*(w + eps * x for w, x in zip(W, v)), X, Y)[1:4]
        gm = loss_grads(*(w - eps * x for w, x in zip(W, v)), X, Y)[1:4]
        hv = [(p - m) / (2 * eps) for p, m in zip(gp, gm)]
        lam = sum((x * h).sum((1, 2)) for x, h in zip(v, hv))
        v = hv
    return lam.numpy()


def _svals(M: np.ndarray) -> np.ndarray:
    """F7, F8: singular values of each matrix of a batch; nan for a matrix with non-finite entries."""
    out = np.full(M.shape[:-1], math.nan)
    ok = np.isfinite(M).all((-2, -1))
    if ok.any():
        out[ok] = np.linalg.svd(M[ok], compute_uv=False)
    return out


def sensory_check(sens: dict, mean_2T: float = 0.5) -> dict:
    """C8 (§3.6, Fig. 6): sum and mean runs: final :math:`W_h` singular values (the N_x largest: with
    N_h > N_x the others are not driven by the task) within 0.05 of 1, :math:`W_yW_x` ones within 10%
    of 1 (sum) or 1/T (mean); sum rel. MSE <= 1e-3 at every T_test and at the end of training at
    every length of Fig. 6 (``T_track``: 50, 75, 100); mean rel. MSE at 2T >= ``mean_2T`` and
    non-decreasing in |T_test - T| on each side. A converged mean network predicts T_test/T times the
    target, so its rel. MSE is :math:`(T_{test}/T-1)^2`, 1 at 2T (reported at Fig. 6's lengths with
    this value beside); the ratio to the value at T would divide by round-off."""
    T, Tt = int(sens["T"]), list(sens["T_test"])
    track = list(sens["T_track"])
    out, ok = {}, True
    for rule, target in (("sum", 1.0), ("mean", 1.0 / T)):
        r = sens["rule"] == rule
        sv_yx = sens["sv_yx"][-1][r]
        sv_h = sens["sv_h"][-1][r][:, :sv_yx.shape[-1]]  # the task drives only N_x of them
        e_h = float(np.abs(sv_h - 1).max())
        e_yx = float(np.abs(sv_yx / target - 1).max())
        mse = np.median(sens["rel_mse"][r], 0)
        final = np.median(sens["rel_mse_track"][-1][:, r], 1) if track else np.array([])
        row = {"max |sv(W_h)-1|": e_h, "max rel err sv(W_yW_x)": e_yx}
        row.update({f"rel MSE at T={t}": float(v) for t, v in zip(track, final) if t != T})
        good = e_h <= 0.05 and e_yx <= 0.1
        if rule == "sum":
            row["max rel MSE"] = float(max(mse.max(), final.max(initial=0)))
            good = good and row["max rel MSE"] <= 1e-3
        else:
            i_T, i_2T = Tt.index(T), Tt.index(2 * T)
            row["rel MSE at 2T (theory 1)"] = float(mse[i_2T])
            row.update({f"theory at T={t}": (t / T - 1) ** 2 for t in track if t != T})
            mono = bool(np.all(np.diff(mse[i_T:]) >= 0) and np.all(np.diff(mse[:i_T + 1]) <= 0))
            row["monotone in |dT|"] = mono
            good = good and mse[i_2T] >= mean_2T and mono
        out[rule] = row
        ok = ok and good
    out["passed"] = bool(ok)
    return out


RUN_AXIS = {"sv_h": 1, "sv_yx": 1, "grad_h": 1, "grad_Wh": 1, "dH_dt": 1, "loss": 1, "rel_mse_track": 2,
            "rel_mse": 0, "rule": 0, "Wh": 0, "Wx": 0, "Wy": 0, "X": 0, "Y": 0, "lr": 0}  # runs' axis per key


def runs_at(sens: dict, keep: np.ndarray) -> dict:
    """F8: the runs of :func:`train_sensory` selected by the boolean ``keep`` (e.g. one rate of C9's
    sweep), every other entry unchanged."""
    return {k: np.compress(keep, v, axis=RUN_AXIS[k]) if k in RUN_AXIS and v.ndim > RUN_AXIS[k] else v
            for k, v in sens.items()}  # rel_mse_track has no runs' axis when nothing was tracked


def rate_sweep_check(sens: dict, tail: int = 20, ratio_min: float = 1.5, lam: np.ndarray | None = None) -> dict:
    """C9 (App. L) without our rate: the late and early networks of :func:`train_sensory` at every rate
    of a sweep (the same seeds and inputs at each). The rate-free measure is the sharpness ratio
    :math:`\\lambda_\\max(\\text{early})/\\lambda_\\max(\\text{late})` (:func:`sharpness`) of the minima GD
    reaches at the sweep's smallest rate, per seed (median judged, >= ``ratio_min``). Per rate,
    :func:`stability_check`, and whether each network converged (dH_T/dt <= 1e-3). The window: a rate
    where :func:`stability_check` reproduces (the late network converges, the early one's dH_T/dt is
    ten times larger) and the early one has not converged (between 2/λ_early and 2/λ_late).
    Reproduced if the ratio holds, the window exists and no rate reverses it (early converged, late
    not); "not reproduced" (not passed) if the ratio is <= 1 or a rate reverses it; else partly. The
    control: at the smallest rate the early network converges too. ``lam``: the sharpness per run, if
    already known."""
    lam = sharpness(sens) if lam is None else lam
    rates = np.unique(sens["lr"])
    rows, per_rate = [], {}
    for rate in rates:
        at = sens["lr"] == rate
        c = stability_check(runs_at(sens, at), tail, lam[at])
        per_rate[float(rate)] = c
        rows.append({"rate": float(rate), "2/rate": float(2 / rate), "late dH/dt": c["late"]["dH/dt"],
                     "early dH/dt": c["early"]["dH/dt"], "late sharpness": c["late"]["sharpness"],
                     "early sharpness": c["early"]["sharpness"],
                     "late converged": bool(c["late"]["dH/dt"] <= 1e-3),
                     "early converged": bool(c["early"]["dH/dt"] <= 1e-3)})
    low = sens["lr"] == rates[0]
    lam_of = lambda rule: lam[low & (sens["rule"] == rule)]  # noqa: E731 (seeds in the same order)
    ratio = lam_of("early") / lam_of("late")
    med = float(np.median(np.nan_to_num(ratio, nan=np.inf)))
    window = any(c["verdict"] == "reproduced" and not row["early converged"]
                 for c, row in zip(per_rate.values(), rows))
    reverse = any(row["early converged"] and not row["late converged"] for row in rows)
    verdict = ("not reproduced" if med <= 1 or reverse else
               "reproduced" if med >= ratio_min and window else "partly")
    return {"sharpness ratio early/late (smallest rate)": med, "ratio per seed": [float(r) for r in ratio],
            "window": window, "reversed": reverse,
            "early converges at the smallest rate": rows[0]["early converged"],
            "table": rows, "per rate": per_rate, "verdict": verdict, "passed": verdict != "not reproduced"}


def stability_check(sens: dict, tail: int = 20, lam: np.ndarray | None = None) -> dict:
    """C9 (App. L, Fig. A8): late vs early importance on the paper's measure, :math:`dH_T/dt_\\theta`
    (the ``dH_dt`` of :func:`train_sensory`; median over the last ``tail`` records and over seeds),
    and the spread (max - min)/mean of :math:`W_h`'s singular values. A run that diverged counts as
    infinitely unstable (inf). Passed and "reproduced": the late network converged (dH/dt <= 1e-3,
    the paper's level, and spread <= 5%) and the early one's dH/dt is >= 10x the late one's;
    "not reproduced" if the early network is as stable as the late one (the spec's FAIL rule);
    "inconclusive" (not passed) if the late network did not converge, since then the rate, not the
    task, decides. The spec's early spread >= 20% is reported, not judged (the paper prints no
    level). Reported beside: :math:`\\lVert\\partial L/\\partial W_h\\rVert` (a cross-check that also
    vanishes at a fixed point), the spec's :math:`\\lVert\\partial L/\\partial h_{T+1}\\rVert` (the residual,
    which does not), and the sharpness λ_max (:func:`sharpness`) against 2/η; ``lam``: the sharpness
    per run, if already known."""
    out = {}
    lam = sharpness(sens) if lam is None else lam
    for rule in ("late", "early"):
        r = sens["rule"] == rule
        tail_of = lambda key: float(np.median(np.nan_to_num(sens[key][-tail:, r], nan=np.inf)))
        sv = sens["sv_h"][-1][r]
        spread = np.nan_to_num((sv.max(-1) - sv.min(-1)) / sv.mean(-1), nan=np.inf)
        out[rule] = {"dH/dt": tail_of("dH_dt"), "spread": float(np.median(spread)),
                     "dH/dt per seed": [float(np.median(np.nan_to_num(sens["dH_dt"][-tail:, i], nan=np.inf)))
                                        for i in np.nonzero(r)[0]],
                     "grad W_h (reported)": tail_of("grad_Wh"), "grad h (reported)": tail_of("grad_h"),
                     "sharpness": float(np.median(lam[r])), "2/lr": float(2 / sens["lr"][r][0])}
    la, ea = out["late"], out["early"]
    with np.errstate(all="ignore"):
        out["dH/dt early/late"] = float(np.divide(ea["dH/dt"], la["dH/dt"]))
    converged = la["dH/dt"] <= 1e-3 and la["spread"] <= 0.05
    out["passed"] = bool(converged and ea["dH/dt"] >= 10 * la["dH/dt"])
    out["verdict"] = "inconclusive" if not converged else "reproduced" if out["passed"] else "not reproduced"
    return out
