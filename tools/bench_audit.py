"""The audit's hot spots, numpy reference against compiled port: ``python -m tools.bench_audit [--quick]``.

ms per evaluation on config.yaml's audit sample and quadrature (process CPU, one thread): loss and gradient on the
sample and on the nodes, the inverse of F, one ``population_loss_grad``. The ratio is the number to read."""

from __future__ import annotations

import argparse
import os

import numpy as np

from onenn.base.io import write_with
from onenn.base.provenance import processors
from onenn.theory.audit import AuditSettings, weighted_sample
from onenn.theory.reduced import compiled
from onenn.theory.reduced.loss import _per_prompt_all, prepare
from onenn.theory.reduced.population import nodes, population_loss_grad, quadrature
from tools.bench import interleaved_medians

#: config.yaml's audit (the settings the timings depend on), and a small one (``--quick``: the tool's test)
SETTINGS = AuditSettings(n_plain=16_384, n_max=128, n_gap=128, t1_nodes=128, gap_nodes=64)
QUICK = AuditSettings(n_plain=1024, n_max=16, n_gap=16, t1_nodes=32, gap_nodes=16)
#: where the gradient is evaluated: a point of the early dynamics from sigma = 3
POINT = (4.0, 8.0)


def rows(s: AuditSettings, reps: int) -> list[tuple[str, float, float]]:
    """``(what, numpy ms, compiled ms)`` per hot spot (the last: compiled only, numpy NaN)."""
    t, w, _ = weighted_sample(s)
    prep = prepare(t, w)
    q = quadrature(s.N, s.d, s.t1_nodes, s.gap_nodes, s.seed, third_nodes=s.third_nodes)
    at = nodes(*POINT, q).prepared
    y = (q.uniforms * np.linspace(0.05, 1.0, q.uniforms.shape[1])).ravel()  # F values of the others, as nodes() has
    out = np.empty(y.size)
    runs = {
        "sample numpy": lambda: _per_prompt_all(*POINT, prep, True, compiled=False),
        "sample compiled": lambda: _per_prompt_all(*POINT, prep, True),
        "nodes numpy": lambda: _per_prompt_all(*POINT, at, True, compiled=False),
        "nodes compiled": lambda: _per_prompt_all(*POINT, at, True),
        "interp numpy": lambda: np.interp(y, q.table_cdf, q.table_t),
        "interp compiled": lambda: compiled.interp(y, q.table_cdf, q.table_t, q.table_guide, out),
        "population": lambda: population_loss_grad(*POINT, q),
    }
    for run in runs.values():
        run()  # compiled (or loaded from numba's cache) before timing
    ms = {name: 1e3 * t for name, t in interleaved_medians({k: (run, 1) for k, run in runs.items()}, reps).items()}
    return [
        (f"sample gradient ({len(t)} prompts x N={s.N})", ms["sample numpy"], ms["sample compiled"]),
        (f"population nodes, per prompt ({at.gap_query.size} nodes)", ms["nodes numpy"], ms["nodes compiled"]),
        (f"population nodes, F inverse ({y.size} values)", ms["interp numpy"], ms["interp compiled"]),
        ("population evaluation (population_loss_grad)", float("nan"), ms["population"]),
    ]


def _ms(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if np.isfinite(x) else ""


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m tools.bench_audit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=15, help="interleaved repetitions (the median is reported)")
    parser.add_argument("--output", default=None, help="where the table is written (default: printed only)")
    parser.add_argument("--quick", action="store_true", help="a small sample and quadrature (a smoke test)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    timed = rows(QUICK if args.quick else SETTINGS, args.reps)
    lines = [
        "# The audit's hot spots: numpy against compiled",
        "",
        (
            f"`python -m tools.bench_audit` on {processors()}; 1 thread; process CPU time, median of {args.reps} "
            f"interleaved repetitions; ms per evaluation at (xi1, xi2) = {POINT}; load average {load:.2f} before, "
            f"{os.getloadavg()[0]:.2f} after."
        ),
        "",
        "| evaluation | numpy ms | compiled ms | numpy / compiled |",
        "|---|---:|---:|---:|",
        *(f"| {what} | {_ms(a)} | {b:.3f} | {_ms(a / b, 2)} |" for what, a, b in timed),
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.output:
        write_with(args.output, lambda tmp: tmp.write_text(text))
    return text


if __name__ == "__main__":
    main()
