"""The paper's claims as data and the scorecard (docs/claims.md): the verdict rule on synthetic tables whose
verdicts follow from the rule, the checks of workflow/claims.yaml, and the stage in the quick run."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy.stats import chi2, norm

from onenn.analysis.scorecard import scorecard, to_markdown
from onenn.analysis.verdict import LEVEL, VERDICTS, chi2_limit, expected_by_chance, metric_bound, sampling_error
from onenn.base.claim import Claim, ClaimPoint, Quantity
from onenn.plan.claims_file import catalogue, check_claims, load_claims
from onenn.plan.validate import ConfigError
from tests.configs import ROOT
from tools import docs

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


def claim(
    check: str,
    points,
    column="dist_family_active",
    *,
    test_set=None,
    resolution=0.0,
    by=None,
    paper_test_size=0,
    source="paper",
    paper_test_sizes=(),
    post_hoc="",
    reason="",
    versus=None,
    **quantity,
):
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
        paper_test_size=paper_test_size,
        source=source,
        paper_test_sizes=paper_test_sizes,
        post_hoc=post_hoc,
        reason=reason,
        versus=versus,
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
    "ours, verdict, reading",
    [(0.98, "agrees", ""), (0.8, "agrees in direction", "above 0.33; differs at the level"), (0.4, "differs", "")]
    + [(0.2, "differs", "")],
)
def test_agrees_in_direction_needs_the_paper_side_of_the_baseline_by_two_spreads(ours, verdict, reading):
    """Paper 1.0 from a baseline of 0.33, our sd 0.05 (no other spread): 0.98 is 0.4 sd from 1; 0.8 is 4 sd from 1
    (χ² = 16 > 9: not explained) but 9.4 beyond the baseline on the paper's side; 0.4 only 1.4 beyond it; 0.2 on the
    other side."""
    table = train_table({"v": last_step(*seeds_with(ours, 0.05))}, "dist_family_active")
    row = one(scorecard([claim("equal", [ClaimPoint("v", value=1.0, baseline=0.33)])], {"exp": table}))
    assert (row["verdict"], row["reading"], row["why"]) == (verdict, reading, "" if ours > 0.9 else "not explained")


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


def test_the_row_shows_the_point_farthest_from_agreeing_by_the_rules_own_distance():
    """A bound on the weights (no z printed), below 7/15: a at 1.114 ± 0.00011 misses the rule's margin by
    1.114 + 2·0.00011 − 7/15 = 0.64755, b at 1.037 ± 0.000065 by 0.57046: a is shown (by z, 5885 against 8774, b
    would be). Below 1, c at 0.5 ± 0.3 fails (0.5 + 0.6 > 1) and d at 0.99 ± 0.001 agrees (0.992 < 1): c is shown,
    though d lies nearer the bound."""
    far = {"a": last_step(*seeds_with(1.114, 0.00011)), "b": last_step(*seeds_with(1.037, 0.000065))}
    bound = claim("below", [ClaimPoint(v, value=7 / 15) for v in far])
    assert one(scorecard([bound], {"exp": train_table(far, "dist_family_active")}))["ours_mean"] == pytest.approx(1.114)
    near = {"c": last_step(*seeds_with(0.5, 0.3)), "d": last_step(*seeds_with(0.99, 0.001))}
    row = one(
        scorecard(
            [claim("below", [ClaimPoint(v, value=1.0) for v in near])], {"exp": train_table(near, "dist_family_active")}
        )
    )
    assert (row["ours_mean"], row["verdict"]) == (pytest.approx(0.5), "differs")


@pytest.mark.parametrize("value, verdict", [(0.618, "agrees"), (0.44, "agrees"), (0.438, "differs"), (0.9, "differs")])
def test_a_share_of_seeds_agrees_when_the_value_is_inside_its_wilson_interval(value, verdict):
    """11 of 16 seeds at 0.9 or more: Wilson's interval at z = 2 is (13 ∓ 2·√(16·(11/16)·(5/16) + 1))/20 =
    0.43935 .. 0.86065; the score test's z at 0.618 is (0.6875 − 0.618)/√(0.618·0.382/16) = +0.572."""
    table = train_table({"v": last_step(*[0.95] * 11, *[0.6] * 5)}, "accuracy")
    c = claim("share", [ClaimPoint("v", value=value)], "accuracy", test_set="separated", at_least=0.9)
    row = one(scorecard([c], {"exp": table}))
    assert (row["ours_mean"], row["n"], row["verdict"]) == (11 / 16, 16, verdict)
    assert "11 of 16 seeds, Wilson interval 0.4393–0.8607" in row["detail"] and "share of seeds" in row["quantity"]
    if value == 0.618:
        assert row["z"] == pytest.approx(0.5722, abs=1e-4)


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
    assert {c.figure for c in claims if c.source == "paper"} == {1, 2, 3, 4, 5, 6}
    assert {c.experiment for c in claims if c.source == "ours"} == {"theorem_regime", "epsilon_2_seeds"}
    assert all(c.paper_test_size == 4096 for c in claims)
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
        ({"post_hoc": True}, "claims[0].post_hoc: `post_hoc: true` and `post_hoc_reason` go together"),
        ({"check": "share"}, "claims[0].quantity.at_least: check `share` and `at_least`"),
        (
            {"quantity": {"column": "accuracy", "test_set": "separated", "at_least": 0.9}},
            "claims[0].quantity.at_least: check `share` and `at_least`",
        ),
        ({"versus": "epsilon=0.7"}, "claims[0].versus: unknown variant 'epsilon=0.7'"),
        ({"versus": "epsilon=0"}, "claims[0].versus: 'epsilon=0' is also a point of the claim"),
        (
            {"quantity": {"column": "accuracy", "test_set": "separated", "over": "xi2"}},
            "claims[0].quantity.over: `over` divides one column of the weights by another",
        ),
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
    code = "import sys, onenn.analysis.scorecard, onenn.plan.claims_file; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


# --- the slope over the last decade, rescaled time, the error budget, the count chance gives -----------------

DECADE = (0, 10, 20, 50, 100, 200, 500, 1000)


def linear_in_log_step(intercept: float, slope: float) -> list[float]:
    """A seed whose value is ``intercept + slope·log10(step)`` (step 0 at the intercept)."""
    return [intercept + slope * math.log10(max(step, 1)) for step in DECADE]


@pytest.mark.parametrize(
    "slopes, check, verdict, reading",
    [
        ((0.0005, 0.0005), "flat", "agrees", ""),  # within the resolution 0.001 per decade
        ((0.02, 0.02), "flat", "differs", "still rising"),
        ((-0.02, -0.02), "flat", "differs", "still falling"),
        ((0.02, 0.0), "flat", "agrees", ""),  # mean 0.01, sd 0.0141: within 0.001 + 2 sd
        ((0.02, 0.02), "rising", "agrees", ""),
        ((0.02, 0.0), "rising", "differs", "not rising"),  # mean 0.01 is not above 2 sd
        ((-0.02, -0.02), "falling", "agrees", ""),
        ((0.0, -0.02), "falling", "differs", "not falling"),
    ],
)
def test_the_slope_per_decade_of_steps_over_the_last_decade(slopes, check, verdict, reading):
    """Values exactly linear in log10(step): the least-squares slope over steps 100 .. 1000 is the slope."""
    table = train_table({"v": [linear_in_log_step(0.5, b) for b in slopes]}, "accuracy", steps=DECADE)
    c = claim(check, ["v"], "accuracy", test_set="uniform", resolution=0.001 if check == "flat" else 0.0)
    row = one(scorecard([c], {"exp": table}))
    assert row["ours_mean"] == pytest.approx(sum(slopes) / 2, abs=1e-12)
    assert row["ours_sd"] == pytest.approx(abs(slopes[0] - slopes[1]) / math.sqrt(2), abs=1e-12)
    assert (row["verdict"], row["reading"]) == (verdict, reading)
    assert "per decade" in row["quantity"]
    assert math.isnan(row["z"])  # a slope's sign is read, not a z


def test_a_series_that_does_not_move_has_a_slope_of_exactly_0_and_no_sign():
    """ξ2 held at 47 (σ = 47 in float32): the slope is exactly 0, so the sign rule reads neither + nor −."""
    table = train_table({"a": [[47.0] * len(DECADE)] * 2}, "xi2", steps=DECADE)
    card = scorecard([claim("rising", ["a"], "xi2"), claim("flat", ["a"], "xi2")], {"exp": table})
    assert card["ours_mean"].tolist() == [0.0, 0.0] and card["ours_sd"].tolist() == [0.0, 0.0]
    assert card["verdict"].tolist() == ["differs", "agrees"] and card["reading"].tolist() == ["not rising", ""]


def test_versus_subtracts_the_same_seeds_slope_of_the_other_variant():
    """Slopes 0.10, 0.20 against 0.09, 0.19 at the same seeds: paired differences 0.01, 0.01 (sd 0), rising. The
    unpaired difference of means would be 0.01 with an sd of about 0.1: pairing by seed number is the test."""
    table = train_table(
        {
            "a": [linear_in_log_step(0.5, 0.10), linear_in_log_step(0.5, 0.20)],
            "b": [linear_in_log_step(0.5, 0.09), linear_in_log_step(0.5, 0.19)],
        },
        "xi1",
        steps=DECADE,
    )
    row = one(scorecard([claim("rising", ["a"], "xi1", versus="b")], {"exp": table}))
    assert row["ours_mean"] == pytest.approx(0.01, abs=1e-12) and row["ours_sd"] == pytest.approx(0.0, abs=1e-12)
    assert row["verdict"] == "agrees" and row["n"] == 2
    assert "minus the same seed's of b" in row["quantity"] and "a − b: +0.01" in row["detail"]
    falling = one(scorecard([claim("rising", ["b"], "xi1", versus="a")], {"exp": table}))
    assert (falling["verdict"], falling["reading"]) == ("differs", "not rising")


def test_over_divides_one_column_by_another_row_by_row():
    """ξ1 at the last step 2 and 3 with ξ2 = 4: ratios 0.5 and 0.75, mean 0.625, sd 0.25/√2."""
    table = train_table({"a": last_step(2.0, 3.0)}, "xi1").assign(xi2=4.0)
    row = one(scorecard([claim("below", [ClaimPoint("a", value=7 / 15)], "xi1", over="xi2")], {"exp": table}))
    assert row["ours_mean"] == pytest.approx(0.625) and row["ours_sd"] == pytest.approx(0.25 / math.sqrt(2))
    assert row["verdict"] == "differs" and "xi1/xi2" in row["quantity"]
    assert math.isnan(row["z"])  # a bound on a quantity of the weights: the seeds' sd alone, no z shown
    assert "z =" not in row["detail"]  # nor on its points' lines


def test_the_rescaled_time_reads_every_K_at_the_same_time_times_the_prefactor():
    """On the family L_K(t) = p_K·L_bin(p_K·t), p_K = (K−1)/K. With L_bin(τ) = 1 − 0.1·ln τ, divided by p_K the
    curves are 1 − 0.1·ln(p_K) − 0.1·ln t: at equal steps they differ by 0.1·ln(p_3/p_2); at the common rescaled
    time τ = min_K p_K·1000 = 500 both are L_bin(500) (linear in log step, so the interpolation is exact)."""
    steps = (0, 100, 300, 600, 1000)

    def curve(K: int) -> list[float]:
        p = (K - 1) / K
        return [p * (1.0 - 0.1 * math.log(p * max(s, 1))) for s in steps]

    tables = []
    for K in (2, 3):
        t = train_table({f"K={K}": [curve(K), curve(K)]}, "test_loss", steps=steps, K=K)
        tables.append(t)
    table = pd.concat(tables, ignore_index=True)
    rescaled = claim(
        "constant", ["K=2", "K=3"], "test_loss", test_set="uniform", divide_by="prefactor", time="rescaled"
    )
    equal_steps = claim("constant", ["K=2", "K=3"], "test_loss", test_set="uniform", divide_by="prefactor")
    card = scorecard([rescaled, equal_steps], {"exp": table})
    expected = 1.0 - 0.1 * math.log(500.0)
    for part in card.loc[0, "detail"].split("; "):
        assert float(part.split(": ")[1].split(" ± ")[0]) == pytest.approx(expected, rel=1e-3)
    assert card.loc[0, "statistic"] == pytest.approx(0.0, abs=1e-12) and card.loc[0, "verdict"] == "agrees"
    at_steps = sorted(float(p.split(": ")[1].split(" ± ")[0]) for p in card.loc[1, "detail"].split("; "))
    assert at_steps[1] - at_steps[0] == pytest.approx(0.1 * math.log((2 / 3) / (1 / 2)), abs=2e-4)  # 4 digits shown


def test_the_largest_value_of_each_metric_on_one_prompt_is_attained_at_a_vertex():
    """ℓ ranges over the convex hull of 0 and the codes u_k: sampled points stay below the bound, and the vertex
    ℓ = u_c' (c' ≠ c) reaches it; the losses from their definitions (independent of onenn.maths.losses)."""
    rng = np.random.default_rng(0)
    for K in (2, 3, 5):
        codes = np.eye(K) - 1.0 / K
        vertices = np.vstack([np.zeros(K), codes])
        weights = rng.dirichlet(np.full(K + 1, 0.3), size=20000)
        ells = np.vstack([weights @ vertices, vertices])
        target = codes[0]
        square = 0.5 * ((ells - target) ** 2).sum(axis=1)
        cross_entropy = -ells[:, 0] + np.log(np.exp(ells).sum(axis=1))
        penalty = (ells[:, 1:] ** 2).sum(axis=1) / (K - 1)
        values = {
            ("logit_error", "square"): 2.0 * square,
            ("test_loss", "square"): square,
            ("test_loss", "cross_entropy"): cross_entropy,
            ("test_loss", "squentropy"): cross_entropy + penalty,
            ("test_loss", "mixture"): 0.75 * square + 0.25 * cross_entropy,
        }
        for (column, loss), v in values.items():
            bound = metric_bound(column, loss, 0.25, K)
            assert v.max() == pytest.approx(bound, rel=1e-12), (K, column, loss)
    assert metric_bound("accuracy") == 1.0 and metric_bound("xi1") is None


def test_the_error_budget_counts_both_test_sets_sampling_errors():
    """Ours 0.9 on 400 prompts (binomial √(0.9·0.1/400) = 0.015), the paper's 0.925 at an assumed 400 prompts
    (√(0.925·0.075/400)); a logit error of 0.5 in [0, 2] on 400 prompts: at most √(0.5·1.5/400)."""
    table = train_table({"v": last_step(0.9, 0.9)}, "accuracy", size=400)
    c = claim("equal", [ClaimPoint("v", value=0.925)], "accuracy", test_set="separated", paper_test_size=400)
    row = one(scorecard([c], {"exp": table}))
    paper_se = math.sqrt(0.925 * 0.075 / 400)
    assert row["test_se"] == pytest.approx(0.015) and row["paper_se"] == pytest.approx(paper_se)
    assert row["z"] == pytest.approx(-0.025 / math.hypot(0.015, paper_se))
    logit = train_table({"v": last_step(0.5, 0.5)}, "logit_error", size=400)
    row = one(
        scorecard([claim("equal", [ClaimPoint("v", value=0.5)], "logit_error", test_set="uniform")], {"exp": logit})
    )
    assert row["test_se"] == pytest.approx(math.sqrt(0.5 * 1.5 / 400)) and row["paper_se"] == 0.0
    assert sampling_error(0.3, None, 100) == 0.0


def test_the_test_set_error_is_the_tables_standard_error_averaged_over_the_seeds():
    """The table's ``logit_error_se`` (steps 0, 10, 100: 0.05, 0.04, 0.01, plus 0.02 for seed 1), read at the
    claim's step and averaged over the two seeds (not divided by √2: the seeds share the test set); divided by the
    prefactor (K = 3) like the value. A table without a value in every row falls back to the Bhatia–Davis bound
    √(0.5·1.5/400)."""
    table = train_table({"v": last_step(0.5, 0.5)}, "logit_error", size=400, K=3)
    table["logit_error_se"] = table["step"].map({0: 0.05, 10: 0.04, 100: 0.01}) + 0.02 * table["seed"]
    cases = {
        "last": (claim("equal", [ClaimPoint("v", value=0.5)], "logit_error", test_set="uniform"), 0.02),
        "first": (claim("equal", [ClaimPoint("v", value=1.0)], "logit_error", test_set="uniform", step="first"), 0.06),
        "prefactor": (
            claim("equal", [ClaimPoint("v", value=0.75)], "logit_error", test_set="uniform", divide_by="prefactor"),
            0.02 * 3 / 2,
        ),
    }
    card = scorecard([c for c, _ in cases.values()], {"exp": table})
    for (name, (_, want)), got in zip(cases.items(), card["test_se"]):
        assert got == pytest.approx(want, rel=1e-12), name
    table.loc[table.index[table["test_set"] == "uniform"][0], "logit_error_se"] = math.nan
    row = one(scorecard([cases["last"][0]], {"exp": table}))
    assert row["test_se"] == pytest.approx(math.sqrt(0.5 * 1.5 / 400))


def test_points_on_one_test_set_share_its_sampling_error():
    """Two variants, both 0.9 on the same 400 prompts against the paper's 0.95 (no other spread): independent
    they would give Σz² = 2·(0.05/0.015)²; one test set, fully correlated, counts the shared draw once."""
    table = train_table({"a": last_step(0.9, 0.9), "b": last_step(0.9, 0.9)}, "accuracy", size=400)
    c = claim("equal", [ClaimPoint("a", value=0.95), ClaimPoint("b", value=0.95)], "accuracy", test_set="uniform")
    row = one(scorecard([c], {"exp": table}))
    assert row["statistic"] == pytest.approx((0.05 / 0.015) ** 2, rel=1e-9)


def test_the_chance_line_counts_every_failed_level_test_whatever_its_verdict_reads():
    """14 level tests (sd 0.05 against 1.0), 3 fail: 1.4 and 0.4 differ (z = 8, −12), 0.8 from a baseline 0.33 agrees
    in direction (z = −4, 9.4 beyond it). Expected 14 × 4.550026% = 0.637; P(3 or more) = 1 − Σ_{k<3} C(14, k) qᵏ
    (1 − q)^(14−k) = 0.0235129 (by hand)."""
    means = {f"v{i}": 1.0 for i in range(11)} | {"high": 1.4, "low": 0.4, "direction": 0.8}
    table = train_table({v: last_step(*seeds_with(x, 0.05)) for v, x in means.items()}, "dist_family_active")
    points = {v: ClaimPoint(v, value=1.0, baseline=0.33 if v == "direction" else None) for v in means}
    card = scorecard([replace(claim("equal", [p]), id=v) for v, p in points.items()], {"exp": table})
    m, expected, failed, p = expected_by_chance(card)
    q = 0.04550026389635842  # 1 − erf(√2)
    assert (m, failed) == (14, 3) and expected == pytest.approx(14 * q)
    assert p == pytest.approx(1 - sum(math.comb(14, k) * q**k * (1 - q) ** (14 - k) for k in range(3)), rel=1e-9)
    assert p == pytest.approx(0.0235129, abs=1e-7)
    text = to_markdown(card, {"exp": table})
    assert "agrees 11, agrees in direction 1, differs 2, not run 0" in text
    assert "0.64 of them fail on average (m × 4.55%); 3 do; the probability of 3 or more by chance" in text
    assert "| agrees in direction: above 0.33; differs at the level (not explained) |" in text


def test_our_own_rows_are_listed_apart_from_the_papers():
    table = train_table({"a": last_step(1.0, 1.0)}, "dist_family_active")
    card = scorecard([claim("equal", [ClaimPoint("a", value=1.0)], source="ours")], {"exp": table})
    text = to_markdown(card, {"exp": table})
    assert card.loc[0, "source"] == "ours" and "## Our own rows" in text and "Our own rows: agrees 1" in text


def test_the_verdict_module_follows_the_rule_of_docs_claims_section_by_section():
    """onenn/analysis/verdict.py has a section per section of docs/claims.md's rule, with its title, in its order."""
    code = (ROOT / "onenn/analysis/verdict.py").read_text(encoding="utf-8")
    titles = [line.removeprefix("# --- ").rstrip("- ") for line in code.splitlines() if line.startswith("# --- ")]
    page = (ROOT / "docs/claims.md").read_text(encoding="utf-8").lower()
    rule = page[page.index("## the verdict rule") : page.index("## where the paper is ambiguous")]
    places = [rule.find(title.split(":")[0].lower()) for title in titles]
    assert len(titles) == 5 and -1 not in places, dict(zip(titles, places))
    assert places == sorted(places), dict(zip(titles, places))


def test_the_chance_count_takes_only_level_tests_with_a_spread_and_no_post_hoc_row():
    """Five rows: an equal with a spread (counted; z = 3, differs), an equal at exactly 1 with no spread (not:
    chance cannot move it), a post-hoc equal with a spread (not; it differs too), a one-sided bound and a slope
    (not: no level; it falls, so it differs). m = 1, and the one counted row differs."""
    flat = [[1.0] * len(DECADE)] * 2
    spread = [[v] * len(DECADE) for v in seeds_with(1.0, 0.1)]
    down = [linear_in_log_step(0.5, -0.02)] * 2
    table = train_table({"spread": spread, "exact": flat, "down": down}, "dist_family_active", steps=DECADE)
    claims = [
        claim("equal", [ClaimPoint("spread", value=1.3)]),
        claim("equal", [ClaimPoint("exact", value=1.0)]),
        claim("equal", [ClaimPoint("spread", value=1.3)], post_hoc="chosen after a run"),
        claim("below", [ClaimPoint("spread", value=2.0)]),
        claim("rising", ["down"]),
    ]
    ids = ["counted", "no_spread", "post_hoc", "bound", "slope"]
    card = scorecard([replace(c, id=i) for c, i in zip(claims, ids)], {"exp": table})
    assert card["chance"].tolist() == [True, False, False, False, False]
    assert card["verdict"].tolist() == ["differs", "agrees", "differs", "agrees", "differs"]
    m, expected, differs, _ = expected_by_chance(card)
    assert (m, differs) == (1, 1)
    assert expected == pytest.approx(1.0 - LEVEL)
    text = to_markdown(card, {"exp": table})
    assert "not post-hoc: counted." in text and "Post-hoc rows, not counted: post_hoc." in text
    assert docs.COUNTED in text  # the words by which the README's tool knows the count
    assert "| post_hoc (post-hoc) |" in text and "Post-hoc: chosen after a run" in text


@pytest.mark.parametrize(
    "ours, reason, why",
    [
        (1.25, "a-reason", "explained"),  # z = 2.5 but a reason is given
        (1.25, "", "marginal"),  # χ² = 6.25 ≤ 9, the limit at three standard deviations for one point
        (1.4, "", "not explained"),  # χ² = 16 > 9
        (1.1, "", ""),  # agrees
    ],
)
def test_a_differs_says_whether_it_is_explained_or_marginal(ours, reason, why):
    """Our sd 0.1 (two seeds), no other spread: z = (ours − 1)/0.1."""
    table = train_table({"a": last_step(*seeds_with(ours, 0.1))}, "dist_family_active")
    card = scorecard([claim("equal", [ClaimPoint("a", value=1.0)], reason=reason)], {"exp": table})
    assert one(card)["why"] == why
    text = to_markdown(card, {"exp": table})
    assert ("(explained: [reason](../../docs/claims.md#a-reason))" in text) == (why == "explained")
    assert ("(marginal: χ² within its 99.73% limit)" in text) == (why == "marginal")


def test_a_row_whose_verdict_moves_with_the_assumed_test_size_says_so():
    """Ours 0.9 with no spread of our own (an enormous test set, sd 0) against the paper's 0.91; the paper's
    binomial error √(0.91·0.09/n): z = 0.01/0.00640 = 1.56 at 2000 prompts, 0.01/0.00447 = 2.24 at 4096,
    0.01/0.00286 = 3.49 at 10000."""
    table = train_table({"a": last_step(0.9, 0.9)}, "accuracy", size=10**12)
    c = claim(
        "equal",
        [ClaimPoint("a", value=0.91)],
        "accuracy",
        test_set="uniform",
        paper_test_size=4096,
        paper_test_sizes=(2000, 10000),
    )
    row = one(scorecard([c], {"exp": table}))
    assert row["z"] == pytest.approx(-0.01 / math.sqrt(0.91 * 0.09 / 4096), rel=1e-6)
    assert row["verdict"] == "differs"
    assert row["test_sizes"] == "agrees at 2000, differs at 4096, differs at 10000"
    text = to_markdown(card := scorecard([c], {"exp": table}), {"exp": table})
    assert "assumes a test size of 4096 prompts" in text and "2000 or 10000 prompts" in text
    assert "by the paper's assumed test size: agrees at 2000" in text and len(card) == 1
    steady = replace(c, points=(ClaimPoint("a", value=0.95),))  # z ≥ 11 at every size
    assert one(scorecard([steady], {"exp": table}))["test_sizes"] == ""


def test_the_repositorys_reasons_are_headings_of_docs_claims(known):
    """Every `reason` of workflow/claims.yaml is the anchor of a heading of docs/claims.md (GitHub's rule: lower
    case, spaces to hyphens, punctuation dropped)."""
    page = (ROOT / "docs/claims.md").read_text(encoding="utf-8")
    anchors = {
        "".join(ch for ch in line.lstrip("#").strip().lower().replace(" ", "-") if ch.isalnum() or ch in "-_")
        for line in page.splitlines()
        if line.startswith("#")
    }
    claims = load_claims(CLAIMS, known, SCHEMA)
    reasons = {c.reason for c in claims if c.reason}
    assert reasons and reasons <= anchors, reasons - anchors
    post_hoc = ["theorem_ratio_bound", "theorem_distance_to_family_falling", "epsilon_2_share_that_learns"]
    assert [c.id for c in claims if c.post_hoc] == post_hoc
    assert {c.paper_test_sizes for c in claims} == {(2000, 10000)}
