"""Kernel sequences: several kernels launched one after another in a stream, predicted one by one.

A sequence file lists kernels (``kernels:``), each a schedule (or ``auto:gemm``) with its problem set
from the sequence's symbols. Each kernel is predicted on its own, with its own launch, through the
single-kernel prediction path; the sequence time is the sum of the kernel times, where every
kernel's time already carries the arch's per-launch cost (``calibration.launch_overhead_ns``).
A kernel launched with programmatic dependent launch (``launch: pdl``; CUDA Programming Guide §4.5,
compute capability 9.0 and later) is scheduled while its predecessor still runs, so its launch cost
hides behind the predecessor's execution (at most the predecessor's kernel time); elsewhere ``pdl``
is refused with the reason. This module never changes a kernel's simulation.

Format::

    sequence: name
    description: text
    arch: h100                      # default arch (the command line's --arch wins)
    problem: {batch: 8, hidden: 4096}   # symbols, overridable with --set
    kernels:
    - name: qkv_proj
      schedule: auto:gemm
      set: {M: batch, N: 3 * hidden, K: hidden, dtype: bf16}
    - name: attention
      schedule: attn_decode_splitkv
      set: {batch: batch, heads: 32, heads_kv: 8, seqlen_kv: 4096}
      launch: pdl                   # stream (default) or pdl
      repeat: 1                     # back-to-back launches of the same kernel
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpusim.arch import Arch, validated
from gpusim.errors import InputError, LimitExceeded, ScheduleRefused, UnknownNameError, override_name, quote
from gpusim.result import Prediction
from gpusim.schedule.expr import ExprError, as_expr
from gpusim.sim.limits import DEFAULT_MAX_EVENTS
from gpusim.yamlio import read_yaml_mapping

LAUNCH_KINDS = ("stream", "pdl")
PDL_MIN_SM_VERSION = 90
TOP_KEYS = {"sequence", "description", "arch", "problem", "kernels"}
KERNEL_KEYS = {"name", "schedule", "set", "launch", "repeat"}


@dataclass(frozen=True)
class KernelStep:
    """One kernel of a sequence, its problem still as expressions over the sequence's symbols."""

    name: str
    schedule: str
    sets: dict[str, Any]
    launch: str = "stream"
    repeat: int = 1


@dataclass(frozen=True)
class Sequence:
    """A parsed sequence file."""

    name: str
    description: str
    arch: str | None
    problem: dict[str, Any]
    kernels: tuple[KernelStep, ...]
    source: str


@dataclass
class KernelResult:
    """One kernel's prediction inside a sequence and what its launch adds to the sequence."""

    name: str
    schedule: str
    launch: str
    repeat: int
    prediction: Prediction
    launch_hidden_us: float
    """Launch cost hidden behind the previous kernel by programmatic dependent launch (per launch)."""

    @property
    def time_us(self) -> float:
        """This kernel's share of the sequence time (all repeats)."""
        return self.repeat * (self.prediction.time_us - self.launch_hidden_us)


@dataclass
class SequencePrediction:
    """The kernels of a sequence with their times and the total."""

    name: str
    arch: str
    kernels: list[KernelResult] = field(default_factory=list)

    @property
    def time_us(self) -> float:
        """Total time of the sequence, launch costs included."""
        return sum(k.time_us for k in self.kernels)

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "sequence": self.name,
            "arch": self.arch,
            "time_us": self.time_us,
            "kernels": [
                {
                    "name": k.name,
                    "schedule": k.schedule,
                    "chosen": (k.prediction.choice or {}).get("schedule"),
                    "launch": k.launch,
                    "repeat": k.repeat,
                    "kernel_time_us": k.prediction.time_us,
                    "launch_hidden_us": k.launch_hidden_us,
                    "time_us": k.time_us,
                    "tflops": k.prediction.tflops,
                    "hbm_gbps": k.prediction.hbm_gbps,
                    "bottleneck": k.prediction.bottleneck,
                }
                for k in self.kernels
            ],
        }


MAX_KERNELS = 10_000
"""Most kernels a sequence file may list."""
MAX_DISTINCT_KERNELS = 256
"""Most kernels with different schedules or values one sequence predicts (a kernel listed again with the
same values is predicted once): with each prediction bounded by its event limit, this bounds the work."""
SEQUENCE_EVENTS_FACTOR = 8
"""A sequence predicts no further kernel once its kernels have simulated this many times ``max_events``
events in detail (each kernel still stops at ``max_events``; an ``auto:*`` kernel's search at twice it)."""
MAX_REPEAT = 10**9
"""Most back-to-back launches ``repeat:`` may ask for."""
MAX_NAME_CHARS = 200
"""Longest kernel name."""


def is_sequence_file(path: str) -> bool:
    """Whether ``path`` is a YAML file with a top-level ``kernels:`` list."""
    p = Path(path)
    if p.suffix not in (".yaml", ".yml") or not p.is_file():
        return False
    return "kernels" in read_yaml_mapping(p)


def load_sequence(path: str | Path) -> Sequence:
    """Read and check a sequence file (one line naming the field on bad input)."""
    src = str(path)
    data = read_yaml_mapping(Path(path))
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise InputError(f"{src}: unknown key '{unknown[0]}' (expected {', '.join(sorted(TOP_KEYS))})")
    raw_kernels = data.get("kernels")
    if not isinstance(raw_kernels, list) or not raw_kernels:
        raise InputError(f"{src}: kernels: expected a non-empty list of kernels, got {quote(raw_kernels)}")
    if len(raw_kernels) > MAX_KERNELS:
        raise InputError(f"{src}: kernels: {len(raw_kernels):,} kernels, more than the {MAX_KERNELS:,} a sequence "
                         "may list (use repeat: for a kernel launched many times)")  # fmt: skip
    problem = data.get("problem") or {}
    if not isinstance(problem, dict):
        raise InputError(f"{src}: problem: expected a mapping of symbols, got {quote(problem)}")
    kernels = tuple(_kernel(k, f"{src}: kernels[{i}]") for i, k in enumerate(raw_kernels))
    arch = data.get("arch")
    return Sequence(
        name=str(data.get("sequence") or Path(path).stem),
        description=str(data.get("description") or ""),
        arch=str(arch) if arch is not None else None,
        problem=dict(problem),
        kernels=kernels,
        source=src,
    )


def _kernel(raw: Any, where: str) -> KernelStep:
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a mapping with name, schedule and set, got {quote(raw)}")
    unknown = sorted(set(raw) - KERNEL_KEYS)
    if unknown:
        raise InputError(f"{where}: unknown key '{unknown[0]}' (expected {', '.join(sorted(KERNEL_KEYS))})")
    if not isinstance(raw.get("schedule"), str):
        raise InputError(f"{where}.schedule: required, a schedule name, auto:gemm or a YAML path")
    sets = raw.get("set") or {}
    if not isinstance(sets, dict):
        raise InputError(f"{where}.set: expected a mapping KEY: expression, got {quote(sets)}")
    from gpusim.schedule.reserved import refuse_predict_option

    for key in sets:
        if not isinstance(key, str) or not key.isidentifier() or len(key) > 64:
            raise InputError(
                f"{where}.set: '{quote(str(key), 80)}' is not a parameter name (letters, digits, _)"
            )
        refuse_predict_option(key, f"{where}.set.{key}")
    launch = raw.get("launch", "stream")
    if launch not in LAUNCH_KINDS:
        raise InputError(
            f"{where}.launch: '{quote(launch)}' is not a launch kind (expected {', '.join(LAUNCH_KINDS)})"
        )
    repeat = raw.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_REPEAT:
        raise InputError(f"{where}.repeat: expected a whole number from 1 to {MAX_REPEAT:,}, got "
                         f"{quote(str(repeat), 80)}")  # fmt: skip
    name = raw.get("name")
    if name is not None and (
        not isinstance(name, str | int) or len(str(name)) > MAX_NAME_CHARS or "\n" in str(name)
    ):
        raise InputError(f"{where}.name: expected a name of one line, at most {MAX_NAME_CHARS} characters, got "
                         f"{quote(str(name), 80)}")  # fmt: skip
    return KernelStep(
        name=str(raw.get("name") or raw["schedule"]),
        schedule=raw["schedule"],
        sets=sets,
        launch=launch,
        repeat=repeat,
    )


def resolve_sets(step: KernelStep, symbols: dict[str, Any], where: str) -> dict[str, Any]:
    """The kernel's overrides: each ``set`` value evaluated over the sequence's symbols (text kept as is
    when it names no symbol, so ``dtype: bf16`` stays a word)."""
    out: dict[str, Any] = {}
    for key, raw in step.sets.items():
        if isinstance(raw, str):
            try:
                expr = as_expr(raw)
            except ExprError:
                out[key] = raw
                continue
            if not expr.names <= set(symbols):
                out[key] = raw
                continue
            here = f"{where}.set.{key}"
            try:
                out[key] = expr(symbols, where=here)
            except ExprError as exc:
                raise InputError(str(exc) if str(exc).startswith(here) else f"{here}: {exc}") from None
        else:
            out[key] = raw
    return out


def predict_kernel(schedule: str, arch: Arch, overrides: dict[str, Any], **options: Any) -> Prediction:
    """One kernel through the single-kernel prediction path (:func:`gpusim.predict`); ``options`` are
    predict's (exact, max_events ...)."""
    from gpusim.api import predict

    keep = "calibrated" if arch.calibration.origin == "calibrated" else "datasheet"  # the costs arch carries
    return predict(schedule, arch, costs=keep, **options, **overrides)


def predict_sequence(
    seq: Sequence,
    arch: str | Arch,
    overrides: dict[str, Any] | None = None,
    *,
    costs: str = "calibrated",
    model: str | None = None,
    exact: bool = False,
    max_events: int | None = DEFAULT_MAX_EVENTS,
) -> SequencePrediction:
    """Predict every kernel of ``seq`` on ``arch`` (with ``costs`` and the mechanisms ``model`` switches)
    and combine them with their launches. ``exact`` and ``max_events`` are predict's, per kernel; the
    kernels whose values differ (each predicted once) are at most :data:`MAX_DISTINCT_KERNELS`."""
    from gpusim.api import load_arch
    from gpusim.mechanisms import with_model

    unknown = sorted(set(overrides or {}) - set(seq.problem))
    if unknown:
        raise InputError(
            f"{override_name(unknown[0])}: not a symbol of {seq.source} (its problem: {', '.join(seq.problem)})"
        )
    arch_obj = with_model(validated(arch) if isinstance(arch, Arch) else load_arch(arch, costs=costs), model)
    symbols = {**seq.problem, **(overrides or {})}
    result = SequencePrediction(name=seq.name, arch=arch_obj.id)
    previous: Prediction | None = None
    events = 0  # simulated in detail by the kernels predicted so far
    seen: dict[str, Prediction] = {}  # a kernel listed again with the same values is predicted once
    for i, step in enumerate(seq.kernels):
        where = f"{seq.source}: kernels[{i}] ({step.name})"
        if step.launch == "pdl" and arch_obj.sm_version < PDL_MIN_SM_VERSION:
            raise ScheduleRefused(
                f"{where}: launch: pdl needs programmatic dependent launch (compute capability 9.0+), "
                f"{arch_obj.id} is sm_{arch_obj.sm_version}"
            )
        values = resolve_sets(step, symbols, where)
        key = repr((step.schedule, sorted(values.items(), key=lambda kv: str(kv[0]))))
        if key not in seen and len(seen) >= MAX_DISTINCT_KERNELS:
            raise LimitExceeded(f"{where}: the sequence has more than {MAX_DISTINCT_KERNELS} kernels with different "
                                "values, the most one sequence predicts; split it into several files")  # fmt: skip
        if key not in seen and max_events is not None and events > SEQUENCE_EVENTS_FACTOR * max_events:
            raise LimitExceeded(f"{where}: the kernels before it simulated {events:,} events, past the sequence's "
                                f"work limit ({SEQUENCE_EVENTS_FACTOR} x --max-events); raise --max-events, or split "
                                "the sequence")  # fmt: skip
        try:
            prediction = seen.get(key) or predict_kernel(
                step.schedule, arch_obj, values, exact=exact, max_events=max_events
            )
        except UnknownNameError as exc:  # an unknown schedule name is named with its place in the file
            if exc.where:
                raise
            raise UnknownNameError(exc.kind, exc.name, exc.known, where=f"{where}.schedule") from None
        if key not in seen:
            events += int(prediction.sim.get("events", 0)) + int((prediction.choice or {}).get("events", 0))
        seen[key] = prediction
        hidden_us = 0.0
        if step.launch == "pdl" and previous is not None:
            launch_us = arch_obj.calibration.launch_overhead_ns / 1000
            previous_kernel_us = previous.time_us - launch_us
            hidden_us = min(launch_us, max(0.0, previous_kernel_us))
        result.kernels.append(
            KernelResult(step.name, step.schedule, step.launch, step.repeat, prediction, hidden_us)
        )
        previous = prediction
    return result


__all__ = [
    "KernelResult",
    "KernelStep",
    "Sequence",
    "SequencePrediction",
    "is_sequence_file",
    "load_sequence",
    "predict_kernel",
    "predict_sequence",
]
