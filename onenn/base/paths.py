"""Where the workflow writes: every path pattern of ``results/``, spelled once. The rules use the patterns as they
are, ``onenn.plan.experiments`` fills them with ``str.format``; one wildcard per folder level. No torch."""

from __future__ import annotations

import os
import re

from onenn.base.columns import BINARY_TEST_SETS

#: the test sets of the multiclass experiments, one file per distinct (d, N, K, delta, size)
UNIFORM_SET = "results/datasets/uniform/d{d}/N{N}/K{K}/n{size}.npz"
SEPARATED_SET = "results/datasets/separated/d{d}/N{N}/K{K}/delta{delta}/n{size}.npz"
#: the binary experiment's prompt sets: its training set (test set ``train``) and its test sets
BINARY_SET = "results/datasets/binary/{test_set}/d{d}/N{N}/{labels}/n{size}.npz"
BINARY_SEPARATED_SET = "results/datasets/binary/separated/d{d}/N{N}/{labels}/delta{delta}/n{size}.npz"
#: the test sets of BINARY_SET: all but the separated one, the last, whose path holds its margin (BINARY_SEPARATED_SET)
BINARY_SET_TEST_SETS = BINARY_TEST_SETS[:-1]

#: one SGD run: its saved weights, its record (settings, provenance) and its metrics on the test sets
RUN_DIR = "results/runs/{experiment}/{variant}/seed{seed}"
RUN_WEIGHTS = f"{RUN_DIR}/weights.npz"
RUN_RECORD = f"{RUN_DIR}/run.json"
RUN_METRICS = f"{RUN_DIR}/metrics.parquet"
#: one variant's table, for the kinds computed per variant (the audit, full-matrix GD)
VARIANT_TABLE = "results/beyond/{experiment}/{variant}.parquet"

#: an experiment's table and its figure
TABLE = "results/tables/{experiment}.parquet"
FIGURE_PNG = "results/figures/{experiment}.png"
FIGURE_PDF = "results/figures/{experiment}.pdf"

#: the headline table, its Markdown and the HTML page the report shows
SUMMARY_TABLE = "results/tables/summary.parquet"
SUMMARY_MARKDOWN = "results/tables/summary.md"
SUMMARY_HTML = "results/tables/summary.html"

#: the scorecard of the paper's claims (its input, the claims file, sits beside the workflow), and its report page
CLAIMS_FILE = "workflow/claims.yaml"
CLAIMS_SCHEMA = "workflow/schemas/claims.schema.yaml"
CLAIMS_TABLE = "results/tables/claims.parquet"
CLAIMS_MARKDOWN = "results/tables/claims.md"
CLAIMS_HTML = "results/tables/claims.html"

#: the files the README and the docs show, committed from a full run; only the explicit target ``readme`` writes them
README_CLAIMS = "results/readme/claims.md"
README_AUDIT = "results/readme/audit.md"
README_FIGURE = "results/readme/{experiment}.png"
#: an audit experiment's resolution test (``snakemake results/readme/audit_resolution.md``)
README_RESOLUTION = "results/readme/{experiment}_resolution.md"
#: the convergence proof's inequalities along an audit experiment's flow: the page and its figure
README_LEMMAS = "results/readme/{experiment}_lemmas.md"
README_LEMMAS_FIGURE = "results/readme/{experiment}_lemmas.png"
#: an audit experiment's late-time law (docs/method.md §7.3)
README_LATE_TIME = "results/readme/{experiment}_late_time.md"
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

#: the rules that make the files of each pattern (a run's: the multiclass rule, or the binary one; the path cannot
#: tell); tests/unit/test_damaged_files.py holds this to the outputs of workflow/rules/*.smk
MADE_BY: dict[str, tuple[str, ...]] = {
    UNIFORM_SET: ("test_set_uniform",),
    SEPARATED_SET: ("test_set_separated",),
    BINARY_SET: ("binary_set",),
    BINARY_SEPARATED_SET: ("binary_set_separated",),
    RUN_WEIGHTS: ("train", "binary_train"),
    RUN_RECORD: ("train", "binary_train"),
    RUN_METRICS: ("evaluate", "binary_evaluate"),
    VARIANT_TABLE: ("beyond",),
    SUMMARY_TABLE: ("summary",),
    SUMMARY_MARKDOWN: ("summary",),
    SUMMARY_HTML: ("report_table",),
    CLAIMS_TABLE: ("claims",),
    CLAIMS_MARKDOWN: ("claims",),
    CLAIMS_HTML: ("claims_page",),
    README_CLAIMS: ("readme",),
    README_AUDIT: ("readme",),
    README_LEMMAS: ("audit_lemmas",),
    README_LEMMAS_FIGURE: ("audit_lemmas",),  # before README_FIGURE, which it would match too
    README_FIGURE: ("readme_figure",),
    README_RESOLUTION: ("audit_resolution",),
    README_LATE_TIME: ("audit_late_time",),
    TABLE: ("table",),  # after the fixed names of results/tables/ (summary, claims), which it would match too
    FIGURE_PNG: ("figure",),
    FIGURE_PDF: ("figure",),
}


def rules_making(path: str | os.PathLike) -> tuple[str, ...]:
    """The rules that make ``path`` (relative or absolute) by the first pattern of ``MADE_BY`` it matches, or ``()``."""
    text = os.fspath(path).replace(os.sep, "/")
    for pattern, rules in MADE_BY.items():
        parts = re.split(r"\{\w+\}", pattern)  # each {wildcard} one folder level, the path ending in the pattern
        if re.search(r"(?:^|/)" + "[^/]+".join(map(re.escape, parts)) + "$", text):
            return rules
    return ()
