"""Reading a user's text file safely: regular files only, bounded size, UTF-8 (with or without a BOM)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpusim.errors import InputError, quote


def read_text_file(path: Path, *, what: str, max_bytes: int) -> str:
    """The text of ``path``: a regular file of at most ``max_bytes`` bytes, UTF-8 (a BOM is dropped,
    CRLF line ends are kept for the parser). Devices, FIFOs and directories are refused without
    reading them, so ``/dev/zero`` or a named pipe cannot hang the caller."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{quote(path)}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"{quote(path)}: is a directory, expected {what}") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise InputError(f"{quote(path)}: cannot open file: {_reason(exc)}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{quote(path)}: is a directory, expected {what}")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{quote(path)}: not a regular file (a device, pipe or socket), expected {what}")
        if info.st_size > max_bytes:
            raise InputError(
                f"{quote(path)}: {info.st_size:,} bytes is too large for {what} (limit {max_bytes:,})"
            )
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:  # the file may grow while it is read
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise InputError(f"{quote(path)}: more than {max_bytes:,} bytes is too large for {what}")
    except OSError as exc:
        raise InputError(f"{quote(path)}: cannot read file: {_reason(exc)}") from None
    finally:
        os.close(fd)
    return decode_utf8(b"".join(chunks), str(path))


def decode_utf8(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text without a leading BOM; bad bytes are reported with their line and column."""
    nul = data.find(b"\0")
    if nul >= 0:  # no text format gpusim reads has NUL bytes: this is a binary file (or a corrupt one)
        line = data.count(b"\n", 0, nul) + 1
        column = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        raise InputError(f"{quote(source)}: cannot read file: a NUL byte at line {line} column {column}; expected a text "
                         "file (UTF-8)")  # fmt: skip
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise InputError(
            f"{source}: cannot read file: byte 0x{data[start]:02x} at line {line} column {column} is not "
            "UTF-8 text (save the file as UTF-8)"
        ) from None


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or type(exc).__name__
