"""The paper's claims as data and the scorecard (docs/claims.md): the verdict rule on synthetic tables whose
verdicts follow from the rule, the checks of workflow/claims.yaml, and the stage in the quick run."""

from __future__ import annotations

import math
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from scipy.stats import chi2, norm

from onenn.analysis.claims import LEVEL, VERDICTS, chi2_limit, scorecard, to_markdown
from onenn.plan.claims import Claim, ClaimPoint, Quantity, catalogue, check_claims, load_claims
from onenn.plan.validate import ConfigError
from tests.configs import ROOT

CLAIMS = ROOT / "workflow/claims.yaml"
SCHEMA = ROOT / "workflow/schemas/claims.schema.yaml"


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


@pytest.fixture(scope="module")
def known(config) -> dict:
    return catalogue(config)


@pytest.fixture(scope="module")
def schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text())


# --- synthetic tables ------------------------------------------------------------------------------------------


def train_table(per_variant: dict[str, list[list[float]]], column: str, *, steps=(0, 10, 100), K=3, size=4096):
    """A training table: ``per_variant[v][seed]`` is the seed's ``column`` at each of ``steps``, on both test
    sets; the other metrics are 0."""
    rows = []
    for variant, seeds in per_variant.items():
        for seed, values in enumerate(seeds):
            for step, value in zip(steps, values):
                for test_set in ("separated", "uniform"):
                    row = {"experiment": "exp", "variant": variant, "seed": seed, "step": step, "test_set": test_set}
                    row |= {c: 0.0 for c in ("accuracy", "logit_error", "test_loss", "dist_family_active")}
                    rows.append(row | {column: value, "K": K, "test_size": size})
    return pd.DataFrame(rows)


def claim(check: str, points, column="dist_family_active", *, test_set=None, resolution=0.0, by=None, **quantity):
    return Claim(
        id="c",
        figure=1,
        paper="the paper says",
        experiment="exp",
        kind="train",
        quantity=Quantity(column=column, test_set=test_set, **quantity),
        check=check,
        points=tuple(p if isinstance(p, ClaimPoint) else ClaimPoint(variant=p) for p in points),
        resolution=resolution,
        by=by,
    )


def seeds_with(mean: float, sd: float) -> list[float]:
    """Two seeds whose mean and sample sd are ``mean`` and ``sd``."""
    return [mean - sd / math.sqrt(2), mean + sd / math.sqrt(2)]


def last_step(*values: float) -> list[list[float]]:
    """Seeds whose last-step values are ``values`` (steps 0 and 10 at 1)."""
    return [[1.0, 1.0, v] for v in values]


def one(card: pd.DataFrame) -> pd.Series:
    assert len(card) == 1
    return card.iloc[0]


# --- the verdict rule ------------------------------------------------------------------------------------------


def test_the_level_is_two_standard_deviations_and_one_point_gets_the_limit_4():
    assert LEVEL == pytest.approx(norm.cdf(2) - norm.cdf(-2), abs=1e-12)
    assert chi2_limit(1) == pytest.approx(4.0, rel=1e-10)
    for dof in (2, 3, 16):
        assert chi2_limit(dof) == pytest.approx(chi2.ppf(LEVEL, dof), rel=1e-9)


@pytest.mark.parametrize("z, verdict", [(1.9, "agrees"), (-1.9, "agrees"), (2.1, "differs"), (-2.1, "differs")])
def test_equal_agrees_within_two_combined_spreads(z, verdict):
    sd, spread, resolution = 0.3, 0.4, 0.2
    s = math.sqrt(sd**2 + spread**2 + (resolution / 2) ** 2)  # ours, the paper's ±, half its printed digit
    ours = 5.0 + z * s
    table = train_table({"v": last_step(*seeds_with(ours, sd))}, "dist_family_active")
    row = one(
        scorecard([claim("equal", [ClaimPoint("v", value=5.0, spread=spread)], resolution=resolution)], {"exp": table})
    )
    assert row["verdict"] == verdict
    assert (
        row["z"] == pytest.approx(z) and row["ours_mean"] == pytest.approx(ours) and row["ours_sd"] == pytest.approx(sd)
    )
    assert row["statistic"] == pytest.approx(z**2) and row["limit"] == pytest.approx(4.0) and row["n"] == 2


@pytest.mark.parametrize(
    "ours, verdict",
    [(0.98, "agrees"), (0.8, "agrees in direction"), (0.4, "differs"), (0.2, "differs")],
)
def test_agrees_in_direction_needs_the_paper_side_of_the_baseline_by_two_spreads(ours, verdict):
    """Paper 1.0 from a baseline of 0.33, our sd 0.05 (no other spread): 0.98 is 0.4 sd from 1; 0.8 is 4 sd from 1
    but 9.4 beyond the baseline on the paper's side; 0.4 only 1.4 beyond it; 0.2 on the other side."""
    table = train_table({"v": last_step(*seeds_with(ours, 0.05))}, "dist_family_active")
    c = claim("equal", [ClaimPoint("v", value=1.0, baseline=0.33)])
    assert one(scorecard([c], {"exp": table}))["verdict"] == verdict


def test_several_points_are_judged_together_by_chi_square():
    """Three points at |z| = 1.5 give Σz² = 6.75 ≤ 8.02; at |z| = 1.9 each is within 2 but Σz² = 10.8 is not."""
    for z, verdict in ((1.5, "agrees"), (1.9, "differs")):
        table = train_table({v: last_step(*seeds_with(2.0 + z * 0.1, 0.1)) for v in "abc"}, "dist_family_active")
        row = one(scorecard([claim("equal", [ClaimPoint(v, value=2.0) for v in "abc"])], {"exp": table}))
        assert row["statistic"] == pytest.approx(3 * z**2) and row["dof"] == 3
        assert row["limit"] == pytest.approx(chi2.ppf(LEVEL, 3)) and row["verdict"] == verdict


def test_an_accuracy_counts_the_test_sets_binomial_error():
    """Every seed scores 0.9 on the same 400 prompts: sd 0, but the estimate has error √(0.9·0.1/400) = 0.015."""
    table = train_table({"v": last_step(0.9, 0.9)}, "accuracy", size=400)
    accuracy = claim("equal", [ClaimPoint("v", value=0.925)], "accuracy", test_set="separated")
    row = one(scorecard([accuracy], {"exp": table}))
    assert row["z"] == pytest.approx(-0.025 / 0.015) and row["verdict"] == "agrees"
    distance = train_table({"v": last_step(0.9, 0.9)}, "dist_family_active")  # no test set: no such error
    row = one(scorecard([claim("equal", [ClaimPoint("v", value=0.925)])], {"exp": distance}))
    assert row["z"] == -math.inf and row["verdict"] == "differs"


def test_the_quantity_at_the_first_step_as_ratio_change_and_divided_by_the_prefactor():
    table = train_table({"v": [[2.0, 1.0, 0.5], [4.0, 1.0, 1.0]]}, "dist_family_active", K=3)
    means = {
        "first": claim("constant", ["v"], step="first"),
        "ratio": claim("constant", ["v"], of="ratio"),
        "change": claim("constant", ["v"], of="change"),
        "prefactor": claim("constant", ["v"], divide_by="prefactor"),
    }
    card = scorecard(list(means.values()), {"exp": table})
    assert card["ours_mean"].tolist() == pytest.approx([3.0, 0.25, -2.25, 0.75 * 1.5])


def test_constant_compares_each_group_with_its_weighted_mean():
    """K groups of two points: (1, 1.1) with sd 0.05 each is z = ±1 from the mean, Σz² = 2 per group."""
    table = train_table(
        {
            "a": last_step(*seeds_with(1.0, 0.05)),
            "b": last_step(*seeds_with(1.1, 0.05)),
            "c": last_step(*seeds_with(3.0, 0.05)),
            "d": last_step(*seeds_with(3.1, 0.05)),
        },
        "dist_family_active",
    )
    table["K"] = table["variant"].map({"a": 2, "b": 2, "c": 5, "d": 5})
    row = one(scorecard([claim("constant", list("abcd"), by="K")], {"exp": table}))
    assert row["dof"] == 2 and row["statistic"] == pytest.approx(4.0) and row["verdict"] == "agrees"
    row = one(scorecard([claim("constant", list("abcd"))], {"exp": table}))  # one group: 1 and 3 are not equal
    assert row["dof"] == 3 and row["verdict"] == "differs"


@pytest.mark.parametrize("check", ["increasing", "decreasing"])
def test_an_order_agrees_only_when_every_mean_follows_it(check):
    ordered = train_table({"a": last_step(1.0), "b": last_step(2.0), "c": last_step(3.0)}, "dist_family_active")
    swapped = train_table({"a": last_step(1.0), "b": last_step(3.0), "c": last_step(2.0)}, "dist_family_active")
    points = list("abc") if check == "increasing" else list("cba")
    assert one(scorecard([claim(check, points)], {"exp": ordered}))["verdict"] == "agrees"
    assert one(scorecard([claim(check, points)], {"exp": swapped}))["verdict"] == "differs"


@pytest.mark.parametrize("ours, verdict", [(0.8, "agrees"), (0.91, "differs"), (1.0, "differs")])
def test_below_needs_more_than_two_spreads_of_room(ours, verdict):
    """sd 0.05: 0.8 is 4 spreads below 1, 0.91 only 1.8."""
    table = train_table({"v": last_step(*seeds_with(ours, 0.05))}, "dist_family_active")
    assert one(scorecard([claim("below", [ClaimPoint("v", value=1.0)])], {"exp": table}))["verdict"] == verdict


def test_decays_needs_a_fall_at_every_step_of_the_last_decade():
    steps = (0, 5, 10, 20, 50, 100)  # the last decade: steps 10 .. 100
    falling = train_table({"v": [[1.0, 1.2, 0.5, 0.3, 0.2, 0.1]] * 2}, "logit_error", steps=steps)
    flat_end = train_table({"v": [[1.0, 1.2, 0.5, 0.3, 0.2, 0.2]] * 2}, "logit_error", steps=steps)
    decays = claim("decays", ["v"], "logit_error", test_set="separated")
    assert one(scorecard([decays], {"exp": falling}))["verdict"] == "agrees"  # the rise before the decade is allowed
    assert one(scorecard([decays], {"exp": flat_end}))["verdict"] == "differs"


def test_a_claim_without_its_experiment_or_variants_is_not_run():
    table = train_table({"a": last_step(1.0, 1.0)}, "dist_family_active")
    c = claim("equal", [ClaimPoint("a", value=1.0), ClaimPoint("b", value=1.0)])
    missing = one(scorecard([c], {}))
    assert missing["verdict"] == "not run" and missing["points_run"] == 0 and "a, b" in missing["detail"]
    partly = one(scorecard([c], {"exp": table}))
    assert partly["verdict"] == "agrees" and (partly["points"], partly["points_run"]) == (2, 1)
    assert "2 points run" in to_markdown(scorecard([c], {"exp": table}), {"exp": table})


def test_the_scaling_ratio_is_compared_with_its_standard_error_and_reference():
    table = pd.DataFrame(
        {
            "experiment": "scal",
            "panel": "by_K",
            "xi1": 2.0,
            "xi2": 5.0,
            "K": [2, 3],
            "prompts": 1000,
            "ratio": [0.52, 0.6667],
            "ratio_se": [0.01, 0.01],
            "reference": [0.5, 2 / 3],
        }
    )
    c = Claim(
        "s",
        2,
        "says",
        "scal",
        "scaling",
        Quantity("ratio"),
        "equal",
        (ClaimPoint(where={"panel": "by_K"}, value="reference"),),
    )
    row = one(scorecard([c], {"scal": table}))
    assert row["z"] == pytest.approx(2.0) and row["paper_value"] == pytest.approx(0.5) and row["n"] == 1000
    assert row["statistic"] == pytest.approx(4.0 + (0.6667 - 2 / 3) ** 2 / 1e-4) and row["verdict"] == "agrees"


def test_the_scorecard_has_one_typed_row_per_claim_and_a_markdown_page():
    table = train_table({"a": last_step(1.0, 1.0), "b": last_step(2.0, 2.0)}, "dist_family_active")
    claims = [claim("equal", [ClaimPoint("a", value=1.0)]), claim("increasing", ["a", "b"])]
    card = scorecard(claims, {"exp": table})
    assert len(card) == 2 and set(card["verdict"]) <= set(VERDICTS)
    assert card["ours_mean"].dtype == "float64" and card["figure"].dtype == "int64"
    text = to_markdown(card, {"exp": table})
    assert "## Scorecard" in text and "## Every point" in text and "docs/claims.md" in text


# --- workflow/claims.yaml and its checks -----------------------------------------------------------------------


def test_the_repositorys_claims_name_real_experiments_columns_and_variants(known):
    claims = load_claims(CLAIMS, known, SCHEMA)
    assert {c.figure for c in claims} == {1, 2, 3, 4, 5, 6}
    assert len({c.id for c in claims}) == len(claims)
    for c in claims:
        assert known[c.experiment]["kind"] in ("train", "scaling")
        for p in c.points:
            assert p.variant is None or p.variant in known[c.experiment]["variants"]


def test_the_issues_numbers_are_the_paper_values(known):
    """A few values of the paper, as the claims file must hold them."""
    claims = {c.id: c for c in load_claims(CLAIMS, known, SCHEMA)}
    assert (claims["fig5_accuracy_epsilon_2"].points[0].value, claims["fig5_accuracy_epsilon_2"].points[0].spread) == (
        0.78,
        0.28,
    )
    assert [p.value for p in claims["fig5_distance_start"].points] == [1.056, 10.558, 31.673]
    assert [p.value for p in claims["fig5_distance_end"].points] == [0.343, 3.449, 25.145]
    assert claims["fig6_uniform_accuracy_square"].points[0].value == 0.908
    assert claims["fig2_ratio_by_K"].points[0].value == "reference"


def problems_of(data: dict, known, schema) -> list[str]:
    return [str(p) for p in check_claims(data, known, schema)]


def base_claim(**changes) -> dict:
    entry = {
        "id": "x",
        "figure": 5,
        "paper": "words",
        "experiment": "diagonal_init",
        "quantity": {"column": "accuracy", "test_set": "separated"},
        "check": "equal",
        "value": 1.0,
        "points": ["epsilon=0"],
    }
    return {"claims": [entry | changes]}


def test_a_valid_claim_has_no_problem(known, schema):
    assert problems_of(base_claim(), known, schema) == []


@pytest.mark.parametrize(
    "changes, expected",
    [
        (
            {"experiment": "diagonal_int"},
            "claims[0].experiment: unknown experiment 'diagonal_int'; did you mean 'diagonal_init'?",
        ),
        ({"experiment": "audit"}, "claims[0].experiment: 'audit' has kind 'audit'"),
        (
            {"quantity": {"column": "acuracy", "test_set": "separated"}},
            "claims[0].quantity.column: unknown column 'acuracy'; did you mean 'accuracy'?",
        ),
        ({"quantity": {"column": "accuracy"}}, "claims[0].quantity.test_set: missing"),
        (
            {"quantity": {"column": "xi1", "test_set": "uniform"}},
            "claims[0].quantity.test_set: 'xi1' is a property of the weights",
        ),
        ({"points": ["epsilon=0.7"]}, "claims[0].points[0].variant: unknown variant 'epsilon=0.7'"),
        ({"value": "reference"}, "claims[0].value: `reference` is a column of kind scaling's table only"),
        ({"check": "increasing"}, "claims[0].value: check 'increasing' takes no value"),
        ({"vaule": 1.0}, "claims[0].vaule: unknown key 'vaule'; did you mean 'value'?"),
        ({"check": "equals"}, "claims[0].check: 'equals' is not one of"),
    ],
)
def test_a_bad_claim_is_refused_by_its_key_path(known, schema, changes, expected):
    found = problems_of(base_claim(**changes), known, schema)
    assert any(p.startswith(expected) for p in found), found


def test_missing_values_duplicate_ids_and_scaling_points_are_refused(known, schema):
    data = base_claim()
    del data["claims"][0]["value"]
    assert problems_of(data, known, schema) == ["claims[0].value: missing; check 'equal' compares with a value"]
    twice = {"claims": base_claim()["claims"] * 2}
    assert problems_of(twice, known, schema) == ["claims[1].id: 'x' is already the id of claims[0]"]
    scaling = base_claim(
        experiment="scaling_identity", quantity={"column": "ratio"}, points=[{"where": {"panel": "grdi"}}]
    )
    assert problems_of(scaling, known, schema)[0].startswith("claims[0].points[0].where.panel: unknown panel 'grdi'")


def test_load_claims_raises_one_error_naming_the_file_and_every_problem(tmp_path, known):
    bad = base_claim(experiment="nope")
    bad["claims"].append(base_claim(points=["epsilon=9"])["claims"][0] | {"id": "y"})
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError) as error:
        load_claims(path, known, SCHEMA)
    message = str(error.value)
    assert "invalid claims file (" in message and "claims.yaml), 2 problems" in message
    assert "claims[0].experiment: unknown experiment 'nope'" in message and "claims[1].points[0].variant" in message


def test_a_variant_the_repository_defines_but_a_run_trims_is_known(config):
    quick = yaml.safe_load((ROOT / "workflow/presets/quick.yaml").read_text())
    trimmed = {
        **config,
        "experiments": {
            **config["experiments"],
            "diagonal_init": {**config["experiments"]["diagonal_init"], **quick["experiments"]["diagonal_init"]},
        },
    }
    assert "epsilon=2" not in catalogue(trimmed)["diagonal_init"]["variants"]
    assert "epsilon=2" in catalogue(trimmed, config)["diagonal_init"]["variants"]


def test_the_scorecard_does_not_import_torch():
    code = "import sys, onenn.analysis.claims, onenn.plan.claims; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
