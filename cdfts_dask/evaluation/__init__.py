"""Downstream evaluation of CDF-TS: clustering and anomaly detection, as in the paper's section 6.

Modules, one job each:

* :mod:`.metrics` -- F-measure (Hungarian matching), AMI, ROC AUC;
* :mod:`.representations` -- original / ReScale / DScale / CDF-TS views of a dataset as
  relative distance matrices;
* :mod:`.dbscan`, :mod:`.dp`, :mod:`.ec`, :mod:`.lgd` -- clustering on a distance matrix;
* :mod:`.knn`, :mod:`.inne`, :mod:`.baselines` -- anomaly scores;
* :mod:`.grids` -- the paper's parameter search ranges;
* :mod:`.datasets` -- loading labelled tables;
* :mod:`.protocol` -- best-over-grid and train/test evaluation of one (dataset, representation);
* :mod:`.paper` -- the numbers printed in the paper, for comparison;
* :mod:`.report` -- tables (Markdown / CSV) from results;
* :mod:`.plots` -- figures.
"""

from .metrics import ami, auc, f_measure

__all__ = ["ami", "auc", "f_measure"]
