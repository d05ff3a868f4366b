"""Process pools whose workers die with the process that started them.

Workers are started by a fork server, not forked from the caller: a process that has
threads (Ray's gRPC threads, a trio worker thread, torch's) can hold a lock at the
moment of a fork, and a forked child then waits on it for ever. The fork server is a
clean single-threaded process, started once.

A pool's workers outlive a parent killed with SIGKILL: they finish the task in hand
(an export chunk of 10,000 pictures: seconds) before they notice, writing into a
folder nobody will publish. On Linux each worker asks the kernel for SIGKILL when its
parent (the fork server) dies (``prctl(PR_SET_PDEATHSIG)``), and the fork server exits
as soon as the process that started it is gone (multiprocessing's own rule), so the
chain ends at once; a worker whose starter is gone before its request took effect
exits at once. Elsewhere workers stop after their task, as multiprocessing's do.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.pool
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as someone else's
        return True
    return True


def _die_with(starter: int) -> None:
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    # Either died before the request took effect: nobody would signal us.
    if os.getppid() != parent or not _alive(starter):
        os._exit(1)


def pool(workers: int) -> multiprocessing.pool.Pool:
    """``multiprocessing.Pool(workers)`` of fork-server workers that die with us."""
    context = multiprocessing.get_context("forkserver")
    return context.Pool(workers, initializer=_die_with, initargs=(os.getpid(),))
