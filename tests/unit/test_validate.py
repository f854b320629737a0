"""Config validation before any job: every bad config is rejected with the exact key path of the problem.

The validator is called directly (it is what the Snakefile calls); tests/workflow/test_bad_configs.py runs some
of these configs (the catalogue: tests/bad_configs.py) through Snakemake and checks that nothing was written."""

import copy
from pathlib import Path

import numpy as np
import pytest

from onenn.base.settings import section
from onenn.maths.prompts import largest_delta, separated_prompts
from onenn.plan import experiments as ex
from onenn.plan import kinds
from onenn.plan.validate import ConfigError, check_config, load_schema, validate_config
from tests.bad_configs import BAD_CONFIGS, CONFIG, bad_config, conv, delete, experiment, setting
from tests.configs import QUICK, load_config

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "workflow/schemas/config.schema.yaml"
SCHEMA = load_schema(SCHEMA_PATH)


def violations(prop: dict) -> list:
    """Values that break a setting's schema entry: out of each bound, out of the enumeration, of the wrong type
    (an integer setting's wrong value stays within its bounds, so that only its type is wrong)."""
    out = []
    if "enum" in prop:
        out.append("not-a-choice")
    if "minimum" in prop:
        out.append(prop["minimum"] - 1)
    if "exclusiveMinimum" in prop:
        out.append(prop["exclusiveMinimum"])
    if "maximum" in prop:
        out.append(prop["maximum"] + 1)
    if "exclusiveMaximum" in prop:
        out.append(prop["exclusiveMaximum"])
    if prop.get("type") == "integer":
        out.append(prop.get("minimum", 0) + 0.5)
    if prop.get("type") == "number":
        out.append("1")
    return out


#: the settings `defaults` gives: those of a training run and of its evaluation
SETTINGS = {**section("train", SCHEMA), **section("evaluation", SCHEMA)}
SETTING_VIOLATIONS = [(key, value) for key, prop in SETTINGS.items() for value in violations(prop)]


@pytest.mark.parametrize("key,value", SETTING_VIOLATIONS, ids=[f"{k}={v!r}" for k, v in SETTING_VIOLATIONS])
def test_every_bound_of_every_setting_is_enforced_where_the_setting_is_given(key, value):
    """In `defaults` and in a sweep, a value against the schema is the only problem, at its key path, by value."""
    in_sweep = copy.deepcopy(CONFIG)
    conv(in_sweep)["sweep"] = {key: [value]}
    for config, path in (
        (bad_config(setting(key, value)), f"defaults.{key}"),
        (in_sweep, f"experiments.convergence.sweep.{key}[0]"),
    ):
        problems = check_config(config, SCHEMA)
        assert [p.location for p in problems] == [path], [str(p) for p in problems]
        assert repr(value) in problems[0].message


@pytest.mark.parametrize("name,edit,path,message", BAD_CONFIGS, ids=[b[0] for b in BAD_CONFIGS])
def test_bad_config_names_the_key_path(name, edit, path, message):
    problems = check_config(bad_config(edit), SCHEMA)
    assert [p.location for p in problems] == [path], [str(p) for p in problems]
    assert message in problems[0].message
    with pytest.raises(ConfigError) as err:
        validate_config(bad_config(edit), SCHEMA_PATH)
    assert f"\n  {path}: " in str(err.value)


def test_every_problem_is_reported_at_once():
    def edit(c):
        c["defaults"]["K"] = 1
        conv(c)["stepz"] = 1
        conv(c)["sweep"]["N"] = [16, 0]

    problems = check_config(bad_config(edit), SCHEMA)
    assert [p.location for p in problems] == [
        "defaults.K",
        "experiments.convergence.stepz",
        "experiments.convergence.sweep.N[1]",
    ]


def test_an_unknown_kind_reports_only_the_kind():
    problems = check_config(bad_config(experiment("kind", "trian")), SCHEMA)
    assert [p.location for p in problems] == ["experiments.convergence.kind"]


def test_the_shipped_configs_are_valid():
    assert check_config(CONFIG, SCHEMA) == []
    assert check_config(load_config(*QUICK), SCHEMA) == []


def test_valid_variants_pass():
    def edit(c):
        conv(c)["sweep"] = {"N": [16, 32], "K": [2, 3]}
        conv(c)["variants"] = [
            {"name": "noisy", "epsilon": 3.0, "noise_blocks": "label"},
            {"loss": "mixture", "c": 0.5},
        ]

    c = bad_config(edit)
    assert check_config(c, SCHEMA) == []
    assert len(ex.variants(c, "convergence")) == 6


def test_an_experiment_without_sweep_or_variants_has_one_default_variant():
    c = bad_config(delete("experiments", "convergence", "sweep"))
    assert check_config(c, SCHEMA) == []
    assert list(ex.variants(c, "convergence")) == ["default"]


def test_schema_documents_every_setting_and_matches_the_code():
    settings = SETTINGS
    for key, prop in settings.items():
        assert prop["default"] == CONFIG["defaults"][key], key  # the schema default is config.yaml's
    for kind in kinds.KINDS:  # every setting of every kind, once its $ref is followed
        for key in kinds.KINDS[kind].settings_keys:
            prop = section(kind, SCHEMA)[key]
            assert "description" in prop and "default" in prop, (kind, key)
            assert "type" in prop or "enum" in prop or "anyOf" in prop, (kind, key)
    assert set(SCHEMA["properties"]["defaults"]["required"]) == set(settings) == set(CONFIG["defaults"])
    # keys that are not run settings: those of every experiment, and the scaling kind's panels
    structure = set(SCHEMA["$defs"]["experiment"]["properties"]) | set(SCHEMA["$defs"]["scaling"]["required"])
    assert structure == set(ex.EXPERIMENT_KEYS)
    assert set(kinds.TRAIN_KEYS) | set(kinds.EVAL_KEYS) | {"seeds"} == set(settings)


def test_a_new_kind_is_a_schema_entry():
    """A kind with its own settings: sweeps and variants of its experiments accept exactly those."""
    schema = copy.deepcopy(SCHEMA)
    schema["$defs"]["experiment"]["properties"]["kind"]["enum"].append("toy")
    schema["$defs"]["toy"] = {
        "type": "object",
        "properties": {
            "K": {"type": "integer", "minimum": 2, "default": 3, "description": "classes"},
            "prompts": {"type": "integer", "minimum": 1, "default": 80000, "description": "prompts a point"},
        },
    }
    schema["properties"]["experiments"]["additionalProperties"]["allOf"].append(
        {"if": {"required": ["kind"], "properties": {"kind": {"const": "toy"}}}, "then": {"$ref": "#/$defs/toy"}}
    )
    schema["$defs"]["experiment"]["properties"]["figure"]["enum"].append("toy")
    c = copy.deepcopy(CONFIG)
    c["experiments"]["toy"] = {"kind": "toy", "figure": "toy", "prompts": 100, "sweep": {"K": [2, 3]}}
    assert check_config(c, schema) == []
    c["experiments"]["toy"]["sweep"] = {"K": [1], "lr": [0.1]}
    c["experiments"]["toy"]["extra"] = 1
    assert [str(p) for p in check_config(c, schema)] == [
        (
            "experiments.toy.extra: unknown key 'extra' (allowed: K, description, figure, kind, prompts, sweep, "
            "variants)"
        ),
        "experiments.toy.sweep.K[0]: 1 is less than the minimum of 2 (classes)",
        "experiments.toy.sweep.lr: unknown setting 'lr' (allowed: K, prompts)",
    ]


def test_the_figure_names_are_those_drawn():
    from onenn.analysis.plots import FIGURES

    assert SCHEMA["$defs"]["experiment"]["properties"]["figure"]["enum"] == list(FIGURES)
    drawn = [figure for kind in kinds.KINDS.values() for figure in kind.figures]
    assert sorted(drawn) == sorted(FIGURES)  # each figure draws the tables of one kind


@pytest.mark.parametrize("d", [3, 8, 16])
def test_the_largest_delta_is_the_separated_samplers(d):
    """Just below the bound the sampler reaches the margin, a little above it fails (5 seeds each)."""
    bound = largest_delta(d, 64 * 4)
    for delta, reached in ((bound - 0.005, True), (bound + (0.004 if d == 3 else 0.1), False)):
        for seed in range(5):
            try:
                separated_prompts(64, d, 4, 2, delta, np.random.default_rng(seed))
            except RuntimeError:
                assert not reached, (delta, seed)
            else:
                assert reached, (delta, seed)
    assert largest_delta(3, 64 * 4) == pytest.approx(4 * (1 - -np.expm1(np.log(1e-3 / 256) / 10_000)), abs=1e-3)


def test_a_config_that_contains_itself_is_refused_before_any_walk():
    c = copy.deepcopy(CONFIG)
    c["plots"]["x"] = loop = []
    loop.append(loop)  # YAML: x: &x [*x]
    assert [str(p) for p in check_config(c, SCHEMA)] == [
        "plots.x: contains itself once its YAML aliases (*name) are expanded; a configuration may hold at most 100000"
    ]


def test_a_seaborn_palette_is_accepted_where_no_figure_needs_a_colormap():
    c = bad_config(delete("experiments", "landscape"))
    c["plots"]["palette"] = "deep"
    assert check_config(c, SCHEMA) == []


def test_a_larger_run_passes_once_max_work_allows_it():
    config = copy.deepcopy(CONFIG)
    config["experiments"]["convergence"]["steps"] = 10**9  # 3.8e4 times the defaults' work (tests/bad_configs.py)
    assert [p.location for p in check_config(config, SCHEMA)] == ["experiments.convergence.steps"]
    config["max_work"] = 4e4
    assert check_config(config, SCHEMA) == []
