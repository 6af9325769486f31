"""Where the built-in data (archs/, schedules/, data/) lives: inside the wheel or in the source tree."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def builtin_dir(name: str) -> Path:
    """The directory of built-in ``name`` files (``archs``, ``schedules`` or ``data``).

    An installed wheel carries them in ``gpusim/_data/<name>``; a source checkout (editable install)
    has them at the repository root.
    """
    packaged = _PACKAGE_DIR / "_data" / name
    if packaged.is_dir():
        return packaged
    return _PACKAGE_DIR.parent / name
