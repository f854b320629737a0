"""Every run's wildcards survive the way Snakemake hands a job to a cluster node: the submitting Snakemake
encodes them as ``--target-jobs rule:key=value,key=value`` and the job's Snakemake parses that back. The parser
splits at every comma, so a comma in a variant name would run a different job (found by the Slurm test: the
variant ``epsilon=3,noise_blocks=other`` ran as ``epsilon=3``)."""

import pytest
from snakemake.target_jobs import parse_target_jobs_cli_args
from snakemake_interface_executor_plugins.utils import TargetSpec, encode_target_jobs_cli_args

from onenn.plan import experiments as ex
from tests.configs import FULL, QUICK, load_config


def round_trip(rule: str, wildcards: dict[str, str]) -> dict[str, str]:
    (parsed,) = parse_target_jobs_cli_args(encode_target_jobs_cli_args([TargetSpec(rule, wildcards)]))
    return dict(parsed.wildcards_dict)


@pytest.mark.parametrize("configs", [FULL, QUICK])
def test_every_variant_survives_the_cluster_job_hand_over(configs):
    config = load_config(*configs)
    names = [(e, v) for e in ex.experiment_names(config) for v in ex.variants(config, e)]
    assert any("+" in v for _, v in names)  # multi-key variant names are among them
    for experiment, variant in names:
        wildcards = {"experiment": experiment, "variant": variant, "seed": "0"}
        assert round_trip("train", wildcards) == wildcards


def test_a_comma_would_not_survive():
    """Why names have no comma (if Snakemake fixes its parser, this test tells us)."""
    wildcards = {"experiment": "e", "variant": "epsilon=3,noise_blocks=label", "seed": "0"}
    assert round_trip("train", wildcards) != wildcards
