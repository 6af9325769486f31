"""Every gpusim exception survives what simpy and multiprocessing do to it: simpy re-raises a failed
process's exception as ``type(exc)(*exc.args)``, multiprocessing pickles a worker's exception."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
from pathlib import Path

import pytest
import simpy

import gpusim
from gpusim.errors import GpusimError, InputError, UnknownNameError


def _all_subclasses(cls: type) -> list[type]:
    for module in pkgutil.walk_packages(gpusim.__path__, "gpusim."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found, todo = [], [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


SAMPLES: dict[type, GpusimError] = {
    UnknownNameError: UnknownNameError("arch", "h10", ["h100", "a100"], "--arch")
}


@pytest.mark.parametrize("cls", [GpusimError, *_all_subclasses(GpusimError)], ids=lambda c: c.__qualname__)
def test_error_rebuilds_from_args_and_pickles(cls: type) -> None:
    exc = SAMPLES.get(cls) or cls("sample.yaml: field 'x': expected a number")
    rebuilt = type(exc)(*exc.args)
    assert str(rebuilt) == str(exc)
    restored = pickle.loads(pickle.dumps(exc))
    assert type(restored) is type(exc) and str(restored) == str(exc)


def test_unknown_name_raised_inside_a_simpy_process_reaches_the_caller() -> None:
    env = simpy.Environment()

    def role(env: simpy.Environment):  # type: ignore[no-untyped-def]
        yield env.timeout(1)
        raise UnknownNameError("symbol", "BMM", ["BM", "BN"], "expression 'BMM * 2'")

    env.process(role(env))
    with pytest.raises(UnknownNameError, match="did you mean 'BM'"):
        env.run()


def test_unknown_name_quotes_a_bounded_name() -> None:
    message = str(UnknownNameError("arch", "h1\n0" + "x" * 100_000, ["h100"]))
    assert "\n" not in message and len(message) < 400


def test_output_path_that_cannot_hold_a_new_file_is_refused_before_work(tmp_path: Path) -> None:
    """access() says yes to root everywhere; a created-and-removed probe file tells a directory that
    cannot hold new files (procfs) before the command works, and leaves nothing behind."""
    from gpusim.cli_guard import check_output_path

    with pytest.raises(InputError, match=r"--out '/proc/x.csv': cannot create a file in '/proc'"):
        check_output_path("/proc/x.csv", "--out", (".csv",))
    ok = tmp_path / "r.csv"
    assert check_output_path(str(ok), "--out", (".csv",)) == ok
    assert not ok.exists()
