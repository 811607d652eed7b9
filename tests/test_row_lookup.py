"""The exact row lookup behind a model's fit points (:mod:`cdfts_dask.row_lookup`)."""

from __future__ import annotations

import numpy as np
import pytest

from cdfts_dask.row_lookup import NOT_FOUND, RowIndex


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_each_row_finds_an_equal_row_of_the_table_or_none(dtype):
    rng = np.random.default_rng(0)
    P = rng.integers(0, 4, (300, 3)).astype(dtype)  # many repeated rows
    Y = np.concatenate([P[rng.permutation(300)[:50]], rng.uniform(5, 6, (20, 3)).astype(dtype)])
    found = RowIndex.of(P).find(Y)
    assert (found[:50] != NOT_FOUND).all() and np.array_equal(P[found[:50]], Y[:50])
    assert (found[50:] == NOT_FOUND).all()
    brute = [(P == y).all(axis=1).any() for y in Y]  # every row against every row
    assert np.array_equal(found != NOT_FOUND, brute)


def test_rows_are_compared_by_value_not_by_nearness():
    P = np.array([[0.0, 1.0], [0.25, 0.5]])
    Y = np.array([[-0.0, 1.0], [0.25, np.nextafter(0.5, 1.0)], [0.25, 0.5], [1.0, 0.0]])
    assert RowIndex.of(P).find(Y).tolist() == [0, NOT_FOUND, 1, NOT_FOUND]
    assert RowIndex.of(-P).find(-P).tolist() == [0, 1]  # -0.0 in the table too


def test_empty_table_or_rows_and_a_dtype_mismatch():
    P = np.ones((4, 2))
    assert RowIndex.of(P[:0]).find(P).tolist() == [NOT_FOUND] * 4
    assert RowIndex.of(P).find(P[:0]).shape == (0,)
    with pytest.raises(TypeError, match="table's dtype float64, got float32"):
        RowIndex.of(P).find(P.astype(np.float32))
