"""A function's CPU time, metered in place: shared by the benchmarks that say where a
move's CPU goes."""

from __future__ import annotations

import time


class CpuMeter:
    """Wraps a module's synchronous function and adds up the CPU spent inside it."""

    def __init__(self, module, name: str) -> None:
        self.cpu = 0.0
        self.calls = 0
        inner = getattr(module, name)

        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return inner(*args, **kwargs)
            finally:
                self.cpu += time.process_time() - start
                self.calls += 1

        setattr(module, name, timed)
        self._restore = lambda: setattr(module, name, inner)

    def per_call_ms(self) -> float:
        return self.cpu / max(1, self.calls) * 1000

    def close(self) -> None:
        self._restore()
