"""The built-in architecture files: presence, sources, published peaks and ridge points, features, aliases."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from gpusim.arch import Arch, all_archs, builtin_arch_ids, load_arch, resolve_arch_id

EXPECTED_IDS = [
    "v100", "v100_pcie", "a100", "a100_pcie", "h100", "h100_pcie", "h800", "h800_pcie",
    "h200", "h20", "b100", "b200", "gb200", "b300",
]  # fmt: skip

EXPECTED_CC = {
    "v100": "7.0", "v100_pcie": "7.0", "a100": "8.0", "a100_pcie": "8.0", "h100": "9.0", "h100_pcie": "9.0",
    "h800": "9.0", "h800_pcie": "9.0", "h200": "9.0", "h20": "9.0", "b100": "10.0", "b200": "10.0",
    "gb200": "10.0", "b300": "10.3",
}  # fmt: skip

TMEM_BYTES_SM100 = 128 * 512 * 32 // 8  # 256 KiB

# (arch, dtype, published dense TFLOPS, published HBM TB/s): vendor datasheet figures.
PUBLISHED_RIDGES = [
    ("v100_pcie", "fp16", 112.0, 0.900),
    ("a100", "fp16", 312.0, 2.039),
    ("h100", "fp16", 990.0, 3.35),
    ("b100", "fp16", 1800.0, 8.0),
]

ARCH_IDS = builtin_arch_ids()


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def _arch(arch_id: str) -> Arch:
    return load_arch(arch_id)


# ---- presence and sources -------------------------------------------------------------------------


def test_all_fourteen_builtin_ids_exist() -> None:
    """builtin_arch_ids() lists exactly the 14 supported GPUs (V100 to B300, SXM and PCIe parts)."""
    assert sorted(builtin_arch_ids()) == sorted(EXPECTED_IDS)


def test_every_builtin_arch_loads() -> None:
    """all_archs() validates every file and returns one Arch per id, in the same order as the ids."""
    archs = all_archs()
    assert [a.id for a in archs] == builtin_arch_ids()


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_file_name_matches_id(arch_id: str) -> None:
    """Each built-in file's ``id`` equals its file name, so ``load_arch(id).id == id``."""
    assert load_arch(arch_id).id == arch_id


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_compute_capability_is_the_published_one(arch_id: str) -> None:
    """Each arch declares its published CUDA compute capability (7.0, 8.0, 9.0, 10.0 or 10.3)."""
    assert _arch(arch_id).compute_capability == EXPECTED_CC[arch_id]


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_every_number_has_a_source(arch_id: str) -> None:
    """uncovered_fields() is empty: every numeric field, or a parent block of it, has a ``sources`` entry."""
    assert _arch(arch_id).uncovered_fields() == []


def _resolves(obj: Any, dotted: str) -> bool:
    for part in dotted.split("."):
        if isinstance(obj, BaseModel) and part in type(obj).model_fields:
            obj = getattr(obj, part)
        elif isinstance(obj, dict) and part in obj:
            obj = obj[part]
        else:
            return False
    return True


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_every_source_key_names_a_real_field(arch_id: str) -> None:
    """Each key in ``sources`` is the dotted path of a field present in the file (a typo covers nothing)."""
    arch = _arch(arch_id)
    assert [key for key in arch.sources if not _resolves(arch, key)] == []


# ---- published peaks and ridge points ------------------------------------------------------------


@pytest.mark.parametrize(("arch_id", "dtype", "tflops", "tb_per_s"), PUBLISHED_RIDGES)
def test_ridge_point_matches_published_figures(
    arch_id: str, dtype: str, tflops: float, tb_per_s: float
) -> None:
    """The FP16 ridge point (dense peak / HBM bandwidth) is within 3% of the datasheet ratio."""
    published = tflops * 1e12 / (tb_per_s * 1e12)
    ridge = _arch(arch_id).ridge_point_flop_per_byte(dtype)
    assert ridge is not None
    assert _rel(ridge, published) < 0.03, (arch_id, ridge, published)


def test_h100_bf16_rate_and_dense_peak() -> None:
    """H100 SXM: 4096 BF16 FLOP/clk/SM x 132 SMs x 1830 MHz = 989.4 TFLOPS dense."""
    h100 = _arch("h100")
    assert h100.tensor_flops_per_clk_per_sm("bf16") == 4096
    assert h100.sm_count == 132
    expected = 4096 * 132 * 1830e6 / 1e12
    assert _rel(h100.dense_peak_tflops("bf16") or 0.0, expected) < 1e-3
    assert _rel(h100.dense_peak_tflops("bf16") or 0.0, 989.4) < 1e-3


def test_a100_fp16_rate_and_dense_peak() -> None:
    """A100 SXM: 2048 FP16 FLOP/clk/SM x 108 SMs x 1410 MHz = 311.9 TFLOPS dense (datasheet 312)."""
    a100 = _arch("a100")
    assert a100.tensor_flops_per_clk_per_sm("fp16") == 2048
    assert a100.sm_count == 108
    assert a100.clocks.tensor_clock_mhz == 1410
    assert _rel(a100.dense_peak_tflops("fp16") or 0.0, 2048 * 108 * 1410e6 / 1e12) < 1e-3
    assert _rel(a100.dense_peak_tflops("fp16") or 0.0, 311.9) < 1e-3


@given(data=st.data())
def test_dense_peak_is_rate_times_sms_times_tensor_clock(data: st.DataObject) -> None:
    """For any arch and supported dtype, dense_peak_tflops == FLOP/clk/SM x SMs x tensor clock."""
    arch = _arch(data.draw(st.sampled_from(ARCH_IDS), label="arch"))
    dtype = data.draw(st.sampled_from(arch.supported_dtypes()), label="dtype")
    rate = arch.tensor_flops_per_clk_per_sm(dtype)
    assert rate is not None and rate > 0
    expected = rate * arch.sm_count * arch.clocks.tensor_clock_mhz * 1e6 / 1e12
    assert math.isclose(arch.dense_peak_tflops(dtype) or 0.0, expected, rel_tol=1e-12)


@given(data=st.data())
def test_ridge_point_is_peak_over_bandwidth(data: st.DataObject) -> None:
    """For any arch and supported dtype, the ridge point is dense peak FLOP/s divided by HBM bytes/s."""
    arch = _arch(data.draw(st.sampled_from(ARCH_IDS), label="arch"))
    dtype = data.draw(st.sampled_from(arch.supported_dtypes()), label="dtype")
    peak = arch.dense_peak_tflops(dtype)
    assert peak is not None
    expected = peak * 1e12 / arch.memory.hbm_bandwidth_bytes_per_s
    assert math.isclose(arch.ridge_point_flop_per_byte(dtype) or 0.0, expected, rel_tol=1e-12)


def _with_bandwidth(arch: Arch, bytes_per_s: float) -> Arch:
    return arch.model_copy(
        update={"memory": arch.memory.model_copy(update={"hbm_bandwidth_bytes_per_s": bytes_per_s})}
    )


@given(
    data=st.data(),
    lower=st.floats(min_value=0.05, max_value=0.95),
    gap=st.floats(min_value=0.01, max_value=0.5),
)
def test_ridge_point_rises_when_bandwidth_falls(data: st.DataObject, lower: float, gap: float) -> None:
    """Less HBM bandwidth, same peak: the ridge point moves to a higher FLOP/byte (strictly)."""
    arch = _arch(data.draw(st.sampled_from(ARCH_IDS), label="arch"))
    dtype = data.draw(st.sampled_from(arch.supported_dtypes()), label="dtype")
    bandwidth = arch.memory.hbm_bandwidth_bytes_per_s
    slow = _with_bandwidth(arch, bandwidth * lower)
    fast = _with_bandwidth(arch, bandwidth * min(lower + gap, 1.0))
    assert (slow.ridge_point_flop_per_byte(dtype) or 0.0) > (fast.ridge_point_flop_per_byte(dtype) or 0.0)
    assert slow.dense_peak_tflops(dtype) == arch.dense_peak_tflops(dtype)


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_fp16_or_bf16_has_a_tensor_path(arch_id: str) -> None:
    """Every arch from Volta on runs FP16 on its tensor cores (mma.sync at least)."""
    arch = _arch(arch_id)
    assert "fp16" in arch.supported_dtypes()
    assert "fp16" in arch.tensor_cores.mma_sync.dtypes


# ---- features ------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_wgmma_only_on_cc_9_0(arch_id: str) -> None:
    """wgmma (flag and unit) exists exactly on compute capability 9.0 (sm_90a)."""
    arch = _arch(arch_id)
    on_hopper = arch.cc_major_minor == (9, 0)
    assert arch.features.wgmma is on_hopper
    assert (arch.tensor_cores.wgmma is not None) is on_hopper


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_tcgen05_and_tmem_only_on_cc_10(arch_id: str) -> None:
    """tcgen05 and TMEM (128 lanes x 512 columns x 32 bit = 256 KiB per SM) exist exactly on CC 10.x."""
    arch = _arch(arch_id)
    on_blackwell = arch.cc_major_minor[0] == 10
    assert arch.features.tcgen05 is on_blackwell
    assert (arch.tensor_cores.tcgen05 is not None) is on_blackwell
    assert (arch.sm.tmem is not None) is on_blackwell
    if arch.sm.tmem is not None:
        tmem = arch.sm.tmem
        assert (tmem.lanes, tmem.columns, tmem.bits_per_cell) == (128, 512, 32)
        assert tmem.bytes == TMEM_BYTES_SM100 == 256 * 1024
        assert arch.derived()["tmem_bytes_per_sm"] == TMEM_BYTES_SM100
    else:
        assert arch.derived()["tmem_bytes_per_sm"] == 0


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_cp_async_from_cc_8_0(arch_id: str) -> None:
    """cp.async exists from compute capability 8.0 (Ampere) on, and not on Volta."""
    arch = _arch(arch_id)
    assert arch.features.cp_async is (arch.sm_version >= 80)


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_tma_and_clusters_from_cc_9_0(arch_id: str) -> None:
    """TMA, thread-block clusters and distributed shared memory exist from compute capability 9.0 on."""
    arch = _arch(arch_id)
    hopper_or_later = arch.sm_version >= 90
    assert arch.features.tma is hopper_or_later
    assert arch.features.clusters is hopper_or_later
    assert arch.features.distributed_smem is hopper_or_later
    if not hopper_or_later:
        assert arch.features.max_cluster_size == 1
        assert not arch.features.tma_multicast


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_block_scaled_mma_and_cta_pairs_only_with_tcgen05(arch_id: str) -> None:
    """Block-scaled MMA and CTA-pair MMA are tcgen05 features: absent wherever tcgen05 is."""
    arch = _arch(arch_id)
    if not arch.features.tcgen05:
        assert not arch.features.block_scaled_mma
        assert not arch.features.cta_pair_mma


# ---- aliases -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "arch_id"),
    [
        ("h100_sxm", "h100"),
        ("h100_sxm5", "h100"),
        ("sm_90", "h100"),
        ("sm_90a", "h100"),
        ("H100-SXM", "h100"),
        ("  h100  ", "h100"),
        ("H100", "h100"),
        ("sm_80", "a100"),
        ("a100_sxm4", "a100"),
        ("sm_70", "v100"),
        ("v100_sxm2", "v100"),
        ("sm_100a", "b200"),
        ("sm_103", "b300"),
        ("h200_sxm", "h200"),
    ],
)
def test_alias_resolves(alias: str, arch_id: str) -> None:
    """Aliases, in any case and with - or _, resolve to their arch id; load_arch accepts them too."""
    assert resolve_arch_id(alias) == arch_id
    assert load_arch(alias).id == arch_id


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_every_declared_alias_resolves_to_its_arch(arch_id: str) -> None:
    """Every alias listed in an arch file resolves back to that arch."""
    for alias in _arch(arch_id).aliases:
        assert resolve_arch_id(alias) == arch_id, alias


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def test_aliases_are_unique_across_files() -> None:
    """No alias (case- and -/_-insensitive) names two different archs, or another arch's id."""
    owner: dict[str, str] = {arch_id: arch_id for arch_id in ARCH_IDS}
    clashes: list[str] = []
    for arch in all_archs():
        for alias in arch.aliases:
            key = _norm(alias)
            if owner.setdefault(key, arch.id) != arch.id:
                clashes.append(f"{alias!r} in {arch.id} already names {owner[key]}")
    assert clashes == []


# ---- derived values and user files ---------------------------------------------------------------


@pytest.mark.parametrize("arch_id", ARCH_IDS)
def test_derived_is_json_serialisable(arch_id: str) -> None:
    """derived() survives a JSON round trip unchanged and holds finite numbers for each supported dtype."""
    arch = _arch(arch_id)
    derived = arch.derived()
    assert json.loads(json.dumps(derived, allow_nan=False)) == derived
    assert set(derived["dense_peak_tflops"]) == set(arch.supported_dtypes())
    assert set(derived["ridge_point_flop_per_byte"]) == set(arch.supported_dtypes())
    assert all(v > 0 and math.isfinite(v) for v in derived["dense_peak_tflops"].values())


def test_user_yaml_path_is_accepted_wherever_an_id_is(arch_yaml: Callable[..., Path]) -> None:
    """load_arch takes the path of a user's own YAML (str or Path) and gives the same Arch as the built-in."""
    path = arch_yaml(name="my_gpu.yaml")
    builtin = load_arch("h100")
    assert load_arch(path) == builtin
    assert load_arch(str(path)) == builtin


def test_user_yaml_relative_path_and_yml_suffix(
    arch_yaml: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare relative file name ending in .yml or .yaml is read as a path, not looked up as an id."""
    path = arch_yaml(name="mine.yml")
    monkeypatch.chdir(path.parent)
    assert load_arch("mine.yml").id == "h100"


def test_user_yaml_with_its_own_id_does_not_join_the_builtins(arch_yaml: Callable[..., Path]) -> None:
    """A user's file may carry a new id and changed numbers; the built-in list is unaffected."""
    path = arch_yaml(changes={"id": "my_h100", "sm_count": 100, "aliases": []}, name="custom.yaml")
    arch = load_arch(path)
    assert (arch.id, arch.sm_count) == ("my_h100", 100)
    assert _rel(arch.dense_peak_tflops("bf16") or 0.0, 4096 * 100 * 1830e6 / 1e12) < 1e-12
    assert "my_h100" not in builtin_arch_ids()
    assert load_arch("h100").sm_count == 132


def test_user_yaml_through_the_cli(arch_yaml: Callable[..., Path], run_cli: Callable[..., Any]) -> None:
    """``gpusim archs show <path> --json`` shows a user's file just like a built-in id."""
    path = arch_yaml(changes={"id": "my_h100"}, name="custom.yaml")
    rc, out, err = run_cli(["archs", "show", path, "--json"])
    assert rc == 0, err
    assert json.loads(out)["id"] == "my_h100"
