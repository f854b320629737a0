"""The population quadrature's noise at points of the flow, with and without its control variates, and the
quadrature before them: ``python -m tools.quadrature_noise``.

The population quadrature (``onenn.theory.reduced.population``, docs/method.md §7.3) integrates ``t_(1)``, the
gap to ``t_(2)`` and ``t_(3)`` by Gauss-Legendre rules and draws the other ``N - 3`` inner products once per node
from fixed uniforms: its only noise. This tool measures that noise where the audit's resolution page needs it
(points of the sigma = 3 flow), as the relative standard deviation of the loss and of both gradient components
over ``--seeds`` seeds of the uniforms, for three estimators on the same number of prompts:

- **package**: ``population_loss_grad``, at ``t1 x gap x third`` nodes, each prompt less its control variates;
- **no control variates**: the same nodes and draws, the prompts' plain weighted mean;
- **one draw of N - 2**: the quadrature before the third nearest was integrated (``t1 x gap`` nodes, all ``N - 2``
  others drawn), with ``third`` independent draws per node.

It also prints the package's weights' effective sample size ``1 / sum w^2`` (the share of prompts the mass sits
on). Developers read it to see what each part of the estimator removes; it changes nothing in the package.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from onenn.base.io import write_with
from onenn.maths.stream import numpy_generator
from onenn.theory.reduced import population as pop
from onenn.theory.reduced.loss import Prepared, _per_prompt_all
from onenn.theory.reduced.sampling import inner_product_cdf, inner_product_density

#: the audit's d and N (config.yaml), its sigma for the resolution page
D, N, SIGMA = 8, 32, 3.0
#: the one-draw estimator's uniforms: an instance of the audit's stream the package does not use
_ONE_DRAW_STREAM = 7


def package(xi1: float, xi2: float, q: pop.Quadrature) -> np.ndarray:
    """``(loss, dL/dxi1, dL/dxi2)`` by the package's quadrature."""
    return np.array(pop.population_loss_grad(xi1, xi2, q)[:3])


def no_control_variates(xi1: float, xi2: float, q: pop.Quadrature) -> np.ndarray:
    """The same nodes and draws, the prompts' plain weighted mean."""
    prepared = pop.nodes(xi1, xi2, q).prepared
    return np.array([float(v @ prepared.weight) for v in _per_prompt_all(xi1, xi2, prepared, with_grad=True)])


def one_draw(xi1: float, xi2: float, q: pop.Quadrature, seed: int) -> np.ndarray:
    """The quadrature before this version's: ``q``'s nodes of ``(t1, gap)``, all ``N - 2`` others drawn below
    ``t2``, ``q.y.size`` independent draws per node (as many prompts as the package's)."""
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
    draws = q.y.size
    weight = np.repeat(np.nan_to_num(weight, nan=0.0, posinf=0.0), draws)
    t1_all, t2, cdf_t2 = (np.repeat(a, draws) for a in (t1_all, t2, cdf_t2))
    uniforms = numpy_generator(seed, "audit", _ONE_DRAW_STREAM).random((q.N - 2, t2.size))
    rest = np.minimum(pop._inverse_cdf(uniforms * cdf_t2, q), t2)
    gaps = np.concatenate([(t2 - t1_all)[None, :], rest - t1_all], axis=0)
    prepared = Prepared(gaps, gaps.min(axis=0), 1.0 - t1_all, weight / weight.sum())
    return np.array([float(v @ prepared.weight) for v in _per_prompt_all(xi1, xi2, prepared, with_grad=True)])


def points(times: list[float], nodes: tuple[int, int, int]) -> list[tuple[float, float, float]]:
    """``(t, xi1, xi2)`` of the sigma = 3 population flow at ``times`` (the package's quadrature, seed 0)."""
    q = pop.quadrature(N, D, nodes[0], nodes[1], 0, third_nodes=nodes[2])
    flow = pop.population_flow(0.0, SIGMA, max(times), q, np.asarray(times, dtype=np.float64))
    return list(zip(times, flow.xi1.tolist(), flow.xi2.tolist(), strict=True))


def table(times: list[float], nodes: tuple[int, int, int], seeds: int) -> str:
    """The Markdown table: per point and estimator, the mean over seeds and the relative sd of one estimate."""
    t1_nodes, gap_nodes, third_nodes = nodes
    lines = [
        (
            f"Population quadrature noise at d = {D}, N = {N}, sigma = {SIGMA}: the relative sd of one estimate over "
            f"{seeds} seeds of the uniforms, {t1_nodes} x {gap_nodes} x {third_nodes} nodes "
            f"({t1_nodes * gap_nodes * third_nodes} prompts for each estimator). Written by "
            "`python -m tools.quadrature_noise`."
        ),
        "",
        "| t | ξ1 | ξ2 | estimator | loss (mean) | rel. sd loss | rel. sd ∂L/∂ξ1 | rel. sd ∂L/∂ξ2 | ESS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t, xi1, xi2 in points(times, nodes):
        quads = [pop.quadrature(N, D, t1_nodes, gap_nodes, s, third_nodes=third_nodes) for s in range(seeds)]
        weight = pop.nodes(xi1, xi2, quads[0]).prepared.weight
        ess = 1.0 / float(np.sum(weight**2))
        runs = {
            "package": np.array([package(xi1, xi2, q) for q in quads]),
            "no control variates": np.array([no_control_variates(xi1, xi2, q) for q in quads]),
            "one draw of N − 2": np.array([one_draw(xi1, xi2, quads[0], s) for s in range(seeds)]),
        }
        for name, values in runs.items():
            mean = values.mean(axis=0)
            rel = values.std(axis=0, ddof=1) / np.abs(mean)
            ess_cell = f"{ess:.0f} of {weight.size}" if name == "package" else ""
            lines.append(
                f"| {t:.0e} | {xi1:.4g} | {xi2:.4g} | {name} | {mean[0]:.6g} | {rel[0]:.1e} | {rel[1]:.1e} | "
                f"{rel[2]:.1e} | {ess_cell} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--times", type=float, nargs="+", default=[1e1, 1e3, 1e4, 1e5, 1e6])
    parser.add_argument("--nodes", type=int, nargs=3, default=[128, 64, 8], metavar=("T1", "GAP", "THIRD"))
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="32 x 8 x 2 nodes, 3 seeds, t = 10 and 1000 (the test)")
    parser.add_argument("--output", help="also write the table here")
    args = parser.parse_args(argv)
    if args.quick:
        args.times, args.nodes, args.seeds = [1e1, 1e3], [32, 8, 2], 3
    text = table(args.times, tuple(args.nodes), args.seeds)
    print(text, end="")
    if args.output:
        write_with(args.output, lambda path: path.write_text(text))
    return text


if __name__ == "__main__":
    main()
