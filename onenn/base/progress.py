"""Progress lines of a long loop: where it is, how fast it goes and when it will end (docs/guide.md). No number a
loop computes depends on its progress."""

import math
import time
from collections.abc import Callable
from typing import Any, SupportsFloat

#: seconds between two progress lines, by default
EVERY = 10.0

#: ``progress(step, steps, loss)``: ``loss``, of the last step done, is anything ``float`` takes (read only for a line)
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
    """``step 120000/1000000 (12%), minibatch loss 0.4132, 41 300 steps/s, ETA 21 s`` (no rate: no rate, no ETA)."""
    line = f"step {step}/{steps} ({100 * step // max(steps, 1)}%), {loss_name} {loss:.4g}"
    if rate is None:
        return line
    return f"{line}, {per_second(rate)} steps/s, ETA {duration((steps - step) / rate) if rate > 0 else 'unknown'}"


class Throttle:
    """When to write through ``write``: at the first call, then once ``every`` seconds (``clock``) have passed since
    the last line, and at the end (once); each line starts with ``prefix``."""

    def __init__(
        self,
        write: Callable[[str], object],
        *,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
        prefix: str = "",
    ) -> None:
        if not every >= 0:
            raise ValueError(f"every must be a number of seconds >= 0; got {every!r}")
        self.write, self.every, self.clock, self.prefix = write, every, clock, prefix
        self.first: tuple[float, float] | None = None  # (time, work done) at the first line
        self.last = -math.inf  # the time of the last line
        self.ended = False

    def tick(self, done: float, end: bool) -> tuple[float, float | None] | None:
        """``(now, rate)`` where a line is due, else None; rate: work per second since the first line (or None)."""
        now = self.clock()
        if self.ended or not (end or self.first is None or now - self.last >= self.every):
            return None
        self.ended, self.last = end, now
        if self.first is None:
            self.first = (now, done)
            return now, None
        seconds = now - self.first[0]
        return now, (done - self.first[1]) / seconds if seconds > 0 else None


class StepProgress(Throttle):
    """A ``Progress`` that writes ``step_line``s; ``loss_name`` names the loss."""

    def __init__(self, write: Callable[[str], object], *, loss_name: str = "minibatch loss", **options: Any) -> None:
        super().__init__(write, **options)
        self.loss_name = loss_name

    def __call__(self, step: int, steps: int, loss: SupportsFloat) -> None:
        if (due := self.tick(step, step >= steps)) is not None:
            self.write(self.prefix + step_line(step, steps, float(loss), due[1], self.loss_name))


class FlowProgress(Throttle):
    """A ``FlowProgressCallback`` for an ODE solver's right-hand side: it counts the evaluations; the ETA extrapolates
    the largest ``fraction`` seen (a solver tries points ahead of the one it has reached) at its mean pace."""

    def __init__(self, write: Callable[[str], object], **options: Any) -> None:
        super().__init__(write, **options)
        self.evaluations, self.fraction = 0, 0.0
        self.evaluations_first = 0  # the evaluations at the first line

    def __call__(self, time: float, time_end: float, fraction: float) -> None:
        self.evaluations += 1
        self.fraction = max(self.fraction, min(fraction, 1.0))
        if (due := self.tick(self.fraction, self.fraction >= 1.0)) is None:
            return
        now, pace = due  # pace: fraction per second
        evaluations = f"{group(self.evaluations)} evaluation{'' if self.evaluations == 1 else 's'}"
        line = f"t = {time:.3g} of {time_end:.3g} ({math.floor(100 * self.fraction)}%), {evaluations}"
        if pace is None:
            self.evaluations_first = self.evaluations
        else:
            rate = (self.evaluations - self.evaluations_first) / (now - self.first[0])
            left = (1.0 - self.fraction) / pace if pace > 0 else math.inf
            line += f", {per_second(rate)} evaluations/s, ETA {duration(left)}"
        self.write(self.prefix + line)


def both(first: Progress, second: Progress | None) -> Progress:
    """A ``Progress`` that calls ``first``, then ``second`` where there is one (a job's lines and the API's bar)."""
    if second is None:
        return first

    def call(step: int, steps: int, loss: SupportsFloat) -> None:
        first(step, steps, loss)
        second(step, steps, loss)

    return call


class ProgressBar:
    """A tqdm bar of the API (a widget in a notebook, else on standard error), closed at the end: a ``Progress`` with
    the minibatch loss (``onenn.train``), ``flow`` a ``FlowProgressCallback`` in percent (``onenn.population_flow``)."""

    def __init__(self, description: str, steps: int | None = None, unit: str = "step") -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(desc=description, total=steps, unit=unit, unit_scale=unit == "step", dynamic_ncols=True)

    def __call__(self, step: int, steps: int, loss: SupportsFloat) -> None:
        self.show(step, steps, f"minibatch loss {float(loss):.4g}")

    def flow(self, time: float, time_end: float, fraction: float) -> None:
        self.show(max(self.bar.n, math.floor(100 * min(fraction, 1.0))), 100, f"t = {time:.3g} of {time_end:.3g}")

    def show(self, done: float, total: float, postfix: str) -> None:
        self.bar.total = total
        self.bar.update(done - self.bar.n)
        self.bar.set_postfix_str(postfix, refresh=False)
        if done >= total:
            self.bar.close()
