"""Weighted least squares with sign constraints on chosen coefficients.

Kernel models must not have a negative intercept or a negative leading term (the model
file refuses them: large or tiny calls would get negative durations). When the
unconstrained fit breaks a constraint, the offending coefficient is fixed at 0 and the
others refitted (an active-set step), one coefficient at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LinearFit:
    coef: np.ndarray  # one per column; 0 for dropped columns
    se: np.ndarray  # standard errors; 0 for dropped columns
    dropped: tuple[int, ...]  # columns fixed at 0 by a constraint
    scale2: float  # Σ w r² / (n - p): 1 when the weights are exactly 1/variance

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X @ self.coef


def wls(X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, nonneg: tuple[int, ...] = ()) -> LinearFit:
    """Minimise Σ w (y - X·c)² subject to c[i] >= 0 for i in `nonneg`."""
    n, p = X.shape
    w = np.ones(n) if w is None else np.asarray(w, dtype=float)
    sw = np.sqrt(w)
    # Columns span many decades (1 to m·n·k ~ 1e12): scale them to unit norm.
    norms = np.linalg.norm(X * sw[:, None], axis=0)
    norms[norms == 0] = 1.0
    A = X * sw[:, None] / norms
    b = y * sw
    active = list(range(p))
    dropped: list[int] = []
    while True:
        c_act, *_ = np.linalg.lstsq(A[:, active], b, rcond=None)
        coef = np.zeros(p)
        coef[active] = c_act
        bad = [i for i in nonneg if i in active and coef[i] < 0]
        if not bad or len(active) == 1:
            break
        # drop the most negative one (columns have unit norm, so sizes compare), then refit
        worst = min(bad, key=lambda i: coef[i])
        active.remove(worst)
        dropped.append(worst)
    resid = b - A[:, active] @ c_act
    dof = max(n - len(active), 1)
    scale2 = float(resid @ resid) / dof
    se = np.zeros(p)
    try:
        cov = np.linalg.pinv(A[:, active].T @ A[:, active]) * scale2
        se[active] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    except np.linalg.LinAlgError:
        se[active] = np.nan
    coef = coef / norms
    se = se / norms
    if len(active) == 1 and active[0] in nonneg and coef[active[0]] < 0:
        coef[active[0]] = 0.0
        dropped.append(active[0])
    return LinearFit(coef, se, tuple(sorted(dropped)), scale2)


def nnls(X: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """Minimise Σ w (y - X·c)² subject to every c >= 0."""
    from scipy.optimize import nnls as _nnls

    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=float)
    sw = np.sqrt(w)
    norms = np.linalg.norm(X * sw[:, None], axis=0)
    norms[norms == 0] = 1.0
    # Same solution from the small triangular factor: |Ac - b|² = |Rc - Qᵀb|² + const.
    q, r = np.linalg.qr(X * sw[:, None] / norms)
    coef, _ = _nnls(r, q.T @ (y * sw), maxiter=50 * X.shape[1])
    return coef / norms


def rank(X: np.ndarray) -> int:
    """Numerical rank of a design after scaling its columns (so 1 and m·n·k compare)."""
    norms = np.linalg.norm(X, axis=0)
    norms[norms == 0] = 1.0
    return int(np.linalg.matrix_rank(X / norms))
