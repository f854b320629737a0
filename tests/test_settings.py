"""The settings dataclasses: an unknown key is refused by name, with the allowed ones; a run record's
settings (``to_dict``, as written to run.json or a table) rebuild the same settings."""

import json

import pytest

from onenn.theory.audit import AuditSettings
from onenn.theory.full_matrix import FullMatrixSettings
from onenn.theory.landscape import LandscapeSettings
from onenn.training.binary import BinarySettings
from onenn.training.train import TrainSettings

CLASSES = [TrainSettings, BinarySettings, AuditSettings, LandscapeSettings, FullMatrixSettings]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_an_unknown_key_is_named_with_the_allowed_ones(cls):
    with pytest.raises(ValueError, match=r"unknown .*settings \['stepz'\]; allowed: \[.*'seed'"):
        cls.from_dict({"stepz": 3, "seed": 1})


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_settings_survive_a_json_round_trip(cls):
    s = cls(seed=7)
    assert cls.from_dict(json.loads(json.dumps(s.to_dict()))) == s  # JSON turns tuples into lists
