"""Model mechanisms that can be switched on and off: ``--model +power`` / ``predict(..., model="+power")``.

A mechanism is a part of the model that is not proven better than going without it, or that someone
wants to ablate. Each has a default; a model text switches mechanisms relative to the defaults:

- ``"+power"`` or ``"power"``: switch ``power`` on; ``"-power"``: switch it off;
- several, comma-separated, each named once: ``"+power,-other"``; ``"default"``: the defaults (an empty
  text names nothing and is refused; leave the option out instead).

The resolved set travels on the arch (``Arch.mechanisms``), so every path to a prediction (auto
searches, validation, calibration) sees the same switches, and each :class:`~gpusim.result.Prediction`
records the mechanisms it ran with in ``model``.

A calibration overlay is fitted under one model (its ``provenance.model``): predictions with that
overlay run with the mechanisms it was fitted with, and a model text switches relative to those
(``gpusim.costs``); datasheet costs start from ``DEFAULT_ON``.
"""

from __future__ import annotations

from gpusim.arch import Arch
from gpusim.errors import InputError, quote

MECHANISMS: dict[str, str] = {
    "power": "clock from a power model: the highest clock whose average power fits under the board limit "
    "(gpusim.sim.power); off: every SM runs at the arch's sustained (tensor) clock",
    "shared_tensor": "the tensor core interleaves the MMA groups that different issuers (warpgroups) issue "
    "at the same instant, so they progress and finish together (gpusim.sim.servers.SharedTensorCore); "
    "off: a FIFO of whole groups, which hands one of them its result a whole group early",
    "pipe_coupling": "CUDA-core/SFU work holds the tensor core of its sub-partitions for (1 - "
    "calibration.tensor_cuda_overlap) of its time (engine-fidelity G1; needs shared_tensor); off, or at the "
    "datasheet overlap of 1, the two overlap for free",
    "smem_fills": "TMA and cp.async landings (in every CTA a multicast reaches) and TMA-store reads take "
    "the SM's shared-memory bandwidth that lds/sts use (engine-fidelity G3); off: they have their own path",
    "smem_operands": "the tensor core's shared-memory operand reads take that bandwidth too (wgmma and "
    "tcgen05: A when it is read from shared memory, B always, B again for each m64 wgmma; a 2-CTA MMA "
    "half of each on each CTA), and an MMA ends no sooner than its reads (engine-fidelity G3; refuted on "
    "Hopper by DeepGEMM's measured FP8 throughput, docs/accuracy.md); off: the operand path is free",
    "mma_sync_warps": "mma.sync runs at the fraction of its peak that the warps issuing it per sub-partition "
    "reach (the arch's tensor_cores.mma_sync.rate_by_warps_per_smsp, measured; engine-fidelity G5; "
    "gpusim.sim.mma_sync_rate), for a static count of every warp of an mma.sync role times the resident "
    "CTAs; off, or on an arch without that table: at the peak whatever the warps",
    "mma_sync_issuing": "with mma_sync_warps and shared_tensor: every mma.sync in flight runs at once "
    "(instruction-level interleaving) and each sub-partition's rate follows the warps whose mma.sync is in "
    "flight on it at that moment (a warp in its softmax does not count; SharedTensorCore.sync_rate); off: "
    "the static count",
    "grid_dispatch": "a non-persistent grid whose units loop different numbers of times (causal attention) "
    "has its CTAs dispatched as the hardware block scheduler does: the next CTA of the launch order goes to "
    "the slot that frees up (gpusim.sim.scheduler.plan_work); off: slot s runs units s, s + S, ... (static "
    "round robin), which can pile the long CTAs onto some slots",
    "l2_clock": "the L2's bandwidth follows the SM clock (bytes per clock, as NVIDIA quotes it): the arch's "
    "memory.l2_bandwidth_bytes_per_s is read as measured at the max boost clock (the L2 benchmarks run there; "
    "h200's microbenchmark at 1,977-1,979 MHz), and a kernel at clock f gets f / boost of it (engine-fidelity "
    "G6); off: the listed bandwidth whatever the clock",
    "sync_latency": "a warp that waits at a barrier resumes the arch's wake-up time after the barrier "
    "completes: sm.barrier_wake_cycles for named barriers (sync, syncthreads) and turnstiles, "
    "sm.mbarrier_wake_cycles for mbarriers (stage rings' acquire and wait, event barriers, chunk "
    "landings) (engine-fidelity G12; measured by gpusim measure --micro --only sync_latency; refused on an "
    "arch without those fields); off: waiters resume in the instant the barrier completes",
}
"""Every switchable mechanism with one line on what it does."""

DEFAULT_ON: frozenset[str] = frozenset(
    {"shared_tensor", "pipe_coupling", "mma_sync_warps", "mma_sync_issuing", "grid_dispatch"}
)
"""Mechanisms on by default: the shared tensor core (the hardware's behaviour; the calibrated overlays
are fitted with it) and pipe coupling (a no-op at the datasheet overlap of 1; an overlay fitted with it sets
the overlap). The power model is off: it is not proven better on held-out rows everywhere (docs/power.md);
an overlay fitted with it (h800's) turns it on for that arch's calibrated predictions. ``mma_sync_warps``
and ``mma_sync_issuing`` have no fitted parameter (their table is measured) and are no-ops on archs
without the table; ``grid_dispatch`` is the hardware block scheduler's order and fits nothing. The overlays
fitted under the static count and round robin (a100, h100) record that model (``provenance.model``), so
their calibrated predictions stay as fitted until they are refitted.
"""

KNOWN_BEFORE_MODEL_KNOWN: frozenset[str] = frozenset(
    {"power", "shared_tensor", "pipe_coupling", "smem_fills", "smem_operands"}
)
"""The mechanisms that existed when overlays began to record ``provenance.model_known``: an overlay
without that field was fitted knowing these, and a default-on mechanism added since is on for it."""


def parse_model(text: str | None, base: frozenset[str] = DEFAULT_ON) -> frozenset[str]:
    """The mechanisms on after applying ``text`` (``+a,-b``, see the module doc) to ``base``."""
    on = set(base)
    if text is None:
        return frozenset(on)
    if not isinstance(text, str):
        raise InputError(
            f"model: expected a text such as '+power' or '-shared_tensor', got {type(text).__name__}"
        )
    items = [raw.strip() for raw in text.replace(" ", ",").split(",") if raw.strip()]
    if not items:
        raise InputError(f"--model '{quote(text, 40)}': no mechanism named; write +name or -name (known: "
                         f"{', '.join(sorted(MECHANISMS))}), or 'default'")  # fmt: skip
    seen: set[str] = set()
    for item in items:
        if item == "default":
            on = set(DEFAULT_ON)
            continue
        sign, name = (item[0], item[1:]) if item[0] in "+-" else ("+", item)
        if name not in MECHANISMS:
            raise InputError(f"--model: unknown mechanism '{quote(name, 60)}'; known: {', '.join(sorted(MECHANISMS))} "
                             "(write +name to switch one on, -name to switch it off)")  # fmt: skip
        if name in seen:
            raise InputError(
                f"--model '{quote(text, 80)}': '{name}' is switched twice; name each mechanism once"
            )
        seen.add(name)
        if sign == "+":
            on.add(name)
        else:
            on.discard(name)
    return frozenset(on)


def mechanisms_of(arch: Arch) -> frozenset[str]:
    """The mechanisms on for predictions with ``arch``."""
    return DEFAULT_ON if arch.mechanisms is None else frozenset(arch.mechanisms)


def in_effect(name: str, arch: Arch) -> bool:
    """Whether mechanism ``name`` is on for ``arch`` and can change a prediction there: pipe coupling
    needs the shared tensor core and an overlap below 1 (at the datasheet overlap of 1 it is a no-op)."""
    on = mechanisms_of(arch)
    if name not in on:
        return False
    if name == "pipe_coupling":
        return "shared_tensor" in on and arch.calibration.tensor_cuda_overlap < 1.0
    if name == "mma_sync_warps":
        return arch.tensor_cores.mma_sync.rate_by_warps_per_smsp is not None
    if name == "mma_sync_issuing":
        return {"mma_sync_warps", "shared_tensor"} <= on and in_effect("mma_sync_warps", arch)
    if name == "sync_latency":
        return _has_wake_times(arch)
    return True


def _has_wake_times(arch: Arch) -> bool:
    """Whether the arch file gives a barrier wake-up time (the ``sync_latency`` mechanism's data)."""
    return bool(arch.sm.barrier_wake_cycles or arch.sm.mbarrier_wake_cycles)


def with_model(arch: Arch, text: str | None) -> Arch:
    """``arch`` with the mechanisms ``text`` switches, relative to the arch's own (an overlay's fitted
    model, else the defaults); None: unchanged."""
    if text is None:
        return arch
    on = parse_model(text, mechanisms_of(arch))
    if "power" in on and arch.power is None:
        raise InputError(f"--model +power: arch '{arch.id}' has no power block (board_power_limit_w, "
                         "static_power_w and energies per operation)")  # fmt: skip
    if "sync_latency" in on and not _has_wake_times(arch):
        raise InputError(f"--model +sync_latency: arch '{arch.id}' has no sm.barrier_wake_cycles or "
                         "sm.mbarrier_wake_cycles (measure them with gpusim measure --micro --only sync_latency)")  # fmt: skip
    return arch.model_copy(update={"mechanisms": sorted(on)})


LEGACY_OVERLAY_MODEL: frozenset[str] = frozenset({"shared_tensor", "pipe_coupling"})
"""The mechanisms of an overlay that records no model (fitted before models were recorded, with the
power model off); such overlays have been used with the shared tensor core since it arrived. Pipe
coupling is a no-op at the overlap of 1 they carry (they have no ``tensor_cuda_overlap``)."""


def _names(value: object, field: str) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        raise InputError(
            f"calibration overlay: field 'provenance.{field}': expected a list of mechanism names"
        )
    unknown = sorted(set(value) - set(MECHANISMS))
    if unknown:
        raise InputError(f"calibration overlay: field 'provenance.{field}': unknown mechanism '{unknown[0]}'; "
                         f"known: {', '.join(sorted(MECHANISMS))}")  # fmt: skip
    return frozenset(value)


def overlay_model(recorded: object, known: object = None) -> frozenset[str]:
    """The mechanisms predictions with an overlay run with: those it was fitted with (its
    ``provenance.model``, a list of names), plus the default-on mechanisms it did not know (not in its
    ``provenance.model_known``; overlays without that field knew :data:`KNOWN_BEFORE_MODEL_KNOWN`)."""
    known_set = KNOWN_BEFORE_MODEL_KNOWN if known is None else _names(known, "model_known")
    return _fitted_with(recorded) | (DEFAULT_ON - known_set)


def _fitted_with(recorded: object) -> frozenset[str]:
    return LEGACY_OVERLAY_MODEL if recorded is None else _names(recorded, "model")


def model_label(on: frozenset[str]) -> str:
    """Words for a mechanism set: ``+power`` style, or ``default``."""
    parts = [f"+{m}" for m in sorted(on - DEFAULT_ON)] + [f"-{m}" for m in sorted(DEFAULT_ON - on)]
    return ",".join(parts) if parts else "default"
