"""The per-variant jobs of the experiments beyond the paper (numpy and scipy): one audit sigma."""

from logging import Logger

from onenn.base.progress import EVERY
from onenn.jobs.columns import kind_function, save_kind_table
from onenn.plan.kinds import kind_named


def audit_job(settings: dict, *, identity: dict, output: str, log: Logger, progress_every: float = EVERY) -> None:
    """One sigma of an audit experiment: its trajectories (``onenn.theory.audit``) as a Parquet table.
    Progress lines (at most every ``progress_every`` s) go to the log only, never into the table."""
    from onenn.maths.family import XI_RATIO_BOUND
    from onenn.theory.audit import AuditSettings, run_audit

    s = AuditSettings.from_dict(settings)
    table = run_audit(s, log, progress_every=progress_every)
    info = {**identity, **{k: v for k, v in s.to_dict().items() if k != "sigma"}, "sigma_rule": str(s.sigma)}
    save_kind_table("audit", table, output, info)
    end = table[table["source"] == "population"].iloc[-1]
    message = "end (time %.3g): xi1=%.4g xi2=%.4g ratio=%.4f (7/15=%.4f) loss=%.4g"
    log.info(message, end["time"], end["xi1"], end["xi2"], end["xi_ratio"], XI_RATIO_BOUND, end["reduced_loss"])


def beyond_job(kind: str, settings: dict, *, identity: dict, output: str, log: Logger) -> None:
    """The per-variant job of a kind whose table comes from its variants (``audit``): its ``job``."""
    if kind_named(kind).table_source != "variants":
        raise ValueError(f"kind {kind!r} has no per-variant job: its table comes from {kind_named(kind).table_source}")
    kind_function(kind, "job")(settings, identity=identity, output=output, log=log)
