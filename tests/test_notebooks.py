"""CI executes every notebook in notebooks/ and fails if a cell raises (nbclient + the ipykernel kernel)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from gpusim.schedule.load import builtin_schedule_names  # noqa: E402

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
# What each notebook needs beyond the GEMM schedules; a notebook is skipped (saying why) only when a
# schedule or module it is written against does not exist yet.
NEEDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "01_quickstart": (("gemm_ws_pingpong",), ()),
    "02_volta_to_blackwell": (("gemm_sync", "gemm_cp_async", "gemm_ws_pingpong", "gemm_tcgen05"), ()),
    "03_fa3_pingpong": (("attn_fa2_fwd", "attn_fa3_fwd"), ()),
    "04_calibration": ((), ("gpusim.calibrate.validate",)),
    "05_flashmla_seesaw": (("mla_decode_flashmla",), ()),
}


def test_every_notebook_is_listed() -> None:
    """A new notebook must be added to NEEDS (so CI runs it)."""
    assert {p.stem for p in NOTEBOOK_DIR.glob("*.ipynb")} == set(NEEDS)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_notebook_runs(name: str) -> None:
    """Execute the notebook top to bottom in a fresh python3 kernel; any exception fails the test."""
    schedules, modules = NEEDS[name]
    missing = [s for s in schedules if s not in builtin_schedule_names()]
    missing += [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{name} is written against {', '.join(missing)}, which does not exist yet")
    nb = nbformat.read(NOTEBOOK_DIR / f"{name}.ipynb", as_version=4)
    client = nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK_DIR)}})  # fmt: skip
    client.execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"
    ]
    assert not errors
