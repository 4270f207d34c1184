"""Full linear RNNs of the learning-dynamics chapter (Proca et al., ICML 2025): the aligned network
behind the mode equations (K1), the neural tangent kernel (F6, C7) and the sensory-integration task
(F7, F8; C8, C9). The scalar mode equations are in :mod:`rnnbook.learning_dynamics`.

Network (§2): :math:`h_{t+1}=W_hh_t+W_xx_t`, :math:`h_1=0`, :math:`\\hat y_T=W_yh_{T+1}`. Float64
torch, batched over configurations with a leading axis.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch
from scipy.stats import spearmanr

from rnnbook import learning_dynamics as ld

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
    (:func:`rnnbook.learning_dynamics.mode_grads`). Returns the relative difference of the modes
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
    _, ga, gb, gc = ld.mode_grads(a, b, c, S.T, ld.powers(T))
    euler = np.concatenate([a - ga / tau, b - gb / tau, c - gc / tau])
    net = np.concatenate([a1, b1, c1])
    start = np.concatenate([a, b, c])
    return {"rel diff": float(np.linalg.norm(net - euler) / np.linalg.norm(euler)), "off-diagonal": off,
            "rel step": float(np.linalg.norm(euler - start) / np.linalg.norm(start))}


# ----------------------------------------------------------------------------- NTK (F6, C7)
def ntk_sweep(Ts: Sequence[int], sigmas: Sequence[float], seeds: Sequence[int], N: int = 4,
              P: int = 64, lr_c: float = 0.2, t_total: float = 40.0,
              progress: Callable[[Iterable], Iterable] = iter) -> dict[str, np.ndarray]:
    """F6 / C7 (§3.5): kernel distance :math:`D=1-\\frac{\\langle K_0,K\\rangle_F}{\\lVert K_0\\rVert
    \\lVert K\\rVert}` between the NTK :math:`K=JJ^\\top`, :math:`J=\\partial\\,\\mathrm{vec}\\hat Y_T/\\partial
    \\theta`, at initialisation and after training, on the constant task :math:`s_t=1`
    (:math:`Y_T=\\sum_tUV^\\top x_t`), N_x = N_h = N_y = N. Init: aligned (all modes σ) or unaligned
    (:math:`\\mathcal N(0,\\sigma^2/N)`, fan-in). GD on :math:`\\frac12\\sum_p\\lVert\\cdot\\rVert^2` with
    lr = ``lr_c``/T² (our choice, spec §9) for ``t_total``/lr steps. All σ, inits and seeds of one
    T form one batch. Returns D, the final loss over that of the zero network, per (T, init, σ, seed)."""
    D = np.full((len(Ts), 2, len(sigmas), len(seeds)), np.nan)
    loss_ratio = np.full_like(D, np.nan)
    for it, T in enumerate(progress(Ts)):
        Xs, Ys, W0 = [], [], []
        for seed in seeds:
            rng = np.random.default_rng([seed, T])
            X = whitened_inputs(P, T, N, rng)
            U, V, R = (orthogonal(N, rng) for _ in range(3))
            Y = X.sum(1) @ (U @ V.T).T
            for init in (0, 1):
                for sg in sigmas:
                    if init == 0:
                        W0.append(aligned_weights(*(np.full(N, sg),) * 3, U, V, R))
                    else:
                        W0.append(tuple(rng.normal(0, sg / math.sqrt(N), (N, N)) for _ in range(3)))
                    Xs.append(X), Ys.append(Y)
        X, Y = np.array(Xs), np.array(Ys)
        W = [np.array(w) for w in zip(*W0)]
        K0 = _ntk([torch.from_numpy(w) for w in W], torch.from_numpy(X))
        eta = lr_c / T ** 2 * P  # loss_grads averages over P; this is GD on the sum
        with np.errstate(all="ignore"):
            for _ in range(int(math.ceil(t_total * T ** 2 / lr_c))):
                _, gx, gh, gy, _ = loss_grads(*W, X, Y)
                W = [w - eta * g for w, g in zip(W, (gx, gh, gy))]
            L = loss_grads(*W, X, Y)[0] * P
        W, X, Y, L = [torch.from_numpy(w) for w in W], torch.from_numpy(X), torch.from_numpy(Y), torch.from_numpy(L)
        K = _ntk(W, X)
        cos = (K0 * K).sum((1, 2)) / (K0.norm(dim=(1, 2)) * K.norm(dim=(1, 2)))
        shape = (len(seeds), 2, len(sigmas))
        D[it] = (1 - cos).numpy().reshape(shape).transpose(1, 2, 0)
        loss_ratio[it] = (L / (0.5 * (Y ** 2).sum((1, 2)))).numpy().reshape(shape).transpose(1, 2, 0)
    return {"T": np.array(Ts), "sigma": np.array(sigmas), "D": D, "loss_ratio": loss_ratio}


def _ntk(W: list[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """NTK :math:`K=JJ^\\top` of every configuration, J by forward-mode autodiff (torch.func)."""
    from torch.func import jacfwd, vmap

    def f(wx, wh, wy, x):
        return forward(wx[None], wh[None], wy[None], x[None])[0].reshape(-1)

    J = vmap(jacfwd(f, argnums=(0, 1, 2)))(*[w.detach() for w in W], X)
    J = torch.cat([j.reshape(j.shape[0], j.shape[1], -1) for j in J], -1)
    return J @ J.transpose(1, 2)


def ntk_check(ntk: dict, gate: float = 1e-3, d_gain: float = 0.2) -> dict:
    """C7: over converged cells (loss ratio <= ``gate``) with σ <= 0.2, the mean D at T = 4 minus
    that at T = 1 (>= ``d_gain``), and for T >= 2 the median over T of Spearman(D, σ) over converged
    σ (<= -0.6); for the unaligned init (judged) and the aligned one (reported)."""
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
                rhos.append(float(spearmanr(sig[ok], D[it, ok]).statistic))
        rho = float(np.median(rhos)) if rhos else math.nan
        d1 = np.nanmean(D[Ts.index(1), small])
        min_gain = float(min(np.nanmean(D[it, small]) - d1 for it, T in enumerate(Ts) if T > 1))
        conv = float(np.mean(np.isfinite(D[:, small])))
        out[name] = {"D(4)-D(1)": gain, "min D(T>1)-D(1)": min_gain, "median Spearman(D, sigma)": rho,
                     "converged (sigma<=0.2)": conv}
    u = out["unaligned"]
    out["reproduced"] = bool(u["D(4)-D(1)"] >= d_gain and u["median Spearman(D, sigma)"] <= -0.6)
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


SENSORY_TARGETS = {"sum": lambda t, T: np.ones_like(t, float), "mean": lambda t, T: np.ones_like(t, float) / T,
                   "late": lambda t, T: 0.1 * t, "early": lambda t, T: 1.0 / t}


def sensory_targets(X: np.ndarray, rule: str) -> np.ndarray:
    """:math:`y_T=\\sum_tw_tx_t` with :math:`w_t` = 1 (sum), 1/T (mean), 0.1 t (late, App. L) or 1/t
    (early, App. L's form; App. P.4.3's is garbled)."""
    T = X.shape[1]
    w = SENSORY_TARGETS[rule](np.arange(1, T + 1), T)
    return np.einsum("t,ptn->pn", w, X)


def loss_grads(Wx, Wh, Wy, X, Y):
    r"""Half MSE :math:`L=\frac1{2P}\sum_p\lVert \hat y_{p,T}-y_{p,T}\rVert^2` of :func:`forward` and its
    gradients by hand-written backpropagation through time (numpy, batched over a leading axis:
    W (C, ., .), X (C, P, T, N_x), Y (C, P, N_y)); 5-10x faster than autograd for these tiny nets.
    Returns (L, dWx, dWh, dWy, dL/dh_{T+1})."""
    P, T = X.shape[1], X.shape[2]
    hs = [np.zeros(X.shape[:2] + (Wh.shape[-1],))]
    WhT, WxT = Wh.swapaxes(1, 2), Wx.swapaxes(1, 2)
    for t in range(T):
        hs.append(hs[-1] @ WhT + X[:, :, t] @ WxT)
    r = (hs[-1] @ Wy.swapaxes(1, 2) - Y) / P
    L = 0.5 * P * (r * r).sum((1, 2))
    dWy = r.swapaxes(1, 2) @ hs[-1]
    d = r @ Wy  # dL/dh_{T+1}
    dh = d
    dWh, dWx = np.zeros_like(Wh), np.zeros_like(Wx)
    for t in range(T, 0, -1):  # h_{t+1} = W_h h_t + W_x x_t
        dT = d.swapaxes(1, 2)
        dWh += dT @ hs[t - 1]
        dWx += dT @ X[:, :, t - 1]
        d = d @ Wh
    return L, dWx, dWh, dWy, dh


def train_sensory(rules: Sequence[str], T: int, seeds: Sequence[int], N_h: int = 4, P: int = 256,
                  init_scale: float = 0.1, lr: float | dict = 0.1, steps: int = 3000, n_rec: int = 150,
                  T_test: Sequence[int] = (), P_test: int = 1024, baseline: float = 0.0
                  ) -> dict[str, np.ndarray]:
    r"""F7 / F8 / C8 / C9: unaligned RNNs (:math:`\mathcal N(0,\sigma^2/N_\text{in})`, σ =
    ``init_scale``) trained on the sensory task by plain full-batch GD (the paper's optimiser) on the
    half MSE of :func:`loss_grads`, all (rule, seed) as one batch; ``lr`` may be a dict per rule.
    Inputs are centred (``baseline`` 0, our choice, see the chapter). Records, ``n_rec`` times,
    the singular values of :math:`W_h` and :math:`W_yW_x`, :math:`\lVert\partial L/\partial h_{T+1}\rVert`
    and :math:`\lVert\partial L/\partial W_h\rVert`; then the relative MSE at each T_test."""
    Xs, Ys, W0, lrs = [], [], [], []
    for rule in rules:
        for seed in seeds:
            rng = np.random.default_rng([seed, T])
            X = sensory_inputs(P, T, rng, baseline)
            Xs.append(X), Ys.append(sensory_targets(X, rule))
            W0.append([rng.normal(0, init_scale / math.sqrt(n_in), (n_out, n_in))
                       for n_out, n_in in ((N_h, 4), (N_h, N_h), (4, N_h))])
            lrs.append(lr[rule] if isinstance(lr, dict) else lr)
    X, Y = np.array(Xs), np.array(Ys)
    Wx, Wh, Wy = (np.array(w) for w in zip(*W0))
    eta = np.array(lrs)[:, None, None]
    every = max(steps // n_rec, 1)
    rec = {"step": [], "sv_h": [], "sv_yx": [], "grad_h": [], "grad_Wh": [], "loss": []}
    with np.errstate(all="ignore"):
        for step in range(steps + 1):
            L, gx, gh, gy, dh = loss_grads(Wx, Wh, Wy, X, Y)
            if step % every == 0 or step == steps:
                rec["step"].append(step)
                rec["sv_h"].append(_svals(Wh))
                rec["sv_yx"].append(_svals(Wy @ Wx))
                rec["grad_h"].append(np.linalg.norm(dh, axis=(1, 2)))
                rec["grad_Wh"].append(np.linalg.norm(gh, axis=(1, 2)))
                rec["loss"].append(L)
            if step == steps:
                break
            Wx, Wh, Wy = Wx - eta * gx, Wh - eta * gh, Wy - eta * gy
    out = {k: np.array(v) for k, v in rec.items()}
    rel = np.full((len(Xs), len(T_test)), np.nan)
    rules_r = np.repeat(rules, len(seeds))
    with np.errstate(all="ignore"):
        for j, Tt in enumerate(T_test):
            Xt = sensory_inputs(P_test, Tt, np.random.default_rng([10_000 + Tt]), baseline)
            yt = forward(*(torch.from_numpy(w) for w in (Wx, Wh, Wy)), torch.from_numpy(Xt)).numpy()
            for r, rule in enumerate(rules_r):
                Yt = sensory_targets(Xt, rule)
                rel[r, j] = ((yt[r] - Yt) ** 2).sum() / (Yt ** 2).sum()
    out.update({"rel_mse": rel, "T_test": np.array(T_test), "rule": rules_r, "T": T,
                "Wh": Wh, "Wx": Wx, "Wy": Wy})
    return out


def _svals(M: np.ndarray) -> np.ndarray:
    """Singular values of each matrix of a batch; nan for a matrix with non-finite entries."""
    out = np.full(M.shape[:-1], np.nan)
    ok = np.isfinite(M).all((-1, -2))
    if ok.any():
        out[ok] = np.linalg.svd(M[ok], compute_uv=False)
    return out


def sensory_check(sens: dict) -> dict:
    """C8: sum and mean runs: final :math:`W_h` singular values within 0.05 of 1, :math:`W_yW_x` ones
    within 10% of 1 (sum) or 1/T (mean); sum rel. MSE <= 1e-3 at every T_test; mean rel. MSE at 2T
    >= 10x that at T and non-decreasing in |T_test - T| on each side."""
    T, Tt = int(sens["T"]), list(sens["T_test"])
    out, ok = {}, True
    for rule, target in (("sum", 1.0), ("mean", 1.0 / T)):
        r = sens["rule"] == rule
        sv_h, sv_yx = sens["sv_h"][-1][r], sens["sv_yx"][-1][r]
        e_h = float(np.abs(sv_h - 1).max())
        e_yx = float(np.abs(sv_yx / target - 1).max())
        mse = np.median(sens["rel_mse"][r], 0)
        row = {"max |sv(W_h)-1|": e_h, "max rel err sv(W_yW_x)": e_yx}
        good = e_h <= 0.05 and e_yx <= 0.1
        if rule == "sum":
            row["max rel MSE"] = float(mse.max())
            good = good and mse.max() <= 1e-3
        else:
            i_T, i_2T = Tt.index(T), Tt.index(2 * T)
            row["rel MSE at 2T / at T"] = float(mse[i_2T] / mse[i_T])
            mono = bool(np.all(np.diff(mse[i_T:]) >= 0) and np.all(np.diff(mse[:i_T + 1]) <= 0))
            row["monotone in |dT|"] = mono
            good = good and mse[i_2T] >= 10 * mse[i_T] and mono
        out[rule] = row
        ok = ok and good
    out["passed"] = bool(ok)
    return out


def stability_check(sens: dict, tail: int = 20) -> dict:
    """C9: late vs early importance: final hidden-gradient norm (median over the last ``tail``
    records and over seeds) and the spread (max - min)/mean of :math:`W_h`'s singular values.
    Pass: late grad <= 1e-3 and spread <= 5%; early grad >= 10x late and spread >= 20%. A run
    that diverged counts as infinitely unstable (inf)."""
    out = {}
    for rule in ("late", "early"):
        r = sens["rule"] == rule
        g = np.nan_to_num(sens["grad_Wh"][-tail:, r], nan=np.inf)  # a diverged run: unstable
        sv = sens["sv_h"][-1][r]
        spread = np.nan_to_num((sv.max(-1) - sv.min(-1)) / sv.mean(-1), nan=np.inf)
        g, spread = float(np.median(g)), float(np.median(spread))
        out[rule] = {"grad": g, "spread": spread}
    la, ea = out["late"], out["early"]
    out["passed"] = bool(la["grad"] <= 1e-3 and la["spread"] <= 0.05 and ea["grad"] >= 10 * la["grad"]
                         and ea["spread"] >= 0.2)
    return out


# ----------------------------------------------------------------------------- figures
def plot_f6(ntk: dict, gate: float = 1e-3):
    """F6 (Fig. 5): heat maps of the kernel distance D over (T, σ), aligned and unaligned init,
    mean over seeds; unconverged cells (final loss > ``gate`` × the zero network's) are white."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, init, name in zip(axes, (0, 1), ("aligned", "unaligned")):
        D = np.where(ntk["loss_ratio"][:, init] <= gate, ntk["D"][:, init], np.nan).mean(-1)
        im = ax.imshow(D.T, origin="lower", cmap="magma", vmin=0, vmax=1, aspect="auto")
        for i in range(D.shape[0]):
            for j in range(D.shape[1]):
                if np.isfinite(D[i, j]):
                    ax.text(i, j, f"{abs(D[i, j]) if abs(D[i, j]) < 5e-3 else D[i, j]:.2f}", ha="center", va="center", fontsize=9,
                            color="w" if D[i, j] < 0.6 else "k")
        ax.set_xticks(range(len(ntk["T"])), [str(t) for t in ntk["T"]])
        ax.set_yticks(range(len(ntk["sigma"])), [f"{s:g}" for s in ntk["sigma"]])
        ax.set(xlabel="T", ylabel="initial scale $\\sigma$", title=name)
        ax.grid(False)
    fig.colorbar(im, ax=axes, label="kernel distance D")
    return fig


def plot_f7(sens: dict):
    """F7 (Fig. 6): singular values of W_h and W_yW_x over training for the sum and mean targets
    (first seed) with the theory's values, and the relative MSE against T_test."""
    import matplotlib.pyplot as plt
    T = int(sens["T"])
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    for ax, rule, target in ((axes[0], "sum", 1.0), (axes[1], "mean", 1.0 / T)):
        r = int(np.nonzero(sens["rule"] == rule)[0][0])
        ax.plot(sens["step"], sens["sv_h"][:, r], "-", color="C0")
        ax.plot(sens["step"], sens["sv_yx"][:, r], "--", color="C1")
        ax.axhline(1, color="k", ls=":", lw=1)
        ax.axhline(target, color="C1", ls=":", lw=1)
        ax.plot([], [], "-", color="C0", label="$W_h$")
        ax.plot([], [], "--", color="C1", label="$W_yW_x$")
        ax.set(xlabel="GD step", ylabel="singular values", title=rule)
        ax.legend(fontsize=9)
    for rule, col in (("sum", "C0"), ("mean", "C1")):
        r = sens["rule"] == rule
        mse = sens["rel_mse"][r]
        axes[2].plot(sens["T_test"], np.median(mse, 0), "o-", color=col, ms=4, label=rule)
    axes[2].axvline(T, color="0.6", lw=1, ls="--")
    axes[2].set(yscale="log", xlabel="$T_\\mathrm{test}$", ylabel="relative MSE")
    axes[2].legend()
    return fig


def plot_f8(stab: dict):
    """F8 (Fig. A8): singular values of W_h over training and the gradient norms
    :math:`\\lVert\\partial L/\\partial h_{T+1}\\rVert`, :math:`\\lVert\\partial L/\\partial W_h\\rVert`, late vs
    early importance (first seed)."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for rule, col in (("late", "C0"), ("early", "C3")):
        r = int(np.nonzero(stab["rule"] == rule)[0][0])
        axes[0].plot(stab["step"], stab["sv_h"][:, r], color=col)
        axes[0].plot([], [], color=col, label=rule)
        axes[1].plot(stab["step"], stab["grad_h"][:, r], color=col, label=f"{rule}: $\\partial L/\\partial h_{{T+1}}$")
        axes[1].plot(stab["step"], stab["grad_Wh"][:, r], ":", color=col, label=f"{rule}: $\\partial L/\\partial W_h$")
    axes[0].set(xlabel="GD step", ylabel="singular values of $W_h$")
    axes[0].legend()
    axes[1].set(yscale="log", xlabel="GD step", ylabel="gradient norm")
    axes[1].legend(fontsize=9)
    return fig
