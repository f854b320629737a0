"""The settings dataclasses of the jobs: an unknown key is refused by name, with the allowed ones; the workflow
hands each job every setting it has; each default is the schema's; and every run of the shipped configurations gets the values the configuration
gives it (defaults, then the experiment's keys, then the variant's), resolved here independently of
onenn.plan.experiments."""

import itertools
from dataclasses import fields

import pytest
import yaml

from onenn.plan import experiments as ex
from onenn.plan import kinds
from onenn.theory.audit import AuditSettings
from onenn.theory.landscape import LandscapeSettings
from onenn.training.binary import BinarySettings
from onenn.training.train import TrainSettings
from tests.configs import FULL, QUICK, ROOT, load_config

CLASSES = [TrainSettings, BinarySettings, AuditSettings, LandscapeSettings]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_an_unknown_key_is_named_with_the_allowed_ones(cls):
    with pytest.raises(ValueError, match=r"unknown .*settings \['stepz'\]; allowed: \[.*'seed'"):
        cls.from_dict({"stepz": 3, "seed": 1})


#: kind -> (its job's settings, the keys the workflow's params give that job)
JOBS = {
    "train": (TrainSettings, (*kinds.KINDS["train"].settings_keys, "seed")),
    "binary": (BinarySettings, (*kinds.KINDS["binary"].settings_keys, "seed")),
    "audit": (AuditSettings, kinds.KINDS["audit"].settings_keys),
    "landscape": (LandscapeSettings, kinds.KINDS["landscape"].settings_keys),
}
SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text())


@pytest.mark.parametrize("kind", list(JOBS))
def test_the_workflow_hands_each_job_every_setting_it_has(kind):
    """A field left out would keep its default whatever the configuration says; an extra key would fail the job."""
    cls, keys = JOBS[kind]
    assert sorted(f.name for f in fields(cls)) == sorted(keys)


def schema_default(kind: str, key: str):
    """The default the YAML states for ``key`` of ``kind``: its own entry's, or that of the training setting it
    refers to (a run's ``seed``, no setting of the schema, is 0)."""
    own = SCHEMA["$defs"][kind]["properties"].get(key)
    if own is None:
        return 0 if key == "seed" else pytest.fail(f"{kind}.{key} is not in the schema")
    return own["default"] if "default" in own else SCHEMA["$defs"]["train"]["properties"][key]["default"]


@pytest.mark.parametrize("kind", list(JOBS))
def test_every_default_is_the_schemas(kind):
    for f in fields(JOBS[kind][0]):
        got = list(f.default) if isinstance(f.default, tuple) else f.default
        assert got == schema_default(kind, f.name), (kind, f.name)


def overrides_of(experiment: dict) -> list[dict]:
    """What each variant sets: every combination of the sweep's values, then each explicit variant."""
    sweep = experiment.get("sweep") or {}
    combos = [dict(zip(sweep, values)) for values in itertools.product(*sweep.values())] if sweep else []
    explicit = [{k: v for k, v in entry.items() if k != "name"} for entry in experiment.get("variants") or []]
    return combos + explicit or [{}]


def job_settings(config: dict, experiment: str, variant: str, kind: str):
    """The job's settings as the workflow's params build them (run seed 3 for the kinds with runs)."""
    cls = JOBS[kind][0]
    if kind in ("train", "binary"):
        return cls.from_dict(ex.train_settings(config, experiment, variant, 3))
    if kind == "landscape":
        return cls.from_dict(ex.table_settings(config, experiment))
    return cls.from_dict(ex.job_settings(config, experiment, variant))


@pytest.mark.parametrize("configs", [FULL, QUICK], ids=["full", "quick"])
def test_every_run_gets_the_values_its_configuration_gives(configs):
    config = load_config(*configs)
    checked = set()
    for experiment, exp in config["experiments"].items():
        if exp["kind"] not in JOBS:  # scaling: a dict of settings, checked in test_experiments
            continue
        variants = ex.variants(config, experiment)
        assert sorted(map(str, variants.values())) == sorted(map(str, overrides_of(exp)))
        for variant, overrides in variants.items():
            own = {k: v for k, v in exp.items() if k not in ex.EXPERIMENT_KEYS}
            resolved = {**config["defaults"], **own, **overrides}
            s = job_settings(config, experiment, variant, exp["kind"])
            for f in fields(s):
                want = 3 if f.name == "seed" and exp["kind"] in ("train", "binary") else resolved[f.name]
                got = getattr(s, f.name)
                assert (list(got) if isinstance(got, tuple) else got) == want, (experiment, variant, f.name)
            checked.add(exp["kind"])
    assert checked == set(JOBS)
