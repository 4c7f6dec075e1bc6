"""Where a sweep's points run: a local process pool or a Dask cluster, and dying cleanly.

Local pool (``concurrent.futures``, spawn start method). A sweep leaves nothing running behind it:

- SIGINT, SIGTERM and SIGHUP raise :class:`SweepInterrupted` in the sweep's main thread; the pool
  is then torn down (pending tasks cancelled, workers terminated, then killed if they linger), and
  the multiprocessing resource tracker exits with the last process holding its pipe.
- Workers ignore SIGINT (a terminal's Ctrl-C reaches the whole foreground process group; the
  parent decides), and die with their parent: ``PR_SET_PDEATHSIG`` on Linux, a watchdog thread
  polling the parent's pid elsewhere. A SIGKILL'd sweep therefore leaves no workers either.
- A worker that dies (out of memory, a crash) fails the points of its task with the reason; they
  are retried on the next run (:mod:`workbench.platform._sweep_file`).

Dask: the scheduler address is contacted with an explicit timeout (``connect_timeout_s``); a
malformed or unreachable address is one line, not a 30-second wait and a traceback.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any

from workbench.errors import WorkbenchError

__all__ = [
    "SweepInterrupted",
    "connect",
    "dask_client",
    "dask_results",
    "interrupts_raise",
    "pool_results",
]

Chunk = list[dict[str, Any]]
Evaluate = Callable[[Chunk], list[dict[str, Any]]]
Failed = Callable[[dict[str, Any], str], dict[str, Any]]

_SIGNALS = tuple(
    s
    for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None))
    if s
)


class SweepInterrupted(KeyboardInterrupt):
    """The sweep was stopped by a signal; ``signum`` says which (exit status ``128 + signum``)."""

    def __init__(self, signum: int) -> None:
        """Record the signal number."""
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """While the body runs, SIGINT/SIGTERM/SIGHUP raise :class:`SweepInterrupted` (main thread).

    After the first signal the others are ignored until the body's cleanup has finished, so a
    second Ctrl-C cannot cut the teardown of the pool short. Outside the main thread (where
    Python cannot install handlers) the body runs unchanged.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: object) -> None:
        for s in _SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise SweepInterrupted(signum)

    old = {s: signal.signal(s, handler) for s in _SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _die_with_parent(parent: int) -> None:
    """Make this worker exit when ``parent`` does (Linux: the kernel; elsewhere: a watchdog)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0:
                if os.getppid() != parent:  # NOTE: the parent died before prctl took effect
                    os._exit(1)
                return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="workbench-parent-watch", daemon=True).start()


def worker_init(parent: int) -> None:
    """Process-pool initializer: ignore SIGINT, default SIGTERM, die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(parent)


def _teardown(pool: ProcessPoolExecutor, *, abort: bool) -> None:
    """Shut the pool down; on ``abort`` terminate its workers now (then kill any that linger)."""
    if not abort:
        pool.shutdown(wait=True)
        return
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(5.0)
            if p.is_alive():
                p.kill()
                p.join(2.0)
    # NOTE: the pool's manager thread notices its dead workers on its own; joined here, any
    # traceback it prints (a closed wake-up pipe: OSError EBADF) comes before the caller's
    # one-line "interrupted" message instead of after it, at interpreter exit.
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(5.0)


def pool_results(
    chunks: list[Chunk], workers: int, evaluate: Evaluate, failed: Failed
) -> Iterator[dict[str, Any]]:
    """Records of every point in ``chunks``, evaluated on ``workers`` local processes.

    A task whose worker died yields each of its points as ``failed(point, reason)``.
    """
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=worker_init, initargs=(os.getpid(),)
    )
    finished = False
    try:
        futures: dict[Future[list[dict[str, Any]]], Chunk] = {
            pool.submit(evaluate, c): c for c in chunks
        }
        for fut in as_completed(futures):
            try:
                records = fut.result()
            except Exception as exc:  # NOTE: BrokenProcessPool and friends: the task is lost
                why = f"worker process failed ({type(exc).__name__}: {_first_line(exc)})"
                records = [failed(p, why) for p in futures[fut]]
            yield from records
        finished = True
    finally:
        _teardown(pool, abort=not finished)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def connect(address: str, timeout_s: float) -> Any:
    """A ``distributed.Client`` for ``address``, or one line within ``timeout_s`` seconds."""
    if "://" not in address and ":" not in address:
        raise WorkbenchError(
            f"--scheduler {address!r}: not a scheduler address (expected tcp://HOST:PORT)"
        )
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - dask is a test dependency
        raise WorkbenchError("sweep: --scheduler needs dask[distributed] installed") from None
    try:
        return Client(address, timeout=timeout_s, set_as_default=False)
    except ValueError as exc:
        raise WorkbenchError(
            f"--scheduler {address!r}: not a scheduler address ({_first_line(exc)}; "
            "expected tcp://HOST:PORT)"
        ) from None
    except (OSError, TimeoutError) as exc:
        raise WorkbenchError(
            f"--scheduler {address!r}: no Dask scheduler answered within {timeout_s:g} s "
            f"({_first_line(exc)})"
        ) from None


def dask_client(scheduler: Any, connect_timeout_s: float, stack: contextlib.ExitStack) -> Any:
    """The Dask client for ``scheduler``: a client as given, or one connected to an address.

    A client opened here is closed by ``stack``; one passed in belongs to the caller.
    """
    if not isinstance(scheduler, str):
        return scheduler
    client = connect(scheduler, connect_timeout_s)
    stack.callback(client.close)
    return client


def dask_results(
    chunks: list[Chunk], client: Any, evaluate: Evaluate, failed: Failed
) -> Iterator[dict[str, Any]]:
    """Records of every point in ``chunks``, evaluated on the Dask cluster of ``client``.

    A task that fails (a worker killed, a lost connection) yields each of its points as
    ``failed(point, reason)``. Closing the iterator cancels what has not run.
    """
    from distributed import as_completed as dask_completed

    futures = client.map(evaluate, chunks, pure=False)
    by_key = {f.key: c for f, c in zip(futures, chunks, strict=True)}
    try:
        for fut in dask_completed(futures, loop=client.loop):
            try:
                records = fut.result()
            except Exception as exc:  # NOTE: KilledWorker and friends
                why = f"dask task failed ({type(exc).__name__}: {_first_line(exc)})"
                records = [failed(p, why) for p in by_key[fut.key]]
            yield from records
    finally:
        client.cancel(futures)
