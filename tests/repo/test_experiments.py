"""config.yaml against docs/method.md §6: every experiment at the paper's scale, and the quick preset covers them all.
The expected numbers are copied from the paper's table of experiments (docs/method.md §6), not from the config."""

from pathlib import Path

import pytest
import yaml

from onenn.plan import experiments as ex

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())

#: docs/method.md §6: experiment -> (steps, seeds, {variant setting: values})
PAPER_TRAIN = {
    "convergence": (100_000, 8, {"N": [16, 32, 64]}),
    "distribution_shift": (60_000, 6, {"K": [3, 5]}),
    "number_of_classes": (50_000, 4, {"K": [2, 3, 5, 10]}),
    "diagonal_init": (40_000, 3, None),
    "loss_function": (40_000, 3, None),
}


def test_the_registry_of_the_papers_experiments_is_its_section_5():
    """Experiments 1–6: the five trained ones above and the scaling identity (experiment 2), in the paper's order."""
    assert ex.PAPER_EXPERIMENTS[1] == "scaling_identity"
    assert [e for e in ex.PAPER_EXPERIMENTS if e != "scaling_identity"] == list(PAPER_TRAIN)


def resolved(experiment):
    return [ex.settings(CONFIG, experiment, v) for v in ex.variants(CONFIG, experiment)]


@pytest.mark.parametrize("experiment", list(PAPER_TRAIN))
def test_training_experiments_run_at_the_paper_scale(experiment):
    steps, seeds, sweep = PAPER_TRAIN[experiment]
    runs = resolved(experiment)
    assert {(s["steps"], s["seeds"]) for s in runs} == {(steps, seeds)}
    for s in runs:  # docs/method.md §6: d = 8, σ = 3, η = 0.05, batch 128 unless the table says otherwise
        assert (s["d"], s["sigma"], s["lr"], s["batch"]) == (8, 3.0, 0.05, 128)
    if sweep:
        ((key, values),) = sweep.items()
        assert sorted(s[key] for s in runs) == values


def test_diagonal_init_has_every_epsilon_and_both_confined_variants_at_3():
    got = sorted((s["epsilon"], s["noise_blocks"]) for s in resolved("diagonal_init"))
    want = sorted([(e, "all") for e in (0, 0.1, 0.3, 0.5, 1, 2, 3)] + [(3, "label"), (3, "other")])
    assert got == want
    assert {(s["K"], s["N"], s["loss"]) for s in resolved("diagonal_init")} == {(3, 16, "square")}


def test_loss_function_has_every_mixture_weight_and_squentropy():
    got = sorted((s["loss"], s["c"]) for s in resolved("loss_function") if s["loss"] == "mixture")
    assert got == [("mixture", c) for c in (0, 0.25, 0.5, 0.75, 1)]
    assert [s["loss"] for s in resolved("loss_function")].count("squentropy") == 1
    assert {s["K"] for s in resolved("loss_function")} == {3}


def test_scaling_identity_points_and_prompts():
    s = ex.job_settings(CONFIG, "scaling_identity")
    panels = s["panels"]
    assert (s["d"], s["N"]) == (8, 16)
    assert panels["by_K"] == {"xi": [[2, 5]], "K": [2, 3, 4, 5, 7, 10], "prompts": 80_000}
    assert panels["grid"] == {"xi": [[1, 2], [2, 5], [3, 6], [5, 8]], "K": [2, 3, 5, 10], "prompts": 40_000}


def test_the_full_run_trains_125_runs():
    """3·8 + 2·6 + 4·4 + 9·3 + 6·3 = 97 training runs (docs/method.md §6), theorem_regime's 3·4 and epsilon_2_seeds' 16."""
    assert sum(len(ex.runs(CONFIG, e)) for e in ex.experiment_names(CONFIG, kind="train")) == 125
    assert ex.experiment_names(CONFIG, kind="scaling") == ["scaling_identity"]


def test_epsilon_2_seeds_is_experiment_5s_epsilon_2_run_over_16_seeds():
    """Our row of the share of seeds that learn at ε = 2 reads experiment 5's run at ε = 2, over 16 seeds, not 3."""
    (ours,) = resolved("epsilon_2_seeds")
    five = ex.settings(CONFIG, "diagonal_init", "epsilon=2")
    assert {**ours, "seeds": 3} == five and ours["seeds"] == 16


def test_quick_preset_covers_every_experiment():
    quick = yaml.safe_load((ROOT / "workflow/presets/quick.yaml").read_text())
    assert set(quick["experiments"]) == set(CONFIG["experiments"])


def test_job_settings_errors_name_the_experiment():
    broken = {**CONFIG, "experiments": {"s": {"kind": "scaling", "figure": "scaling_identity"}}}
    with pytest.raises(ValueError, match=r"experiments\.s \(kind scaling\) needs seed, ci_level, panels"):
        ex.job_settings(broken, "s")
    with pytest.raises(ValueError, match="kind must be one of train, scaling"):
        ex.experiment_names(CONFIG, kind="trian")


def test_test_set_paths_name_every_setting_the_set_depends_on():
    """config.yaml's defaults: d 8, N 16, K 3, delta 0.1, 4096 prompts; the separated set has its margin in its path."""
    s = ex.settings(CONFIG, "convergence", "N=16")
    assert ex.test_set_path("uniform", s) == "results/datasets/uniform/d8/N16/K3/n4096.npz"
    assert ex.test_set_path("separated", s) == "results/datasets/separated/d8/N16/K3/delta0.1/n4096.npz"
    with pytest.raises(ValueError, match="test_set must be one of uniform, separated; got 'train'"):
        ex.test_set_path("train", s)


def test_an_experiments_table_is_made_from_what_its_kind_produces():
    """Runs (8 seeds of N = 16, 32, 64), variants (the audit's three sigmas), or nothing (computed directly)."""
    runs = ex.table_inputs(CONFIG, "convergence")
    assert runs == [f"results/runs/convergence/N={n}/seed{s}/metrics.parquet" for n in (16, 32, 64) for s in range(8)]
    assert ex.table_inputs(CONFIG, "audit") == [
        f"results/beyond/audit/sigma={s}.parquet" for s in ("3", "theorem1", "lemma12")
    ]
    assert ex.table_inputs(CONFIG, "scaling_identity") == ex.table_inputs(CONFIG, "landscape") == []
    assert ex.table_settings(CONFIG, "convergence") == {}
    assert ex.table_settings(CONFIG, "landscape")["grid"] == CONFIG["experiments"]["landscape"]["grid"]


def test_the_rules_spell_no_output_path():
    """Every results/ path pattern is spelled once, in onenn/base/paths.py; the rules use it from there."""
    sources = [ROOT / "Snakefile", *sorted((ROOT / "workflow/rules").glob("*.smk"))]
    spelled = [
        f"{path.name}: {line.strip()}"
        for path in sources
        for line in path.read_text().splitlines()
        if '"results/' in line and not line.strip().startswith("#")
    ]
    assert spelled == []
