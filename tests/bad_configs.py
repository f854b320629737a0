"""Bad configurations, each an edit of config.yaml with the one problem the validator must report: the catalogue
that tests/unit/test_validate.py checks against the validator and tests/workflow/test_bad_configs.py runs through
Snakemake."""

import copy
import math
from collections.abc import Callable

import yaml

from tests.configs import ROOT

CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def conv(c: dict) -> dict:
    return c["experiments"]["convergence"]


def setting(key, value) -> Callable[[dict], None]:
    return lambda c: c["defaults"].__setitem__(key, value)


def experiment(key, value) -> Callable[[dict], None]:
    return lambda c: conv(c).__setitem__(key, value)


def sweep(key, value) -> Callable[[dict], None]:
    return lambda c: conv(c)["sweep"].__setitem__(key, value)


def variants(*entries) -> Callable[[dict], None]:
    return lambda c: conv(c).__setitem__("variants", list(entries))


def delete(*path) -> Callable[[dict], None]:
    def edit(c):
        node = c
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return edit


def alias_bomb(c: dict) -> None:
    """9 nested levels of 9 aliases each (``&a [x, x, ...]``, ``&b [*a, *a, ...]``, ...): 9**9 strings expanded."""
    node = ["x"] * 9
    for _ in range(8):
        node = [node] * 9  # one object, 9 times: yaml.safe_dump writes it as an anchor and aliases
    conv(c)["description"] = node


def plots(key, value) -> Callable[[dict], None]:
    return lambda c: c["plots"].__setitem__(key, value)


#: (id, edit of a valid config, the only problem's key path, a fragment of its message)
BAD_CONFIGS = [
    ("K_below_2", setting("K", 1), "defaults.K", "1 is less than the minimum of 2"),
    ("N_zero", setting("N", 0), "defaults.N", "0 is less than the minimum of 1"),
    ("d_one", setting("d", 1), "defaults.d", "1 is less than the minimum of 2"),
    ("lr_zero", setting("lr", 0), "defaults.lr", "less than or equal to the minimum of 0"),
    ("lr_string", setting("lr", "0.05"), "defaults.lr", "'0.05' is not of type 'number'"),
    ("lr_nan", setting("lr", math.nan), "defaults.lr", "nan is not a finite number"),
    ("sigma_inf", setting("sigma", math.inf), "defaults.sigma", "inf is not a finite number"),
    ("sigma_negative", setting("sigma", -1.0), "defaults.sigma", "-1.0 is less than the minimum of 0"),
    ("batch_zero", setting("batch", 0), "defaults.batch", "minimum of 1"),
    ("steps_zero", setting("steps", 0), "defaults.steps", "minimum of 1"),
    ("seeds_zero", setting("seeds", 0), "defaults.seeds", "minimum of 1"),
    ("n_eval_one", setting("n_eval", 1), "defaults.n_eval", "minimum of 2"),
    ("test_size_zero", setting("test_size", 0), "defaults.test_size", "minimum of 1"),
    ("c_above_1", setting("c", 1.5), "defaults.c", "1.5 is greater than the maximum of 1"),
    ("epsilon_negative", setting("epsilon", -0.1), "defaults.epsilon", "less than the minimum of 0"),
    ("delta_4", setting("delta", 4), "defaults.delta", "greater than or equal to the maximum of 4"),
    (
        "delta_zero_in_experiment",
        experiment("delta", 0.0),
        "experiments.convergence.delta",
        "less than or equal to the minimum of 0",
    ),
    (
        "delta_beyond_the_sampler",  # docs/method.md §3.2: 10000 draws a point reach at most 3.696 at d=8
        setting("delta", 3.999),
        "defaults.delta",
        "3.999 is more than the separated sampler reaches at d=8, N=64, test_size=4096: at most 3.695",
    ),
    (
        "audit_nodes",  # at levels 2 the coarse flow halves the 32 nodes of t_(1): 16 is not a whole panel
        lambda c: c["experiments"]["audit"].__setitem__("t1_nodes", 32),
        "experiments.audit.t1_nodes",
        "must be a positive multiple of 64 (32 at the coarsest of levels=2), got 32",
    ),
    (
        "audit_sample_time",  # the weighted sample must cover GD's last step (lr * steps = 1000 at the defaults)
        lambda c: c["experiments"]["audit"].__setitem__("sample_time_end", 500.0),
        "experiments.audit.sample_time_end",
        "must lie in (lr * steps = 1000, time_end = 1e+20], got 500.0",
    ),
    ("d_memory", setting("d", 10**6), "defaults.d", "gives a run an array of 3.58e+05 GiB (the saved weights)"),
    ("batch_memory", setting("batch", 10**9), "defaults.batch", "GiB (a block of 16 minibatches), more than"),
    ("test_size_memory", setting("test_size", 10**9), "defaults.test_size", "GiB (a test set), more than"),
    ("steps_memory", experiment("steps", 10**12), "experiments.convergence.steps", "(every step's loss), more than"),
    # work, by hand: steps 10^9 / 10^5 x (64 + 1) / (16 + 1) (the variant N = 64); grid 2000^2 / 61^2
    ("steps_work", experiment("steps", 10**9), "experiments.convergence.steps", "a run 3.82e+04 times the work of one"),
    (
        "grid_work",
        lambda c: c["experiments"]["landscape"].__setitem__("grid", 2000),
        "experiments.landscape.grid",
        "2000 makes a run 1.07e+03 times the work of one of kind landscape at its defaults (grid² × prompts × N)",
    ),
    (
        "n_plain_work",
        lambda c: c["experiments"]["audit"].__setitem__("n_plain", 10**8),
        "experiments.audit.n_plain",
        "3.05e+03 times the work of one of kind audit",
    ),  # (10^8 + 128 x 128) / (16384 + 128 x 128)
    ("max_work_zero", lambda c: c.__setitem__("max_work", 0), "max_work", "less than or equal to the minimum of 0"),
    ("loss_typo", setting("loss", "sqare"), "defaults.loss", "'sqare' is not one of ['square'"),
    ("device_gpu", setting("device", "gpu"), "defaults.device", "'gpu' is not one of ['auto', 'cpu', 'cuda']"),
    ("dtype_half", setting("dtype", "float16"), "defaults.dtype", "is not one of ['float32', 'float64']"),
    ("noise_blocks_typo", setting("noise_blocks", "labels"), "defaults.noise_blocks", "'labels' is not one of"),
    (
        "on_divergence_typo",
        setting("on_divergence", "ignore"),
        "defaults.on_divergence",
        "'ignore' is not one of ['error', 'record']",
    ),
    ("N_float", setting("N", 16.0), "defaults.N", "16.0 is not of type 'integer'"),
    (
        "steps_yaml_1e5",
        experiment("steps", "1e5"),
        "experiments.convergence.steps",
        "'1e5' is not of type 'integer'",
    ),  # YAML 1.1 reads 1e5 (no dot) as a string
    ("missing_default", delete("defaults", "steps"), "defaults.steps", "missing; it is required"),
    ("unknown_default", setting("stesp", 10), "defaults.stesp", "unknown key 'stesp'; did you mean 'steps'?"),
    ("unknown_top_level", lambda c: c.__setitem__("plot", {}), "plot", "did you mean 'plots'?"),
    ("unknown_experiment_key", experiment("seed", 3), "experiments.convergence.seed", "did you mean 'seeds'?"),
    (
        "renamed_key",  # n_record (audit) is now n_eval, as in the training kinds
        lambda c: c["experiments"]["audit"].__setitem__("n_record", 60),
        "experiments.audit.n_record",
        "unknown key 'n_record'; it was renamed to 'n_eval'",
    ),
    (
        "renamed_setting",
        lambda c: c["experiments"]["audit"]["sweep"].__setitem__("n_record", [10]),
        "experiments.audit.sweep.n_record",
        "unknown setting 'n_record'; it was renamed to 'n_eval'",
    ),
    ("unknown_test_sets_key", lambda c: c["test_sets"].__setitem__("sed", 1), "test_sets.sed", "unknown key"),
    ("test_set_seed_negative", lambda c: c["test_sets"].__setitem__("seed", -1), "test_sets.seed", "minimum of 0"),
    ("dpi_string", lambda c: c["plots"].__setitem__("dpi", "high"), "plots.dpi", "'high' is not of type 'integer'"),
    ("plot_context", lambda c: c["plots"].__setitem__("context", "slides"), "plots.context", "'slides' is not one"),
    ("palette_unknown", plots("palette", "no_such_palette"), "plots.palette", "unknown palette 'no_such_palette' ("),
    ("palette_typo", plots("palette", "virids"), "plots.palette", "unknown palette 'virids'; did you mean 'viridis'?"),
    (
        "palette_not_a_colormap",  # seaborn's palette, but figure landscape draws with a matplotlib colormap
        plots("palette", "deep"),
        "plots.palette",
        "'deep' is a seaborn palette, not a matplotlib colormap, which figure 'landscape' draws with",
    ),
    (
        "alias_bomb",
        alias_bomb,
        "experiments.convergence.description",
        "holds 435848050 values once its YAML aliases (*name)",
    ),
    ("no_experiments", lambda c: c.__setitem__("experiments", {}), "experiments", "{} should be non-empty"),
    (
        "experiment_name",
        lambda c: c["experiments"].__setitem__("Conv", conv(c)),
        "experiments.Conv",
        "invalid name 'Conv': must match",
    ),
    (
        "experiment_name_newline",  # `$` matches before a final newline
        lambda c: c["experiments"].__setitem__("newexp\n", c["experiments"].pop("convergence")),
        "experiments.'newexp\\n'",
        "invalid name 'newexp\\n': must match",
    ),
    (
        "experiment_null",
        lambda c: c["experiments"].__setitem__("convergence", None),
        "experiments.convergence",
        "None is not of type 'object'",
    ),
    (
        "kind_typo",
        experiment("kind", "trian"),
        "experiments.convergence.kind",
        "'trian' is not one of ['train', 'scaling', 'binary', 'audit', 'landscape']",
    ),
    (
        "figure_unknown",
        experiment("figure", "no_such_figure"),
        "experiments.convergence.figure",
        "'no_such_figure' is not one of ['convergence', 'scaling_identity',",
    ),
    (
        "missing_figure",
        delete("experiments", "convergence", "figure"),
        "experiments.convergence.figure",
        "missing; it is required",
    ),
    (
        "sweep_unknown_key",
        sweep("stepz", [10]),
        "experiments.convergence.sweep.stepz",
        "unknown setting 'stepz'; did you mean 'steps'?",
    ),
    ("sweep_not_a_setting", sweep("figure", ["x"]), "experiments.convergence.sweep.figure", "unknown setting"),
    ("sweep_empty_list", sweep("N", []), "experiments.convergence.sweep.N", "[] should be non-empty"),
    ("sweep_scalar", sweep("N", 16), "experiments.convergence.sweep.N", "16 is not of type 'array'"),
    ("sweep_empty", experiment("sweep", {}), "experiments.convergence.sweep", "{} should be non-empty"),
    ("sweep_value_bound", sweep("N", [16, 0]), "experiments.convergence.sweep.N[1]", "0 is less than the minimum of 1"),
    ("sweep_K_1", sweep("K", [1]), "experiments.convergence.sweep.K[0]", "1 is less than the minimum of 2"),
    ("sweep_seeds_0", sweep("seeds", [2, 0]), "experiments.convergence.sweep.seeds[1]", "minimum of 1"),
    (
        "sweep_value_type",
        sweep("loss", ["square", "hinge"]),
        "experiments.convergence.sweep.loss[1]",
        "'hinge' is not one of",
    ),
    ("sweep_value_nan", sweep("lr", [0.05, math.nan]), "experiments.convergence.sweep.lr[1]", "not a finite number"),
    (
        "sweep_duplicate",
        sweep("N", [16, 32, 16]),
        "experiments.convergence.sweep.N[2]",
        "gives the variant name 'N=16' of experiments.convergence.sweep.N[0]: a duplicate value",
    ),
    (
        "sweep_same_folder",
        sweep("lr", [0.1234567, 0.1234568]),
        "experiments.convergence.sweep.lr[1]",
        "variant name 'lr=0.123457'",
    ),
    ("variants_empty", variants(), "experiments.convergence.variants", "[] should be non-empty"),
    ("variant_not_mapping", variants(16), "experiments.convergence.variants[0]", "16 is not of type 'object'"),
    ("variant_empty_mapping", variants({}), "experiments.convergence.variants[0]", "{} should be non-empty"),
    (
        "variant_unknown_key",
        variants({"epsilom": 1.0}),
        "experiments.convergence.variants[0].epsilom",
        "did you mean 'epsilon'?",
    ),
    (
        "variant_value_bound",
        variants({"epsilon": -1.0}),
        "experiments.convergence.variants[0].epsilon",
        "-1.0 is less than the minimum of 0",
    ),
    (
        "variant_bad_name",
        variants({"name": "a/b", "epsilon": 1.0}),
        "experiments.convergence.variants[0].name",
        "does not match",
    ),
    (
        "variant_name_with_comma",
        variants({"name": "a,b", "epsilon": 1.0}),
        "experiments.convergence.variants[0].name",
        "does not match",
    ),  # a cluster job gets its wildcards as comma-separated pairs
    (
        "variant_name_newline",
        variants({"name": "a\n", "epsilon": 1.0}),
        "experiments.convergence.variants[0].name",
        "'a\\n' does not match",
    ),
    (
        "variant_name_taken_by_sweep",
        variants({"N": 32}),
        "experiments.convergence.variants[0]",
        "variant name 'N=32' is already used by experiments.convergence.sweep",
    ),
    (
        "variant_names_collide",
        variants({"name": "a", "epsilon": 1.0}, {"name": "a", "epsilon": 2.0}),
        "experiments.convergence.variants[1].name",
        "variant name 'a' is already used by experiments.convergence.variants[0].name",
    ),
    (
        "duplicate_variants",
        variants({"name": "a", "epsilon": 1.0}, {"name": "b", "epsilon": 1.0}),
        "experiments.convergence.variants[1]",
        "duplicate variant: 'b' has the same settings as 'a'",
    ),
    (
        "c_without_mixture",
        experiment("c", 0.5),
        "experiments.convergence.c",
        "c=0.5 is used only by loss 'mixture', but the loss here is 'square' (set by defaults.loss)",
    ),
]


def bad_config(edit) -> dict:
    c = copy.deepcopy(CONFIG)
    edit(c)
    return c
