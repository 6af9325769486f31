"""Where sweep points run: local processes on every core, or a Dask distributed cluster.

Both yield result rows as points finish (in completion order; the sweep sorts them by point), and both
retry a point whose worker died, so killing a worker loses no results.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import signal
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from gpusim.arch import Arch
from gpusim.errors import GpusimError, InputError, quote
from gpusim.explore.adapter import Costs
from gpusim.explore.grid import Point
from gpusim.explore.point import evaluate_point

DEFAULT_RETRIES = 3
Archs = dict[str, Arch] | None
"""Each point's arch id -> the arch resolved with the sweep's costs (None: workers resolve it)."""


class Executor(Protocol):
    """Runs points and yields their result rows as they finish."""

    description: str

    def run(self, points: Sequence[Point], costs: Costs, archs: Archs = None) -> Iterator[dict[str, Any]]:
        """Evaluate every point once; yield each row when it is ready."""
        ...

    def close(self) -> None:
        """Release processes or the cluster connection."""
        ...


class InlineExecutor:
    """Points one after another in this process (``--jobs 1``; also what the tuner uses for tiny spaces)."""

    description = "1 process (inline)"

    def run(self, points: Sequence[Point], costs: Costs, archs: Archs = None) -> Iterator[dict[str, Any]]:
        for point in points:
            yield evaluate_point(point, costs, (archs or {}).get(point.arch))

    def close(self) -> None:
        pass


class LocalExecutor:
    """A pool of local processes, one per core by default.

    When a worker process dies (killed, out of memory) the pool breaks; the points still running or
    queued are resubmitted to a fresh pool, each at most ``retries`` times.
    """

    def __init__(self, jobs: int | None = None, retries: int = DEFAULT_RETRIES) -> None:
        self.jobs = jobs or os.cpu_count() or 1
        self.retries = retries
        self.description = f"{self.jobs} local processes"
        self._pool: ProcessPoolExecutor | None = None

    def worker_pids(self) -> list[int]:
        """Process ids of the current pool's workers (for monitoring, and for tests that kill one)."""
        pool = self._pool
        processes = getattr(pool, "_processes", None) or {}
        return sorted(processes)

    def _stop_workers(self, how: signal.Signals = signal.SIGTERM) -> None:
        for pid in self.worker_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, how)

    def run(self, points: Sequence[Point], costs: Costs, archs: Archs = None) -> Iterator[dict[str, Any]]:
        pending = {p.index: p for p in points}
        deaths: Counter[int] = Counter()
        # fork: workers start at once with gpusim already imported, and a caller's script needs no
        # ``if __name__ == "__main__"`` guard; they only run evaluate_point (no locks shared with threads).
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        context = multiprocessing.get_context(method)
        while pending:
            # never more workers than CPUs or points: each holds a simulation's memory
            workers = max(1, min(self.jobs, len(pending), os.cpu_count() or 1))
            pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
            self._pool = pool
            futures: dict[Future[dict[str, Any]], Point] = {
                pool.submit(evaluate_point, p, costs, (archs or {}).get(p.arch)): p for p in pending.values()
            }
            broken = False
            try:
                waiting = set(futures)
                while waiting:
                    done, waiting = wait(waiting, return_when=FIRST_COMPLETED)
                    for future in sorted(done, key=lambda f: futures[f].index):
                        point = futures[future]
                        try:
                            row = future.result()
                        except BrokenProcessPool:
                            broken = True
                            continue
                        del pending[point.index]
                        yield row
            except BaseException:
                self._stop_workers()  # Ctrl-C, SIGTERM, a caller that stops early: no point finishes
                raise
            finally:
                if broken:  # CPython 3.11's pool can spin forever in shutdown while a surviving worker is
                    self._stop_workers(signal.SIGKILL)  # alive; its points are resubmitted below anyway
                pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
            if broken:
                for index in pending:
                    deaths[index] += 1
                worst = max((deaths[i] for i in pending), default=0)
                if worst > self.retries:
                    raise GpusimError(f"a worker process died {worst} times while predicting "
                                      f"{len(pending)} remaining points; giving up")  # fmt: skip

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class DaskExecutor:
    """Points as tasks on a Dask distributed cluster (``--scheduler tcp://HOST:PORT``).

    Each task is retried (``retries``) if it fails, and the scheduler reruns tasks whose worker died.
    ``address`` may also be an existing ``distributed.Client``.
    """

    def __init__(self, address: Any, retries: int = DEFAULT_RETRIES, connect_timeout_s: float = 15.0) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise InputError("--scheduler needs dask.distributed: pip install 'dask[distributed]'") from None
        self._own = not isinstance(address, Client)
        if self._own:
            _probe_scheduler(address, connect_timeout_s)
            try:
                self.client = Client(address, timeout=connect_timeout_s, set_as_default=False)
            except (OSError, TimeoutError, ValueError) as exc:
                raise InputError(
                    f"--scheduler {quote(address, 80)}: cannot connect ({quote(exc, 120)})"
                ) from None
        else:
            self.client = address
        self.retries = retries
        workers = len(self.client.scheduler_info().get("workers", {}))
        self.description = f"Dask cluster at {self.client.scheduler.address} ({workers} workers)"

    def run(self, points: Sequence[Point], costs: Costs, archs: Archs = None) -> Iterator[dict[str, Any]]:
        from distributed import as_completed

        token = os.urandom(4).hex()
        futures = [
            self.client.submit(
                evaluate_point,
                p,
                costs,
                (archs or {}).get(p.arch),  # small; sent with each task so a restarted worker has it
                key=f"gpusim-point-{p.index}-{token}",
                retries=self.retries,
                pure=False,
            )
            for p in points
        ]
        try:
            for future in as_completed(futures, loop=self.client.loop):
                try:
                    row = future.result()
                except Exception as exc:  # KilledWorker or a task error after its retries
                    raise GpusimError(f"Dask task {future.key} failed: {type(exc).__name__}: {exc}") from None
                future.release()
                yield row
        finally:
            for future in futures:
                if not future.done():
                    future.cancel()

    def close(self) -> None:
        if self._own:
            self.client.close()


def _probe_scheduler(address: str, timeout_s: float) -> None:
    """Connect to ``address`` and exchange Dask's handshake once, so an unreachable host or a server that
    is not a Dask scheduler is one line before a ``Client`` exists (a failed Client keeps the process
    waiting on its own shutdown and prints a traceback from its destructor)."""
    import asyncio

    from distributed.comm import connect

    async def handshake() -> None:
        comm = await connect(address, timeout=timeout_s)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(handshake(), timeout_s + 1))
    except Exception as exc:
        why = "no reply in time" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        if isinstance(exc, MemoryError):
            why = "the reply is not Dask's protocol"
        raise InputError(
            f"--scheduler {quote(address, 80)}: not a reachable Dask scheduler ({quote(why, 120)})"
        ) from None


SCHEDULER_ADDRESS = re.compile(
    r"(tcp|tls|ws|wss)://([A-Za-z0-9._-]{1,200}|\[[0-9A-Fa-f:.]{2,60}\]):([0-9]{1,5})"
)
"""A Dask scheduler address: protocol://HOST:PORT (an IPv6 host in brackets)."""


def check_scheduler_address(address: str) -> str:
    """``address`` if it is a Dask scheduler address, else a one-line InputError before any connection."""
    match = SCHEDULER_ADDRESS.fullmatch(address.strip())
    if match is None or not 1 <= int(match.group(3)) <= 65535:
        raise InputError(f"--scheduler '{quote(address, 80)}': expected a scheduler address tcp://HOST:PORT "
                         "(or tls://, ws://, wss://), e.g. tcp://10.0.0.5:8786")  # fmt: skip
    return address.strip()


MAX_LOCAL_JOBS = 256
"""Most local worker processes one command starts."""


def make_executor(scheduler: str | None = None, jobs: int | None = None) -> Executor:
    """Dask when a scheduler address is given, else local processes (inline for ``jobs == 1``)."""
    if jobs is not None and not 0 <= jobs <= MAX_LOCAL_JOBS:
        raise InputError(f"--jobs {jobs}: expected 0 (every core) to {MAX_LOCAL_JOBS} local processes")
    if scheduler:
        return DaskExecutor(check_scheduler_address(scheduler))
    if jobs == 1:
        return InlineExecutor()
    return LocalExecutor(jobs)
