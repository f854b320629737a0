"""The README's numbers, read from the files the workflow and the benchmarks write, never typed by hand.

    python -m tools.readme_numbers           # rewrite README.md's block between the two markers
    python -m tools.readme_numbers --check   # exit 1 (and say so) if the block is not what it would write now

It reads ``benchmarks/run-default.md`` and ``benchmarks/run-quick.md`` (``python -m tools.bench_run``: the whole
run's wall time and CPU, and the machine they name) and ``results/readme/claims.md`` (``snakemake --cores all
readme``: the scorecard's verdict counts and its chance line), and rewrites the lines of README.md between
``<!-- numbers: begin -->`` and ``<!-- numbers: end -->``. ``tests/repo/test_readme_numbers.py`` fails when a new
benchmark or scorecard is committed without rerunning it.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "<!-- numbers: begin -->"
END = "<!-- numbers: end -->"
FULL = "benchmarks/run-default.md"
QUICK = "benchmarks/run-quick.md"
CLAIMS = "results/readme/claims.md"
#: the verdicts the scorecard counts, in its order (onenn.analysis.scorecard.VERDICTS)
VERDICTS = ("agrees", "agrees in direction", "differs", "not run")
COMMAND = "python -m tools.readme_numbers"

MACHINE = re.compile(
    r"^Machine: (?P<machine>.+), Python (?P<python>\S+)\. Written (?P<date>\d{4}-\d{2}-\d{2})[ \d:]*\."
    r"(?: Load average (?P<load>[\d.]+) when the run started\.)?",
    re.MULTILINE,
)
TALLY = re.compile(r"(?P<verdict>[a-z][a-z ]*?) (?P<count>\d+)(?:,|\.|$)")
CHANCE = re.compile(
    r"Chance: (?P<m>\d+) of these rows are tests at the (?P<level>[\d.]+)% level; .*?"
    r"chance alone would make (?P<expected>[\d.]+) of them read \*differs\* on average .*?; "
    r"(?:none does\.|(?P<differs>\d+) do; the probability of \d+ or more by chance alone is (?P<p>[\d.e+-]+)\.)"
)


class NumbersError(ValueError):
    """A file the README's numbers come from is missing, incomplete or not in the format its writer writes."""


@dataclass(frozen=True)
class RunBenchmark:
    path: str
    machine: str
    python: str
    date: str
    load: float | None
    jobs: int
    wall: float  # seconds
    cpu: float  # seconds, the whole process tree


@dataclass(frozen=True)
class Tally:
    counts: dict[str, int]
    tests: int | None  # rows that are tests at a level
    level: str | None
    expected: float | None  # differs expected by chance alone
    differs: int | None
    p: str | None  # probability of that many or more by chance alone
    named: bool = False  # the page names the rows it counts (level tests with a spread, not post-hoc)

    @property
    def rows(self) -> int:
        return sum(self.counts.values())


def read(root: Path, name: str) -> str:
    path = root / name
    if not path.is_file():
        raise NumbersError(f"{name} is missing: the README's numbers are read from it")
    return path.read_text(encoding="utf-8")


def table_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of ``text`` (separator rows left out)."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("|") and line.endswith("|") and not re.fullmatch(r"\|[\s|:-]*\|", line):
            rows.append([cell.strip() for cell in line[1:-1].split("|")])
    return rows


def run_benchmark(root: Path, name: str) -> RunBenchmark:
    """The machine and the whole run's wall time and CPU of a table written by ``tools.bench_run``."""
    text = read(root, name)
    if "the run is not complete" in text:
        raise NumbersError(f"{name} is the benchmark of a run that did not complete: rerun python -m tools.bench_run")
    found = MACHINE.search(text)
    if not found:
        raise NumbersError(f"{name} has no 'Machine: ..., Python x.y.z. Written YYYY-MM-DD ...' line")
    rows = table_rows(text)
    if not rows:
        raise NumbersError(f"{name} has no table")
    header = rows[0]
    for column in ("part", "jobs", "wall s", "CPU s"):
        if column not in header:
            raise NumbersError(f"{name}'s table has no column {column!r}: {header}")
    whole = [r for r in rows[1:] if r[header.index("part")] == "whole run (process tree)"]
    if len(whole) != 1:
        raise NumbersError(f"{name}'s table has {len(whole)} 'whole run (process tree)' rows, not one")
    cells = dict(zip(header, whole[0], strict=True))
    try:
        jobs, wall, cpu = int(cells["jobs"]), float(cells["wall s"]), float(cells["CPU s"])
    except ValueError as error:
        raise NumbersError(f"{name}'s whole-run row is not numbers: {whole[0]}") from error
    load = found["load"]
    return RunBenchmark(
        name, found["machine"].strip(), found["python"], found["date"], None if load is None else float(load),
        jobs, wall, cpu,
    )  # fmt: skip


def tally(line: str, what: str) -> dict[str, int]:
    counts = {m["verdict"]: int(m["count"]) for m in TALLY.finditer(line)}
    if tuple(counts) != VERDICTS:
        raise NumbersError(f"{CLAIMS}: {what} does not count {', '.join(VERDICTS)} in that order: {line!r}")
    return counts


def chance(text: str) -> dict:
    found = CHANCE.search(text)
    if not found:
        return {"tests": None, "level": None, "expected": None, "differs": None, "p": None}
    return {
        "tests": int(found["m"]),
        "level": found["level"],
        "expected": float(found["expected"]),
        "differs": int(found["differs"] or 0),
        "p": found["p"],
        "named": COUNTED in text,
    }


def scorecard(root: Path) -> tuple[str, Tally, Tally | None]:
    """The run the scorecard names, the tally of the paper's claims and of our own rows (None if it has none)."""
    text = read(root, CLAIMS)
    run = re.search(r"^> From the run of (?P<run>.+?) \(sha256", text, re.MULTILINE)
    if not run:
        raise NumbersError(f"{CLAIMS} has no '> From the run of ...' header: rerun snakemake --cores all readme")
    papers = ours = None
    paragraphs = [p.strip() for p in text.split("\n\n")]
    for i, paragraph in enumerate(paragraphs):
        if paragraph.startswith("Verdicts on the paper's claims:"):
            following = paragraphs[i + 1] if i + 1 < len(paragraphs) else ""
            papers = Tally(tally(paragraph.split(":", 1)[1].strip(), "the paper's verdicts"), **chance(following))
        elif paragraph.startswith("Our own rows:"):
            head = paragraph.split(":", 1)[1].split(". ", 1)[0] + "."
            ours = Tally(tally(head.strip(), "our own rows"), **chance(paragraph))
    if papers is None:
        raise NumbersError(f"{CLAIMS} has no 'Verdicts on the paper's claims: ...' paragraph")
    return run["run"], papers, ours


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def timing(run: RunBenchmark) -> str:
    return f"{minutes(run.wall)} of wall time and {minutes(run.cpu)} of CPU ({run.jobs} jobs)"


def machine(run: RunBenchmark) -> str:
    load = "" if run.load is None else f", load average {run.load:.2f} at the start"
    return f"{run.machine} (Python {run.python}{load}; [{run.path}]({run.path}), {run.date})"


def counts(t: Tally) -> str:
    return ", ".join(f"{verdict} {t.counts[verdict]}" for verdict in VERDICTS)


def chance_clause(t: Tally) -> str:
    if t.tests is None:
        return ""
    observed = "none does" if not t.differs else "1 does" if t.differs == 1 else f"{t.differs} do"
    p = f" (the probability of {t.differs} or more by chance alone: {t.p})" if t.differs and t.p else ""
    return (
        f"; the page counts {t.tests} of them as tests at the {t.level}% level, of which chance alone would make "
        f"{t.expected:.2f} read *differs*: {observed}{p}"
    )


#: the words with which a scorecard names the rows its chance count takes in (one that does counts only level
#: tests with a spread, not post-hoc; one written before counted every row of a level check)
COUNTED = "Counted: the level tests (checks equal and constant) with a spread on our side"
#: what the chance counts of a scorecard that does not name its rows are not
CHANCE_CAVEAT = (
    " Those counts of tests take in rows that chance cannot make read *differs* (slope and one-sided checks, rows "
    "with no spread), so the chance figures are not the chance rates they appear to be."
)


#: what the chance counts of a scorecard that names its rows are
NAMED = (
    " Those counts of tests take in only the level tests whose values have a spread, not the post-hoc rows; the "
    "scorecard names them."
)


def block(root: Path = ROOT) -> str:
    """The lines between the markers (without them)."""
    full, quick = run_benchmark(root, FULL), run_benchmark(root, QUICK)
    run, papers, ours = scorecard(root)
    same = full.machine == quick.machine
    lines = [
        f"<!-- written by `{COMMAND}` from {FULL}, {QUICK} and {CLAIMS}: rerun it rather than edit -->",
        f"**In numbers.** The full run at the paper's scale (`snakemake --cores all`, no GPU) took "
        f"{timing(full)} on {machine(full)}; the quick run, {timing(quick)} on "
        f"{f'the same machine ([{quick.path}]({quick.path}), {quick.date})' if same else machine(quick)}. "
        f"The scorecard of the run of {run} ([{CLAIMS}]({CLAIMS})): of the paper's {papers.rows} "
        f"claims, {counts(papers)}{chance_clause(papers)}."
        + (f" Our own {ours.rows} rows: {counts(ours)}{chance_clause(ours)}." if ours else "")
        + (CHANCE_CAVEAT if papers.tests is not None and not papers.named else "")
        + (NAMED if papers.tests is not None and papers.named else ""),
    ]
    return "\n".join(lines)


def rewrite(readme: str, new: str) -> str:
    """``readme`` with the lines between the markers replaced by ``new``."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.index(BEGIN) > readme.index(END):
        raise NumbersError(f"README.md should hold {BEGIN} once, then {END} once")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{new}\n{END}{tail}"


def current(readme: str) -> str:
    """The lines between the markers now."""
    return readme.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md's block is stale; write nothing")
    args = parser.parse_args(argv)
    path = root / "README.md"
    readme = path.read_text(encoding="utf-8")
    new = rewrite(readme, block(root))
    if args.check:
        if new != readme:
            print(f"README.md's numbers are stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if new != readme:
        path.write_text(new, encoding="utf-8")
    print(current(new))
    return 0


if __name__ == "__main__":
    sys.exit(main())
