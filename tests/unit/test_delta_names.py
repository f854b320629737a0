"""A separated test set's margin: its path holds only a name, unique per margin; the job gets the number itself
(onenn/plan/experiments.py: delta_name, deltas, delta_named)."""

import pytest

from onenn.plan import experiments as ex
from tests.configs import QUICK, load_config, merge


def with_delta(delta: float) -> dict:
    return merge(load_config(*QUICK), {"defaults": {"delta": delta}})


def separated_path(config: dict) -> str:
    return ex.test_set_path("separated", ex.settings(config, "convergence", "N=16"))


def test_a_short_margin_keeps_its_short_name():
    assert "/delta0.1/" in separated_path(with_delta(0.1))
    assert ex.delta_name(1e-5) == "1e-05" and ex.delta_name(2.0) == "2"


@pytest.mark.parametrize("delta", [0.123456789, 0.1234567, 1.0000001e-3])
def test_a_margin_of_many_digits_is_named_by_all_of_them_and_read_back_exactly(delta):
    config = with_delta(delta)
    path = separated_path(config)
    name = path.split("/delta")[1].split("/")[0]
    assert float(name) == delta  # all the digits are in the name
    assert ex.delta_named(config, name) == delta  # and the number comes from the configuration, exactly


def test_two_margins_that_agree_to_six_digits_have_two_test_sets():
    assert separated_path(with_delta(0.1234567)) != separated_path(with_delta(0.1234568))


def test_a_name_no_experiment_uses_is_an_error_naming_those_there_are():
    with pytest.raises(ValueError, match=r"delta named '0.2'.*there are: 0.1"):
        ex.delta_named(with_delta(0.1), "0.2")
