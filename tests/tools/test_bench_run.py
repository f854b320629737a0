"""The whole-run benchmark (python -m tools.bench run) and the scheduler setting of the Snakefile
(onenn.plan.scheduling), without running the workflow; tests/workflow/test_bench_run.py runs it."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import pytest

from onenn.plan.scheduling import adjust_scheduler
from tests.configs import ROOT
from tools import bench

RULE = re.compile(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", re.DOTALL | re.MULTILINE)
BENCHMARK = re.compile(r'benchmark:\n\s+"benchmarks/([^"]+)"')


def benchmark_patterns() -> dict[str, str]:
    """Each rule's benchmark path under benchmarks/, read off workflow/rules/*.smk."""
    found = {}
    for smk in sorted((ROOT / "workflow/rules").glob("*.smk")):
        for rule in RULE.finditer(smk.read_text()):
            if pattern := BENCHMARK.search(rule[2]):
                found[rule[1]] = pattern[1]
    return found


def test_every_rule_has_a_benchmark_and_its_files_are_named_after_it():
    patterns = benchmark_patterns()
    rules = [r[1] for smk in sorted((ROOT / "workflow/rules").glob("*.smk")) for r in RULE.finditer(smk.read_text())]
    assert len(rules) > 10 and sorted(patterns) == sorted(rules)  # every rule of workflow/rules/ (not `all`)
    for rule, pattern in patterns.items():
        for test_set in ("train", "uniform"):  # binary_set's test sets (separated: binary_set_separated)
            path = pattern.replace("{test_set}", test_set)
            path = re.sub(r"\{\w+\}", "x1", path)
            assert bench.rule_of(PurePosixPath(path)) == rule, path


def write_benchmark(path: Path, rows: list[tuple[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    path.write_text(header + "".join(f"{s}\t0:00:01\t1\t1\t1\t1\t0\t0\t0\t{cpu}\n" for s, cpu in rows))


def test_rule_totals_sum_the_jobs_benchmark_files(tmp_path):
    write_benchmark(tmp_path / "train/convergence/N=16/seed0.tsv", [("10.5", "9.25")])
    write_benchmark(tmp_path / "train/convergence/N=16/seed1.tsv", [("11.5", "10.75")])
    write_benchmark(tmp_path / "evaluate/convergence/N=16/seed0.tsv", [("2.0", "NA")])
    write_benchmark(tmp_path / "summary.tsv", [("1.0", "0.5"), ("3.0", "1.5")])  # two repeats
    (tmp_path / "engine.md").write_text("not a job's benchmark")
    totals = bench.rule_totals(tmp_path)
    assert list(totals) == ["train", "summary", "evaluate"]  # by CPU, largest first
    assert (totals["train"].jobs, totals["train"].seconds, totals["train"].cpu_seconds) == (2, 22.0, 20.0)
    assert (totals["summary"].jobs, totals["summary"].seconds, totals["summary"].cpu_seconds) == (1, 4.0, 2.0)
    assert (totals["evaluate"].cpu_seconds, totals["evaluate"].unmeasured) == (0.0, 1)


def cells_of(text: str) -> dict[str, list[str]]:
    return {line.strip("| ").split(" | ")[0]: line.strip("| ").split(" | ") for line in text.splitlines()}


def test_the_table_adds_up():
    rules = {"train": bench.RuleTotals(2, 22.0, 20.0), "evaluate": bench.RuleTotals(1, 2.0, 0.0, 1)}
    usage = bench.RunUsage(
        wall=30.0, tree_user=36.0, tree_system=4.0, snakemake_user=3.0, snakemake_system=1.0, exit_status=0
    )
    text = bench.run_table(rules, usage)
    cells = cells_of(text)
    assert cells["whole run (process tree)"] == ["whole run (process tree)", "3", "30.0", "36.0", "4.0", "40.0", "100%"]
    assert cells["Snakemake process itself"][5:] == ["4.0", "10.0%"]
    assert cells["rule train"][1:] == ["2", "22.0", "", "", "20.0", "50.0%"]
    assert cells["rule evaluate (1 without cpu_time)"][1] == "1"
    assert cells["jobs' benchmarks, sum"][1:] == ["3", "24.0", "", "", "20.0", "50.0%"]
    assert cells["rest: job start-up, unsampled job CPU"][5:] == ["16.0", "40.0%"]  # 40 - 4 - 20
    summary = cells_of(bench.run_table(rules, None))  # no run: shares of the jobs' CPU
    assert "whole run (process tree)" not in summary and summary["part"][6] == "share of the jobs' CPU"
    assert summary["rule train"][6] == "100.0%" and summary["rule evaluate (1 without cpu_time)"][6] == "0.0%"


def test_the_targets():
    assert bench.snakemake_arguments("default", "2") == ["--cores", "2"]
    quick = bench.snakemake_arguments("quick", "all", ["--scheduler", "greedy"])
    assert quick == [
        "--cores",
        "all",
        "--scheduler",
        "greedy",
        "--configfile",
        "config.yaml",
        "workflow/presets/quick.yaml",
    ]
    paper = bench.snakemake_arguments("paper", "2")
    assert len([a for a in paper if a.startswith("results/tables/")]) == 6
    assert len([a for a in paper if a.startswith("results/figures/")]) == 12
    with pytest.raises(ValueError, match="target must be one of default, paper, quick"):
        bench.snakemake_arguments("all", "2")


def test_summarise_writes_the_table(tmp_path, capsys):
    write_benchmark(tmp_path / "run/benchmarks/tables/convergence.tsv", [("1.5", "1.25")])
    output = tmp_path / "out/run.md"
    bench.main(["run", "--summarise", str(tmp_path / "run"), "--output", str(output)])
    assert "| rule table | 1 | 1.5 |  |  | 1.2 | 100.0% |" in output.read_text()
    assert output.read_text() in capsys.readouterr().out + "\n"
    assert output.with_name("run.md.sha256").exists()  # written by onenn.base.io, atomically


def test_each_target_has_its_own_file_by_default(tmp_path, monkeypatch):
    names = {target: bench.parse(["run", "--target", target]).output.as_posix() for target in bench.TARGETS}
    assert names == {t: f"benchmarks/run-{t}.md" for t in ("default", "paper", "quick")}
    write_benchmark(tmp_path / "run/benchmarks/tables/convergence.tsv", [("1.5", "1.25")])
    monkeypatch.chdir(tmp_path)
    bench.main(["run", "--summarise", "run"])
    assert "| rule table | 1 | 1.5 |" in (tmp_path / "benchmarks/run-summary.md").read_text()


def test_a_run_records_the_load_average_it_started_under():
    assert "Load average 1.25 when the run started." in bench.report("t", {}, None, load=1.25)
    assert "Load average" not in bench.report("t", {}, None)


# --- the scheduler ----------------------------------------------------------------------------------------------


def scheduler_with(limit: str):
    from snakemake.scheduling.job_scheduler import JobRateLimiter
    from snakemake.settings.types import MaxJobsPerTimespan

    chosen = MaxJobsPerTimespan.parse_choice(limit)
    return SimpleNamespace(job_rate_limiter=JobRateLimiter(chosen)), SimpleNamespace(max_jobs_per_timespan=chosen)


def test_the_command_lines_default_rate_limit_is_dropped_and_a_chosen_one_kept():
    pytest.importorskip("snakemake")
    from snakemake.cli import get_argument_parser

    default = get_argument_parser().parse_args([]).max_jobs_per_timespan  # what `snakemake` alone sets
    scheduler, settings = SimpleNamespace(job_rate_limiter=object()), SimpleNamespace(max_jobs_per_timespan=default)
    assert adjust_scheduler(scheduler, settings).startswith("onenn: took effect") and scheduler.job_rate_limiter is None
    for chosen in ("50/1s", "100/1m", "1/1s"):
        scheduler, settings = scheduler_with(chosen)
        assert (
            adjust_scheduler(scheduler, settings).startswith("onenn: kept") and scheduler.job_rate_limiter is not None
        )
    assert adjust_scheduler(None, settings).startswith("onenn: did not take effect")  # a dry run builds no scheduler
    no_limit = SimpleNamespace(max_jobs_per_timespan=None)
    assert adjust_scheduler(SimpleNamespace(job_rate_limiter=None), no_limit).startswith("onenn: did not take effect")
