"""The collector's threshold is raised only while a prediction runs, and restored after."""

from __future__ import annotations

import gc

import pytest

from gpusim.sim.gcpolicy import YOUNG_THRESHOLD, fewer_collections


def test_threshold_raised_and_restored() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        with fewer_collections():  # nested (a search's candidates): unchanged, restored by the outer
            assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
        assert gc.get_threshold()[0] == max(before[0], YOUNG_THRESHOLD)
    assert gc.get_threshold() == before


def test_restored_after_an_error_and_collection_off_left_alone() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
    gc.set_threshold(0)
    try:
        with fewer_collections():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)
