"""The population quadrature's noise at points of the flow, and a prototype that integrates the third-nearest
inner product: ``python -m tools.quadrature_noise``.

The population quadrature (``onenn.theory.reduced.population``) integrates ``t_(1)`` and the gap to ``t_(2)`` by
Gauss-Legendre panels and draws the other ``N - 2`` inner products once per node from fixed uniforms: its only
noise. This tool measures that noise where the audit's resolution page needs it (points of the sigma = 3 flow),
as the relative standard deviation of the loss and of both gradient components over ``--seeds`` seeds of the
uniforms, for two estimators that evaluate the same number of prompts:

- **one draw**: the package's quadrature at ``t1 x gap`` nodes (``population_loss_grad``);
- **t3 integrated** (a prototype, here only): ``t1/2 x gap/2`` nodes, and at each ``T3`` Gauss-Legendre nodes in
  the law of the largest of the other ``N - 2``, ``t_(3) = F^{-1}(F(t2) y^{1/(N-2)})`` with ``y`` uniform; the
  remaining ``N - 3`` drawn once per node below ``t_(3)``.

It also prints the weights' effective sample size ``1 / sum w^2`` of the package's nodes (all of them: the share of
nodes the mass sits on). Developers read it to choose the next step of the audit's early-time resolution; it
changes nothing in the package.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from onenn.base.io import write_with
from onenn.stream import numpy_generator
from onenn.theory.reduced import population as pop
from onenn.theory.reduced.loss import Prepared, _per_prompt_all
from onenn.theory.reduced.sampling import inner_product_cdf, inner_product_density

#: the audit's d and N (config.yaml), its sigma for the resolution page
D, N, SIGMA = 8, 32, 3.0
#: Gauss-Legendre nodes in the law of t_(3) (one panel)
T3 = 8
#: the prototype's uniforms: an instance of the audit's stream the package does not use
_PROTOTYPE_STREAM = 7


def t3_integrated(xi1: float, xi2: float, q: pop.Quadrature, seed: int, t3_nodes: int = T3) -> np.ndarray:
    """``(loss, dL/dxi1, dL/dxi2)`` by the prototype: the package's nodes of ``(t1, gap)`` (``q``), ``t3_nodes``
    Gauss-Legendre nodes in the law of ``t_(3)`` given ``t2``, the other ``N - 3`` drawn once per node."""
    w = 1.0 / max(xi1, 1.0)
    t1, log_t1_weight = pop._t1_nodes(xi1, xi2, q)
    beta = np.arcsinh((1.0 + t1) / w)
    gap = w * np.sinh(beta[:, None] * q.v[None, :])
    gap_weight = q.v_weight[None, :] * w * beta[:, None] * np.cosh(beta[:, None] * q.v[None, :])
    t1_all = np.repeat(t1, q.v.size)
    t2 = np.maximum(t1_all - gap.ravel(), -1.0)
    cdf_t2 = inner_product_cdf(t2, q.d)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_density = (
            math.log(q.N * (q.N - 1))
            + np.log(inner_product_density(t1_all, q.d))
            + np.log(inner_product_density(t2, q.d))
            + (q.N - 2) * np.log(cdf_t2)
        )
        weight = np.exp(log_density + np.repeat(log_t1_weight, q.v.size)) * gap_weight.ravel()
    weight = np.nan_to_num(weight, nan=0.0, posinf=0.0)
    n = t2.size
    y, y_weight = np.polynomial.legendre.leggauss(t3_nodes)
    y, y_weight = (y + 1.0) / 2.0, y_weight / 2.0
    cdf_t3 = np.repeat(cdf_t2, t3_nodes) * np.tile(y, n) ** (1.0 / (q.N - 2))
    t3 = np.minimum(pop._inverse_cdf(cdf_t3, q), np.repeat(t2, t3_nodes))
    uniforms = numpy_generator(seed, "audit", _PROTOTYPE_STREAM).random((q.N - 3, n * t3_nodes))
    rest = np.minimum(pop._inverse_cdf(uniforms * cdf_t3, q), t3)
    t1_rep, t2_rep = np.repeat(t1_all, t3_nodes), np.repeat(t2, t3_nodes)
    weights = np.repeat(weight, t3_nodes) * np.tile(y_weight, n)
    gaps = np.concatenate([(t2_rep - t1_rep)[None, :], (t3 - t1_rep)[None, :], rest - t1_rep], axis=0)
    prepared = Prepared(gaps, gaps.min(axis=0), 1.0 - t1_rep, weights / weights.sum())
    values = _per_prompt_all(xi1, xi2, prepared, with_grad=True)
    return np.array([float(v @ prepared.weight) for v in values])


def one_draw(xi1: float, xi2: float, q: pop.Quadrature) -> np.ndarray:
    """``(loss, dL/dxi1, dL/dxi2)`` by the package's quadrature."""
    return np.array(pop.population_loss_grad(xi1, xi2, q)[:3])


def points(times: list[float], t1_nodes: int, gap_nodes: int) -> list[tuple[float, float, float]]:
    """``(t, xi1, xi2)`` of the sigma = 3 population flow at ``times`` (the package's quadrature, seed 0)."""
    q = pop.quadrature(N, D, t1_nodes, gap_nodes, 0)
    flow = pop.population_flow(0.0, SIGMA, max(times), q, np.asarray(times, dtype=np.float64))
    return list(zip(times, flow.xi1.tolist(), flow.xi2.tolist(), strict=True))


def table(times: list[float], t1_nodes: int, gap_nodes: int, seeds: int) -> str:
    """The Markdown table: per point and estimator, the mean over seeds and the relative sd of one estimate."""
    lines = [
        f"Population quadrature noise at d = {D}, N = {N}, sigma = {SIGMA} (relative sd of one estimate over "
        f"{seeds} seeds of the uniforms; both estimators evaluate {t1_nodes * gap_nodes} prompts)",
        "",
        "| t | ξ1 | ξ2 | estimator | loss | rel. sd loss | rel. sd ∂L/∂ξ1 | rel. sd ∂L/∂ξ2 | ESS of nodes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t, xi1, xi2 in points(times, t1_nodes, gap_nodes):
        full = [pop.quadrature(N, D, t1_nodes, gap_nodes, s) for s in range(seeds)]
        half = pop.quadrature(N, D, t1_nodes // 2, gap_nodes // 2, 0)
        weight = pop.nodes(xi1, xi2, full[0]).prepared.weight
        ess = 1.0 / float(np.sum(weight**2))
        runs = {
            "one draw": np.array([one_draw(xi1, xi2, q) for q in full]),
            f"t3 integrated ({T3} nodes)": np.array([t3_integrated(xi1, xi2, half, s) for s in range(seeds)]),
        }
        for name, values in runs.items():
            mean = values.mean(axis=0)
            rel = values.std(axis=0, ddof=1) / np.abs(mean)
            ess_cell = f"{ess:.0f} of {weight.size}" if name == "one draw" else ""
            lines.append(
                f"| {t:.0e} | {xi1:.4g} | {xi2:.4g} | {name} | {mean[0]:.6g} | {rel[0]:.1e} | {rel[1]:.1e} | "
                f"{rel[2]:.1e} | {ess_cell} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--times", type=float, nargs="+", default=[1e1, 1e3, 1e4, 1e5, 1e6])
    parser.add_argument("--t1-nodes", type=int, default=256)
    parser.add_argument("--gap-nodes", type=int, default=128)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="64 x 32 nodes, 3 seeds, t = 10 and 1000 (the test)")
    parser.add_argument("--output", help="also write the table here")
    args = parser.parse_args(argv)
    if args.quick:
        args.times, args.t1_nodes, args.gap_nodes, args.seeds = [1e1, 1e3], 64, 32, 3
    text = table(args.times, args.t1_nodes, args.gap_nodes, args.seeds)
    print(text, end="")
    if args.output:
        write_with(args.output, lambda path: path.write_text(text))


if __name__ == "__main__":
    main()
