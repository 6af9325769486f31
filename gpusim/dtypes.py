"""Data-type names gpusim understands and their storage sizes."""

from __future__ import annotations

from typing import Literal, get_args

DtypeName = Literal[
    "fp64",
    "fp32",
    "tf32",
    "fp16",
    "bf16",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp6",
    "fp4",
    "int8",
    "int32",
    "mxfp8",
    "mxfp6",
    "mxfp4",
    "nvfp4",
]
"""Every dtype name accepted in arch and schedule files."""

DTYPE_NAMES: tuple[str, ...] = get_args(DtypeName)

BITS_PER_ELEMENT: dict[str, float] = {
    "fp64": 64,
    "fp32": 32,
    "tf32": 32,  # stored as fp32
    "fp16": 16,
    "bf16": 16,
    "fp8_e4m3": 8,
    "fp8_e5m2": 8,
    "fp6": 6,
    "fp4": 4,
    "int8": 8,
    "int32": 32,
    "mxfp8": 8,
    "mxfp6": 6,
    "mxfp4": 4,
    "nvfp4": 4,
}

DTYPE_ALIASES: dict[str, str] = {
    "f16": "fp16",
    "half": "fp16",
    "float16": "fp16",
    "bfloat16": "bf16",
    "f32": "fp32",
    "float32": "fp32",
    "float": "fp32",
    "f64": "fp64",
    "e4m3": "fp8_e4m3",
    "fp8": "fp8_e4m3",
    "e5m2": "fp8_e5m2",
    "s8": "int8",
}


def bytes_per_element(dtype: str) -> float:
    """Storage bytes of one element (fractional for sub-byte types)."""
    return BITS_PER_ELEMENT[canonical_dtype(dtype)] / 8


def canonical_dtype(name: str) -> str:
    """The canonical dtype name for ``name`` or an alias of it; raises UnknownNameError otherwise."""
    from gpusim.errors import UnknownNameError

    key = str(name).strip().lower()
    key = DTYPE_ALIASES.get(key, key)
    if key not in BITS_PER_ELEMENT:
        raise UnknownNameError("dtype", str(name), DTYPE_NAMES)
    return key
