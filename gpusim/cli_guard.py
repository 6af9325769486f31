"""What stands between the ``gpusim`` command and the user: one-line errors with documented exit
statuses, usage errors with a hint to ``--help``, Ctrl-C, strict JSON, and output paths checked before
any work starts."""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from gpusim.errors import (
    DeadlockError,
    GpusimError,
    InputError,
    ScheduleRefused,
    SimulationTimeout,
    overrides_from,
    quote,
)
from gpusim.sim.limits import stop_simulations

try:  # typer vendors click from 0.26 on
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
except ImportError:  # pragma: no cover - older typer with click as a dependency
    from click.exceptions import ClickException, UsageError  # type: ignore[no-redef]

    NoArgsIsHelpError = None  # type: ignore[assignment,misc]
from typer import Abort, Exit

EXIT_OK = 0
EXIT_INPUT = 2
EXIT_REFUSED = 3
EXIT_DEADLOCK = 4
EXIT_LIMIT = 5
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_INTERNAL = 70
"""A bug in gpusim (never expected; reported in one line, the traceback with GPUSIM_DEBUG=1)."""

MAX_MESSAGE_CHARS = 1000

PLOT_SUFFIXES = (".png", ".pdf", ".svg")
TRACE_SUFFIXES = (".json",)
YAML_SUFFIXES = (".yaml", ".yml")


def exit_code_for(exc: GpusimError) -> int:
    """The documented exit status of a gpusim error (a class may set ``exit_code`` itself)."""
    code = getattr(type(exc), "exit_code", None)
    if isinstance(code, int):
        return code
    if isinstance(exc, ScheduleRefused):
        return EXIT_REFUSED
    if isinstance(exc, DeadlockError):
        return EXIT_DEADLOCK
    if isinstance(exc, SimulationTimeout):
        return EXIT_LIMIT
    return EXIT_INPUT


def one_line(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``message`` on one line, at most ``limit`` characters."""
    return quote(message, limit)


def _fail(message: str, code: int) -> NoReturn:
    _flush_stdout()
    sys.stderr.write(f"gpusim: {one_line(message, MAX_MESSAGE_CHARS - len('gpusim: '))}\n")
    sys.stderr.flush()
    sys.exit(code)


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        _silence_stdout()
    except OSError as exc:
        _silence_stdout()
        sys.stderr.write(f"gpusim: error: cannot write the output: {exc.strerror or exc}\n")
        sys.exit(EXIT_INPUT)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _usage_hint(exc: Any) -> str:
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None) or "gpusim"
    return f"see '{path} --help'"


class _ClosedStream:
    """Stands for a standard stream the command was started without (``>&-``): Python leaves
    ``sys.stdout`` None then; writing it is refused like writing a bad descriptor."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "the output descriptor is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "the output descriptor is closed")


def _standard_streams() -> None:
    """A closed stdout fails on the first write (one line, status 2); a closed stderr swallows the line."""
    if sys.stdout is None:
        sys.stdout = _ClosedStream()  # type: ignore[assignment]
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):  # an encoding without '…' or '×' (PYTHONIOENCODING=latin-1)
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


class Terminated(BaseException):
    """SIGTERM arrived (``kill``, a job scheduler, a CI timeout): unwinds like Ctrl-C, so the process
    pools of validate, calibrate and explore stop their workers instead of leaving them running."""


def _raise_terminated(signum: int, frame: object) -> None:
    stop_simulations(Terminated)
    raise Terminated


def _raise_interrupted(signum: int, frame: object) -> None:
    stop_simulations(KeyboardInterrupt)
    raise KeyboardInterrupt


def run_guarded(app: Callable[..., Any]) -> NoReturn:
    """Run the typer ``app`` and exit with a documented status; every failure is one line on stderr."""
    _standard_streams()
    if threading.current_thread() is threading.main_thread():  # signal handlers live in the main thread
        signal.signal(signal.SIGTERM, _raise_terminated)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when Ctrl-C is ignored
            signal.signal(signal.SIGINT, _raise_interrupted)
    help_json = _help_as_json(sys.argv[1:])
    try:
        with overrides_from("--set"):
            rv = _run_capturing_help(app) if help_json else app(standalone_mode=False)
    except GpusimError as exc:
        _fail(f"error: {one_line(str(exc))}", exit_code_for(exc))
    except KeyboardInterrupt:
        _fail("interrupted", EXIT_INTERRUPTED)
    except Terminated:
        _fail("terminated", EXIT_TERMINATED)
    except Abort:  # typer turns an EOF on a prompt, or Ctrl-C in some places, into Abort
        _fail("interrupted", EXIT_INTERRUPTED)
    except Exit as exc:
        _flush_stdout()
        sys.exit(exc.exit_code)
    except ClickException as exc:
        if NoArgsIsHelpError is not None and isinstance(exc, NoArgsIsHelpError) and exc.ctx is not None:
            text = exc.ctx.get_help() + "\n"
            sys.stdout.write(_json_or_help(text) if help_json else text)
            _flush_stdout()
            sys.exit(EXIT_OK)
        hint = f"; {_usage_hint(exc)}" if isinstance(exc, UsageError) else ""
        _fail(f"error: {one_line(exc.format_message(), 600).rstrip('.')}{hint}", EXIT_INPUT)
    except BrokenPipeError:  # the reader went away (| head): nothing left to say to anyone
        _silence_stdout()
        sys.exit(EXIT_OK)
    except SystemExit as exc:
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            _silence_stdout()  # typer met the broken pipe first and exits 1 itself: the same case
            sys.exit(EXIT_OK)
        raise
    except OSError as exc:
        if (
            exc.filename is None and exc.errno is not None
        ):  # writing stdout (a full disk, a closed descriptor)
            _silence_stdout()
            _fail(f"error: cannot write the output: {one_line(exc.strerror or str(exc), 200)}", EXIT_INPUT)
        _fail(
            f"error: {one_line(str(exc.filename), 200)}: {one_line(exc.strerror or str(exc), 200)}",
            EXIT_INPUT,
        )
    except (RecursionError, MemoryError) as exc:
        _fail(f"error: the input is too large or too deeply nested ({type(exc).__name__})", EXIT_LIMIT)
    except Exception as exc:
        if os.environ.get("GPUSIM_DEBUG"):
            raise
        _fail(
            f"internal error (a bug in gpusim; GPUSIM_DEBUG=1 shows the traceback): "
            f"{type(exc).__name__}: {one_line(str(exc), 300)}",
            EXIT_INTERNAL,
        )
    if rv == EXIT_INTERRUPTED:  # typer returns Exit(130) for a Ctrl-C it caught itself
        _fail("interrupted", EXIT_INTERRUPTED)
    _flush_stdout()
    sys.exit(rv if isinstance(rv, int) else EXIT_OK)


def _help_as_json(args: list[str]) -> bool:
    """Whether ``--help`` comes with ``--json`` (before any ``--``): the help is then one JSON document."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options and ("--help" in options or "-h" in options)


def _json_or_help(text: str) -> str:
    """What a ``--json`` run that also asked for ``--help`` prints: its output when that is JSON (the
    ``-h`` was an option's value), else the help as ``{"help": TEXT}``."""
    if not text.strip():
        return text
    try:
        json.loads(text)
        return text
    except ValueError:
        return strict_json({"help": text}) + "\n"


def _run_capturing_help(app: Callable[..., Any]) -> Any:
    """Run ``app`` with stdout captured; print it (help as JSON) once it returns or exits."""
    import contextlib
    import io

    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            rv = app(standalone_mode=False)
    except Exit:
        sys.stdout.write(_json_or_help(captured.getvalue()))
        raise
    sys.stdout.write(_json_or_help(captured.getvalue()))
    return rv


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None (JSON has no such numbers)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def strict_json(data: Any) -> str:
    """Strict JSON text (RFC 8259): NaN and infinities become null, never ``NaN``/``Infinity``."""
    return json.dumps(_finite(data), indent=2, allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return _finite(item())
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def write_json(data: Any) -> None:
    """Print ``data`` as strict JSON on stdout."""
    sys.stdout.write(strict_json(data) + "\n")


def _probe_create(target: Path) -> None:
    """Create ``target`` and remove it again, so a directory that cannot hold new files (procfs, a
    read-only mount) is refused before the work; OSError goes to the caller's message."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.close(fd)
    target.unlink()


def refuse_overwriting_an_input(out: str | None, option: str, inputs: dict[str, str | None]) -> None:
    """Refuse an output path that names one of the command's input files (``{option: path}``), which the
    run would overwrite with its results."""
    if out is None:
        return
    for input_option, path in inputs.items():
        try:
            same = path is not None and os.path.samefile(out, path)
        except (OSError, ValueError):  # either one missing or unreadable: not the same file
            same = False
        if same:
            raise InputError(f"{option} '{quote(out)}' is the {input_option} file: the results would overwrite "
                             "the input; write them to another file")  # fmt: skip


def refuse_writing_over_inputs(inputs: Iterable[str | Path], outputs: dict[str, str | None]) -> None:
    """Refuse any output path (``{option: path}``; None: not written) that is one of ``inputs``."""
    paths = [str(p) for p in inputs]
    for option, out in outputs.items():
        for path in paths:
            refuse_overwriting_an_input(out, option, {"input": path})


def check_output_path(path: str | None, option: str, suffixes: Iterable[str]) -> Path | None:
    """Refuse, before any work starts, an output path that cannot be written as asked: a missing or
    read-only directory, a directory in place of a file, or a suffix other than ``suffixes``."""
    if path is None:
        return None
    allowed = tuple(suffixes)
    shown = quote(path)
    if not path.strip():
        raise InputError(f"{option}: empty path")
    if "\0" in path:
        raise InputError(f"{option} '{shown}': the path contains a NUL character")
    if path.endswith(("/", os.sep)):
        raise InputError(f"{option} '{shown}': ends with '/', a directory; expected a file name")
    target = Path(path)
    try:
        if target.is_dir():
            raise InputError(f"{option} '{shown}': is a directory, expected a file name")
    except OSError:
        pass  # reported below
    suffix = target.suffix.lower()
    if suffix not in allowed:
        known = ", ".join(allowed)
        if not suffix:
            raise InputError(f"{option} '{shown}': give the file extension ({known})")
        raise InputError(f"{option} '{shown}': unknown extension '{quote(suffix, 20)}'; expected {known}")
    try:
        if target.is_dir():
            raise InputError(f"{option} '{shown}': is a directory, expected a file name")
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir():
            raise InputError(f"{option} '{shown}': directory '{quote(parent)}' does not exist")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise InputError(f"{option} '{shown}': directory '{quote(parent)}' is not writable")
        if target.exists() and not target.is_file():  # a FIFO would block the write with no reader
            raise InputError(f"{option} '{shown}': not a regular file (a FIFO, device or socket); "
                             "expected a file name")  # fmt: skip
        if target.exists() and not os.access(target, os.W_OK):
            raise InputError(f"{option} '{shown}': the file exists and is not writable")
        if not target.exists():
            try:
                _probe_create(target)  # access() says yes to root on a read-only or pseudo file system
            except OSError as exc:
                raise InputError(f"{option} '{shown}': cannot create a file in '{quote(parent)}' "
                                 f"({exc.strerror or type(exc).__name__})") from None  # fmt: skip
    except OSError as exc:  # a name too long, a loop of symlinks
        raise InputError(f"{option} '{shown}': {exc.strerror or type(exc).__name__}") from None
    return target


def check_build_dir(build_dir: str) -> None:
    """Refuse, before any compile, a ``--build-dir`` that cannot become a directory: it, or the nearest
    part of its path that exists, is not a directory (missing directories are created, as ``mkdir -p``)."""
    shown = quote(build_dir)
    if not build_dir.strip() or "\0" in build_dir:
        raise InputError(f"--build-dir '{shown}': expected a directory path")
    path = Path(build_dir).absolute()
    try:
        existing = next(p for p in (path, *path.parents) if p.exists())
        if not existing.is_dir():
            what = (
                "exists and is not a directory"
                if existing == path
                else f"'{quote(existing)}' is not a directory"
            )
            raise InputError(f"--build-dir '{shown}': {what}")
    except OSError as exc:
        raise InputError(f"--build-dir '{shown}': {exc.strerror or exc}") from None
