"""The workflow used as a Snakemake module of another (``module onenn: snakefile: ...``, as snakedeploy deploys
one): it plans the whole run and runs a job from the other workflow's folder."""

import shutil

from tests.configs import ROOT
from tests.workflow.helpers import snakemake

MAIN = f"""configfile: "config.yaml"


module onenn:
    snakefile:
        "{ROOT / "Snakefile"}"
    config:
        config


use rule * from onenn
"""


def test_the_workflow_runs_as_a_module_of_another(tmp_path):
    (tmp_path / "Snakefile").write_text(MAIN)
    shutil.copy(ROOT / "config.yaml", tmp_path)
    (tmp_path / "workflow/presets").mkdir(parents=True)  # the quick preset, as the other workflow's own file
    shutil.copy(ROOT / "workflow/presets/quick.yaml", tmp_path / "workflow/presets")
    plan = snakemake(tmp_path, "-n")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "rule train:" in plan.stdout and "rule beyond:" in plan.stdout
    done = snakemake(tmp_path, "--", "results/tables/landscape.parquet")  # "--": the --configfile list ends
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "results/tables/landscape.parquet.sha256").is_file()
