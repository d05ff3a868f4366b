"""Process pools whose workers die with the process that started them.

A pool's workers outlive a parent killed with SIGKILL: they finish the task in hand
(an export chunk of 10,000 pictures: seconds) before they notice, writing into a
folder nobody will publish. On Linux each worker asks the kernel for SIGKILL when its
parent dies (``prctl(PR_SET_PDEATHSIG)``), and exits at once if the parent is already
gone by then. (The signal follows the parent *thread* that forked the worker: the
pool's own threads fork replacements only for workers that died, and they live as
long as the pool.) Elsewhere workers stop after their task, as multiprocessing's do.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import multiprocessing.pool
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def pool(workers: int) -> multiprocessing.pool.Pool:
    """``multiprocessing.Pool(workers)`` (default context) of workers that die with us."""
    return multiprocessing.get_context().Pool(workers, initializer=_die_with,
                                              initargs=(os.getpid(),))
