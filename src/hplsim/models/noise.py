"""Noise of a kernel's duration around its mean: N-0 (none), N-1 (normal, σ constant),
N-2 (normal, σ a polynomial in the same terms as the mean), N' (Gaussian mixture).

Also the predictive distribution of one call, as a mixture of normals (N-0 is a point
mass, N-1 and N-2 one component): its log-density, CRPS, CDF and quantiles, which the
model selection and the coverage checks use.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from hplsim.models.linear import nnls

SQRT_PI = math.sqrt(math.pi)
_SIGMA_FLOOR = 1e-3  # × median σ: weights and densities never divide by ~0


def fit_sigma(X: np.ndarray, resid: np.ndarray, iterations: int = 2, ml: bool = True) -> np.ndarray:
    """Coefficients c >= 0 of σ(x) = X·c, from the residuals of the mean.

    Start: E|r| is proportional to σ whatever the family, so |r| is regressed on the
    terms, reweighting by the current σ (|r| is as heteroscedastic as r), and the shape is
    scaled so that r/σ has unit variance. Then (``ml``) the normal likelihood of the residuals is
    maximised from there (bounded quasi-Newton): more efficient at the edges of the
    design, where σ rests on few calls. Every coefficient stays >= 0: σ is a sum of
    non-negative contributions, and a negative cross term would make σ vanish somewhere
    and give those calls infinite weight.
    """
    a = np.abs(resid)
    coef = nnls(X, a)
    for _ in range(iterations):
        coef = nnls(X, a, 1.0 / floor_sigma(X @ coef) ** 2)
    coef = coef * math.sqrt(float(np.mean((resid / floor_sigma(X @ coef)) ** 2)))
    return _sigma_ml(X, resid, coef) if ml else coef


def _sigma_ml(X: np.ndarray, resid: np.ndarray, start: np.ndarray) -> np.ndarray:
    from scipy.optimize import minimize

    norms = np.linalg.norm(X, axis=0)
    norms[norms == 0] = 1.0
    A = X / norms
    r2 = resid**2
    sigma0 = X @ start
    if not np.any(sigma0 > 0):
        return start
    # the floor of `floor_sigma`, fixed at the start: the bounded search may try σ ≡ 0 (every
    # coefficient on its bound), where the likelihood is degenerate
    floor = _SIGMA_FLOOR * float(np.median(sigma0[sigma0 > 0]))
    x0 = np.maximum(start * norms, 0.0)
    f0 = sigma_nll(x0, A, r2, floor)[0]
    if not np.isfinite(f0):
        return start
    res = minimize(sigma_nll, x0, args=(A, r2, floor), jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * len(x0))
    return res.x / norms if res.fun <= f0 else start


def sigma_nll(c: np.ndarray, A: np.ndarray, r2: np.ndarray, floor: float) -> tuple[float, np.ndarray]:
    """Negative normal log-likelihood (up to a constant) of squared residuals `r2` under
    σ = max(A·c, floor), and its gradient in `c` (0 through the calls held at the floor)."""
    raw = A @ c
    s = np.maximum(raw, floor)
    dnll_ds = np.where(raw > floor, 1.0 / s - r2 / s**3, 0.0)
    return float(np.sum(np.log(s) + 0.5 * r2 / s**2)), A.T @ dnll_ds


def floor_sigma(sigma: np.ndarray) -> np.ndarray:
    """σ evaluated on data, kept above a small fraction of its median (a fitted polynomial
    may dip to 0 or below at the edge of the design; the runtime clamps it at 0)."""
    sigma = np.asarray(sigma, dtype=float)
    pos = sigma[sigma > 0]
    ref = float(np.median(pos)) if len(pos) else 1e-12
    return np.maximum(sigma, _SIGMA_FLOOR * ref)


def fit_mixture_1d(values: np.ndarray, max_components: int = 4, seed: int = 0,
                   max_points: int = 3000) -> tuple[list[float], list[float], list[float]]:
    """Gaussian mixture of 1-D values, number of components chosen by BIC.

    Returns (weights, means, sds), components sorted by mean. At most `max_points` values
    (a seeded random subset) are used: the mixture of a few components does not need more.
    """
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    if len(v) > max_points:
        v = rng.choice(v, max_points, replace=False)
    v = v.reshape(-1, 1)
    best = None
    for k in range(1, max(1, max_components) + 1):
        if len(v) < 5 * k:
            break
        gm = _best_mixture(v, k, seed)
        bic = gm.bic(v)
        if best is None or bic < best[0]:
            best = (bic, gm)
    gm = best[1]
    order = np.argsort(gm.means_[:, 0])
    weights = [float(gm.weights_[i]) for i in order]
    total = sum(weights)
    return ([w / total for w in weights], [float(gm.means_[i, 0]) for i in order],
            [float(math.sqrt(gm.covariances_[i, 0, 0])) for i in order])


def _best_mixture(v: np.ndarray, k: int, seed: int):
    """EM from several starts (it has local optima, and a poor k-component fit would make
    BIC prefer k+1): components at evenly spaced quantiles, and k-means++ seeds."""
    from sklearn.mixture import GaussianMixture

    reg = 1e-9 * float(v.var() + 1e-300)
    start = np.quantile(v[:, 0], (np.arange(k) + 0.5) / k).reshape(-1, 1)
    fits = [GaussianMixture(k, means_init=start, init_params="random_from_data", random_state=seed,
                            reg_covar=reg, max_iter=200).fit(v)]
    if k > 1:
        fits.append(GaussianMixture(k, init_params="k-means++", n_init=4, random_state=seed,
                                    reg_covar=reg, max_iter=200).fit(v))
    return max(fits, key=lambda g: g.score(v))


# ------------------------------------------------------------- predictive distributions


class NormalMixture:
    """Per-point mixtures of normals: weights (K,), means and sds (n, K).

    sd == 0 everywhere is a point mass (N-0): its CRPS is the absolute error and it has no
    density (log-density None).
    """

    def __init__(self, weights: np.ndarray, mu: np.ndarray, sd: np.ndarray):
        self.w = np.asarray(weights, dtype=float).reshape(1, -1)
        self.mu = np.atleast_2d(np.asarray(mu, dtype=float))
        self.sd = np.atleast_2d(np.asarray(sd, dtype=float))

    @property
    def degenerate(self) -> bool:
        return bool(np.all(self.sd == 0))

    @property
    def mean(self) -> np.ndarray:
        return (self.w * self.mu).sum(axis=1)

    def logpdf(self, y: np.ndarray) -> np.ndarray | None:
        if self.degenerate:
            return None
        y = np.asarray(y, dtype=float).reshape(-1, 1)
        z = (y - self.mu) / self.sd
        comp = np.log(self.w) - 0.5 * z**2 - np.log(self.sd) - 0.5 * math.log(2 * math.pi)
        return special.logsumexp(comp, axis=1)

    def cdf(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float).reshape(-1, 1)
        if self.degenerate:
            return (self.w * (y >= self.mu)).sum(axis=1)
        return (self.w * special.ndtr((y - self.mu) / self.sd)).sum(axis=1)

    def crps(self, y: np.ndarray) -> np.ndarray:
        """Continuous ranked probability score (seconds; lower is better), closed form for
        mixtures of normals (Grimit et al. 2006): E|X - y| - E|X - X'| / 2."""
        y = np.asarray(y, dtype=float).reshape(-1, 1)
        first = (self.w * _abs_moment(y - self.mu, self.sd)).sum(axis=1)
        dmu = self.mu[:, :, None] - self.mu[:, None, :]
        dsd = np.sqrt(self.sd[:, :, None] ** 2 + self.sd[:, None, :] ** 2)
        ww = self.w[0][:, None] * self.w[0][None, :]
        second = (ww[None] * _abs_moment(dmu, dsd)).sum(axis=(1, 2))
        return first - 0.5 * second

    def quantile(self, q: float) -> np.ndarray:
        """Per-point q-quantile (bisection on the CDF, vectorised over points)."""
        if self.degenerate:
            return self.mean
        if self.mu.shape[1] == 1:
            return self.mu[:, 0] + self.sd[:, 0] * special.ndtri(q)
        span = np.max(self.sd, axis=1) * 10
        lo = np.min(self.mu, axis=1) - span
        hi = np.max(self.mu, axis=1) + span
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            below = self.cdf(mid) < q
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return 0.5 * (lo + hi)


def _abs_moment(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """E|X| for X ~ N(mu, sd²) (sd may be 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, mu / np.where(sd > 0, sd, 1.0), 0.0)
        out = sd * 2 * np.exp(-0.5 * z**2) / math.sqrt(2 * math.pi) + mu * (2 * special.ndtr(z) - 1)
    return np.where(sd > 0, out, np.abs(mu))
