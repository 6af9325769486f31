"""SASS from ``cuobjdump -sass``: instructions per kernel, instruction classes, innermost loops.

A loop is the address range from a backward branch's target to the branch (a ``BRA`` whose target is
not after it); the innermost loops are those that contain no other loop."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gpusim.errors import InputError

_FUNCTION = re.compile(r"^\s*Function : (?P<name>\S+)")
_TARGET = re.compile(r"^\s*\.target\s+(?P<arch>sm_\w+)|^\s*code for (?P<arch2>sm_\w+)")
_INSTRUCTION = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-f]{4,})\*/\s+(?P<pred>@!?U?P\w+\s+)?(?P<opcode>[A-Z][A-Z0-9_.x]*)(?P<operands>[^;]*);"
)
_BRANCH_TARGET = re.compile(r"0x(?P<target>[0-9a-f]+)")

# Instruction classes, matched on the opcode's first component (``MUFU`` in ``MUFU.EX2``), first match wins.
CLASSES: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "tensor",
        frozenset(
            {
                "HMMA",
                "HGMMA",
                "IMMA",
                "IGMMA",
                "QGMMA",
                "BGMMA",
                "DMMA",
                "BMMA",
                "OMMA",
                "QMMA",
                "UTCHMMA",
                "UTCQMMA",
                "UTCIMMA",
                "UTCOMMA",
                "UTCMMA",
                "UTCBAR",
                "UTCCP",
                "UTCSHIFT",
            }
        ),
    ),
    (
        "tma",
        frozenset(
            {
                "UTMALDG",
                "UTMASTG",
                "UTMAPF",
                "UTMAREDG",
                "UTMACCTL",
                "UTMACMDFLUSH",
                "UBLKCP",
                "UBLKRED",
                "UBLKPF",
            }
        ),
    ),
    ("shared", frozenset({"LDS", "STS", "LDSM", "STSM", "ATOMS", "LDTM", "STTM"})),
    ("sfu", frozenset({"MUFU"})),
    (
        "fp32",
        frozenset(
            {
                "FFMA",
                "FADD",
                "FMUL",
                "FMNMX",
                "FFMA2",
                "FADD2",
                "FMUL2",
                "FMNMX2",
                "FSETP",
                "FSEL",
                "FSET",
                "FCHK",
                "FSWZADD",
                "FFMA32I",
                "FADD32I",
                "FMUL32I",
            }
        ),
    ),
    ("fp16", frozenset({"HFMA2", "HADD2", "HMUL2", "HMNMX2", "HSETP2", "HSET2"})),
    ("conversion", frozenset({"F2F", "F2FP", "F2I", "I2F", "I2FP", "FRND", "F2IP", "I2IP"})),
    (
        "barrier",
        frozenset(
            {
                "BAR",
                "SYNCS",
                "ARRIVES",
                "DEPBAR",
                "LDGDEPBAR",
                "MEMBAR",
                "FENCE",
                "WARPGROUP",
                "ERRBAR",
                "CCTL",
                "UCGABAR_ARV",
                "UCGABAR_WAIT",
                "UCGABAR",
                "WARPSYNC",
            }
        ),
    ),
    (
        "memory",
        frozenset({"LDG", "STG", "LDGSTS", "RED", "REDG", "REDUX", "ATOM", "ATOMG", "LD", "ST", "LDGMC"}),
    ),
    ("local", frozenset({"LDL", "STL"})),
    (
        "integer",
        frozenset(
            {
                "IMAD",
                "IADD3",
                "IADD",
                "LOP3",
                "LOP",
                "SHF",
                "SHL",
                "SHR",
                "ISETP",
                "LEA",
                "IMNMX",
                "IABS",
                "POPC",
                "FLO",
                "BREV",
                "PRMT",
                "SEL",
                "VIADD",
                "VIMNMX",
                "IDP",
                "IMUL",
                "BMSK",
                "SGXT",
                "UIADD3",
                "UIMAD",
                "ULOP3",
                "USHF",
                "UISETP",
                "ULEA",
                "USEL",
                "UPRMT",
                "UFLO",
                "UPOPC",
                "UBMSK",
                "USGXT",
                "UIMNMX",
                "ULOP",
                "USHL",
                "USHR",
                "UBREV",
                "UVIADD",
            }
        ),
    ),
    (
        "control",
        frozenset(
            {
                "BRA",
                "BRX",
                "JMP",
                "JMX",
                "EXIT",
                "RET",
                "CALL",
                "BSSY",
                "BSYNC",
                "BREAK",
                "YIELD",
                "NOP",
                "KILL",
                "BPT",
                "ELECT",
                "ACQBULK",
                "ACQSHMINIT",
                "ENDCOLLECTIVE",
                "PREEXIT",
            }
        ),
    ),
)
_CLASS_OF = {opcode: name for name, opcodes in CLASSES for opcode in opcodes}
CLASS_NAMES: tuple[str, ...] = (*(name for name, _ in CLASSES), "other")


def instruction_class(opcode: str) -> str:
    """The class of one SASS opcode (``tensor``, ``shared``, ``tma``, ``sfu``, ``fp32``, ...; ``other``)."""
    return _CLASS_OF.get(opcode.split(".", 1)[0], "other")


def opcode_key(opcode: str) -> str:
    """The name an opcode is counted under: MUFU keeps its function (``MUFU.EX2``), tensor instructions
    keep their shape and types (``HGMMA.64x128x16.F32.BF16``), everything else its first component."""
    base = opcode.split(".", 1)[0]
    if base == "MUFU" or _CLASS_OF.get(base) == "tensor":
        return opcode
    return base


@dataclass(frozen=True)
class Instruction:
    """One SASS instruction."""

    address: int
    opcode: str
    operands: str
    predicate: str = ""

    @property
    def klass(self) -> str:
        """The instruction class."""
        return instruction_class(self.opcode)

    @property
    def branch_target(self) -> int | None:
        """The target address of a direct branch (BRA), else None."""
        if self.opcode.split(".", 1)[0] != "BRA":
            return None
        m = _BRANCH_TARGET.search(self.operands)
        return int(m["target"], 16) if m else None

    def text(self) -> str:
        """The instruction as cuobjdump prints it."""
        pred = f"{self.predicate} " if self.predicate else ""
        return f"/*{self.address:04x}*/ {pred}{self.opcode}{self.operands};"


@dataclass(frozen=True)
class Mix:
    """Instruction counts (static: each instruction in the code once) per class and per opcode."""

    classes: dict[str, int]
    opcodes: dict[str, int]
    instructions: int

    @staticmethod
    def of(instructions: list[Instruction]) -> Mix:
        """The mix of a list of instructions."""
        classes = Counter(i.klass for i in instructions)
        opcodes = Counter(opcode_key(i.opcode) for i in instructions)
        return Mix(
            classes={name: classes[name] for name in CLASS_NAMES if classes[name]},
            opcodes=dict(sorted(opcodes.items(), key=lambda kv: (-kv[1], kv[0]))),
            instructions=len(instructions),
        )

    def count(self, prefix: str) -> int:
        """Instructions whose opcode starts with ``prefix`` (``HGMMA``, ``MUFU.EX2``, ``SYNCS``)."""
        return sum(n for op, n in self.opcodes.items() if op.startswith(prefix))

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"instructions": self.instructions, "classes": self.classes, "opcodes": self.opcodes}


@dataclass(frozen=True)
class Loop:
    """A loop found from a backward branch: instructions from ``start`` to ``end`` (addresses, inclusive)."""

    start: int
    end: int
    instructions: tuple[Instruction, ...]

    @property
    def mix(self) -> Mix:
        """The loop body's instruction mix (one iteration, as compiled)."""
        return Mix.of(list(self.instructions))

    @property
    def is_wait(self) -> bool:
        """A spin-wait loop (an mbarrier try-wait or a poll): only barrier, control and move instructions."""
        return all(i.klass in {"barrier", "control", "other"} for i in self.instructions)

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "start": f"0x{self.start:04x}",
            "end": f"0x{self.end:04x}",
            "wait": self.is_wait,
            **self.mix.as_dict(),
        }


@dataclass
class SassFunction:
    """One kernel's SASS."""

    name: str
    arch: str
    instructions: list[Instruction] = field(default_factory=list)

    @property
    def mix(self) -> Mix:
        """The whole kernel's instruction mix."""
        return Mix.of(self.instructions)

    def loops(self) -> list[Loop]:
        """Every loop (backward-branch range), merged per loop head, in address order."""
        ends: dict[int, int] = {}
        for ins in self.instructions:
            target = ins.branch_target
            if target is not None and target <= ins.address:
                ends[target] = max(ends.get(target, target), ins.address)
        return [
            Loop(start, end, tuple(i for i in self.instructions if start <= i.address <= end))
            for start, end in sorted(ends.items())
        ]

    def innermost_loops(self) -> list[Loop]:
        """The loops that contain no other loop."""
        loops = self.loops()
        return [
            outer
            for outer in loops
            if not any(
                inner is not outer and outer.start <= inner.start and inner.end <= outer.end
                for inner in loops
            )
        ]

    def local_access_bytes(self) -> tuple[int, int]:
        """Bytes stored (STL) and loaded (LDL) to local memory by the code, each instruction counted
        once with its width (``.64`` 8 bytes, ``.128`` 16, else 4): register spills, the way ptxas -v
        counts 'bytes spill stores / loads' (local arrays also show up here)."""
        totals = {"STL": 0, "LDL": 0}
        for ins in self.instructions:
            parts = ins.opcode.split(".")
            if parts[0] in totals:
                width = next((int(p) // 8 for p in parts[1:] if p in {"64", "128"}), 4)
                width = next(
                    (w for p in parts[1:] for w in [{"U8": 1, "S8": 1, "U16": 2, "S16": 2}.get(p)] if w),
                    width,
                )
                totals[parts[0]] += width
        return totals["STL"], totals["LDL"]

    def setmaxnreg(self) -> tuple[int, ...]:
        """Register counts that ``setmaxnreg`` (USETMAXREG) sets, in code order."""
        counts = []
        for ins in self.instructions:
            if ins.opcode.startswith("USETMAXREG"):
                m = re.search(r"\b(0x[0-9a-fA-F]+|\d+)\s*$", ins.operands.strip())
                if m:
                    counts.append(int(m[1], 0))
        return tuple(counts)


def parse_sass(text: str, arch: str = "", source: str = "cuobjdump -sass") -> list[SassFunction]:
    """Every function in ``cuobjdump -sass`` (or ``nvdisasm``-style) text, in order."""
    functions: list[SassFunction] = []
    current_arch = arch
    current: SassFunction | None = None
    for line in text.splitlines():
        if m := _TARGET.match(line):
            current_arch = m["arch"] or m["arch2"]
        elif m := _FUNCTION.match(line):
            current = SassFunction(m["name"], current_arch)
            functions.append(current)
        elif current is not None and (m := _INSTRUCTION.match(line)):
            current.instructions.append(
                Instruction(int(m["addr"], 16), m["opcode"], m["operands"], (m["pred"] or "").strip())
            )
    if not any(f.instructions for f in functions):
        raise InputError(f"{source}: no 'Function : NAME' with SASS instructions found")
    return functions
