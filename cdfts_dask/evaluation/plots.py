"""Figures (matplotlib, Agg backend): CDF-TS iterations, convergence, MDS views.

The density in the titles is the paper's ``Std(x) = sigma(pdf_eps(x in D))``:
the standard deviation over the points of the epsilon-neighbourhood density
``pdf_eps(x) = |{y : ||x - y|| <= eps}| / (n * V_d(eps))`` with ``V_d(eps)``
the volume of the d-ball of radius eps, on the min-max normalised points
(absolute distances, eps = 0.1).
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..normalise import minmax_normalise  # noqa: E402
from ..oracle import cdf_ts_dense, pairwise_distances  # noqa: E402
from ..paths import replaced_atomically  # noqa: E402

#: the stopping threshold drawn in the convergence plot (cdf_ts's default delta)
STOP_DELTA = 0.015


def _save(fig, path) -> None:
    """Write ``fig`` as a PNG at ``path`` under a temporary name first (never a half-written PNG), and
    close it."""
    try:
        with replaced_atomically(path, file=True) as tmp:
            fig.savefig(tmp, dpi=80, format="png")
    finally:
        plt.close(fig)


def _class_legend(ax, dots) -> None:
    """A legend of the class colours of a scatter coloured by integer labels."""
    handles, labels = dots.legend_elements()
    ax.legend(handles, labels, title="class", fontsize=7, title_fontsize=7, loc="best", markerscale=0.8)


def density_std(X: np.ndarray, eps: float = 0.1) -> float:
    """``sigma(pdf_eps(x))`` over the rows of (already normalised) X."""
    n, d = X.shape
    counts = np.count_nonzero(pairwise_distances(X) <= eps, axis=1)
    volume = math.pi ** (d / 2) / math.gamma(d / 2 + 1) * eps**d
    return float(np.std(counts / (n * volume)))


def iterate(X: np.ndarray, lam: float = 0.1, iterations: int = 5) -> list[np.ndarray]:
    """The normalised points before and after each of ``iterations`` CDF-TS iterations (no early stop)."""
    res = cdf_ts_dense(X, lam=lam, delta=1e-12, max_iter=iterations, keep_steps=True)
    return [minmax_normalise(X)[0]] + [s.X for s in res.steps]


def scatter_iterations(
    X: np.ndarray,
    y: np.ndarray | None,
    path,
    lam: float = 0.1,
    shown: tuple[int, ...] = (1, 3, 5),
    eps: float = 0.1,
    title: str = "",
) -> list[float]:
    """Scatter plots of 2-D data before and after the ``shown`` iterations; returns the density stds."""
    if X.shape[1] != 2:
        raise ValueError(f"scatter plots need 2-D data, got {X.shape[1]} columns")
    states = iterate(X, lam, max(shown))
    panels = [(0, "original")] + [(i, f"after {i} iteration{'s' if i > 1 else ''}") for i in shown]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4))
    stds = []
    for ax, (i, name) in zip(axes, panels, strict=False):
        P = states[i]
        s = density_std(P, eps)
        stds.append(s)
        dots = ax.scatter(P[:, 0], P[:, 1], c=y if y is not None else "k", s=3, cmap="tab10")
        ax.set_title(f"{name}\nStd(x) = {s:.2f}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_aspect("equal")
    if y is not None:
        _class_legend(axes[-1], dots)
    fig.suptitle(f"{title} CDF-TS, lambda = {lam}".strip(), fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return stds


def convergence(
    X: np.ndarray, path, lam: float = 0.1, iterations: int = 10, eps: float = 0.1, title: str = ""
) -> tuple[list[float], list[float]]:
    """Delta and the density std per iteration (iteration 0 = the normalised input)."""
    res = cdf_ts_dense(X, lam=lam, delta=1e-12, max_iter=iterations, keep_steps=True)
    stds = [density_std(minmax_normalise(X)[0], eps)] + [density_std(s.X, eps) for s in res.steps]
    fig, ax1 = plt.subplots(figsize=(5, 3.2))
    it = np.arange(1, len(res.deltas) + 1)
    ax1.plot(it, res.deltas, "o-", color="tab:blue", label="Delta (mean |movement|)")
    ax1.axhline(STOP_DELTA, color="tab:blue", ls=":", lw=1, label=f"delta = {STOP_DELTA} (default stop)")
    ax1.set_xlabel("iteration")
    ax1.set_ylabel("Delta (mean |movement|)", color="tab:blue")
    ax2 = ax1.twinx()
    ax2.plot(np.arange(len(stds)), stds, "s--", color="tab:red", label="Std of eps-density")
    ax2.set_ylabel(f"Std of eps-density (eps={eps})", color="tab:red")
    lines = ax1.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax1.legend(lines, [line.get_label() for line in lines], fontsize=7, loc="upper right")
    ax1.set_title(f"{title} lambda = {lam}".strip(), fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return list(res.deltas), stds


def mds_views(
    X: np.ndarray, y: np.ndarray, path, lam: float = 0.1, max_n: int = 500, seed: int = 0, title: str = ""
) -> None:
    """2-D metric MDS of the original and the CDF-TS distances, coloured by label
    (like the paper's Wilt figure)."""
    from sklearn.manifold import MDS

    rng = np.random.default_rng(seed)
    if len(y) > max_n:
        idx = np.sort(rng.choice(len(y), size=max_n, replace=False))
        X, y = X[idx], y[idx]
    views = [("distance", minmax_normalise(X)[0]), ("CDF-TS", cdf_ts_dense(X, lam=lam, delta=0.015).X)]
    fig, axes = plt.subplots(1, 2, figsize=(7, 3.5))
    for ax, (name, P) in zip(axes, views, strict=False):
        mds = MDS(  # every argument whose default is changing is explicit (no FutureWarning)
            n_components=2, metric="precomputed", metric_mds=True, init="classical_mds", n_init=1,
            random_state=seed, max_iter=200,
        )  # fmt: skip
        E = mds.fit_transform(pairwise_distances(P))
        dots = ax.scatter(E[:, 0], E[:, 1], c=y, s=4, cmap="tab10")
        ax.set_title(f"MDS: {name}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    _class_legend(axes[-1], dots)
    fig.suptitle(f"{title} (lambda = {lam})".strip(), fontsize=10)
    fig.tight_layout()
    _save(fig, path)
