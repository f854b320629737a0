"""The README's files (onenn.jobs.readme): the scorecard and the audit's table under a header that names the run,
the same bytes from the same inputs, and the figures copied as they are."""

from __future__ import annotations

import logging
import math

import pandas as pd
import pytest

from onenn.analysis.scorecard import COLUMNS as CLAIM_COLUMNS
from onenn.analysis.summary import COLUMNS as SUMMARY_COLUMNS
from onenn.base import paths, provenance
from onenn.base.io import DamagedFile, save_table, write_with
from onenn.jobs.readme import readme_figure_job, readme_job

LOG = logging.getLogger("test_readme")
CONFIGS = "mine.yaml (sha256 0123456789ab)"
SOFTWARE = {
    "python": "3.0.1",
    "torch": "9.8.7",
    "numba": "0.1",
    "numpy": "5.4",
    "snakemake": "99.0",
    "scipy": "8.1",
    "pandas": "7.2",
    "pyarrow": "6.3",
    "seaborn": "5.5",
    "triton": "not installed",
    "gpu": "none",
    "cuda": "none",
}


def claim(name: str, verdict: str, ours: float | None, z: float | None) -> dict:
    """A scorecard row as the claims rule writes it: one point of experiment conv, accuracy against 1."""
    nan = math.nan
    return {
        "claim": name,
        "figure": 1,
        "experiment": "conv",
        "check": "equal",
        "quantity": "accuracy",
        "paper": f"what {name} says",
        "paper_value": 1.0,
        "paper_spread": 0.0,
        "ours_mean": nan if ours is None else ours,
        "ours_sd": nan if ours is None else 0.01,
        "n": pd.NA if ours is None else 2,
        "z": nan if z is None else z,
        "statistic": nan if z is None else z * z,
        "dof": pd.NA if z is None else 1,
        "limit": nan if z is None else 4.0,
        "points": 1,
        "points_run": 0 if ours is None else 1,
        "verdict": verdict,
        "detail": "not in this run: N=64" if ours is None else f"N=16: {ours} vs 1 (z {z:+.2f})",
        "note": "",
        "source": "paper",
        "chance": False,
        "paper_test_size": 0,
    } | dict.fromkeys(("reading", "why", "reason", "post_hoc", "test_sizes", "paper_test_sizes", "untested"), "")


def card() -> pd.DataFrame:
    rows = [
        claim("one_agrees", "agrees", 0.99, -1.0),
        claim("one_differs", "differs", 0.5, -50.0),
        claim("one_not_run", "not run", None, None),
    ]
    out = pd.DataFrame(rows).reindex(columns=list(CLAIM_COLUMNS))
    for column in ("n", "dof"):
        out[column] = out[column].astype("Int64")
    for column in ("claim", "experiment", "check", "quantity", "paper", "verdict", "detail", "note"):
        out[column] = out[column].astype("string")
    return out


def summary() -> pd.DataFrame:
    """Two audit variants and a training experiment's row, which the audit's page must leave out."""
    audit = [
        ("sigma=3", "sigma", 3.0),
        ("sigma=3", "xi_ratio_end", 0.625),
        ("sigma=3", "reduced_loss@t=1e+04", 0.0123),
        ("sigma=3", "time_cross", 428.7),
        ("sigma=3", "time_cross_error", 0.1),
        ("sigma=3", "time_cross_digits", 4.0),
        ("sigma=3", "xi1_end", 7.5),
        ("sigma=lemma12", "sigma", 56.14),
        ("sigma=lemma12", "xi_ratio_end", 0.5),
    ]
    rows = [{"experiment": "aud", "kind": "audit", "variant": v, "quantity": q, "mean": m, "n": 1} for v, q, m in audit]
    rows.append({"experiment": "conv", "kind": "train", "variant": "N=16", "quantity": "accuracy", "mean": 0.777})
    return pd.DataFrame(rows).reindex(columns=list(SUMMARY_COLUMNS)).assign(**SOFTWARE)


def inputs(tmp_path, summary_rows: pd.DataFrame | None = None) -> dict:
    """The job's input files: the scorecard, the training table it read (100 steps, seeds 0 and 1), the headline
    table."""
    save_table(tmp_path / "claims.parquet", card())
    conv = pd.DataFrame({"experiment": "conv", "step": [0, 100, 0, 100], "seed": [0, 0, 1, 1]})
    save_table(tmp_path / "conv.parquet", conv)
    save_table(tmp_path / "summary.parquet", summary() if summary_rows is None else summary_rows)
    return {
        "claims_table": str(tmp_path / "claims.parquet"),
        "tables": {"conv": str(tmp_path / "conv.parquet")},
        "summary_table": str(tmp_path / "summary.parquet"),
        "configs": CONFIGS,
    }


def write(tmp_path, out: str, **given) -> tuple[str, str]:
    """Run the job into the folder ``out``; the two pages' text."""
    folder = tmp_path / out
    args = inputs(tmp_path) | given
    readme_job(**args, claims_path=str(folder / "claims.md"), audit_path=str(folder / "audit.md"), log=LOG)
    return (folder / "claims.md").read_text(encoding="utf-8"), (folder / "audit.md").read_text(encoding="utf-8")


HEADER = (
    "> From the run of mine.yaml (sha256 0123456789ab), made with python 3.0.1, torch 9.8.7, numba 0.1, numpy 5.4, "
    "snakemake 99.0, scipy 8.1, pandas 7.2, pyarrow 6.3, seaborn 5.5, triton not installed. Written by `snakemake --cores all readme` (workflow/rules/readme.smk): rerun it rather than "
    "edit this file.\n\n"
)


def test_both_pages_open_with_the_run_and_its_software(tmp_path):
    for page in write(tmp_path, "out"):
        assert page.startswith(HEADER)
        assert page[len(HEADER) :].startswith("# ")  # the title follows
        assert page.endswith("\n")


def test_the_scorecard_has_every_claim_with_its_verdict_and_the_runs_scale(tmp_path):
    page, _ = write(tmp_path, "out")
    assert "Verdicts on the paper's claims: agrees 1, agrees in direction 0, differs 1, not run 1." in page
    assert "This run: conv: 100 steps × 2 seeds." in page
    scorecard = page.split("## Scorecard")[1].split("## Every point")[0]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in scorecard.splitlines() if line.startswith("| one_")}
    assert set(rows) == {"one_agrees", "one_differs", "one_not_run"}
    assert rows["one_agrees"].endswith("| agrees |") and "| 0.99 ± 0.01 (n = 2) |" in rows["one_agrees"]
    assert rows["one_differs"].endswith("| differs |") and "| -50.00 |" in rows["one_differs"]
    assert rows["one_not_run"].endswith("| not run |")
    assert "| one_agrees | N=16: 0.99 vs 1 (z -1.00) |" in page  # the table of every point


def test_the_audit_page_has_the_audit_rows_and_nothing_else(tmp_path):
    _, page = write(tmp_path, "out")
    lines = page.splitlines()
    assert "## aud" in lines and "0.777" not in page and "conv" not in page
    by_variant = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in lines if line.startswith("| sigma=")}
    sigma3 = next(line for line in lines if line.startswith("| sigma=3 | 3 |"))  # σ = 3, the first table
    assert " 0.625 |" in sigma3  # ξ1/ξ2 at the end
    assert next(line for line in lines if line.startswith("| sigma=lemma12 | 56.14 |"))
    assert set(by_variant) == {"sigma=3", "sigma=lemma12"}
    loss_row = next(line for line in lines if line.startswith("| sigma=3 | loss |"))  # the loss at log-spaced times
    assert loss_row.split(" | ")[4] == "0.0123"  # columns: variant, value, t = 1, 100, 10^4


def test_the_audit_page_answers_first_then_its_figure_where_it_is_copied_then_the_reader_and_the_detail_tables(
    tmp_path,
):
    from onenn.analysis.audit_pages import audit_page

    text = write(tmp_path, "out")[1]
    answer, tables = text.split("Lemma 12's invariant is")
    assert "- sigma=3 (σ = 3): no: it passes 7/15 at t = 428.7 (± 0.1);" in answer
    assert "- sigma=lemma12 (σ = 56.14): yes, to the flow's end;" in answer
    assert "](aud.png)" not in text  # "aud" is not one of the README's experiments: no figure of it is copied
    reader, detail = tables.split("The detail")[:2]
    assert "| ξ1 |" not in reader and "| ξ1 | ξ2 |" in detail.splitlines()[2]
    named = audit_page(summary().replace({"experiment": {"aud": "audit"}}))
    assert named.index("](audit.png)") < named.index("Lemma 12's invariant is")


def test_the_scorecard_opens_with_its_verdicts(tmp_path):
    page = write(tmp_path, "out")[0][len(HEADER) :].splitlines()
    assert page[2].startswith("Verdicts on the paper's claims:")
    assert page.index(next(line for line in page if line.startswith("Each claim of"))) > 4  # what the rows mean, after


def test_the_same_inputs_give_the_same_bytes(tmp_path):
    first = write(tmp_path, "a")
    assert write(tmp_path, "b") == first
    assert write(tmp_path, "a") == first  # over the files already there
    other = write(tmp_path, "c", configs="other.yaml (sha256 ffffffffffff)")
    assert other[0].replace("other.yaml (sha256 ffffffffffff)", CONFIGS) == first[0]


def test_a_headline_table_without_an_audit_is_refused_by_name(tmp_path):
    no_audit = summary().query("kind != 'audit'")
    with pytest.raises(ValueError, match="no experiment of kind 'audit' \\(its kinds: train\\)"):
        readme_job(
            **inputs(tmp_path, no_audit),
            claims_path=str(tmp_path / "claims.md"),
            audit_path=str(tmp_path / "audit.md"),
            log=LOG,
        )


def test_a_headline_table_without_its_software_is_damaged(tmp_path):
    with pytest.raises(DamagedFile, match="column.*torch"):
        readme_job(
            **inputs(tmp_path, summary().drop(columns=["torch"])),
            claims_path=str(tmp_path / "claims.md"),
            audit_path=str(tmp_path / "audit.md"),
            log=LOG,
        )


def test_a_figure_is_copied_byte_for_byte(tmp_path):
    figure = tmp_path / paths.FIGURE_PNG.format(experiment="conv")
    data = bytes(range(256)) * 3
    write_with(figure, lambda tmp: tmp.write_bytes(data))
    copy = tmp_path / paths.README_FIGURE.format(experiment="conv")
    readme_figure_job(str(figure), str(copy), log=LOG)
    assert copy.read_bytes() == data
    assert sorted(p.name for p in copy.parent.iterdir()) == ["conv.png", "conv.png.sha256"]  # no temporary left


def test_a_damaged_figure_is_not_copied(tmp_path):
    figure = tmp_path / paths.FIGURE_PNG.format(experiment="conv")
    write_with(figure, lambda tmp: tmp.write_bytes(b"drawn"))
    figure.write_bytes(b"changed since")
    copy = tmp_path / paths.README_FIGURE.format(experiment="conv")
    with pytest.raises(DamagedFile, match="made by rule figure"):
        readme_figure_job(str(figure), str(copy), log=LOG)
    assert not copy.exists()


def test_config_files_are_named_once_in_order_with_their_digest(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.yaml").write_bytes(b"abc")  # SHA-256 of "abc": FIPS 180-2, appendix B.1
    (tmp_path / "sub/b.yaml").write_bytes(b"")  # of the empty string: the same standard's test vector
    outside = tmp_path.parent / f"{tmp_path.name}-outside.yaml"
    outside.write_bytes(b"abc")
    files = [tmp_path / "a.yaml", tmp_path / "sub/b.yaml", str(tmp_path / "sub/../a.yaml"), outside]
    assert provenance.config_files(files, tmp_path) == (
        f"a.yaml (sha256 ba7816bf8f01) + sub/b.yaml (sha256 e3b0c44298fc) + {outside} (sha256 ba7816bf8f01)"
    )
