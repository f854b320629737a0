"""The paper's claims as data: read ``workflow/claims.yaml`` and check it before any job runs (docs/claims.md), each
problem by its key path, names against a catalogue of the run's and the repository's configs. No torch, no pandas."""

import functools
from pathlib import Path
from typing import Any

import yaml

from onenn.base.claim import Claim, ClaimPoint, Quantity
from onenn.base.columns import METRICS
from onenn.plan import experiments as ex
from onenn.plan.kinds import KINDS as ALL_KINDS
from onenn.plan.validate import ConfigError, Problem, StrictValidator, load_schema, schema_error_problems
from onenn.plan.validate import unknown as unknown_name

#: kind train: besides the metrics measured on a test set (``test_set`` required), the columns of the run's weights
RUN_COLUMNS = ("minibatch_loss", "xi1", "xi2", "dist_family", "dist_family_active", "label_norm")
#: kind scaling: the estimated quantities (each with its standard error ``{column}_se``) and the point's columns
SCALING_COLUMNS = ("ratio", "L_MC", "L_bin")
SCALING_KEYS = ("panel", "K", "xi1", "xi2")
#: the settings a training experiment's variants differ in (``by`` of a constant check)
TRAIN_BY = ("K", "N", "d", "epsilon", "noise_blocks", "loss", "c", "sigma", "lr", "batch", "steps", "delta")
#: the kinds of experiment the scorecard reads (``Kind.scored``)
SCORED_KINDS = tuple(kind.name for kind in ALL_KINDS.values() if kind.scored)
#: checks that compare with a value of the paper, and checks that judge our numbers alone
VALUE_CHECKS = ("equal", "below", "above", "share")
ORDER_CHECKS = ("increasing", "decreasing")
#: checks that read the whole series of saved steps (no ``step``, no ``of``): the fall, and the slope per decade
SERIES_CHECKS = ("decays", "flat", "rising", "falling")


#: ``unknown variant 'x'; did you mean 'y'? (known: ...)``
unknown = functools.partial(unknown_name, known="known")
Catalogue = dict[str, dict[str, Any]]


def catalogue(*configs: dict) -> Catalogue:
    """Experiment -> its kind, variant names and panels, over every config given (the first one's kind wins)."""
    out: Catalogue = {}
    for config in configs:
        for name, exp in (config.get("experiments") or {}).items():
            entry = out.setdefault(name, {"kind": exp["kind"], "variants": [], "panels": []})
            found = list((exp.get("panels") or {}) if exp["kind"] == "scaling" else ex.variants(config, name))
            key = "panels" if exp["kind"] == "scaling" else "variants"
            entry[key] += [v for v in found if v not in entry[key]]
    return out


def reference_configs(config: dict, repository_config: str | Path) -> list[dict]:
    """The run's config and, where it exists, the repository's ``config.yaml``: what claims may name."""
    path = Path(repository_config)
    return [config] + ([yaml.safe_load(path.read_text())] if path.is_file() else [])


def quantity_problems(path: tuple, kind: str, quantity: dict, check: str) -> list[Problem]:
    """The column exists in the kind's table; the options fit the column and the check."""
    at = (*path, "quantity")
    column = quantity["column"]
    if kind == "scaling":
        problems = [] if column in SCALING_COLUMNS else [unknown((*at, "column"), "column", column, SCALING_COLUMNS)]
        one_row = "kind scaling has one row per point: only `column` applies"
        keys = ("test_set", "step", "of", "divide_by", "time")
        return problems + [Problem((*at, key), one_row) for key in keys if key in quantity]
    columns = METRICS + RUN_COLUMNS
    if column not in columns:
        return [unknown((*at, "column"), "column", column, list(columns))]
    problems = []
    if column in METRICS and "test_set" not in quantity:
        message = f"missing; {column!r} is measured on a test set (uniform, separated)"
        problems.append(Problem((*at, "test_set"), message))
    if column in RUN_COLUMNS and "test_set" in quantity:
        problems.append(Problem((*at, "test_set"), f"{column!r} is a property of the weights, not of a test set"))
    if "over" in quantity and (column not in RUN_COLUMNS or quantity["over"] not in RUN_COLUMNS):
        message = f"`over` divides one column of the weights by another: both of {', '.join(RUN_COLUMNS)}"
        problems.append(Problem((*at, "over"), message))
    if "over" in quantity and "divide_by" in quantity:
        problems.append(Problem((*at, "over"), "give `over` or `divide_by`, not both"))
    if ("at_least" in quantity) != (check == "share"):
        problems.append(Problem((*at, "at_least"), "check `share` and `at_least` (what a seed must reach) go together"))
    of_steps = quantity.get("of", "value") != "value"  # the first and the last step, not one
    if of_steps and "step" in quantity:
        problems.append(Problem((*at, "step"), f"`of: {quantity['of']}` uses the first and the last step; drop `step`"))
    if check in SERIES_CHECKS and ("step" in quantity or of_steps):
        problems.append(Problem(at, f"check `{check}` reads the whole series of saved steps: no `step`, no `of`"))
    if quantity.get("time", "steps") == "rescaled" and (check in SERIES_CHECKS or "step" in quantity or of_steps):
        message = "`time: rescaled` reads one value per seed at a common rescaled time: no `step`, "
        problems.append(Problem((*at, "time"), message + f"no `of`, and a check other than {', '.join(SERIES_CHECKS)}"))
    return problems


def point_problems(path: tuple, kind: str, points: list, entry: dict[str, Any]) -> list[Problem]:
    """Variants (kind train) and ``where`` selections (kind scaling) that the catalogue knows."""
    problems = []
    for i, point in enumerate(points):
        at = (*path, "points", i)
        point = {"variant": point} if isinstance(point, str) else point
        if kind == "train":
            if "where" in point or "variant" not in point:
                problems.append(Problem(at, "kind train: a point is a variant name (or a mapping with `variant`)"))
            elif point["variant"] not in entry["variants"]:
                problems.append(unknown((*at, "variant"), "variant", point["variant"], entry["variants"]))
            continue
        if "variant" in point or "where" not in point:
            problems.append(Problem(at, "kind scaling: a point is a mapping with `where` (panel, K, xi1, xi2)"))
            continue
        for key, value in point["where"].items():
            if key not in SCALING_KEYS:
                problems.append(unknown((*at, "where", key), "column", key, list(SCALING_KEYS)))
            elif key == "panel" and value not in entry["panels"]:
                problems.append(unknown((*at, "where", key), "panel", value, entry["panels"]))
    return problems


def option_problems(path: tuple, kind: str, claim: dict) -> list[Problem]:
    """The check's options: a value at every point for equal, below and above (no other); ``by`` for constant."""
    check = claim["check"]
    given = [(path, claim)] + [((*path, "points", i), p) for i, p in enumerate(claim["points"]) if isinstance(p, dict)]
    problems = []
    if check not in VALUE_CHECKS:
        problems += [Problem((*at, "value"), f"check {check!r} takes no value") for at, p in given if "value" in p]
    elif "value" not in claim and not all(isinstance(p, dict) and "value" in p for p in claim["points"]):
        problems.append(Problem((*path, "value"), f"missing; check {check!r} compares with a value"))
    for at, p in given:
        if p.get("value") == "reference" and kind != "scaling":
            problems.append(Problem((*at, "value"), "`reference` is a column of kind scaling's table only"))
        for key in ("spread", "baseline"):
            if key in p and check != "equal":
                problems.append(Problem((*at, key), f"only check 'equal' takes a {key}"))
    if "resolution" in claim and check not in (*VALUE_CHECKS, "flat"):
        problems.append(Problem((*path, "resolution"), f"check {check!r} takes no value, so no resolution"))
    if check in ORDER_CHECKS and len(claim["points"]) < 2:
        problems.append(Problem((*path, "points"), f"check {check!r} orders points: give at least two"))
    allowed = SCALING_KEYS if kind == "scaling" else TRAIN_BY  # the columns ``by`` may group the points by
    if "by" in claim and check != "constant":
        problems.append(Problem((*path, "by"), "only check 'constant' groups its points"))
    elif "by" in claim and claim["by"] not in allowed:
        problems.append(unknown((*path, "by"), "column", claim["by"], list(allowed)))
    return problems


def versus_problems(path: tuple, kind: str, claim: dict, entry: dict[str, Any]) -> list[Problem]:
    """``versus`` names a variant of the same experiment (kind train), not one of the claim's points."""
    if "versus" not in claim:
        return []
    at, versus = (*path, "versus"), claim["versus"]
    if kind != "train":
        return [Problem(at, "kind train only: a variant whose same-seed values are subtracted")]
    if versus not in entry["variants"]:
        return [unknown(at, "variant", versus, entry["variants"])]
    if claim["check"] in (*ORDER_CHECKS, "decays", "constant"):
        return [Problem(at, f"check {claim['check']!r} does not compare with another variant")]
    if versus in [p if isinstance(p, str) else p.get("variant") for p in claim["points"]]:
        return [Problem(at, f"{versus!r} is also a point of the claim")]
    return []


def claim_problems(i: int, claim: dict, known: Catalogue) -> list[Problem]:
    path = ("claims", i)
    name = claim["experiment"]
    if claim.get("source", "paper") == "paper" and "figure" not in claim:
        return [Problem((*path, "figure"), "missing; a claim of the paper names its figure (1-6)")]
    if name not in known:
        return [unknown((*path, "experiment"), "experiment", name, list(known))]
    kind = known[name]["kind"]
    if kind not in SCORED_KINDS:
        return [Problem((*path, "experiment"), f"{name!r} has kind {kind!r}; the scorecard reads kinds {SCORED_KINDS}")]
    if bool(claim.get("post_hoc", False)) != ("post_hoc_reason" in claim):
        return [Problem((*path, "post_hoc"), "`post_hoc: true` and `post_hoc_reason` go together")]
    if claim["quantity"].get("divide_by") and kind != "train":
        return [Problem((*path, "quantity", "divide_by"), "kind scaling: the ratio is already per K")]
    return (
        quantity_problems(path, kind, claim["quantity"], claim["check"])
        + point_problems(path, kind, claim["points"], known[name])
        + option_problems(path, kind, claim)
        + versus_problems(path, kind, claim, known[name])
    )


def problem_order(problem: Problem) -> tuple:
    """By claim (in file order), then by key path."""
    return (str(problem.path[0]), problem.path[1] if len(problem.path) > 1 else -1, problem.location, problem.message)


def check_claims(data: Any, known: Catalogue, schema: dict) -> list[Problem]:
    """Every problem of the claims file's contents (empty when it is valid), sorted by key path."""
    validator = StrictValidator(schema)
    problems = [p for e in validator.iter_errors(data) for p in schema_error_problems(validator, e)]
    seen: dict[str, int] = {}
    for i, claim in enumerate(data["claims"]) if not problems else ():  # read only what the schema accepts
        if claim["id"] in seen:
            message = f"{claim['id']!r} is already the id of claims[{seen[claim['id']]}]"
            problems.append(Problem(("claims", i, "id"), message))
        seen.setdefault(claim["id"], i)
        problems += claim_problems(i, claim, known)
    return sorted(set(problems), key=problem_order)


#: the claim's keys that are the ``Claim``'s fields as written (the others default to the ``Claim``'s defaults)
AS_WRITTEN = ("id", "paper", "experiment", "check", "by", "note", "source", "reason", "untested", "versus")


def to_claim(claim: dict, known: Catalogue, paper_test_size: int, paper_test_sizes: tuple[int, ...]) -> Claim:
    inherited = {key: claim[key] for key in ("value", "spread", "baseline") if key in claim}  # a point overrides them
    return Claim(
        **{key: claim[key] for key in AS_WRITTEN if key in claim},
        figure=int(claim.get("figure", 0)),
        kind=known[claim["experiment"]]["kind"],
        quantity=Quantity(**claim["quantity"]),
        points=tuple(ClaimPoint(**inherited | ({"variant": p} if isinstance(p, str) else p)) for p in claim["points"]),
        resolution=float(claim.get("resolution", 0.0)),
        paper_test_size=paper_test_size,
        paper_test_sizes=paper_test_sizes,
        post_hoc=claim["post_hoc_reason"] if claim.get("post_hoc") else "",
    )


def load_claims(path: str | Path, known: Catalogue, schema_path: str | Path) -> list[Claim]:
    """The claims of ``path``; raise ``ConfigError`` naming every problem by its key path."""
    data = yaml.safe_load(Path(path).read_text())
    problems = check_claims(data, known, load_schema(schema_path))
    if problems:
        raise ConfigError(problems, [path], "claims file")
    assumed = data.get("paper_test_size") or {}
    sizes = tuple(int(n) for n in assumed.get("range", ()))
    return [to_claim(c, known, int(assumed.get("prompts", 0)), sizes) for c in data["claims"]]


def claim_experiments(claims_file: str | Path, known: Catalogue, schema: str | Path, config: dict) -> list[str]:
    """The experiments the claims read that this run has, in the order of the claims: the claims rule's tables.
    Checks the claims file first (``ConfigError``), so a bad claim stops the plan before any job."""
    claims = load_claims(claims_file, known, schema)
    return [e for e in dict.fromkeys(c.experiment for c in claims) if e in config["experiments"]]
