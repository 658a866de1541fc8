"""hplsim fit on synthetic data with a known truth: the kernel polynomial and its
heteroscedastic noise, piecewise breakpoints, mixture weights; and the scoring formulas."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from hplsim.errors import HplsimError
from hplsim.models.kernel_fit import fit_kernel, mean_terms
from hplsim.models.noise import NormalMixture, fit_sigma, sigma_nll
from hplsim.models.piecewise import fit_piecewise, fit_piecewise_joint
from hplsim.models.selection import choose, compare

# dgemm-like truth: duration = MU(m,n,k) + SIGMA(m,n,k)·Z. A negative cross term, as in
# the published Dahu models; σ about 3 % of the mean.
MU = {"intercept": 2e-6, "mnk": 7e-11, "mn": -2e-11, "mk": 2e-9, "nk": 3e-9}
SIGMA = {"intercept": 1e-7, "mnk": 2e-12, "mn": 1e-12, "mk": 6e-11, "nk": 9e-11}


def poly(c: dict[str, float], m, n, k):
    return c["intercept"] + c["mnk"] * m * n * k + c["mn"] * m * n + c["mk"] * m * k + c["nk"] * n * k


def design(rng: np.random.Generator, rows: int = 500, reps: int = 40, side: int = 4000) -> np.ndarray:
    """Sizes drawn independently and log-uniformly in [1, side] (small calls included: the
    intercept is only known from them), each row repeated."""
    d = np.round(np.exp(rng.uniform(0, math.log(side), (rows, 3))))
    return np.repeat(d, reps, axis=0)


def synthetic_calls(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    m, n, k = design(rng).T
    y = poly(MU, m, n, k) + poly(SIGMA, m, n, k) * rng.standard_normal(len(m))
    return pd.DataFrame({"m": m, "n": n, "k": k, "duration": y})


@pytest.fixture(scope="module")
def calls() -> pd.DataFrame:
    return synthetic_calls(seed=1)


@pytest.fixture(scope="module")
def m2n2(calls):
    return fit_kernel(calls, "dgemm", "M2", "N2")


def test_synthetic_has_20000_calls(calls):
    assert len(calls) == 20_000
    assert (calls["duration"] > 0).all()


def test_mean_within_1_percent_everywhere_on_the_design(calls, m2n2):
    pts = calls[["m", "n", "k"]].drop_duplicates()
    truth = poly(MU, pts["m"], pts["n"], pts["k"]).to_numpy()
    rel = np.abs(m2n2.predict(pts) / truth - 1)
    assert rel.max() < 0.01, f"worst relative error of the mean {rel.max():.4f}"


def test_mnk_coefficient_within_1_percent(m2n2):
    assert m2n2.coefficients["mnk"] == pytest.approx(MU["mnk"], rel=0.01)


def test_other_coefficients_within_3_standard_errors(m2n2):
    for term in ("intercept", "mn", "mk", "nk"):
        est, se = m2n2.coefficients.get(term, 0.0), m2n2.se[term]
        assert se > 0, term
        z = (est - MU[term]) / se
        assert abs(z) < 3, f"{term}: {est:.4g} vs {MU[term]:.4g}, {z:.2f} standard errors"


def test_standard_errors_are_honest():
    """Over independent data sets the z-scores of the coefficients have spread ~1: the
    standard errors are neither flattering nor timid."""
    zs = []
    for seed in range(10, 22):
        f = fit_kernel(synthetic_calls(seed), "dgemm", "M2", "N2")
        zs.append([(f.coefficients.get(t, 0.0) - MU[t]) / f.se[t] for t in MU])
    spread = np.std(np.array(zs), axis=0)
    assert np.all(spread > 0.5) and np.all(spread < 1.6), spread


def test_sigma_polynomial_within_10_percent(calls, m2n2):
    pts = calls[["m", "n", "k"]].drop_duplicates()
    truth = poly(SIGMA, pts["m"], pts["n"], pts["k"]).to_numpy()
    rel = np.abs(m2n2.model.sigma(pts) / truth - 1)
    assert rel.max() < 0.10, f"worst relative error of sigma {rel.max():.3f}"


def test_sigma_likelihood_stays_finite_at_sigma_zero():
    """The bounded search of σ's coefficients may try them all at 0: the likelihood there is
    the floor's, finite and silent, and its gradient is the true one elsewhere."""
    rng = np.random.default_rng(5)
    A = np.column_stack([np.ones(50), rng.uniform(0, 1, 50)])
    r2 = (0.1 + A[:, 1]) ** 2 * rng.standard_normal(50) ** 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, grad = sigma_nll(np.zeros(2), A, r2, 1e-3)
    assert value == pytest.approx(np.sum(np.log(1e-3) + 0.5 * r2 / 1e-6)) and np.all(grad == 0)
    c, h = np.array([0.1, 1.0]), 1e-7
    numeric = [(sigma_nll(c + h * e, A, r2, 1e-3)[0] - sigma_nll(c - h * e, A, r2, 1e-3)[0]) / (2 * h)
               for e in np.eye(2)]
    assert sigma_nll(c, A, r2, 1e-3)[1] == pytest.approx(numeric, rel=1e-5)


def test_sigma_fit_of_traced_dtrsm_calls_is_silent_and_improves_the_likelihood():
    """Seven dtrsm calls of a traced HPL run (size term m·n, residuals of an M-1 mean): the
    search tried σ ≡ 0 there and numpy printed a divide-by-zero warning under `hplsim fit`."""
    mn = np.array([64, 32768, 32768, 65536, 467968, 32768, 32768.0])
    resid = np.array([1.64413752e-05, 1.44937362e-06, 1.50937481e-06, 3.21137409e-06, 6.50043741e-05,
                      1.57937498e-06, 1.55837474e-06])
    X = np.column_stack([np.ones_like(mn), mn])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ml, start = fit_sigma(X, resid), fit_sigma(X, resid, ml=False)

    def nll(coef: np.ndarray) -> float:
        s = X @ coef
        return float(np.sum(np.log(s) + 0.5 * resid**2 / s**2))

    assert np.all(ml >= 0) and np.all(X @ ml > 0)
    assert nll(ml) < nll(start)


def test_generative_model_reproduces_the_spread(calls, m2n2):
    """Durations drawn from the fitted model have the spread of the data, call by call."""
    rng = np.random.default_rng(3)
    drawn = m2n2.sample(calls, rng)
    z_true = (calls["duration"] - poly(MU, calls["m"], calls["n"], calls["k"])) / poly(SIGMA, calls["m"], calls["n"], calls["k"])
    z_model = (drawn - poly(MU, calls["m"], calls["n"], calls["k"])) / poly(SIGMA, calls["m"], calls["n"], calls["k"])
    assert np.std(z_model) == pytest.approx(np.std(z_true), rel=0.05)


def test_model_terms():
    names = lambda kernel, opt: [  # noqa: E731
        "".join(v for v, e in zip("mnk", t) for _ in range(e)) or "1" for t in mean_terms(kernel, opt)
    ]
    assert names("dgemm", "M0") == ["1"]
    assert names("dgemm", "M1") == ["1", "mnk"]
    assert names("dgemm", "M2") == ["1", "mnk", "mn", "mk", "nk"]
    assert len(mean_terms("daxpy", "M2")) == 2  # one size: M2 is M1


def test_selection_prefers_the_true_model(calls):
    table = compare(calls.sample(6000, random_state=0), "dgemm",
                    [("M1", "N2"), ("M2", "N1"), ("M2", "N2")], folds=3)
    by = table.set_index("option")
    assert by.loc["M2,N2", "cv_crps"] < by.loc["M1,N2", "cv_crps"]
    assert by.loc["M2,N2", "bic"] < by.loc["M2,N1", "bic"]
    assert choose(table).option == ("M2", "N2")
    assert 0.85 < by.loc["M2,N2", "cv_coverage90"] < 0.95


# ------------------------------------------------------------------ mixtures


def test_three_component_mixture_weights_recovered():
    rng = np.random.default_rng(5)
    m, n, k = design(rng, rows=400, reps=50).T
    weights = np.array([0.6, 0.3, 0.1])
    shifts = np.array([-0.8, 0.6, 3.0])  # in units of the σ polynomial
    sds = np.array([0.4, 0.5, 0.8])
    pick = rng.choice(3, size=len(m), p=weights)
    s = poly(SIGMA, m, n, k)
    y = poly(MU, m, n, k) + s * (shifts[pick] + sds[pick] * rng.standard_normal(len(m)))
    f = fit_kernel(pd.DataFrame({"m": m, "n": n, "k": k, "duration": y}), "dgemm", "M2", "NMix")
    got = sorted(f.model.components, key=lambda c: c.shift({"m": 100, "n": 100, "k": 100}))
    assert len(got) == 3, [c.weight for c in got]
    assert np.abs(np.array([c.weight for c in got]) - weights).max() < 0.05, [c.weight for c in got]


def test_crps_and_quantiles_of_mixtures_match_numerical_integration():
    mix = NormalMixture([0.3, 0.7], [[-1.0, 2.0]], [[0.5, 1.5]])
    for y in (-2.0, 0.3, 4.0):
        cdf = lambda x: 0.3 * stats.norm.cdf(x, -1, 0.5) + 0.7 * stats.norm.cdf(x, 2, 1.5)  # noqa: E731
        num = integrate.quad(lambda x: cdf(x) ** 2, -30, y)[0] + integrate.quad(lambda x: (1 - cdf(x)) ** 2, y, 30)[0]
        assert mix.crps(np.array([y]))[0] == pytest.approx(num, rel=1e-6)
    q = mix.quantile(0.9)[0]
    assert 0.3 * stats.norm.cdf(q, -1, 0.5) + 0.7 * stats.norm.cdf(q, 2, 1.5) == pytest.approx(0.9, abs=1e-9)
    point = NormalMixture([1.0], [[2.0]], [[0.0]])
    assert point.crps(np.array([3.5]))[0] == pytest.approx(1.5)
    assert point.logpdf(np.array([2.0])) is None


# ------------------------------------------------------------------ breakpoints

TRUE_BREAKPOINTS = [1e3, 3.2e4, 1e6]
SEGMENTS = [(1e-6, 1e-10), (3e-6, 2e-10), (2e-5, 1.2e-10), (1e-4, 8e-11)]  # (intercept, slope): jumps at each


def piecewise_data(seed: int, n: int = 2000, rel_sd: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.round(10 ** rng.uniform(0, 8, n))  # sizes 10^U(0, 8), as the calibration draws them
    seg = np.searchsorted(TRUE_BREAKPOINTS, x, side="right")
    a = np.array([s[0] for s in SEGMENTS])[seg]
    b = np.array([s[1] for s in SEGMENTS])[seg]
    return x, (a + b * x) * (1 + rel_sd * rng.standard_normal(n))


@pytest.mark.parametrize("seed", range(5))
def test_piecewise_recovers_three_breakpoints(seed):
    x, y = piecewise_data(seed)
    fit = fit_piecewise(x, y)
    assert len(fit.segments) == 4, fit.breakpoints
    for found, true in zip(fit.breakpoints, TRUE_BREAKPOINTS):
        # within 5 % in log-size; in fact within 5 % in size
        assert abs(math.log(found) - math.log(true)) < 0.05 * math.log(true)
        assert abs(found / true - 1) < 0.05, (found, true)
    for seg, (a, b) in zip(fit.segments, SEGMENTS):
        mid = math.sqrt(max(seg.lower, 1.0) * min(seg.upper, 1e8))
        assert seg.predict(mid) == pytest.approx(a + b * mid, rel=0.05)
        assert seg.rel_sd == pytest.approx(0.05, rel=0.25)


def test_piecewise_is_exact_over_ten_decades_of_durations():
    """Durations from 10 ns to 100 s (weights 1/duration² spanning 20 decades): the search
    must not lose the large sizes' residuals in rounding."""
    rng = np.random.default_rng(4)
    x = np.round(10 ** rng.uniform(0, 10, 3000))
    truth = [(1e-8, 1e-11), (5e-8, 2e-11), (1e-5, 1e-8)]
    seg = np.searchsorted([1e3, 1e7], x, side="right")
    y = (np.array([t[0] for t in truth])[seg] + np.array([t[1] for t in truth])[seg] * x) * (1 + 0.02 * rng.standard_normal(3000))
    assert y.min() < 2e-8 and y.max() > 50
    fit = fit_piecewise(x, y)
    assert len(fit.breakpoints) == 2, fit.breakpoints
    assert fit.breakpoints[0] == pytest.approx(1e3, rel=0.05)
    assert fit.breakpoints[1] == pytest.approx(1e7, rel=0.05)
    assert fit.segments[2].slope == pytest.approx(1e-8, rel=0.01)


def test_piecewise_without_breakpoints_stays_one_segment():
    rng = np.random.default_rng(0)
    x = np.round(10 ** rng.uniform(0, 8, 1000))
    y = (2e-6 + 1e-10 * x) * (1 + 0.05 * rng.standard_normal(1000))
    assert fit_piecewise(x, y).breakpoints == []


def test_joint_breakpoints_are_shared_and_found_from_the_clearest_operation():
    """A switch that is a big jump in one operation and barely visible in another is
    found for both when they are segmented together."""
    x, y = piecewise_data(0, n=800)
    rng = np.random.default_rng(1)
    x2 = np.round(10 ** rng.uniform(0, 8, 800))
    y2 = (1e-6 + 1e-10 * x2 + np.where(x2 > 3.2e4, 2e-7, 0.0)) * (1 + 0.05 * rng.standard_normal(800))
    fits = fit_piecewise_joint({"a": (x, y), "b": (x2, y2)})
    assert fits["a"].breakpoints == fits["b"].breakpoints
    assert any(abs(b / 3.2e4 - 1) < 0.05 for b in fits["b"].breakpoints)


def test_piecewise_sampling_follows_segments():
    x, y = piecewise_data(2)
    fit = fit_piecewise(x, y, noise="mixture")
    rng = np.random.default_rng(0)
    drawn = fit.sample(np.full(5000, 1e5), rng)
    assert np.mean(drawn) == pytest.approx(2e-5 + 1.2e-10 * 1e5, rel=0.03)
    assert np.std(drawn) / np.mean(drawn) == pytest.approx(0.05, rel=0.3)


@pytest.mark.parametrize("x, y, message", [
    ([], [], "no measurements"),
    ([10, 10, 10], [1e-6, 2e-6, 1e-6], "same size"),
    ([10, 20, 30], [1e-6, float("nan"), 1e-6], "finite"),
    ([10, 20, 30], [1e-6, -2e-6, 1e-6], "positive"),
])
def test_piecewise_bad_input(x, y, message):
    with pytest.raises(HplsimError, match=message):
        fit_piecewise(np.array(x, dtype=float), np.array(y, dtype=float))
