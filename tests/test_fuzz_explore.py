"""Fuzz the exploration, build, sequence and calibration commands with the adversarial corpus of
fuzz_corpus.py (grids, problem tables, rank-check CSVs, sequence YAMLs, hostile files, output paths).

CI runs an evenly spread slice of the corpus (GPUSIM_FUZZ_CORPUS_CASES, default 25 cases); set it to 0
for every case (~900; `python tests/fuzz_corpus.py` does the same outside pytest).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fuzz_corpus import cases
from fuzzkit import problems, run_forked

import gpusim.cli  # noqa: F401  (imported once here, so each forked run starts at once)

TIME_BOUND_S = 60.0
SLICE = int(os.environ.get("GPUSIM_FUZZ_CORPUS_CASES", "25"))


def _selected(workdir: Path) -> list[tuple[str, list[str]]]:
    every = cases(workdir)
    if SLICE <= 0 or len(every) <= SLICE:
        return every
    step = len(every) / SLICE
    return [every[int(i * step)] for i in range(SLICE)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, list[str]]]:
    return _selected(tmp_path_factory.mktemp("fuzz_corpus"))


def test_corpus_is_large_and_varied(tmp_path: Path) -> None:
    every = cases(tmp_path)
    assert len(every) >= 500
    commands = {args[0] for _, args in every}
    assert {"sweep", "tune", "rank-check", "resources", "check", "compare", "schema", "calibrate"} <= commands


def test_corpus_slice_keeps_every_promise(corpus: list[tuple[str, list[str]]]) -> None:
    broken = []
    for name, args in corpus:
        outcome = run_forked(args, timeout_s=TIME_BOUND_S)
        found = problems(outcome)
        if found:
            broken.append(f"{name}: {found} {outcome.stderr.strip()[-300:]!r}")
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("jobs", [-3, 1_000_000])
def test_local_job_counts_are_bounded(jobs: int) -> None:
    from gpusim.errors import InputError
    from gpusim.explore.executors import make_executor

    with pytest.raises(InputError, match="--jobs"):
        make_executor(None, jobs)
