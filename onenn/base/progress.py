"""Progress lines of a long loop: where it is, how fast it goes and when it will end, written every few seconds.

A loop that takes a ``progress`` callable (the training engines' ``run``, ``train``, ``train_binary``, the audit's
gradient descent and flows) calls it at the boundaries of the blocks it already has, and does nothing when it is
``None``: library code is silent by default. The jobs pass one of the reporters below, which writes a line through
the job's logger at most every ``every`` seconds (time from ``time.monotonic``), the first at its first call and the
last when the loop ends. Progress goes to logs only: no number a loop computes depends on it.

- ``StepProgress(write)(step, steps, loss)``, for a loop of steps::

      step 120000/1000000 (12%), minibatch loss 0.4132, 41 300 steps/s, ETA 21 s

- ``FlowProgress(write)(time, time_end, fraction)``, for an ODE solved in log-time, ``fraction`` its share done::

      t = 3.2e+08 of 1e+20 (45%), 230 evaluations, 12 evaluations/s, ETA 40 s

- ``ProgressBar(description)``, for an interactive call (``onenn.train``): a tqdm bar over the steps, with the
  minibatch loss; ``both(first, second)`` calls two of them (a job's lines and the bar).

The rate is the mean since the first line (the first line has none: it is written after the loop's first block,
whose cost includes warming up); the ETA is the work left at that rate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import SupportsFloat

#: seconds between two progress lines, by default
EVERY = 10.0

#: ``progress(step, steps, loss)``: ``step`` steps of ``steps`` done; ``loss``, the minibatch loss of the last step
#: done, is anything ``float`` takes (a numpy scalar, a 0-d tensor: it is read only when a line is written)
Progress = Callable[[int, int, SupportsFloat], None]
#: ``progress(time, time_end, fraction)``: a flow at ``time`` of ``time_end``, ``fraction`` of its work done
FlowProgressCallback = Callable[[float, float, float], None]


def group(n: float) -> str:
    """``41 300``: an integer with its thousands apart."""
    return f"{round(n):,}".replace(",", " ")


def per_second(rate: float) -> str:
    """A rate: ``41 300`` from 100 up, else three significant digits (``12.5``, ``0.2``)."""
    return group(rate) if rate >= 100 else f"{rate:.3g}"


def duration(seconds: float) -> str:
    """``21 s``, ``3 min 05 s``, ``2 h 07 min``."""
    if not math.isfinite(seconds):
        return "unknown"
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def step_line(step: int, steps: int, loss: float, rate: float | None, loss_name: str = "minibatch loss") -> str:
    """``step 120000/1000000 (12%), minibatch loss 0.4132, 41 300 steps/s, ETA 21 s``; without the rate and the
    ETA where ``rate`` is None."""
    line = f"step {step}/{steps} ({100 * step // max(steps, 1)}%), {loss_name} {loss:.4g}"
    if rate is None:
        return line
    return f"{line}, {per_second(rate)} steps/s, ETA {duration((steps - step) / rate) if rate > 0 else 'unknown'}"


class Throttle:
    """When to write: at the first call, then once ``every`` seconds have passed since the last line, and at the end
    (once). ``clock``: seconds, ``time.monotonic`` (the tests pass a fake one)."""

    def __init__(self, write: Callable[[str], object], every: float, clock: Callable[[], float]) -> None:
        if not every >= 0:
            raise ValueError(f"every must be a number of seconds >= 0; got {every!r}")
        self.write, self.every, self.clock = write, every, clock
        self.first: tuple[float, float] | None = None  # (time, work done) at the first line
        self.last = -math.inf  # the time of the last line
        self.ended = False

    def due(self, now: float, end: bool) -> bool:
        if self.ended:
            return False
        self.ended = end
        return end or self.first is None or now - self.last >= self.every

    def rate(self, now: float, done: float) -> float | None:
        """Work per second since the first line (None at the first line, or before any time has passed)."""
        if self.first is None:
            self.first = (now, done)
            return None
        seconds = now - self.first[0]
        return (done - self.first[1]) / seconds if seconds > 0 else None


class StepProgress:
    """A ``Progress`` that writes ``step_line``s through ``write`` (a job passes its logger's), at most every
    ``every`` seconds, the first at the first call and the last at ``step == steps``. ``prefix`` starts every line
    (``gd: ``); ``loss_name`` names the loss (``minibatch loss``)."""

    def __init__(
        self,
        write: Callable[[str], object],
        *,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
        prefix: str = "",
        loss_name: str = "minibatch loss",
    ) -> None:
        self.throttle = Throttle(write, every, clock)
        self.prefix, self.loss_name = prefix, loss_name

    def __call__(self, step: int, steps: int, loss: SupportsFloat) -> None:
        t = self.throttle
        now = t.clock()
        if not t.due(now, step >= steps):
            return
        rate = t.rate(now, step)
        t.last = now
        t.write(self.prefix + step_line(step, steps, float(loss), rate, self.loss_name))


class FlowProgress:
    """A ``FlowProgressCallback`` for an ODE solver's right-hand side: it counts the evaluations and writes
    ``t = 3.2e+08 of 1e+20 (45%), 230 evaluations, 12 evaluations/s, ETA 40 s`` through ``write`` at most every
    ``every`` seconds, the first at the first evaluation and the last at ``fraction >= 1``. The ETA extrapolates
    the largest ``fraction`` seen (a solver tries points ahead of the one it has reached) at its mean pace."""

    def __init__(
        self,
        write: Callable[[str], object],
        *,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
        prefix: str = "",
    ) -> None:
        self.throttle = Throttle(write, every, clock)
        self.prefix = prefix
        self.evaluations = 0
        self.fraction = 0.0
        self.evaluations_first = 0  # the evaluations at the first line

    def __call__(self, time: float, time_end: float, fraction: float) -> None:
        self.evaluations += 1
        self.fraction = max(self.fraction, min(fraction, 1.0))
        t = self.throttle
        now = t.clock()
        if not t.due(now, self.fraction >= 1.0):
            return
        pace = t.rate(now, self.fraction)  # fraction per second
        t.last = now
        percent = math.floor(100 * self.fraction)
        evaluations = f"{group(self.evaluations)} evaluation{'' if self.evaluations == 1 else 's'}"
        line = f"t = {time:.3g} of {time_end:.3g} ({percent}%), {evaluations}"
        if pace is None:
            self.evaluations_first = self.evaluations
        else:
            rate = (self.evaluations - self.evaluations_first) / (now - t.first[0])
            left = (1.0 - self.fraction) / pace if pace > 0 else math.inf
            line += f", {per_second(rate)} evaluations/s, ETA {duration(left)}"
        t.write(self.prefix + line)


def both(first: Progress, second: Progress | None) -> Progress:
    """A ``Progress`` that calls ``first``, then ``second`` where there is one (a job's lines and the API's bar)."""
    if second is None:
        return first

    def call(step: int, steps: int, loss: SupportsFloat) -> None:
        first(step, steps, loss)
        second(step, steps, loss)

    return call


class ProgressBar:
    """A ``Progress`` drawn as a tqdm bar (``description``: its label; ``steps``: its length, where known), for
    interactive calls (``onenn.train``): it moves at every block of steps, shows the minibatch loss of the block's
    last step, and closes at the last step. tqdm writes to standard error; nothing a loop computes depends on it."""

    def __init__(self, description: str, steps: int | None = None) -> None:
        from tqdm import tqdm

        self.bar = tqdm(desc=description, total=steps, unit="step", unit_scale=True, dynamic_ncols=True)

    def __call__(self, step: int, steps: int, loss: SupportsFloat) -> None:
        bar = self.bar
        if bar.total != steps:
            bar.total = steps
        bar.update(step - bar.n)
        bar.set_postfix_str(f"minibatch loss {float(loss):.4g}", refresh=False)
        if step >= steps:
            bar.close()

    def close(self) -> None:
        self.bar.close()
