"""The run inside Theorem 1's hypothesis on σ, and the table of docs/experiments.md that sets every experiment's σ
and N against the theorems' thresholds: its numbers recomputed from the formulas (docs/method.md §7.3)."""

from __future__ import annotations

import math

import pytest
import yaml

from onenn.plan import experiments as ex
from onenn.theory.audit import sigma_threshold_lemma12, sigma_threshold_theorem1
from tests.configs import ROOT


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def theorem1(N: int, d: int) -> float:
    """2·max{log(N d), −log(1 − (N√d)^(−1/d))}, written out again."""
    return 2.0 * max(math.log(N * d), -math.log(1.0 - (N * math.sqrt(d)) ** (-1.0 / d)))


def lemma12(N: int, d: int) -> float:
    a = (2.0 * N * math.sqrt(d)) ** (-2.0 / (d - 3))
    return 3.0 * math.log(2.0 * N**4 * d / a)


def test_the_theorem_regime_runs_sigma_just_above_theorem_1s_explicit_part_and_lemma_12s_bound(config):
    exp = config["experiments"]["theorem_regime"]
    settings = {**config["defaults"], **exp}
    N, d = settings["N"], settings["d"]
    threshold = 2.0 * math.log(N * d)  # the larger term at N = 16, d = 8
    assert threshold == pytest.approx(theorem1(N, d)) == pytest.approx(sigma_threshold_theorem1(N, d))
    sigmas = exp["sweep"]["sigma"]
    assert config["defaults"]["sigma"] in sigmas  # the paper's σ as the control
    above = sorted(s for s in sigmas if s > threshold)
    assert len(above) == 2 and above[0] - threshold < 0.01  # just above the explicit part
    bound = lemma12(N, d)  # 46.995 at N = 16, d = 8
    assert [s for s in sigmas if s >= bound] == [above[1]] and above[1] - bound < 0.01  # just above Lemma 12's
    assert exp["kind"] == "train" and len(ex.variants(config, "theorem_regime")) == len(sigmas)


def threshold_table() -> list[dict[str, str]]:
    text = (ROOT / "docs/experiments.md").read_text()
    part = text.split("### Where each experiment stands against the theorems' thresholds")[1]
    lines = [line for line in part.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:]]


def numbers(cell: str) -> list[float]:
    return [float(x) for x in cell.replace(" ", "").split(",")]


def test_the_docs_table_of_thresholds_holds_the_computed_numbers(config):
    rows = threshold_table()
    assert {r["experiment"] for r in rows} >= {
        "convergence",
        "distribution_shift",
        "number_of_classes",
        "diagonal_init",
        "loss_function",
        "theorem_regime",
        "audit",
    }
    for row in rows:
        exp = config["experiments"][row["experiment"]]
        settings = {**config["defaults"], **exp}
        Ns = exp.get("sweep", {}).get("N", [settings["N"]])
        assert numbers(row["N"]) == Ns, row
        assert row["Theorem 1 (explicit part)"] == ", ".join(f"{theorem1(N, settings['d']):.2f}" for N in Ns)
        assert row["Lemma 12"] == ", ".join(f"{lemma12(N, settings['d']):.2f}" for N in Ns)
        assert [f"{sigma_threshold_lemma12(N, settings['d']):.2f}" for N in Ns] == row["Lemma 12"].split(", ")
        if exp["kind"] == "train":
            sigmas = exp.get("sweep", {}).get("sigma", [settings["sigma"]])
            assert numbers(row["σ"]) == sigmas, row
            below = all(s <= theorem1(N, settings["d"]) for s in sigmas for N in Ns)
            assert (row["inside Theorem 1's explicit part"] == "no") == below, row
