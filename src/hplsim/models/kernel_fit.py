"""Kernel duration models from individual calls: mean M-0 / M-1 / M-2, noise N-0 / N-1 /
N-2 / N' (``NMix``), fitted on one set of calls (one CPU, one host or all of them).

    fit = fit_kernel(calls, "dgemm", mean="M2", noise="N2")
    fit.predict({"m": 2048, "n": 2048, "k": 128}); fit.sample(sizes, rng); fit.model

`fit.model` is the model file's `KernelModel`, i.e. exactly what the emulation draws from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from hplsim.errors import HplsimError
from hplsim.models.linear import LinearFit, rank, wls
from hplsim.models.modelfile import KERNEL_VARIABLES, Component, Exponents, KernelModel, Polynomial, term_name
from hplsim.models.noise import NormalMixture, fit_mixture_1d, fit_sigma, floor_sigma

MEAN_OPTIONS = ("M0", "M1", "M2")
NOISE_OPTIONS = ("N0", "N1", "N2", "NMix")
MAX_COMPONENTS = 4
_GLS_ROUNDS = 8


def mean_terms(kernel: str, option: str) -> tuple[Exponents, ...]:
    """The polynomial terms of a mean option, over the kernel's size variables.

    M0: intercept. M1: intercept + the product of all sizes (dgemm's M·N·K, the flop
    count). M2: M1 + every product that leaves out one size (dgemm: MN, MK, NK), i.e. the
    cost of the loops around the inner one; for one-size kernels M2 is M1.
    """
    if option not in MEAN_OPTIONS:
        raise HplsimError(f"unknown mean model {option!r} (known: {', '.join(MEAN_OPTIONS)})")
    d = len(KERNEL_VARIABLES[kernel])
    intercept, full = (0,) * d, (1,) * d
    if option == "M0":
        return (intercept,)
    if option == "M1" or d == 1:
        return (intercept, full)
    leave_one_out = [tuple(0 if i == j else 1 for i in range(d)) for j in reversed(range(d))]
    return (intercept, full, *leave_one_out)


def design(sizes: Mapping[str, Any], kernel: str, terms: tuple[Exponents, ...]) -> np.ndarray:
    variables = KERNEL_VARIABLES[kernel]
    cols = [np.asarray(sizes[v], dtype=float) for v in variables]
    n = len(np.atleast_1d(cols[0]))
    X = np.ones((n, len(terms)))
    for t, exps in enumerate(terms):
        for col, e in zip(cols, exps):
            if e:
                X[:, t] *= np.atleast_1d(col) ** e
    return X


def _nonneg(terms: tuple[Exponents, ...]) -> tuple[int, ...]:
    """Terms that must stay >= 0: the intercept and the highest-degree terms (the rule of
    the model file: tiny and huge calls must not get negative durations)."""
    top = max(sum(e) for e in terms)
    return tuple(i for i, e in enumerate(terms) if not any(e) or sum(e) == top)


@dataclass(frozen=True)
class KernelFit:
    """A fitted kernel model and what the fit says about itself."""

    kernel: str
    mean_option: str
    noise_option: str
    model: KernelModel
    se: dict[str, float]  # standard error of each mean coefficient
    dropped: tuple[str, ...]  # mean terms forced to 0 (they came out negative)
    n: int
    r2: float
    loglik: float | None  # None for N0 (no density)
    n_params: int
    # the fits of the model's pieces, by their conditions' text ("n > m"); the figures above
    # (n, r2, …) are then those of the calls outside every piece
    pieces: tuple[tuple[str, "KernelFit"], ...] = ()

    @property
    def option(self) -> str:
        return f"{self.mean_option},{self.noise_option}"

    @property
    def aic(self) -> float | None:
        return None if self.loglik is None else 2 * self.n_params - 2 * self.loglik

    @property
    def bic(self) -> float | None:
        return None if self.loglik is None else self.n_params * math.log(self.n) - 2 * self.loglik

    @property
    def coefficients(self) -> dict[str, float]:
        return self.model.mean.to_mapping()

    def predict(self, sizes: Mapping[str, Any]) -> np.ndarray:
        """Expected duration of a call (seconds)."""
        return self.model.predict(sizes)

    def sample(self, sizes: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
        """Random durations, drawn as the emulation draws them."""
        return self.model.sample(sizes, rng)

    def distribution(self, sizes: Mapping[str, Any]) -> NormalMixture:
        return predictive(self.model, sizes)

    def interval(self, sizes: Mapping[str, Any], level: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
        """Central prediction interval of one call's duration."""
        dist = self.distribution(sizes)
        return dist.quantile((1 - level) / 2), dist.quantile((1 + level) / 2)


def predictive(model: KernelModel, sizes: Mapping[str, Any]) -> NormalMixture:
    """The law of one call's duration under `model`, as a mixture of normals (the clamp
    at 0 is ignored: it only matters far in the left tail)."""
    mu = np.atleast_1d(np.asarray(model.mean(sizes), dtype=float))
    if model.family == "none":
        return NormalMixture([1.0], mu[:, None], np.zeros((len(mu), 1)))
    if model.family in ("normal", "halfnormal"):
        # a half-normal is summarised by its mean and σ here (used for scores only)
        sd = floor_sigma(np.atleast_1d(model.sigma(sizes)))
        return NormalMixture([1.0], mu[:, None], sd[:, None])
    w = np.array([c.weight for c in model.components])
    shift = np.column_stack([np.broadcast_to(c.shift(sizes), mu.shape) for c in model.components])
    sd = np.column_stack([floor_sigma(np.broadcast_to(c.sigma(sizes), mu.shape)) for c in model.components])
    return NormalMixture(w, mu[:, None] + shift, sd)


def _poly(kernel: str, terms: tuple[Exponents, ...], coef: np.ndarray) -> Polynomial:
    items = tuple((e, float(c)) for e, c in zip(terms, coef) if c != 0)
    return Polynomial(KERNEL_VARIABLES[kernel], items or ((terms[0], 0.0),))


def check_calls(calls: Mapping[str, Any], kernel: str, what: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Sizes and durations as arrays, refusing what no fit can use (one clear line)."""
    if kernel not in KERNEL_VARIABLES:
        raise HplsimError(f"unknown kernel {kernel!r} (known: {', '.join(sorted(KERNEL_VARIABLES))})")
    variables = KERNEL_VARIABLES[kernel]
    missing = [v for v in (*variables, "duration") if v not in calls]
    if missing:
        raise HplsimError(f"{what}: no column {', '.join(missing)} ({kernel} needs {', '.join(variables)}, duration)")
    y = np.asarray(calls["duration"], dtype=float)
    sizes = {v: np.asarray(calls[v], dtype=float) for v in variables}
    if len(y) == 0:
        raise HplsimError(f"{what}: no {kernel} calls")
    if np.isnan(y).any():
        raise HplsimError(f"{what}: {int(np.isnan(y).sum())} durations are missing (NaN)")
    if not np.isfinite(y).all() or (y < 0).any():
        raise HplsimError(f"{what}: {int((~np.isfinite(y) | (y < 0)).sum())} durations are negative or infinite")
    for v, s in sizes.items():
        if not np.isfinite(s).all() or (s < 0).any():
            raise HplsimError(f"{what}: size {v} has missing, negative or infinite values")
    if len(np.unique(np.column_stack(list(sizes.values())), axis=0)) < 2:
        first = ", ".join(f"{v}={sizes[v][0]:g}" for v in variables)
        raise HplsimError(f"{what}: every {kernel} call has the same sizes ({first}): "
                          "a model of duration vs size needs calls of at least two sizes")
    return sizes, y


def identifiable(sizes: Mapping[str, np.ndarray], kernel: str, mean: str) -> bool:
    """Whether the calls' sizes determine every term of `mean` (e.g. M2 needs sizes that
    do not all share one of M, N, K)."""
    terms = mean_terms(kernel, mean)
    uniq = np.unique(np.column_stack([sizes[v] for v in KERNEL_VARIABLES[kernel]]), axis=0)
    X = design({v: uniq[:, i] for i, v in enumerate(KERNEL_VARIABLES[kernel])}, kernel, terms)
    return rank(X) == len(terms)


def fit_kernel(
    calls: Mapping[str, Any],
    kernel: str,
    mean: str = "M2",
    noise: str = "N2",
    *,
    max_components: int = MAX_COMPONENTS,
    seed: int = 0,
    what: str = "data",
) -> KernelFit:
    """Fit one kernel's model on individual calls.

    calls: a mapping (e.g. a DataFrame) with the kernel's size columns and ``duration``.
    mean: M0 | M1 | M2. noise: N0 (none) | N1 (normal, constant σ) | N2 (normal, σ a
    polynomial in the mean's terms) | NMix (Gaussian mixture: N2's σ shape scaled per
    component, components chosen by BIC).

    N0 and N1 fit the mean by ordinary least squares; N2 and NMix by weighted least
    squares with weights 1/σ(x)², alternating with the σ fit (feasible GLS).
    """
    return fit_kernel_noises(calls, kernel, mean, (noise,), max_components=max_components, seed=seed,
                             what=what)[noise]


def fit_kernel_noises(
    calls: Mapping[str, Any],
    kernel: str,
    mean: str,
    noises: tuple[str, ...] = NOISE_OPTIONS,
    *,
    max_components: int = MAX_COMPONENTS,
    seed: int = 0,
    what: str = "data",
) -> dict[str, KernelFit]:
    """`fit_kernel` for several noise models of one mean model at once: N0 and N1 share
    the OLS mean, N2 and NMix the GLS mean (what model selection needs, for half the work)."""
    for noise in noises:
        if noise not in NOISE_OPTIONS:
            raise HplsimError(f"unknown noise model {noise!r} (known: {', '.join(NOISE_OPTIONS)})")
    sizes, y = check_calls(calls, kernel, what)
    terms = mean_terms(kernel, mean)
    if not identifiable(sizes, kernel, mean):
        names = ", ".join(term_name(e, KERNEL_VARIABLES[kernel]) for e in terms)
        raise HplsimError(f"{what}: the sizes of the {kernel} calls do not determine every term of {mean} "
                          f"({names}); use a simpler mean model or vary every size")
    X = design(sizes, kernel, terms)
    nonneg = _nonneg(terms)
    out: dict[str, KernelFit] = {}
    if {"N0", "N1"} & set(noises):
        ols = wls(X, y, None, nonneg)
        for noise in ("N0", "N1"):
            if noise in noises:
                out[noise] = _finish(kernel, mean, noise, terms, X, sizes, y, ols, None, max_components, seed)
    if {"N2", "NMix"} & set(noises):
        gls, sigma_coef = _gls(X, y, nonneg)
        for noise in ("N2", "NMix"):
            if noise in noises:
                out[noise] = _finish(kernel, mean, noise, terms, X, sizes, y, gls, sigma_coef, max_components, seed)
    return {noise: out[noise] for noise in noises}


def _gls(X: np.ndarray, y: np.ndarray, nonneg: tuple[int, ...]) -> tuple[LinearFit, np.ndarray]:
    """Feasible GLS: OLS, then alternate σ from the residuals and WLS with weights 1/σ².
    OLS alone is ruled by the largest calls: its residuals on small calls are mostly bias,
    so σ and the weights of small calls need a few rounds to settle."""
    fit = wls(X, y, None, nonneg)
    for _ in range(_GLS_ROUNDS):
        sigma_coef = fit_sigma(X, y - fit.predict(X), ml=False)
        previous = fit.predict(X)
        fit = wls(X, y, 1.0 / floor_sigma(X @ sigma_coef) ** 2, nonneg)
        if np.max(np.abs(fit.predict(X) - previous) / floor_sigma(X @ sigma_coef)) < 1e-3:
            break  # the mean moved by less than 0.1 % of σ anywhere
    return fit, fit_sigma(X, y - fit.predict(X))


def _finish(kernel: str, mean: str, noise: str, terms: tuple[Exponents, ...], X: np.ndarray,
            sizes: Mapping[str, np.ndarray], y: np.ndarray, fit: LinearFit, sigma_coef: np.ndarray | None,
            max_components: int, seed: int) -> KernelFit:
    """The KernelFit of one noise model on top of a fitted mean."""
    n = len(y)
    resid = y - fit.predict(X)
    mean_poly = _poly(kernel, terms, fit.coef)
    n_mean = len(terms) - len(fit.dropped)
    if noise == "N0":
        model = KernelModel(kernel, mean_poly)
        n_params = n_mean
    elif noise == "N1":
        s = math.sqrt(float(resid @ resid) / max(n - n_mean, 1))
        model = KernelModel(kernel, mean_poly, "normal", sigma=_poly(kernel, ((0,) * len(terms[0]),), np.array([s])))
        n_params = n_mean + 1
    else:
        assert sigma_coef is not None
        sigma_poly = _poly(kernel, terms, sigma_coef)
        n_sigma = int(np.count_nonzero(sigma_coef))
        if noise == "N2":
            model = KernelModel(kernel, mean_poly, "normal", sigma=sigma_poly)
            n_params = n_mean + n_sigma
        else:
            z = resid / floor_sigma(X @ sigma_coef)
            weights, shifts, sds = fit_mixture_1d(z, max_components, seed)
            comps = tuple(
                Component(w, _scaled(sigma_poly, mu), _scaled(sigma_poly, sd)) for w, mu, sd in zip(weights, shifts, sds)
            )
            model = KernelModel(kernel, mean_poly, "mixture", components=comps)
            # weights (K-1), shifts and sds (2K), the σ shape (its scale is in the sds)
            n_params = n_mean + n_sigma - 1 + 3 * len(comps) - 1
    loglik = None if noise == "N0" else float(predictive(model, sizes).logpdf(y).sum())
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    r2 = 1.0 - float(np.sum((y - model.predict(sizes)) ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    names = [term_name(e, KERNEL_VARIABLES[kernel]) for e in terms]
    return KernelFit(
        kernel, mean, noise, model,
        se={nm: float(se) for nm, se in zip(names, fit.se)},
        dropped=tuple(names[i] for i in fit.dropped),
        n=n, r2=r2, loglik=loglik, n_params=n_params,
    )


def _scaled(poly: Polynomial, factor: float) -> Polynomial:
    return Polynomial(poly.variables, tuple((e, c * factor) for e, c in poly.terms))
