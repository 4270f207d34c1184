"""Hessians in closed form for the curse-of-memory chapter (Zucchet & Orvieto, NeurIPS 2024).

Serves the chapter "curse_of_memory": K7 (``block_H`` of ``figures/effect_shrink_eigvals.ipynb``:
the Hessian of a complex diagonal network at the optimum over its eigenvalues), F10 (Fig. 10, the
theory Hessian for several phase ranges θ0) and F7 (Fig. 6, the loss and its curvature under the
polar, exp and "optimal" parametrisations). float64 throughout.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from rnnbook.curse_of_memory import S, f_corr, gamma_loss_1d, ar1_inputs


# ============================================================================ K7
def block_H(lam: np.ndarray, b: np.ndarray, c: np.ndarray, rho: float) -> np.ndarray:
    """K7, Eq. cm-blockH: Hessian at the optimum of :math:`\\tfrac12E[(y-y^*)^2]`,
    :math:`y=\\mathrm{Re}\\sum_ic_ib_ih(\\lambda_i)`, over :math:`(\\lambda_{re,i},\\lambda_{im,i})`
    (interleaved, 2n x 2n): with :math:`A=b_ib_jc_ic_jS(\\lambda_i,\\lambda_j)`,
    :math:`B=b_i\\bar b_jc_i\\bar c_jS(\\lambda_i,\\bar\\lambda_j)`, the (i, j) block is
    :math:`\\tfrac12\\begin{psmallmatrix}\\mathrm{Re}(A+B)&\\mathrm{Im}(B-A)\\\\-\\mathrm{Im}(A+B)&\\mathrm{Re}(B-A)\\end{psmallmatrix}`."""
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
    """F10 (Fig. 10): :func:`block_H` of n modes initialised as the LRU (:math:`\\nu\\in[\\nu_0,1)`,
    θ ~ U[-θ0, θ0]) with :math:`b, c\\sim\\mathcal{CN}(0,1)`, at input correlation ρ."""
    rng = np.random.default_rng(seed)
    nu = np.sqrt(rng.uniform(size=n) * (1 - nu0 ** 2) + nu0 ** 2)
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
    return torch.polar(nu, (1 - nu ** 2) / (nu * torch.sqrt(1 + nu ** 2)) * w_theta)


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
