"""CPU slots that idle cells give back: which running cells do no CPU work now, measured rather than declared.

The catalog declares the cases whose cells mostly wait (``Case.waits``), and the runner runs those
beside the CPU slots. Other waits belong to one client, not to the case: a client that drops a
result it cannot parse and waits for its own request timeout (the Kotlin SDK on ``wrong-container``:
18 s of a schema cell), one that drops an oversized frame, a client that sleeps between retries.
Such a cell held one of the ``--jobs`` CPU slots for its whole wait while a core stood idle.

:class:`IdleWatch` samples the CPU time of each running cell's process groups
(:func:`process.cpu_seconds`: the adapter's group and, where the harness started it for the cell,
the reference server's) and calls a cell idle when it used less than :data:`IDLE_SHARE` of one core
over the last :data:`IDLE_WINDOW_S`. The runner does not count an idle cell against the CPU slots
until it works again (``runner.run_all``), and :class:`Gate` does the same for threads that each
run one cell after another (the boundary probe's searches). A cell whose processes are not found (a
container, a cell between its process's exit and its record) is never idle.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager

from harness.system import process

IDLE_WINDOW_S = 1.0
"""How long a cell must have done next to nothing before it counts as idle."""
IDLE_SHARE = 0.05
"""Next to nothing: under 5 % of one core (50 ms of CPU time in the window)."""
SAMPLE_S = 0.25
"""How often :meth:`IdleWatch.update` reads ``/proc`` at most (about 3 ms a read on a busy machine)."""


class IdleWatch:
    """The idle cells among those it is told about, by owner (:func:`process.owned_by`)."""

    def __init__(self, sample: Callable[[], dict[Hashable, float]] = process.cpu_seconds) -> None:
        self._sample = sample
        self._history: dict[Hashable, deque[tuple[float, float]]] = {}
        """Per owner, (time, CPU seconds) samples: the first is the newest at least a window old."""
        self._idle: set[Hashable] = set()
        self._sampled_at = float("-inf")

    def update(self, owners: Iterable[Hashable], now: float) -> None:
        """Sample the CPU time of ``owners`` (the running cells that may be idle; others are
        forgotten), at most once per :data:`SAMPLE_S`."""
        if now - self._sampled_at < SAMPLE_S:
            return
        self._sampled_at = now
        watched = set(owners)
        for gone in set(self._history) - watched:
            del self._history[gone]
        self._idle &= watched
        used = self._sample() if watched else {}
        for owner in watched:
            cpu = used.get(owner)
            if cpu is None:
                self._history.pop(owner, None)
                self._idle.discard(owner)
                continue
            history = self._history.setdefault(owner, deque())
            history.append((now, cpu))
            while len(history) > 1 and now - history[1][0] >= IDLE_WINDOW_S:
                history.popleft()
            since, cpu_then = history[0]
            window = now - since
            if window >= IDLE_WINDOW_S and 0 <= cpu - cpu_then < IDLE_SHARE * window:
                self._idle.add(owner)
            else:
                self._idle.discard(owner)

    def idle(self, owner: Hashable) -> bool:
        """Whether ``owner``'s processes used next to no CPU over the last window (as last sampled)."""
        return owner in self._idle


class Gate:
    """At most ``jobs`` holders of a slot (:meth:`slot`) do CPU work at once; an idle one does not count."""

    def __init__(self, jobs: int, watch: IdleWatch | None = None) -> None:
        self._jobs = max(1, jobs)
        self._watch = watch or IdleWatch()
        self._holders: set[int] = set()
        self._owners = itertools.count()
        self._changed = threading.Condition()

    def _busy(self) -> int:
        self._watch.update(self._holders, time.monotonic())
        return sum(1 for owner in self._holders if not self._watch.idle(owner))

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Wait for a slot, then hold it while inside; the processes this thread starts meanwhile are
        the holder's (:func:`process.owned_by`)."""
        owner = next(self._owners)
        with self._changed:
            while self._busy() >= self._jobs:
                self._changed.wait(SAMPLE_S)
            self._holders.add(owner)
        try:
            with process.owned_by(owner):
                yield
        finally:
            with self._changed:
                self._holders.discard(owner)
                self._changed.notify_all()
