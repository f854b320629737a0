"""Where the workflow writes: every path pattern of ``results/``, spelled once. The rules use the patterns as they
are, ``onenn.plan.experiments`` fills them with ``str.format``; one wildcard per folder level. No torch."""

import os
import re

from onenn.base.columns import BINARY_TEST_SETS

#: the rules that make the files of each pattern (a run's: the multiclass rule, or the binary one; the path cannot
#: tell), filled by ``made_by``; tests/unit/test_damaged_files.py holds this to the outputs of workflow/rules/*.smk
MADE_BY: dict[str, tuple[str, ...]] = {}


def made_by(pattern: str, *rules: str) -> str:
    """``pattern``, recorded in ``MADE_BY`` as made by ``rules``."""
    MADE_BY[pattern] = rules
    return pattern


#: the test sets of the multiclass experiments, one file per distinct (d, N, K, delta, size)
UNIFORM_SET = made_by("results/datasets/uniform/d{d}/N{N}/K{K}/n{size}.npz", "test_set_uniform")
SEPARATED_SET = made_by("results/datasets/separated/d{d}/N{N}/K{K}/delta{delta}/n{size}.npz", "test_set_separated")
#: the binary experiment's prompt sets: its training set (test set ``train``) and its test sets
BINARY_SET = made_by("results/datasets/binary/{test_set}/d{d}/N{N}/{labels}/n{size}.npz", "binary_set")
BINARY_SEPARATED_SET = made_by(
    "results/datasets/binary/separated/d{d}/N{N}/{labels}/delta{delta}/n{size}.npz", "binary_set_separated"
)
#: the test sets of BINARY_SET: all but the separated one, the last, whose path holds its margin (BINARY_SEPARATED_SET)
BINARY_SET_TEST_SETS = BINARY_TEST_SETS[:-1]

#: one SGD run: its saved weights, its record (settings, provenance) and its metrics on the test sets
RUN_DIR = "results/runs/{experiment}/{variant}/seed{seed}"
RUN_WEIGHTS = made_by(f"{RUN_DIR}/weights.npz", "train", "binary_train")
RUN_RECORD = made_by(f"{RUN_DIR}/run.json", "train", "binary_train")
RUN_METRICS = made_by(f"{RUN_DIR}/metrics.parquet", "evaluate", "binary_evaluate")
#: one variant's table, for the kinds computed per variant (the audit)
VARIANT_TABLE = made_by("results/beyond/{experiment}/{variant}.parquet", "beyond")

TABLE = made_by("results/tables/{experiment}.parquet", "table")
FIGURE_PNG = made_by("results/figures/{experiment}.png", "figure")
FIGURE_PDF = made_by("results/figures/{experiment}.pdf", "figure")

#: the headline table, its Markdown and the HTML page the report shows
SUMMARY_TABLE = made_by("results/tables/summary.parquet", "summary")
SUMMARY_MARKDOWN = made_by("results/tables/summary.md", "summary")
SUMMARY_HTML = made_by("results/tables/summary.html", "report_table")

#: the scorecard of the paper's claims (its input, the claims file, sits beside the workflow), and its report page
CLAIMS_FILE = "workflow/claims.yaml"
CLAIMS_SCHEMA = "workflow/schemas/claims.schema.yaml"
CLAIMS_TABLE = made_by("results/tables/claims.parquet", "claims")
CLAIMS_MARKDOWN = made_by("results/tables/claims.md", "claims")
CLAIMS_HTML = made_by("results/tables/claims.html", "claims_page")

#: the files the README and the docs show, committed from a full run; only the explicit target ``readme`` writes them
README_CLAIMS = made_by("results/readme/claims.md", "readme")
README_AUDIT = made_by("results/readme/audit.md", "readme")
README_FIGURE = made_by("results/readme/{experiment}.png", "readme_figure")
#: an audit experiment's resolution test (``snakemake results/readme/audit_resolution.md``)
README_RESOLUTION = made_by("results/readme/{experiment}_resolution.md", "audit_resolution")
#: the convergence proof's inequalities along an audit experiment's flow: the page and its figure
README_LEMMAS = made_by("results/readme/{experiment}_lemmas.md", "audit_lemmas")
README_LEMMAS_FIGURE = made_by("results/readme/{experiment}_lemmas.png", "audit_lemmas")
#: an audit experiment's late-time law (docs/method.md §7.3)
README_LATE_TIME = made_by("results/readme/{experiment}_late_time.md", "audit_late_time")
#: the multiclass paper's experiments 1–6 (its section 5), by their names in config.yaml
PAPER_EXPERIMENTS = (
    "convergence",
    "scaling_identity",
    "distribution_shift",
    "number_of_classes",
    "diagonal_init",
    "loss_function",
)
#: the experiments whose figures results/readme/ keeps: the README's seven, and docs/experiments.md's worked example
README_EXPERIMENTS = (*PAPER_EXPERIMENTS, "audit", "input_dimension")


def rules_making(path: str | os.PathLike) -> tuple[str, ...]:
    """The rules that make ``path`` (relative or absolute) by the pattern of ``MADE_BY`` it matches with the most fixed
    text (``summary.parquet``: ``SUMMARY_TABLE``, not ``TABLE``), or ``()``."""
    text, found = os.fspath(path).replace(os.sep, "/"), {}
    for pattern, rules in MADE_BY.items():
        parts = re.split(r"\{\w+\}", pattern)  # each {wildcard} one folder level, the path ending in the pattern
        if re.search(r"(?:^|/)" + "[^/]+".join(map(re.escape, parts)) + "$", text):
            found.setdefault(len("".join(parts)), rules)
    return found[max(found)] if found else ()
