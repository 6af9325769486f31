"""What-if comparisons: several variants (schedules, parameter sets, archs) on one problem.

Every variant runs the same problem: the first schedule's default problem with the caller's problem
values on top, each variant taking the problem names its schedule knows. A variant that the hardware
or budget checks refuse becomes a row with the reason; the others still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpusim.errors import InputError, ScheduleRefused, checked_call
from gpusim.result import Prediction


@dataclass(frozen=True)
class Variant:
    """One row of a comparison: a schedule on an arch with parameter overrides."""

    schedule: str
    arch: str | None
    """Arch id (None: the schedule's reference arch)."""
    overrides: dict[str, Any] = field(default_factory=dict)
    """Schedule parameters (and problem values) of this variant only."""
    label: str = ""
    option: str = "--set"
    """The command-line option its overrides came from (named in errors)."""

    def __post_init__(self) -> None:
        from pathlib import Path

        from gpusim.errors import kind_of

        checks = (
            ("schedule", "a schedule name or YAML path", isinstance(self.schedule, str | Path)),
            ("arch", "an arch id, alias or YAML path (or None)", self.arch is None or isinstance(self.arch, str | Path)),
            ("overrides", "a mapping of parameter names to values",
             isinstance(self.overrides, dict) and all(isinstance(k, str) for k in self.overrides)),
            ("label", "text", isinstance(self.label, str)),
            ("option", "text", isinstance(self.option, str)),
        )  # fmt: skip
        for name, expected, ok in checks:
            if not ok:
                raise InputError(f"Variant: {name}: expected {expected}, got {kind_of(getattr(self, name))}")

    @property
    def name(self) -> str:
        """The label, or ``schedule on arch``."""
        return self.label or f"{self.schedule} on {self.arch or 'its reference arch'}"


Variant.__init__ = checked_call(Variant.__init__, "Variant")  # type: ignore[method-assign]


@dataclass(frozen=True)
class CompareRow:
    """A variant and its prediction, or the reason it was refused."""

    variant: Variant
    prediction: Prediction | None
    refused: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the variant, then the prediction's document or the refusal."""
        v = self.variant
        head = {"variant": v.name, "schedule": v.schedule, "arch": v.arch, "overrides": v.overrides}
        if self.prediction is None:
            return {**head, "refused": self.refused}
        return {**head, "refused": None, **{k: x for k, x in self.prediction.to_dict().items()
                                             if k not in ("schedule",)}}  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    """The rows of a comparison, the problem they all ran and the costs they used."""

    problem: dict[str, Any]
    costs: str
    rows: list[CompareRow]

    @property
    def fastest_us(self) -> float | None:
        """The fastest predicted time (None when every variant was refused)."""
        times = [r.prediction.time_us for r in self.rows if r.prediction is not None]
        return min(times) if times else None

    def to_dict(self) -> dict[str, Any]:
        """The ``gpusim compare --json`` document."""
        return {"problem": self.problem, "costs": self.costs, "rows": [r.to_dict() for r in self.rows]}


def _problem_keys(schedule: str) -> tuple[str, ...]:
    from gpusim.api import problem_keys

    return problem_keys(schedule)


@checked_call
def compare(
    variants: list[Variant],
    *,
    costs: str = "calibrated",
    exact: bool = False,
    **values: Any,
) -> Comparison:
    """Predict every variant on one problem (see the module doc); refused variants become rows.

    ``values`` holds problem values (M=..., dtype=...) and schedule parameters applied to every
    variant; a variant's own ``overrides`` come last."""
    from gpusim.api import default_problem, predict, problem_keys

    if isinstance(variants, str | bytes) or not isinstance(variants, list | tuple):
        raise InputError(f"compare: expected a list of gpusim.Variant, got {type(variants).__name__}")
    if not variants:
        raise InputError("compare needs at least one variant")
    for i, v in enumerate(variants):
        if not isinstance(v, Variant):
            raise InputError(f"compare: variants[{i}]: expected a gpusim.Variant(schedule, arch, overrides), "
                             f"got {type(v).__name__}")  # fmt: skip
    if not isinstance(costs, str):
        raise InputError(f"compare: costs: expected 'calibrated', 'datasheet' or an overlay path, got "
                         f"{type(costs).__name__}")  # fmt: skip
    first = variants[0]
    first_keys = set(problem_keys(first.schedule))
    base = dict(default_problem(first.schedule, first.arch))
    base.update({k: v for k, v in values.items() if k in first_keys})
    common_params = {k: v for k, v in values.items() if k not in first_keys}
    rows: list[CompareRow] = []
    shown: dict[str, Any] | None = None
    for v in variants:
        keys = set(problem_keys(v.schedule))
        params = {**{k: val for k, val in base.items() if k in keys}, **common_params, **v.overrides}
        try:
            pred = predict(v.schedule, v.arch, costs=costs, exact=exact, **params)
        except ScheduleRefused as exc:
            rows.append(CompareRow(v, None, str(exc)))
            continue
        except InputError as exc:
            text = str(exc)
            if v.option != "--set" and text.startswith("--set ") and "unknown parameter" in text:
                raise InputError(v.option + text[len("--set") :]) from None
            raise
        if shown is None:
            shown = {k: pred.problem[k] for k in base if k in pred.problem}
        rows.append(CompareRow(v, pred))
    return Comparison(shown if shown is not None else base, costs, rows)


def build_variants(schedules: list[str], archs: list[str], vs: list[dict[str, Any]]) -> list[Variant]:
    """Every schedule x arch (default: the schedule's reference arch) x (the base, then each ``--vs``
    set), labelled by what differs."""
    from gpusim.api import reference_arch

    if not schedules:
        raise InputError("compare needs at least one schedule")
    sets: list[tuple[str, dict[str, Any], str]] = [("", {}, "--set")]
    if vs:
        keys = list(dict.fromkeys(k for extra in vs for k in extra))
        sets = [("base (" + ", ".join(f"{k} default" for k in keys) + ")", {}, "--set")]
        sets += [(", ".join(f"{k}={v}" for k, v in extra.items()), dict(extra), "--vs") for extra in vs]
    out = []
    for schedule in schedules:
        for arch in archs or [reference_arch(schedule)]:
            for set_label, overrides, option in sets:
                parts = [schedule] if len(schedules) > 1 else []
                if len(archs) > 1:
                    parts.append(str(arch))
                if len(sets) > 1:
                    parts.append(set_label)
                label = " / ".join(parts)
                out.append(Variant(schedule, arch, overrides, label, option))
    return out
