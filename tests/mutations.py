"""Hypothesis strategies that mutate the shipped YAML and CSV files into malformed or hostile inputs."""

from __future__ import annotations

import re

from hypothesis import strategies as st

HOSTILE_SCALARS = (
    ".nan", ".inf", "-.inf", "-1", "0", "-0.0", "1e400", "1e308", "99999999999999999999999999", "1" + "0" * 5000,
    "10**10**10", "2.0**10000", "'" + "x" * 5000 + "'", "''", "[]", "{}", "null", "true", "[1, [2, [3]]]",
    "!!float abc", "!!python/object:os.system x", "*missing", "&a 1", "0x10", "1_000", "0.5", "4096.5",
    "ceil_div(M, 0)", "M // 0", "1 if", "-M", "M * 1e30", "'\\u0000'", "\"\\x00\"", "9" * 30,
)  # fmt: skip
"""Values put in place of a number: invalid, non-finite, huge, wrong types, broken YAML, bad expressions."""

HOSTILE_INSERTS = (
    "\ufeff", "\x00", "\r\n", "\t", "\xff", "a: &a [1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d]\n",
    "[" * 200 + "]" * 200, "{a: " * 100 + "1" + "}" * 100, "? [1]\n: x\n", "<<: *nope\n", "---\n", "...\n",
    "%YAML 1.1\n", "key: value\nkey: value\n",
)  # fmt: skip
"""Text put at a random point of a file."""

_NUMBER = re.compile(r"(?<=[:\[,] )-?\d[\d_.eE+-]*")


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """``text`` after one to three mutations: a number replaced by a hostile value, a line deleted or
    duplicated, hostile text inserted, the file truncated, or line ends changed to CRLF."""
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                ["number", "number", "number", "delete", "duplicate", "insert", "truncate", "crlf"]
            )
        )
        lines = text.split("\n")
        if kind == "number":
            spots = list(_NUMBER.finditer(text))
            if spots:
                spot = draw(st.sampled_from(spots))
                text = text[: spot.start()] + draw(st.sampled_from(HOSTILE_SCALARS)) + text[spot.end() :]
        elif kind == "delete" and len(lines) > 1:
            i = draw(st.integers(0, len(lines) - 1))
            text = "\n".join(lines[:i] + lines[i + 1 :])
        elif kind == "duplicate":
            i = draw(st.integers(0, len(lines) - 1))
            text = "\n".join(lines[: i + 1] + lines[i:])
        elif kind == "insert":
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(HOSTILE_INSERTS)) + text[at:]
        elif kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        else:
            text = text.replace("\n", "\r\n")
    return text


HOSTILE_CELLS = (
    "nan", "inf", "-inf", "NaN", "1e400", "-5", "0", "", "x" * 200_000, "1;2", "\"a,b\"", "\ufeff",
    "M=10**10**10", "BN=.inf", "heads_kv=0", "../../etc/passwd", "/dev/zero", "h10", "auto:gemm+auto:gemm",
)  # fmt: skip
"""Values put in a measurement CSV cell."""
