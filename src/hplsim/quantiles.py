"""The few distribution functions hplsim needs, through scipy.special.

`scipy.stats` takes 1–2 s of CPU to import (it builds the docstrings of ~600 distributions),
more than many of hplsim's commands take to run; `scipy.special` is a fraction of that.
Each function below is what the `scipy.stats` method calls internally, so the results are
the same bits (checked by tests/test_quantiles.py against `scipy.stats`).

>>> round(t_ppf(0.95, 4), 6)
2.131847
>>> round(norm_ppf(0.95), 6)
1.644854
"""

from __future__ import annotations

#: ``scipy.special.ndtri(0.95)``, the 90 % intervals' normal quantile, written out: every
#: `hplsim predict` prints an interval, and importing scipy.special costs it a third of a
#: second, half of a small prediction's time (tests/test_quantiles.py checks the bits)
NORM_PPF_95 = 1.6448536269514722


def norm_ppf(q: float) -> float:
    """The standard normal's quantile, as ``scipy.stats.norm.ppf(q)``."""
    from scipy.special import ndtri

    return float(ndtri(q))


def t_ppf(q: float, df: float) -> float:
    """Student's t quantile with `df` degrees of freedom, as ``scipy.stats.t.ppf(q, df)``."""
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def chi2_ppf(q: float, df: float) -> float:
    """The chi-squared quantile, as ``scipy.stats.chi2.ppf(q, df)``."""
    from scipy.special import gammaincinv

    return float(2 * gammaincinv(df / 2, q))


def f_ppf(q: float, dfn: float, dfd: float) -> float:
    """Fisher's F quantile, as ``scipy.stats.f.ppf(q, dfn, dfd)``."""
    from scipy.special import fdtri

    return float(fdtri(dfn, dfd, q))


def f_sf(x: float, dfn: float, dfd: float) -> float:
    """Fisher's F survival function (a p-value), as ``scipy.stats.f.sf(x, dfn, dfd)``."""
    from scipy.special import fdtrc

    return float(fdtrc(dfn, dfd, x))
