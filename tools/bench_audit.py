"""Benchmark of the audit's hot spots, numpy against the compiled twins: ``python -m tools.bench_audit``.

On the weighted sample of config.yaml's audit (16 384 plain and 128 x 128 stratified prompts, N = 32, d = 8) and
its quadrature (128 x 64 x 8 nodes), ms per evaluation, on one thread, in one run on one machine:

- **sample gradient**: the mean loss and gradient on the sample, the numpy definition (``loss._per_prompt`` over
  the chunks) against the compiled pass (``compiled.per_prompt``), as GD and the sample's flows evaluate it;
- **population nodes, per prompt**: the same on the population quadrature's nodes (``t1_nodes x gap_nodes x third_nodes``);
- **population nodes, F inverse**: the inverse of F on the table for the ``N - 2`` other inner products of every
  node, ``np.interp`` against the guided lookup ``compiled.interp``;
- **population evaluation**: one whole ``population_loss_grad`` as the flow now calls it (compiled), for scale.

Timed in interleaved repetitions, the median reported (the process's CPU time), so a slow spell of a shared machine
hits both columns alike; the ratio is the number to read. The table is printed and written to ``--output`` if given.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from onenn.base.io import write_with
from onenn.base.provenance import processors
from onenn.maths.stream import numpy_generator
from onenn.theory.audit import AuditSettings
from onenn.theory.reduced import compiled
from onenn.theory.reduced.loss import Prepared, _per_prompt_all, prepare
from onenn.theory.reduced.population import nodes, population_loss_grad, quadrature
from onenn.theory.reduced.sampling import audit_sample

#: config.yaml's audit (the settings the timings depend on)
SETTINGS = AuditSettings(n_plain=16_384, n_max=128, n_gap=128, t1_nodes=128, gap_nodes=64)
#: a small sample and quadrature (``--quick``: the tool's test)
QUICK = AuditSettings(n_plain=1024, n_max=16, n_gap=16, t1_nodes=32, gap_nodes=16)
#: where the gradient is evaluated: a point of the early dynamics from sigma = 3
POINT = (4.0, 8.0)


def _means(values: list[np.ndarray], prep: Prepared) -> list[float]:
    return [float(v @ prep.weight) for v in values]


def medians(runs: dict[str, Callable[[], object]], reps: int) -> dict[str, float]:
    """Median CPU seconds of each run, the runs timed one after the other in each of ``reps`` repetitions."""
    for run in runs.values():
        run()  # compiled (or loaded from numba's cache) before timing
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(reps):
        for name, run in runs.items():
            start = time.process_time()
            run()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def rows(s: AuditSettings, reps: int) -> list[tuple[str, float, float]]:
    """``(what, numpy ms, compiled ms)`` of the docstring's lines (the last: compiled only, numpy NaN)."""
    t, w, _ = audit_sample(s.n_plain, s.n_max, s.n_gap, s.N, s.d, numpy_generator(s.seed, "audit", 0), s.gap_min)
    prep = prepare(t, w)
    q = quadrature(s.N, s.d, s.t1_nodes, s.gap_nodes, s.seed, third_nodes=s.third_nodes)
    at = nodes(*POINT, q).prepared
    y = q.uniforms * np.linspace(0.05, 1.0, q.uniforms.shape[1])  # the F values of the others, as nodes() has them
    out = np.empty(y.size)
    runs = {
        "sample numpy": lambda: _means(_per_prompt_all(*POINT, prep, True, compiled=False), prep),
        "sample compiled": lambda: _means(_per_prompt_all(*POINT, prep, True), prep),
        "nodes numpy": lambda: _means(_per_prompt_all(*POINT, at, True, compiled=False), at),
        "nodes compiled": lambda: _means(_per_prompt_all(*POINT, at, True), at),
        "interp numpy": lambda: np.interp(y, q.table_cdf, q.table_t),
        "interp compiled": lambda: compiled.interp(y.ravel(), q.table_cdf, q.table_t, q.table_guide, out),
        "population": lambda: population_loss_grad(*POINT, q),
    }
    ms = {name: 1e3 * sec for name, sec in medians(runs, reps).items()}
    return [
        (f"sample gradient ({len(t)} prompts x N={s.N})", ms["sample numpy"], ms["sample compiled"]),
        (f"population nodes, per prompt ({at.gap_query.size} nodes)", ms["nodes numpy"], ms["nodes compiled"]),
        (f"population nodes, F inverse ({y.size} values)", ms["interp numpy"], ms["interp compiled"]),
        ("population evaluation (population_loss_grad)", float("nan"), ms["population"]),
    ]


def table(lines: list[tuple[str, float, float]], reps: int, load: tuple[float, float]) -> str:
    out = [
        "# The audit's hot spots: numpy against compiled",
        "",
        (
            f"`python -m tools.bench_audit` on {processors()}; 1 thread; process CPU time, median of {reps} "
            f"interleaved repetitions; ms per evaluation at (xi1, xi2) = {POINT}; load average {load[0]:.2f} before, "
            f"{load[1]:.2f} after."
        ),
        "",
        "| evaluation | numpy ms | compiled ms | numpy / compiled |",
        "|---|---:|---:|---:|",
    ]
    for what, a, b in lines:
        ratio = f"{a / b:.2f}" if np.isfinite(a) else ""
        numpy_ms = f"{a:.3f}" if np.isfinite(a) else ""
        out.append(f"| {what} | {numpy_ms} | {b:.3f} | {ratio} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m tools.bench_audit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=15, help="interleaved repetitions (the median is reported)")
    parser.add_argument("--output", default=None, help="where the table is written (default: printed only)")
    parser.add_argument("--quick", action="store_true", help="a small sample and quadrature (a smoke test)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    lines = rows(QUICK if args.quick else SETTINGS, args.reps)
    text = table(lines, args.reps, (load_before, os.getloadavg()[0]))
    print(text, end="")
    if args.output:
        write_with(args.output, lambda tmp: tmp.write_text(text))
    return text


if __name__ == "__main__":
    main()
