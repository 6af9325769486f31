"""Run the ``gpusim`` command in a forked child (fast: no re-import) with a hard time bound, and judge
the outcome against the CLI's promises: a documented exit status, no traceback, at most one line on
stderr, strict JSON on stdout for ``--json``."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

EXIT_CODES = frozenset({0, 2, 3, 4, 5})
"""0 ok, 2 bad input or usage, 3 refused by a hardware check, 4 deadlock, 5 over a limit."""
HUNG = -1


@dataclass(frozen=True)
class Outcome:
    """What one run of the command did."""

    args: tuple[str, ...]
    rc: int
    """The exit status, or HUNG when the run passed its time bound and was killed."""
    stdout: str
    stderr: str
    wall_s: float


def run_forked(args: Sequence[str], timeout_s: float = 20.0, stdin: bytes | None = None) -> Outcome:
    """Run ``gpusim <args>`` in a forked child whose stdout and stderr go to files."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 70
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                # fresh streams on the descriptors (a test runner may have replaced sys.stdout/err)
                sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                sys.argv = ["gpusim", *args]
                os.environ.update({"NO_COLOR": "1", "COLUMNS": "220"})
                from gpusim.cli import main

                try:
                    main()
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                except BaseException:
                    import traceback

                    traceback.print_exc()
                    code = 71
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        rc = HUNG
        deadline = start + timeout_s
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.perf_counter() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.002)
        wall_s = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        return Outcome(
            tuple(args),
            rc,
            out.read().decode("utf-8", "replace"),
            err.read().decode("utf-8", "replace"),
            wall_s,
        )


def _no_constants(name: str) -> float:
    raise ValueError(f"not strict JSON: {name}")


def problems(outcome: Outcome, *, max_line_chars: int = 1000) -> list[str]:
    """Every promise this run broke (empty when it behaved)."""
    found: list[str] = []
    if outcome.rc == HUNG:
        return [f"hung (killed after {outcome.wall_s:.1f} s)"]
    if outcome.rc not in EXIT_CODES:
        found.append(f"exit status {outcome.rc} not in {sorted(EXIT_CODES)}")
    if "Traceback" in outcome.stderr or "Traceback" in outcome.stdout:
        found.append("traceback")
    err_lines = outcome.stderr.strip().splitlines()
    if outcome.rc != 0 and len(err_lines) != 1:
        found.append(f"stderr has {len(err_lines)} lines, expected one")
    if outcome.rc == 0 and err_lines:
        found.append(f"exit 0 with {len(err_lines)} lines on stderr")
    if any(len(line) > max_line_chars for line in err_lines):
        found.append(f"stderr line longer than {max_line_chars} characters")
    if outcome.rc == 0 and "--json" in outcome.args:
        try:
            json.loads(outcome.stdout, parse_constant=_no_constants)
        except ValueError as exc:
            found.append(f"--json output is not strict JSON: {str(exc)[:100]}")
    return found


def describe(outcome: Outcome) -> str:
    """A short account of a run for an assertion message."""
    args = " ".join(a if len(a) < 80 else a[:77] + "..." for a in outcome.args)
    return f"gpusim {args} -> rc {outcome.rc}, stderr: {outcome.stderr[:400]!r}"
