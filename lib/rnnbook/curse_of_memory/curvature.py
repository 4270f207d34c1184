"""Hessians and parametrisations of the curse-of-memory chapter (Zucchet & Orvieto, NeurIPS 2024).

K7 (``block_H`` of ``figures/effect_shrink_eigvals.ipynb``: the Hessian of a complex diagonal network
at the optimum over its eigenvalues), F10 (Fig. 10, the theory Hessian for several phase ranges θ0),
F7 (Fig. 6, the loss and its curvature under the polar, exp and "optimal" parametrisations), K9 (the
Hessians of F5 and claim C6, with their eigenvectors' participation ratio; F5V, Fig. 4's top
eigenvectors) and F8 (learning the phase θ, claim C12). float64 throughout.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from rnnbook.curse_of_memory.models import ModelSpec, kernel, kernel_error
from rnnbook.curse_of_memory.theory import CDTYPE, DTYPE, S, ar1_inputs, f_corr, gamma_loss_1d, loss_1d

# results-cache pieces the chapter computes with this module's functions (C6's Hessians, F7, F8),
# keyed by this module's version (and those it imports): rnnbook.paths.PIECES
PIECES = ("hessians", "f7", "learn_theta")


# ============================================================================ K7
def block_H(lam: np.ndarray, b: np.ndarray, c: np.ndarray, rho: float) -> np.ndarray:
    """K7, Eq. cm-blockH: Hessian at the optimum of :math:`\\tfrac12E[(y-y^*)^2]`,
    :math:`y=\\mathrm{Re}\\sum_ic_ib_ih(\\lambda_i)`, over :math:`(\\lambda_{re,i},\\lambda_{im,i})`
    (interleaved, 2n x 2n): with :math:`A=b_ib_jc_ic_jS(\\lambda_i,\\lambda_j)`,
    :math:`B=b_i\\bar b_jc_i\\bar c_jS(\\lambda_i,\\bar\\lambda_j)`, the (i, j) block is
    :math:`\\tfrac12\\left(\\begin{smallmatrix}\\mathrm{Re}(A+B)&\\mathrm{Im}(B-A)\\\\-\\mathrm{Im}(A+B)&\\mathrm{Re}(B-A)\\end{smallmatrix}\\right)`."""
    w = b * c
    li, lj = lam[:, None], lam[None, :]
    A = w[:, None] * w[None, :] * S(li, lj, rho)
    B = w[:, None] * np.conj(w)[None, :] * S(li, np.conj(lj), rho)
    blk = 0.5 * np.stack([np.stack([(A + B).real, (B - A).imag], -1),
                          np.stack([-(A + B).imag, (B - A).real], -1)], -2)  # (n, n, 2, 2)
    n = len(lam)
    return blk.transpose(0, 2, 1, 3).reshape(2 * n, 2 * n)


def population_loss(theta: torch.Tensor, lam_star: torch.Tensor, w: torch.Tensor, rho: float) -> torch.Tensor:
    """K7's loss in closed form: :math:`\\tfrac12E[(y(\\lambda)-y(\\lambda^*))^2]` for real inputs of
    autocorrelation :math:`\\rho^{|\\Delta|}`, through :math:`E[\\mathrm{Re}\\,u\\,\\mathrm{Re}\\,v] =
    \\tfrac12\\mathrm{Re}(E[uv]+E[u\\bar v])` and :math:`E[h(\\lambda)h(\\mu)] = f(\\lambda,\\mu)` (Eq. cm-f);
    ``theta`` = interleaved :math:`(\\lambda_{re},\\lambda_{im})`."""
    lam = torch.complex(theta[0::2], theta[1::2])

    def Q(l1, l2):
        a, b = l1[:, None], l2[None, :]
        return 0.5 * (w[:, None] * w[None, :] * f_corr(a, b, rho)
                      + w[:, None] * w.conj()[None, :] * f_corr(a, b.conj(), rho)).real.sum()

    return 0.5 * (Q(lam, lam) - 2 * Q(lam, lam_star) + Q(lam_star, lam_star))


def block_H_check(seed: int = 0, n: int = 4, rho: float = 0.5, seqs: int = 8192) -> dict:
    """K7: :func:`block_H` against the autograd Hessian of :func:`population_loss` at the optimum
    (relative Frobenius error, 1e-10) and against a Monte-Carlo Gauss-Newton matrix
    :math:`E[JJ^\\top]` (``seqs`` AR(1) sequences, the sensitivities :math:`d_t=h_{t-1}+\\lambda d_{t-1}`;
    5%), for n modes with :math:`|\\lambda|\\le.9`."""
    from scipy.signal import lfilter
    rng = np.random.default_rng(seed)
    lam = 0.9 * np.sqrt(rng.uniform(size=n)) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    b = (rng.normal(size=n) + 1j * rng.normal(size=n)) / math.sqrt(2)
    c = (rng.normal(size=n) + 1j * rng.normal(size=n)) / math.sqrt(2)
    H = block_H(lam, b, c, rho)
    th = torch.tensor(np.stack([lam.real, lam.imag], 1).ravel())
    w = torch.tensor(b * c)
    H_auto = torch.autograd.functional.hessian(
        lambda t: population_loss(t, torch.tensor(lam), w, rho), th).numpy()
    L = int(math.ceil(20 / (1 - 0.9)))
    x = ar1_inputs(seqs, L, rho, torch.Generator().manual_seed(seed))
    J = []
    for i in range(n):
        h = lfilter([1.0], [1.0, -lam[i]], x.astype(complex), axis=1)
        d = lfilter([0.0, 1.0], [1.0, -lam[i]], h, axis=1)[:, -1] * b[i] * c[i]
        J += [d.real, -d.imag]  # dy/dlam_re = Re(w d), dy/dlam_im = Re(i w d)
    J = np.stack(J, 1)
    H_mc = J.T @ J / seqs
    fro = lambda a, ref: float(np.linalg.norm(a - ref) / np.linalg.norm(ref))  # noqa: E731
    return {"autograd rel. err": fro(H, H_auto), "MC rel. err": fro(H, H_mc),
            "passed": fro(H, H_auto) <= 1e-10 and fro(H, H_mc) <= 0.05}


def theory_hessian(theta0: float, seed: int, n: int = 10, nu0: float = 0.99, rho: float = 0.99
                   ) -> np.ndarray:
    """F10 (Fig. 10): :func:`block_H` of n modes with moduli in the authors' range
    :math:`[\\nu_0, (1+\\nu_0)/2]` (``figures/effect_shrink_eigvals.ipynb``; drawn uniformly on that
    ring of the complex plane, as the LRU's initialisation draws its own: our reading), θ ~ U[-θ0, θ0],
    :math:`b, c\\sim\\mathcal{CN}(0,1)`, at input correlation ρ."""
    rng = np.random.default_rng(seed)
    nu_max = (1 + nu0) / 2
    nu = np.sqrt(rng.uniform(size=n) * (nu_max ** 2 - nu0 ** 2) + nu0 ** 2)
    lam = nu * np.exp(1j * rng.uniform(-theta0, theta0, n))
    b = (rng.normal(size=n) + 1j * rng.normal(size=n)) / math.sqrt(2)
    c = (rng.normal(size=n) + 1j * rng.normal(size=n)) / math.sqrt(2)
    return block_H(lam, b, c, rho)


# ============================================================================ F7
def param_lambda(name: str, w_nu: torch.Tensor, w_theta: torch.Tensor) -> torch.Tensor:
    """F7 (Fig. 6) parametrisations of one complex mode: polar :math:`\\omega_\\nu e^{i\\omega_\\theta}`;
    exp :math:`\\exp(-e^{\\omega_\\nu}+ie^{\\omega_\\theta})` (the LRU's); opt :math:`\\nu=\\tanh\\omega_\\nu`,
    :math:`\\theta=\\frac{1-\\nu^2}{\\nu\\sqrt{1+\\nu^2}}\\omega_\\theta` (spec §5)."""
    if name == "polar":
        return torch.polar(w_nu, w_theta)
    if name == "exp":
        return torch.exp(torch.complex(-torch.exp(w_nu), torch.exp(w_theta)))
    nu = torch.tanh(w_nu)
    return torch.polar(nu, opt_theta(nu, w_theta))


def omega_of(name: str, nu: float, theta: float) -> tuple[float, float]:
    """The inverse of :func:`param_lambda`: (ω_ν, ω_θ) of λ = ν e^{iθ}."""
    if name == "polar":
        return nu, theta
    if name == "exp":
        return math.log(-math.log(nu)), math.log(theta)
    return math.atanh(nu), theta * nu * math.sqrt(1 + nu ** 2) / (1 - nu ** 2)


def f7_curvatures(nus: np.ndarray, theta_star: float = math.pi / 4) -> dict[str, np.ndarray]:
    """F7: diagonal of the Hessian of the γ-loss (K5 with normalisation, σ = 1) in
    :math:`(\\omega_\\nu,\\omega_\\theta)` at the optimum :math:`\\lambda^*=\\nu^*e^{i\\theta^*}`, for each
    parametrisation and each :math:`\\nu^*` in ``nus``: (len(nus), 2) per name."""
    out = {}
    for name in ("polar", "exp", "opt"):
        rows = []
        for nu in nus:
            ls = torch.tensor(complex(nu * np.exp(1j * theta_star)))
            w0 = torch.tensor(omega_of(name, float(nu), theta_star), dtype=torch.float64)
            H = torch.autograd.functional.hessian(
                lambda w: gamma_loss_1d(param_lambda(name, w[0], w[1]), ls), w0)
            rows.append(torch.diagonal(H).numpy())
        out[name] = np.array(rows)
    return out


def f7_slices(name: str, nu_star: float, theta_star: float, span: float = 1.0, points: int = 201
              ) -> dict[str, np.ndarray]:
    """F7: the γ-loss along ω_ν (ω_θ at its optimum) and along ω_θ (ω_ν at its optimum), offsets
    in [-span, span] around the optimum."""
    w_nu, w_th = omega_of(name, nu_star, theta_star)
    ls = torch.tensor(complex(nu_star * np.exp(1j * theta_star)))
    off = torch.linspace(-span, span, points, dtype=torch.float64)
    f = lambda a, b: gamma_loss_1d(param_lambda(name, a, b), ls).numpy()  # noqa: E731
    nu_axis = torch.clamp(w_nu + off, max=0.999999) if name == "polar" else w_nu + off
    return {"offset": off.numpy(), "nu": f(nu_axis, torch.full_like(off, w_th)),
            "theta": f(torch.full_like(off, w_nu), w_th + off)}


def ipr(vecs: np.ndarray) -> np.ndarray:
    """C6: inverse participation ratio :math:`\\sum_iv_i^4` of unit eigenvectors (columns)."""
    v = vecs / np.linalg.norm(vecs, axis=0, keepdims=True)
    return (v ** 4).sum(0)


# ============================================================================ K9: Hessians (F5, C6)
def small_teacher(seed: int, nu: tuple[float, float] = (0.99, 0.993)) -> dict[str, np.ndarray]:
    """F5 teacher (spec §5): 2 conjugate pairs, :math:`|\\lambda|\\sim U[\\nu]` (default [.99, .993]),
    phases U[0, π] (per pair the paper's distribution: ``hessian_analysis.ipynb`` draws 2π·U[0, 1)),
    :math:`A=\\mathrm{Re}(U^{-1}\\mathrm{diag}(\\lambda)U)` with U two random complex rows and their
    conjugates; B, D ~ N(0,1), C ~ N(0, 1/4). float64 numpy."""
    rng = np.random.default_rng(seed)
    mod = rng.uniform(*nu, 2)
    th = rng.uniform(0, np.pi, 2)
    lam = mod * np.exp(1j * th)
    lam = np.concatenate([lam, lam.conj()])
    U = rng.normal(size=(2, 4)) + 1j * rng.normal(size=(2, 4))
    U = np.concatenate([U, U.conj()])
    A = (np.linalg.inv(U) @ np.diag(lam) @ U).real
    return {"A": A, "B": rng.normal(size=4), "C": rng.normal(size=4) / 2, "D": rng.normal()}


def population_loss_terms(K: torch.Tensor, D, K_star: torch.Tensor, D_star) -> torch.Tensor:
    """Population loss for white unit inputs (T -> inf): :math:`\\tfrac12\\sum_k(\\tilde K_k-\\tilde K^*_k)^2`
    with :math:`\\tilde K_0 = K_0 + D` (:func:`~rnnbook.curse_of_memory.models.kernel_error`)."""
    return 0.5 * (kernel_error(K[None], D.reshape(1), K_star[None], D_star.reshape(1)) ** 2).sum()


def hessians(teach: dict[str, np.ndarray], terms: int, M: torch.Tensor | None = None) -> dict[str, np.ndarray]:
    """K9: autograd Hessians at the optimum of the teacher, for a dense student equal to the teacher
    (A, B, C, D: 25 parameters) and a complex-diagonal student from its eigendecomposition (λ_re,
    λ_im, B_re, B_im, C_re, C_im, D: 25 parameters), float64: of the population loss (white unit
    inputs, ``terms`` lags), or, given the lag moments ``M`` (terms x terms) of one batch
    (:func:`~rnnbook.curse_of_memory.models.lag_moments`), of that batch's loss (Eq. cm-quad), as
    the paper's Fig. 4 (``hessian_analysis.ipynb``: 64 sequences of length 300)."""
    A, B, C, D = (torch.tensor(teach[k], dtype=DTYPE) for k in "ABCD")
    dense = ModelSpec("dense", "dense", 4)
    K_star = kernel(dense, {"A": A[None, None], "B": B[None], "C": C[None]}, terms)[0]

    def loss(K: torch.Tensor, D_: torch.Tensor) -> torch.Tensor:
        if M is None:
            return population_loss_terms(K, D_, K_star, D)
        e = kernel_error(K[None], D_.reshape(1), K_star[None], D.reshape(1))[0]
        return 0.5 * e @ M.to(DTYPE) @ e

    def f_dense(theta):
        A_, B_, C_, D_ = theta[:16].reshape(4, 4), theta[16:20], theta[20:24], theta[24]
        return loss(kernel(dense, {"A": A_[None, None], "B": B_[None], "C": C_[None]}, terms)[0], D_)

    th_dense = torch.cat([A.flatten(), B, C, D[None]])
    lam, V = np.linalg.eig(teach["A"])
    b = np.linalg.solve(V, teach["B"])
    c = teach["C"] @ V
    cdiag = ModelSpec("cdiag", "diag", 4, param="default", gamma="none")

    def f_diag(theta):
        p = {"l1": theta[0:4][None], "l2": theta[4:8][None], "B_re": theta[8:12][None],
             "B_im": theta[12:16][None], "C_re": theta[16:20][None], "C_im": theta[20:24][None]}
        return loss(kernel(cdiag, p, terms)[0], theta[24])

    th_diag = torch.tensor(np.concatenate([lam.real, lam.imag, b.real, b.imag, c.real, c.imag,
                                           [teach["D"]]]), dtype=DTYPE)
    out = {}
    for name, f, th in (("dense", f_dense, th_dense), ("cdiag", f_diag, th_diag)):
        H = torch.autograd.functional.hessian(f, th).numpy()
        w, v = np.linalg.eigh(H)
        order = np.argsort(-np.abs(w))
        out[f"H_{name}"], out[f"eig_{name}"], out[f"vec_{name}"] = H, w[order], v[:, order]
        out[f"loss_{name}"] = float(f(th))
    return out


def spectra_distance(e1: np.ndarray, e2: np.ndarray, k: int = 9) -> float:
    """C6, "similar spectra": the median over the top ``k`` (= 2n+1) eigenvalues, each spectrum sorted
    by magnitude, of :math:`|\\log_{10}(|e_{1,i}|/|e_{2,i}|)|` (decades)."""
    return float(np.median(np.abs(np.log10(np.abs(e1[:k]) / np.abs(e2[:k])))))


# F5V (Fig. 4's eigenvector panels): the parameter groups of :func:`hessians`, in its order; the
# recurrent ones (A, λ) first
PARAM_GROUPS = {"dense": (("A", 16), ("B", 4), ("C", 4), ("D", 1)),
                "cdiag": (("λ_re", 4), ("λ_im", 4), ("B_re", 4), ("B_im", 4), ("C_re", 4), ("C_im", 4),
                          ("D", 1))}


def eigvec_concentration(h: dict[str, np.ndarray], k: int = 4) -> dict[str, dict[str, float]]:
    """F5V (Fig. 4's top-eigenvector panels; reported): per network of one :func:`hessians` dict,
    over its top ``k`` eigenvectors, the mean participation number :math:`1/\\sum_iv_i^4` (how many of
    the 25 coordinates a unit eigenvector spreads over: 1 on one, 25 evenly on all) and the mean
    share of their squared weight on the recurrent parameters (the dense :math:`A`; c-diag
    :math:`\\lambda_{re}, \\lambda_{im}`; :data:`PARAM_GROUPS`)."""
    out = {}
    for n, groups in PARAM_GROUPS.items():
        rec = sum(size for name, size in groups if name[0] in "Aλ")
        v = h[f"vec_{n}"][:, :k] / np.linalg.norm(h[f"vec_{n}"][:, :k], axis=0)
        out[n] = {"participation": float((1 / ipr(v)).mean()),
                  "recurrent share": float((v[:rec] ** 2).sum(0).mean())}
    return out


C6_SPECTRA, C6_SHARE = 1.0, 2 / 3  # C6: at most one decade apart; concentrated for 2 teachers in 3


def hessian_check(hs: Sequence[dict[str, np.ndarray]]) -> dict:
    """C6 over several teachers (one :func:`hessians` dict each, the paper's batch Hessians): per
    teacher the gap |eig_9|/|eig_10| of both Hessians (2n+1 = 9 non-null eigenvalues), the
    :func:`spectra_distance` of the dense and c-diag spectra, and the ratio of the mean IPR of the
    top-4 eigenvectors, c-diag over dense. Reproduced if the median gap >= 1e4, the median
    distance <= :data:`C6_SPECTRA` decade (similar spectra) and the share of teachers whose IPR
    ratio exceeds 1 is >= :data:`C6_SHARE` (concentrated); partly if the spectra hold and that
    share exceeds 1/2; not reproduced otherwise."""
    gaps, dist, ratios = [], [], []
    for h in hs:
        gaps.append(min(float(abs(h[f"eig_{n}"][8]) / max(abs(h[f"eig_{n}"][9]), 1e-300))
                        for n in ("dense", "cdiag")))
        dist.append(spectra_distance(h["eig_dense"], h["eig_cdiag"]))
        ipr_ = {n: float(ipr(h[f"vec_{n}"][:, :4]).mean()) for n in ("dense", "cdiag")}
        ratios.append(ipr_["cdiag"] / ipr_["dense"])
    gap, d, share = float(np.median(gaps)), float(np.median(dist)), float(np.mean(np.array(ratios) > 1))
    spectra = gap >= 1e4 and d <= C6_SPECTRA
    verdict = "reproduced" if spectra and share >= C6_SHARE else "partly" if spectra and share > 0.5 \
        else "not reproduced"
    return {"median eig9/eig10": gap, "median spectra distance (decades)": d,
            "share of IPR ratios > 1": share, "median IPR ratio": float(np.median(ratios)),
            "eig9/eig10 per teacher": gaps, "spectra distance per teacher": dist,
            "IPR ratio per teacher": ratios, "passed": verdict != "not reproduced", "verdict": verdict}


# ============================================================================ F8: learning θ (C12)
ANGLE_PARAMS = ("polar", "exp", "opt")  # Fig. 7's panels, left to right
F8_LAM_STAR, F8_LAM0 = 0.99 * np.exp(1j * np.pi / 100), 0.99 * np.exp(1j * np.pi / 4)  # Fig. 7's target, start


def angle_param(kind: torch.Tensor, w_nu: torch.Tensor, w_theta: torch.Tensor) -> torch.Tensor:
    """Fig. 7 parametrisations (spec §9), per run (``kind``: an index into :data:`ANGLE_PARAMS`):
    :math:`\\nu e^{i\\theta}` with :math:`\\nu=\\tanh\\omega_\\nu` and polar :math:`\\theta=\\omega_\\theta`,
    exp :math:`\\theta=e^{\\omega_\\theta}`, opt :math:`\\theta=\\frac{1-\\nu^2}{\\nu\\sqrt{1+\\nu^2}}\\omega_\\theta`
    (the notebook's ``exp``, ``exp_exp`` and ``scaled_exp``)."""
    nu = torch.tanh(w_nu)
    theta = torch.where(kind == 0, w_theta, torch.where(kind == 1, torch.exp(w_theta), opt_theta(nu, w_theta)))
    return torch.polar(nu, theta)


def opt_theta(nu, w_theta):
    """The opt parametrisation's phase (F7, F8): :math:`\\theta=\\frac{1-\\nu^2}{\\nu\\sqrt{1+\\nu^2}}\\omega_\\theta`."""
    return (1 - nu ** 2) / (nu * (1 + nu ** 2) ** 0.5) * w_theta


def angle_omega(name: str, lam: complex) -> tuple[float, float]:
    """The inverse of :func:`angle_param`: :math:`(\\omega_\\nu, \\omega_\\theta)` of ``lam`` under ``name``."""
    nu, theta = abs(lam), float(np.angle(lam))
    return math.atanh(nu), {"polar": theta, "exp": math.log(theta), "opt": omega_of("opt", nu, theta)[1]}[name]


def angle_loss(name: str, w_nu, w_theta, lam_star: complex = F8_LAM_STAR) -> torch.Tensor:
    """F8's loss (K5, μ = 0, σ = 1) at :math:`(\\omega_\\nu,\\omega_\\theta)` (arrays of one shape)
    under the parametrisation ``name`` (:func:`angle_param`)."""
    w_nu, w_theta = torch.as_tensor(w_nu, dtype=DTYPE), torch.as_tensor(w_theta, dtype=DTYPE)
    kind = torch.full(w_nu.shape, ANGLE_PARAMS.index(name))
    return loss_1d(angle_param(kind, w_nu, w_theta), torch.tensor(lam_star, dtype=CDTYPE))


def angle_hessian(name: str, w: Sequence[float]) -> np.ndarray:
    """The 2 x 2 Hessian of :func:`angle_loss` in :math:`(\\omega_\\nu,\\omega_\\theta)` at ``w``
    (F8: the valley the opt run stops in)."""
    return torch.autograd.functional.hessian(lambda x: angle_loss(name, x[0], x[1]),
                                             torch.tensor(w, dtype=DTYPE)).numpy()


def learn_theta(names: Sequence[str], adams: Sequence[bool], steps: int, lr: float = 1e-3,
                lam_star: complex = F8_LAM_STAR, lam0: complex = F8_LAM0) -> dict[str, np.ndarray]:
    """F8: Adam on the 1-D loss (K5, μ = 0, σ = 1) in :math:`(\\omega_\\nu,\\omega_\\theta)` from λ0 to λ*,
    one run per (``names[i]`` in :data:`ANGLE_PARAMS`, ``adams[i]``), all runs batched. ``adams[i] =
    False`` reproduces ``figures/learn_theta.ipynb``, whose ``step`` discards the Adam state, so that
    every update is Adam's first step :math:`\\eta g/(|g|+\\epsilon)` (sign descent). Returns the
    losses (runs, steps) and the trajectories (runs, steps, 2)."""
    kind = torch.tensor([ANGLE_PARAMS.index(n) for n in names])
    adam = torch.tensor(list(adams))[:, None]
    w = torch.tensor([angle_omega(n, lam0) for n in names], dtype=DTYPE).requires_grad_()
    ls = torch.tensor(lam_star, dtype=CDTYPE)
    m, v = torch.zeros_like(w), torch.zeros_like(w)
    R = len(names)
    losses, traj = np.zeros((R, steps)), np.zeros((R, steps, 2))
    for k in range(1, steps + 1):
        L = loss_1d(angle_param(kind, w[:, 0], w[:, 1]), ls)
        g, = torch.autograd.grad(L.sum(), w)
        losses[:, k - 1], traj[:, k - 1] = L.detach().numpy(), w.detach().numpy()
        with torch.no_grad():
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g ** 2
            step_adam = lr * (m / (1 - 0.9 ** k)) / ((v / (1 - 0.999 ** k)).sqrt() + 1e-8)
            w -= torch.where(adam, step_adam, lr * g / (g.abs() + 1e-8))
    return {"loss": losses, "traj": traj}
