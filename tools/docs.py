"""The generated docs: ``python -m tools.docs numbers`` writes README.md's "In numbers" block from the committed
benchmarks and scorecard, ``columns`` docs/columns.md from ``onenn.jobs.columns``; ``--check``: exit 1 if stale."""

import argparse
import itertools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from onenn.analysis.verdict import VERDICTS  # the verdicts the scorecard counts, in its order

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- numbers: begin -->", "<!-- numbers: end -->"
FULL, QUICK, CLAIMS = "benchmarks/run-default.md", "benchmarks/run-quick.md", "results/readme/claims.md"
NUMBERS, COLUMNS = "python -m tools.docs numbers", "python -m tools.docs columns"
PAGE = "docs/columns.md"
#: what the column of a package's version means (onenn.base.provenance), the package in its place
VERSION = "the installed version of {} (`not installed` where it is not)"
#: the words with which the scorecard names the rows its chance count takes in (onenn.analysis.scorecard)
COUNTED = "Counted: the level tests (checks equal and constant) with a spread on our side"
NAMED = (
    " Those counts of tests take in only the level tests whose values have a spread, not the post-hoc rows; the "
    "scorecard names them."
)
MACHINE = re.compile(
    r"^Machine: (?P<machine>.+), Python (?P<python>\S+)\. Written (?P<date>\d{4}-\d{2}-\d{2})[ \d:]*\."
    r"(?: Load average (?P<load>[\d.]+) when the run started\.)?",
    re.MULTILINE,
)
#: the whole run's row of a table that `tools.bench run` writes
WHOLE = re.compile(
    r"^\| whole run \(process tree\) \| (?P<jobs>\d+) \| (?P<wall>[\d.]+) \| [\d.]+ \| [\d.]+ \| (?P<cpu>[\d.]+) \|",
    re.MULTILINE,
)
TALLY = re.compile(r"(?P<verdict>[a-z][a-z ]*?) (?P<count>\d+)(?:,|\.|$)")
CHANCE = re.compile(
    r"Chance: (?P<m>\d+) of these rows are tests at the (?P<level>[\d.]+)% level; .*?"
    r"chance alone would make (?P<expected>[\d.]+) of them fail on average .*?; "
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
    tests: int | None = None  # rows that are tests at a level
    level: str | None = None
    expected: float | None = None  # failures expected by chance alone
    differs: int | None = None
    p: str | None = None  # probability of that many or more by chance alone


def read(root: Path, name: str) -> str:
    if not (root / name).is_file():
        raise NumbersError(f"{name} is missing: the README's numbers are read from it")
    return (root / name).read_text(encoding="utf-8")


def run_benchmark(root: Path, name: str) -> RunBenchmark:
    """The machine and the whole run's wall time and CPU of a table written by ``tools.bench run``."""
    text = read(root, name)
    if "the run is not complete" in text:
        raise NumbersError(f"{name} is the benchmark of a run that did not complete: rerun python -m tools.bench run")
    if not (found := MACHINE.search(text)):
        raise NumbersError(f"{name} has no 'Machine: ..., Python x.y.z. Written YYYY-MM-DD ...' line")
    if not (whole := WHOLE.search(text)):
        raise NumbersError(f"{name} has no row '| whole run (process tree) | jobs | wall | user | system | CPU |'")
    load = None if found["load"] is None else float(found["load"])
    jobs, wall, cpu = int(whole["jobs"]), float(whole["wall"]), float(whole["cpu"])
    return RunBenchmark(name, found["machine"].strip(), found["python"], found["date"], load, jobs, wall, cpu)


def tally(line: str, what: str, paragraph: str) -> Tally:
    """The verdict counts of ``line`` and the chance count of ``paragraph``, which must name its rows."""
    counts = {m["verdict"]: int(m["count"]) for m in TALLY.finditer(line)}
    if tuple(counts) != VERDICTS:
        raise NumbersError(f"{CLAIMS}: {what} does not count {', '.join(VERDICTS)} in that order: {line!r}")
    if not (found := CHANCE.search(paragraph)):
        return Tally(counts)
    if COUNTED not in paragraph:
        raise NumbersError(f"{CLAIMS}'s chance count does not name its rows: rerun snakemake --cores all readme")
    m, level, expected, differs, p = found.group("m", "level", "expected", "differs", "p")
    return Tally(counts, int(m), level, float(expected), int(differs or 0), p)


def scorecard(root: Path) -> tuple[str, Tally, Tally | None]:
    """The run the scorecard names, the tally of the paper's claims and of our own rows (None if it has none)."""
    text = read(root, CLAIMS)
    if not (run := re.search(r"^> From the run of (?P<run>.+?) \(sha256", text, re.MULTILINE)):
        raise NumbersError(f"{CLAIMS} has no '> From the run of ...' header: rerun snakemake --cores all readme")
    papers = ours = None
    paragraphs = [p.strip() for p in text.split("\n\n")] + [""]
    for paragraph, following in itertools.pairwise(paragraphs):
        if paragraph.startswith("Verdicts on the paper's claims:"):
            papers = tally(paragraph.split(":", 1)[1].strip(), "the paper's verdicts", following)
        elif paragraph.startswith("Our own rows:"):
            ours = tally(paragraph.split(":", 1)[1].split(". ", 1)[0].strip() + ".", "our own rows", paragraph)
    if papers is None:
        raise NumbersError(f"{CLAIMS} has no 'Verdicts on the paper's claims: ...' paragraph")
    return run["run"], papers, ours


def timing(run: RunBenchmark) -> str:
    wall, cpu = (f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s" for s in (run.wall, run.cpu))
    return f"{wall} of wall time and {cpu} of CPU ({run.jobs} jobs)"


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
        f"{t.expected:.2f} fail their level test: {observed}{p}"
    )


def block(root: Path = ROOT) -> str:
    """The lines between the markers (without them)."""
    full, quick = run_benchmark(root, FULL), run_benchmark(root, QUICK)
    run, papers, ours = scorecard(root)
    same = f"the same machine ([{quick.path}]({quick.path}), {quick.date})"
    return (
        f"<!-- written by `{NUMBERS}` from {FULL}, {QUICK} and {CLAIMS}: rerun it rather than edit -->\n"
        f"**In numbers.** The full run at the paper's scale (`snakemake --cores all`, no GPU) took "
        f"{timing(full)} on {machine(full)}; the quick run, {timing(quick)} on "
        f"{same if full.machine == quick.machine else machine(quick)}. "
        f"The scorecard of the run of {run} ([{CLAIMS}]({CLAIMS})): of the paper's {sum(papers.counts.values())} "
        f"claims, {counts(papers)}{chance_clause(papers)}."
        + (f" Our own {sum(ours.counts.values())} rows: {counts(ours)}{chance_clause(ours)}." if ours else "")
        + (NAMED if papers.tests is not None else "")
    )


def rewrite(readme: str, new: str) -> str:
    """``readme`` with the lines between the markers replaced by ``new``."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.index(BEGIN) > readme.index(END):
        raise NumbersError(f"README.md should hold {BEGIN} once, then {END} once")
    head, rest = readme.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{new}\n{END}{rest.split(END, 1)[1]}"


def current(readme: str) -> str:
    """The lines between the markers now."""
    return readme.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def page() -> str:
    """docs/columns.md: a section per table (``onenn.jobs.columns``), each column described once, in the first
    section that has it, and named in the later ones; settings and packages' versions by name."""
    from onenn.base import paths
    from onenn.base.columns import setting_description
    from onenn.jobs.columns import descriptions

    run, table, variant = (f"`{p}`" for p in (paths.RUN_METRICS, paths.TABLE, paths.VARIANT_TABLE))
    concatenated = f"the experiment's {table} concatenates its %s'"
    tables = (  # (name in onenn.jobs.columns, title, where the table is)
        ("train", "A training run's table (`train`)", f"{run}, a row per saved step and test set; {concatenated % 'runs'}"),
        ("binary", "A binary run's table (`binary`)", f"{run}, a row per saved step and prompt set; {concatenated % 'runs'}"),
        ("scaling", "The scaling identity's table (`scaling`)", f"{table}, a row per panel, point `(ξ1, ξ2)` and `K`"),
        ("audit", "The audit's table (`audit`)", f"{variant}, a row per trajectory and recorded time; {concatenated % 'variants'}"),
        ("landscape", "The landscape's table (`landscape`)", f"{table}, a row per grid point"),
        ("summary", "The headline table", f"`{paths.SUMMARY_TABLE}`, a row per experiment, variant and quantity"),
        ("claims", "The scorecard", f"`{paths.CLAIMS_TABLE}`, a row per claim ([claims.md](claims.md))"),
    )  # fmt: skip
    packages = [f"`{c}`" for c, m in descriptions(tables[0][0]).items() if m == VERSION.format(c)]
    lines = [
        "# The tables' columns",
        "",
        f"Written by `{COLUMNS}` from the code that defines the columns: rerun it rather than edit this page.",
        "Read a table with `pandas.read_parquet`; the names are the glossary's ([method.md §8](method.md#8-glossary)),",
        "and each table carries these descriptions in its Parquet schema",
        '(`pyarrow.parquet.read_schema(path).field(column).metadata[b"description"]`). A table also carries the',
        "settings of its run or job, each named and described by its key in `workflow/schemas/config.schema.yaml`",
        "([guide.md](guide.md#configuration)), and every table but the scorecard carries the installed version of",
        f"each package ({', '.join(packages)}; `not installed` where it is not).",
        "",
    ]
    first: dict[tuple[str, str], str] = {}  # (column, meaning) -> the table whose section describes it
    for name, title, where in tables:
        before: dict[str, list[str]] = {}
        own, settings, versions = [], [], []
        for column, meaning in descriptions(name).items():
            if meaning == setting_description(column):
                settings.append(f"`{column}`")
            elif meaning == VERSION.format(column):
                versions.append(f"`{column}`")
            elif (column, meaning) in first:
                before.setdefault(first[column, meaning], []).append(f"`{column}`")
            else:
                first[column, meaning] = name
                own.append(f"- `{column}`: {meaning}")
        lines += [f"## {title}", "", f"{where}.", ""]
        lines += [f"As in `{table}`: {', '.join(columns)}." for table, columns in before.items()]
        lines += ["", *own, ""] if before else [*own, ""]
        lines += [f"Its settings: {', '.join(settings)}.", ""] if settings else []
        lines += [f"Its packages' versions: {', '.join(versions)}.", ""] if versions and versions != packages else []
    return "\n".join(lines)


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__.split("\n")[0])
    parser.add_argument("page", choices=("numbers", "columns"), help="README.md's numbers, or docs/columns.md")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale; write nothing")
    args = parser.parse_args(argv)
    name, command = ("README.md", NUMBERS) if args.page == "numbers" else (PAGE, COLUMNS)
    path = root / name
    old = path.read_text(encoding="utf-8") if path.exists() else None
    new = rewrite(old or "", block(root)) if args.page == "numbers" else page()
    if args.check and new != old:
        print(f"{name} is stale: run `{command}`", file=sys.stderr)
        return 1
    if not args.check and new != old:
        path.write_text(new, encoding="utf-8")
    if args.page == "numbers" and not args.check:
        print(current(new))
    return 0


if __name__ == "__main__":
    sys.exit(main())
