"""The report states what the runs recorded: after a quick run of one experiment, a report without the quick
preset is refused, naming the experiment, the setting, its recorded and configured values and the remedy; with
the preset, the caption states the run's settings and that they are not the paper's scale."""

import subprocess
import sys

import pytest

from tests.configs import FULL, QUICK, load_config
from tests.workflow.helpers import copy_workflow, report_data

TARGET = "results/figures/landscape.png"  # the cheapest figure: two jobs


def snakemake(workdir, *args, configfiles=QUICK):
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", *args, TARGET, "--configfile", *configfiles]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def landscape_run(tmp_path_factory):
    workdir = copy_workflow(tmp_path_factory.mktemp("landscape"))
    done = snakemake(workdir)
    assert done.returncode == 0, done.stderr[-3000:]
    return workdir


def test_a_report_without_the_runs_config_is_refused_naming_the_mismatch(landscape_run):
    quick, full = (load_config(*c)["experiments"]["landscape"] for c in (QUICK, FULL))
    assert quick["prompts"] != full["prompts"]
    done = snakemake(landscape_run, "--report", "report.html", configfiles=FULL)
    assert done.returncode != 0 and not (landscape_run / "report.html").exists()
    message = " ".join(done.stderr.split())
    assert f"experiments.landscape, variant default: its table records prompts = {quick['prompts']}" in message
    assert f"the config says {full['prompts']}" in message
    assert "Pass the --configfile the run was made with" in message and " ".join(QUICK) in message


def test_the_report_of_a_quick_run_states_its_settings_and_that_it_is_not_the_papers_scale(landscape_run):
    quick, full = (load_config(*c)["experiments"]["landscape"] for c in (QUICK, FULL))
    done = snakemake(landscape_run, "--report", "report.html")
    assert done.returncode == 0, done.stderr[-3000:]
    entry = report_data((landscape_run / "report.html").read_text(), "results")[TARGET]
    assert f"grid {quick['grid']}, prompts {quick['prompts']}" in entry["caption"]
    scale = f"not the paper's: grid {quick['grid']} (the paper's {full['grid']}), prompts {quick['prompts']}"
    scale += f" (the paper's {full['prompts']})"
    assert "<strong>Scale</strong>, against the paper's (the repository's" in entry["caption"]
    assert f"{scale}." in entry["caption"] and entry["labels"]["scale"] == scale
    page = (landscape_run / "report.html").read_text()  # the report's front page says it too
    assert "<strong>Scale</strong>: not the paper's: the settings of landscape" in page
