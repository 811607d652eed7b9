"""Extreme clustering (EC; Wang et al., Information Sciences 2021), simplified.

EC replaces DP's decision graph by *density extreme points*: a point whose
epsilon-neighbourhood holds no point of higher density (ranked as in
:mod:`.dp`) is a cluster centre, i.e. ``delta(i) > eps``.  Every other
point inherits the label of its nearest higher-ranked point, exactly as in
DP.  EC's one parameter is eps.

Approximation: the published EC also has a noise-detection module; it is
not implemented here (every point is labelled), see docs/REPRODUCTION.md.
"""

from __future__ import annotations

import numpy as np

from .dp import density, link, peaks


def extreme_clustering(D: np.ndarray, eps: float) -> np.ndarray:
    """EC labels: centres are the points with no higher-density point within eps."""
    pk = peaks(D, density(D, eps))
    is_centre = pk.delta > eps
    is_centre[pk.order[0]] = True  # the densest point has nowhere to link
    return link(pk, np.flatnonzero(is_centre))
