"""Every kind of experiment is described once (onenn/plan/kinds.py), and the description is complete: every
function it names exists where it says, every training figure is drawn, and an incomplete kind is refused."""

import pytest

from onenn.analysis.plots import FIGURES
from onenn.jobs.columns import kind_function, table_columns
from onenn.plan import experiments as ex
from onenn.plan.kinds import KINDS, TRAIN_FIGURES, Kind
from tests.configs import FULL, load_config

CONFIG = load_config(*FULL)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_function_a_kind_names_exists(kind):
    for role in ("summarise", "markdown", "job"):
        if getattr(KINDS[kind], role) is not None:
            assert callable(kind_function(kind, role))


def test_every_training_figure_is_drawn():
    assert set(TRAIN_FIGURES) <= set(FIGURES)


def test_every_kind_of_the_default_config_is_described():
    used = {ex.kinds(CONFIG)[name] for name in CONFIG["experiments"]}
    assert used <= set(KINDS)


def test_a_kind_without_its_job_or_with_a_malformed_reference_is_refused():
    with pytest.raises(ValueError, match="kind toy: a kind whose table comes from settings needs a job"):
        Kind("toy", "settings", "m:f", "m:g")
    with pytest.raises(ValueError, match="kind toy: summarise must be 'module:function'; got 'm.f'"):
        Kind("toy", "runs", "m.f", "m:g")
    with pytest.raises(ValueError, match="table_source must be one of"):
        Kind("toy", "files", "m:f", "m:g")


def test_a_function_that_is_not_where_the_kind_says_is_named(monkeypatch):
    monkeypatch.setitem(KINDS, "toy", Kind("toy", "runs", "onenn.analysis.summary:no_such", "m:g"))
    with pytest.raises(TypeError, match="kind 'toy': its summarise 'onenn.analysis.summary:no_such' is not a function"):
        kind_function("toy", "summarise")
    with pytest.raises(ValueError, match="kind 'toy' has no job"):
        kind_function("toy", "job")
    with pytest.raises(ValueError, match="kind must be one of .*; got 'nope'"):
        kind_function("nope", "job")


def test_the_columns_a_run_table_must_have():
    assert table_columns("train") == {
        **dict.fromkeys(("experiment", "variant", "seed", "step", "test_set"), "any"),
        **dict.fromkeys(("logit_error", "accuracy", "test_loss"), "number"),
    }
    assert table_columns("scaling") == {}
