"""Every plot renders: a non-empty PNG of sensible size; bad plot requests are one-line errors."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image as mpimg
import pytest

from gpusim.arch import load_arch
from gpusim.errors import InputError
from gpusim.report.plot_timeline import plot_timeline
from gpusim.report.timeline import default_window, parse_window, role_lanes
from gpusim.schedule.load import load_schedule
from gpusim.sim.engine import simulate


def assert_png(path: Path, min_width: int = 1000, min_bytes: int = 20_000) -> None:
    """A real PNG, at least ``min_width`` pixels wide and ``min_bytes`` big."""
    assert path.exists() and path.stat().st_size > min_bytes, path
    image = mpimg.imread(path)
    assert image.shape[1] >= min_width and image.shape[0] >= 500


def _pingpong():
    a = load_arch("h100")
    return simulate(load_schedule("gemm_ws_pingpong", a, {"M": 2048, "N": 2048, "K": 2048}), a, record=True)


def test_timeline_renders(tmp_path: Path) -> None:
    """Default SM and window; then an explicit SM group and window."""
    run = _pingpong()
    out = plot_timeline(run, tmp_path / "t.png", verdict="a verdict", costs="datasheet")
    assert_png(out)
    out2 = plot_timeline(run, tmp_path / "t2.png", sm_index=len(run.sms) - 1, window_ns=(1000.0, 5000.0))
    assert_png(out2)


def test_timeline_data() -> None:
    """Role lanes exist for every role, the default window lies inside the kernel."""
    run = _pingpong()
    labels = [lane.label for lane in role_lanes(run, 0)]
    assert any("producer" in x for x in labels) and any("math" in x for x in labels)
    lo, hi = default_window(run, 0)
    assert 0 <= lo < hi <= run.kernel_ns


def test_window_parsing() -> None:
    """A window beyond the kernel's end or malformed is refused."""
    assert parse_window("1:2", 5000.0) == (1000.0, 2000.0)
    for bad in ("6:7", "1:9", "3:2", "x"):
        with pytest.raises(InputError):
            parse_window(bad, 5000.0)


def test_predict_plot_cli(run_cli, tmp_path: Path) -> None:
    """`predict --plot` writes the PNG; --sm out of range and --window beyond the end exit 2 in one line."""
    png = tmp_path / "p.png"
    base = ["predict", "gemm_ws_pingpong", "--set", "M=1024", "--set", "N=1024", "--set", "K=1024"]
    rc, _, err = run_cli([*base, "--plot", png])
    assert rc == 0, err
    assert_png(png)
    for extra, needle in (
        (["--sm", "99"], "--sm 99: out of range"),
        (["--window", "0:999999"], "ends after the kernel"),
    ):
        rc, _, err = run_cli([*base, "--plot", tmp_path / "q.png", *extra])
        assert rc == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def test_roofline_renders(run_cli, tmp_path: Path) -> None:
    """`gpusim roofline` places kernels and writes the PNG."""
    png = tmp_path / "r.png"
    rc, out, err = run_cli(["roofline", "--arch", "h100", "gemm_ws_pingpong", "gemm_sync", "--set", "M=1024",
                            "--set", "N=1024", "--set", "K=1024", "--plot", png])  # fmt: skip
    assert rc == 0, err
    assert "gemm_ws_pingpong" in out
    assert_png(png)


def test_compare_renders(run_cli, tmp_path: Path) -> None:
    """`gpusim compare --plot` writes the grouped bar chart."""
    png = tmp_path / "c.png"
    rc, _, err = run_cli(["compare", "gemm_sync", "--arch", "v100,a100", "--set", "M=1024", "--set", "N=1024",
                          "--set", "K=512", "--plot", png])  # fmt: skip
    assert rc == 0, err
    assert_png(png)


def test_a_plot_with_nothing_labelled_draws_no_legend_and_warns_nothing() -> None:
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpusim.report.legend import legend

    fig, ax = plt.subplots()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "No artists with labels" would raise here
        legend(ax, loc="upper left")
    assert ax.get_legend() is None
    ax.plot([0, 1], [0, 1], label="row")
    legend(ax, loc="upper left")
    assert ax.get_legend() is not None
    plt.close(fig)
