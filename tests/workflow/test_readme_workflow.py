"""The README's files through Snakemake: the default target leaves results/readme/ alone; the explicit target
readme, on a copy of a finished quick run, writes the pages (the scorecard as the claims rule wrote it, under a
header naming the run) and copies the figures, running nothing else; run again, it gives the same bytes."""

from __future__ import annotations

import hashlib
import re
import shutil

from tests.configs import QUICK as QUICK_CONFIGS
from tests.workflow.helpers import copy_workflow, snakemake

FIGURES = (  # README_EXPERIMENTS in the quick preset
    "audit",
    "convergence",
    "scaling_identity",
    "distribution_shift",
    "number_of_classes",
    "diagonal_init",
    "loss_function",
)


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def rules_of(done) -> set[str]:
    """The rules of the jobs Snakemake ran or, in a dry run, planned."""
    return set(re.findall(r"^(?:local)?rule (\w+):", done.stdout + done.stderr, flags=re.MULTILINE))


def test_the_default_target_neither_plans_nor_writes_the_readme_files(quick_run, tmp_path):
    assert not (quick_run / "results/readme").exists()
    planned = snakemake(copy_workflow(tmp_path), "-n")
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert {"train", "claims", "summary"} <= rules_of(planned)
    assert not rules_of(planned) & {"readme", "readme_figure", "audit_lemmas", "audit_late_time"}


def test_readme_writes_the_pages_and_the_figures_of_a_finished_run(quick_run, tmp_path):
    workdir = tmp_path / "run"
    shutil.copytree(quick_run, workdir, symlinks=True)  # with the files' times, which Snakemake compares
    done = snakemake(workdir, "--", "readme")  # "--": the --configfile list ends there
    assert done.returncode == 0, done.stderr[-5000:]
    # nothing else ran; but claims, whose claims file is an input by its absolute path, which the copy changed
    assert rules_of(done) - {"claims"} == {"readme", "readme_figure", "audit_lemmas", "audit_late_time"}

    readme = workdir / "results/readme"
    pages = {name: (readme / name).read_text(encoding="utf-8") for name in ("claims.md", "audit.md")}
    assert sorted(p.name for p in readme.iterdir() if p.suffix != ".sha256") == sorted(
        [*pages, *(f"{name}.png" for name in FIGURES), "audit_lemmas.md", "audit_lemmas.png", "audit_late_time.md"]
    )
    late = (readme / "audit_late_time.md").read_text(encoding="utf-8")
    assert "## sigma=lemma12: the two flows" in late and "nothing to compare" in late  # the quick flow ends at 1e6
    lemmas = (readme / "audit_lemmas.md").read_text(encoding="utf-8")
    assert "## sigma=lemma12 (σ = 56.14)" in lemmas and "Lemma 12, from Lemma 9" in lemmas
    for name in FIGURES:
        assert (readme / f"{name}.png").read_bytes() == (workdir / f"results/figures/{name}.png").read_bytes()
    configs = " + ".join(f"{name} (sha256 {digest(workdir / name)})" for name in QUICK_CONFIGS)
    for page in pages.values():
        assert page.startswith(f"> From the run of {configs}, made with python ")
    body = pages["claims.md"].split("\n\n", 1)[1]  # after the header
    assert body == (workdir / "results/tables/claims.md").read_text(encoding="utf-8")  # the claims rule's page
    assert "## audit" in pages["audit.md"] and "| sigma=lemma12 |" in pages["audit.md"]

    again = snakemake(workdir, "--forcerun", "readme", "--", "readme")
    assert again.returncode == 0, again.stderr[-5000:]
    assert {name: (readme / name).read_text(encoding="utf-8") for name in pages} == pages
