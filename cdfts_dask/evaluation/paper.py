"""Numbers printed in the paper (Zhu et al. 2021), for comparison with ours.

``F_MEASURE[dataset][algorithm]`` = (Orig, ReScale, DScale, CDF-TS) from the
table "The best F-measure ..."; ``AUC[dataset]`` holds LOF, iForest, iNNE and
kNN = (Orig, ReScale, DScale, CDF-TS) from "The best AUC on 12 datasets".
Keys are our dataset file names; datasets the paper has but the shared
collection lacks (ForestType, Haberman, AnnThyroid, Velocity) are listed too.
"""

from __future__ import annotations

TRANSFORM_ORDER = ("original", "rescale", "dscale", "cdfts")

_F = """
pendigits 0.70 0.78 0.74 0.80 0.79 0.82 0.82 0.84 0.79 0.84 0.84 0.844 0.83 0.878 0.87 0.88
segment 0.59 0.62 0.61 0.67 0.78 0.77 0.80 0.84 0.57 0.66 0.69 0.66 0.76 0.73 0.76 0.80
mice 0.99 0.99 0.99 0.993 1.00 1.00 1.00 1.00 0.98 0.98 0.99 0.99 1.00 1.00 1.00 1.00
biodeg 0.45 0.44 0.47 0.52 0.72 0.74 0.73 0.76 0.45 0.44 0.61 0.70 0.68 0.70 0.71 0.73
ilpd 0.41 0.42 0.56 0.52 0.60 0.63 0.62 0.64 0.49 0.49 0.58 0.57 0.57 0.62 0.57 0.600
foresttype 0.27 0.51 0.48 0.65 0.69 0.83 0.70 0.85 0.28 0.66 0.55 0.84 0.63 0.82 0.80 0.84
wilt 0.38 0.39 0.54 0.55 0.54 0.68 0.54 0.74 0.44 0.53 0.49 0.67 0.53 0.56 0.54 0.71
musk 0.51 0.52 0.51 0.53 0.55 0.58 0.61 0.62 0.51 0.53 0.54 0.53 0.60 0.61 0.63 0.586
libras 0.41 0.44 0.46 0.49 0.52 0.52 0.52 0.53 0.46 0.46 0.49 0.49 0.48 0.51 0.49 0.54
dermatology 0.52 0.73 0.74 0.83 0.91 0.97 0.91 0.96 0.73 0.76 0.75 0.87 0.92 0.97 0.94 0.96
haberman 0.47 0.64 0.59 0.66 0.56 0.63 0.58 0.67 0.49 0.58 0.54 0.66 0.53 0.67 0.56 0.664
seeds 0.75 0.88 0.85 0.83 0.91 0.92 0.92 0.94 0.90 0.90 0.91 0.88 0.91 0.91 0.91 0.91
wine 0.64 0.86 0.80 0.90 0.93 0.95 0.96 0.962 0.84 0.92 0.90 0.88 0.92 0.94 0.92 0.96
3L 0.59 0.63 0.90 0.88 0.82 0.81 0.86 0.89 0.76 0.79 0.70 0.73 0.71 0.71 0.71 0.70
4C 0.71 0.90 0.92 0.95 0.87 0.92 0.95 0.91 0.86 0.88 0.88 0.883 0.95 0.961 0.95 0.96
"""

_AUC = """
annthyroid 0.68 0.88 0.74 0.65 0.76 0.71 0.94
pageblocks 0.93 0.90 0.92 0.89 0.88 0.86 0.94
tomcat 0.67 0.81 0.69 0.63 0.77 0.69 0.78
ant 0.68 0.77 0.70 0.67 0.76 0.71 0.76
blooddonation 0.79 0.82 0.74 0.69 0.84 0.80 0.86
vowel 0.93 0.92 0.95 0.93 0.930 0.90 0.94
mfeat 0.98 0.98 0.99 0.99 0.99 1.00 0.99
dermatology 0.99 0.86 0.98 0.91 0.99 0.97 1.00
balance 0.95 0.91 0.97 0.94 0.91 0.83 0.92
velocity 0.62 0.65 0.61 0.66 0.67 0.694 0.69
syn1 0.93 0.90 0.94 0.92 0.89 0.95 0.98
syn2 0.88 0.86 0.91 0.88 0.92 0.95 0.94
"""


def _parse_f() -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for line in _F.strip().splitlines():
        name, *vals = line.split()
        nums = [float(v) for v in vals]
        out[name] = {
            alg: dict(zip(TRANSFORM_ORDER, nums[4 * i : 4 * i + 4], strict=False))
            for i, alg in enumerate(("DBSCAN", "DP", "EC", "LGD"))
        }
    return out


def _parse_auc() -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for line in _AUC.strip().splitlines():
        name, *vals = line.split()
        nums = [float(v) for v in vals]
        out[name] = {
            "LOF": {"original": nums[0]},
            "iForest": {"original": nums[1]},
            "iNNE": {"original": nums[2]},
            "kNN": dict(zip(TRANSFORM_ORDER, nums[3:7], strict=False)),
        }
    return out


F_MEASURE = _parse_f()
AUC = _parse_auc()

#: datasets whose exact version is known (see ../shared/datasets/SOURCES.md)
EXACT = {
    "clustering": {
        "pendigits",
        "segment",
        "biodeg",
        "ilpd",
        "wilt",
        "musk",
        "libras",
        "dermatology",
        "seeds",
        "wine",
        "3L",
        "4C",
    },
    "anomaly": {"pageblocks", "tomcat", "ant", "vowel", "dermatology", "syn1", "syn2"},
}


def paper_value(task: str, dataset: str, algorithm: str, transform: str) -> float | None:
    table = F_MEASURE if task == "clustering" else AUC
    return table.get(dataset, {}).get(algorithm, {}).get(transform)
