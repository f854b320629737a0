"""The audit and the landscape (onenn.theory.audit, landscape) and the audit statistics (onenn.analysis.tables)."""

import numpy as np
import pandas as pd
import pytest

from onenn.analysis.tables import audit_at_times, audit_summary, audit_trajectory
from onenn.jobs.beyond import beyond_job
from onenn.maths.family import XI_RATIO_BOUND
from onenn.maths.stream import numpy_generator
from onenn.theory.audit import AuditSettings, resolve_sigma, run_audit
from onenn.theory.landscape import LandscapeSettings, landscape
from onenn.theory.reduced.loss import reduced_loss
from onenn.theory.reduced.sampling import sample_inner_products


def test_resolve_sigma():
    assert resolve_sigma(3, 32, 8) == 3.0
    assert resolve_sigma("theorem1", 32, 8) == pytest.approx(16 * np.log(2))  # 2 log(256)
    assert resolve_sigma("lemma12", 32, 8) == pytest.approx(81 * np.log(2))  # 3 log(2^27)
    with pytest.raises(ValueError, match="sigma must be"):
        resolve_sigma("lemma9", 32, 8)


@pytest.fixture(scope="module")
def small_audit():
    s = AuditSettings(
        d=8,
        N=8,
        sigma=2.0,
        lr=0.5,
        steps=60,
        sample_time_end=1e4,
        time_end=1e8,
        n_plain=512,
        n_max=16,
        n_gap=16,
        t1_nodes=64,
        gap_nodes=16,
        third_nodes=2,  # the population rows at a coarse t3 (the default 8 doubles the fixture's cost)
        n_eval=10,
        seed=3,
    )
    table = run_audit(s)
    table["experiment"], table["variant"], table["sigma_rule"] = "audit", "sigma=2", "2.0"
    return table


def test_run_audit_has_every_source_and_consistent_columns(small_audit):
    assert set(small_audit["source"]) == {
        "gd", "flow", "continuation", "plain", "population", "population/2", "population_swap"
    }  # fmt: skip
    np.testing.assert_allclose(small_audit["xi_ratio"], small_audit["xi1"] / small_audit["xi2"])
    assert (small_audit["sigma"] == 2.0).all()
    np.testing.assert_allclose(small_audit["xi2_minus_xi1"], small_audit["xi2"] - small_audit["xi1"])
    gd = small_audit[small_audit["source"] == "gd"]
    assert gd["step"].iloc[0] == 0 and gd["step"].iloc[-1] == 60
    np.testing.assert_allclose(gd["time"], 0.5 * gd["step"])
    cont = small_audit[small_audit["source"] == "continuation"]
    assert cont["time"].iloc[0] == pytest.approx(30.0) and cont["time"].iloc[-1] == pytest.approx(1e4)
    pop = small_audit[small_audit["source"] == "population"]
    assert pop["time"].iloc[-1] == pytest.approx(1e8)
    np.testing.assert_allclose(pop["boundary"], 1 - pop["xi2"] / pop["xi1"])
    swap = small_audit[small_audit["source"] == "population_swap"]  # the seed swap: same times, to the sample's end
    for flow in (pop, swap):  # each flow has one row more: where xi1/xi2 rises through 7/15, found by the solver
        assert np.isclose(flow["xi_ratio"], XI_RATIO_BOUND, rtol=1e-9, atol=0).sum() == 1
    pop, swap = (f[~np.isclose(f["xi_ratio"], XI_RATIO_BOUND, rtol=1e-9, atol=0)] for f in (pop, swap))
    np.testing.assert_array_equal(swap["time"], pop["time"][pop["time"] <= 1e4])
    assert set(10.0 ** np.arange(9)) <= set(pop["time"])  # the pages' times, each computed there
    assert not np.allclose(swap["xi1"].iloc[1:], pop["xi1"].iloc[1 : len(swap)], rtol=1e-12, atol=0)
    # the continuation starts where GD ends
    assert cont["xi1"].iloc[0] == pytest.approx(gd["xi1"].iloc[-1], rel=1e-12)


def test_audit_summary_numbers(small_audit):
    from onenn.analysis.tables import crossing_time

    summary = audit_summary(small_audit).iloc[0]
    main = audit_trajectory(small_audit)
    assert summary["xi_ratio_end"] == pytest.approx(main["xi_ratio"].iloc[-1])
    assert summary["xi_ratio_max"] >= summary["xi_ratio_end"]
    assert summary["xi_ratio_bound"] == pytest.approx(7 / 15)
    assert summary["sigma"] == 2.0 and summary["sigma_rule"] == "2.0"
    # GD with lr = 0.5 over time 30 against the flow: an Euler gap, small but not zero
    assert 0 < summary["gd_flow_gap"] < 1e-2
    crossed = main[main["xi_ratio"] > XI_RATIO_BOUND]
    assert np.isnan(summary["time_cross"]) == crossed.empty
    if not crossed.empty:  # between the last recorded time below 7/15 and the first above it
        first = crossed["time"].iloc[0]
        before = main[(main["time"] < first) & (main["time"] > 0)]["time"].max()
        assert before <= summary["time_cross"] <= first
        half = small_audit[small_audit["source"] == "population/2"]
        swap = small_audit[small_audit["source"] == "population_swap"]
        changes = [abs(crossing_time(x) - summary["time_cross"]) for x in (half, swap)]
        assert summary["time_cross_error"] == pytest.approx(max(changes))
    at = audit_at_times(small_audit, [10.0, 1e3])
    assert list(at["time"]) == [10.0, 1e3] and (at["reduced_loss"] > 0).all()
    pop = small_audit[small_audit["source"] == "population"].set_index("time")
    assert at["xi1"].tolist() == pop.loc[[10.0, 1e3], "xi1"].tolist()  # the recorded values, bit for bit
    assert audit_at_times(small_audit, [12.345])["xi1"].isna().all()  # not recorded: not interpolated either


def test_landscape_matches_the_reduced_loss():
    s = LandscapeSettings(d=8, N=8, xi1_range=(0.0, 4.0), xi2_range=(1.0, 3.0), grid=3, prompts=500, seed=2)
    table = landscape(s)
    assert len(table) == 9 and sorted(table["xi1"].unique()) == [0.0, 2.0, 4.0]
    t = sample_inner_products(500, 8, 8, numpy_generator(2, "landscape"))  # the landscape's stream (method.md §4.4)
    row = table[(table["xi1"] == 4.0) & (table["xi2"] == 2.0)].iloc[0]
    assert row["reduced_loss"] == pytest.approx(reduced_loss(4.0, 2.0, t), rel=1e-12)


def test_beyond_job_rejects_unknown_kind(tmp_path):
    with pytest.raises(ValueError, match="kind must be one of"):
        beyond_job("trian", {}, identity={}, output=str(tmp_path / "x.parquet"), log=None)
    with pytest.raises(ValueError, match="kind 'train' has no per-variant job: its table comes from runs"):
        beyond_job("train", {}, identity={}, output=str(tmp_path / "x.parquet"), log=None)
    with pytest.raises(ValueError, match="unknown audit settings"):
        AuditSettings.from_dict({"K": 3})


def test_audit_resolution_compares_each_level_with_the_next_finer(small_audit):
    from onenn.analysis.audit_pages import resolution_page
    from onenn.analysis.tables import audit_resolution

    res = audit_resolution(small_audit, times=[1e4, 1e6, 1e12])
    assert list(res["source"].unique()) == ["population", "population/2", "population_swap"]
    at = res[res["time"] == 1e6].set_index("source")
    fine = small_audit[small_audit["source"] == "population"]
    half = small_audit[small_audit["source"] == "population/2"]
    expected = [
        float(np.interp(np.log(1e6), np.log(p["time"][p["time"] > 0]), p["xi_ratio"][p["time"] > 0]))
        for p in (fine, half)
    ]
    assert at.loc["population", "xi_ratio"] == pytest.approx(expected[0])
    assert at.loc["population/2", "xi_ratio_change"] == pytest.approx(abs(expected[0] - expected[1]) / expected[1])
    assert np.isnan(at.loc["population", "xi_ratio_change"])
    assert res[res["time"] == 1e12]["xi_ratio"].isna().all()  # beyond the flows' end (1e8)
    page = resolution_page(res)
    assert "| sigma=2 | 1e+06 | 1/2 |" in page and "sigma=2 at t = 1e+06 (half the nodes):" in page
    verdicts = [line for line in page.splitlines() if line.startswith("- sigma=2 at t = ")]
    within = sum("NOT within" not in line for line in verdicts)
    assert f"{within} of {len(verdicts)} comparisons within their tolerance:" in page  # the answer, before the table
    assert page.index(verdicts[-1]) < page.index("| sigma=2 | 1e+04 |")


def test_audit_resolution_compares_the_seed_swap_with_the_main_flow(small_audit):
    from onenn.analysis.audit_pages import EARLY_TOLERANCE, resolution_page
    from onenn.analysis.tables import audit_resolution

    res = audit_resolution(small_audit, times=[1e2, 1e4, 1e6])
    assert list(res["source"].unique()) == ["population", "population/2", "population_swap"]
    at = res[res["time"] == 1e2].set_index("source")
    logs = {}
    for name in ("population", "population_swap"):
        p = small_audit[(small_audit["source"] == name) & (small_audit["time"] > 0)]
        logs[name] = float(np.interp(np.log(1e2), np.log(p["time"]), p["xi_ratio"]))
    change = abs(logs["population"] - logs["population_swap"]) / logs["population_swap"]
    assert at.loc["population_swap", "xi_ratio_change"] == pytest.approx(change)
    assert at.loc["population_swap", "nodes_divisor"] == 1
    assert res[(res["source"] == "population_swap") & (res["time"] == 1e6)]["xi_ratio"].isna().all()  # past 1e4
    page = resolution_page(res)
    assert "| sigma=2 | 1e+02 | all, seed swap |" in page
    tolerance = ", ".join(f"{q} {tol:g}" for q, tol in EARLY_TOLERANCE.items())
    assert "sigma=2 at t = 1e+02 (half the nodes and the seed swap): " in page and f"({tolerance})" in page
    assert "sigma=2 at t = 1e+06 (half the nodes): " in page


def test_crossing_time_interpolates_in_log_time():
    from onenn.analysis.tables import crossing_time

    # xi1/xi2 = 0.1 at t = 10 and 0.6 at t = 1000, linear in log t between: 7/15 at a share (7/15 - 0.1)/0.5 of it
    part = pd.DataFrame({"time": [0.0, 10.0, 1000.0, 1e4], "xi1": [0.0, 0.1, 0.6, 0.8], "xi2": 1.0})
    share = (7 / 15 - 0.1) / 0.5
    assert crossing_time(part) == pytest.approx(10.0 * 100.0**share)
    assert np.isnan(crossing_time(part.assign(xi1=0.2)))


@pytest.mark.parametrize(
    ("value", "error", "digits"),
    [(1264.0, 4.0, 4), (1264.0, 40.0, 3), (1264.0, 400.0, 2), (1264.0, 4000.0, 1), (29840.0, 0.0, 6), (0.5, 0.002, 3)],
)
def test_significant_digits_stop_at_the_errors_first_digit(value, error, digits):
    from onenn.analysis.tables import significant_digits

    assert significant_digits(value, error) == digits


def test_the_audit_markdown_has_the_resolution_table(small_audit):
    from onenn.analysis.audit_pages import audit_markdown
    from onenn.analysis.summary import audit_table_summary

    rows = audit_table_summary(small_audit)
    rows["experiment"] = "audit"
    text = "\n".join(audit_markdown(rows))
    assert "The resolution test" in text and "| sigma=2 | 1/2 of the nodes per variable |" in text
    assert "| sigma=2 | mass beyond r |" in text


def test_the_audit_summary_carries_the_late_time_check(small_audit):
    """``loss * xi1`` at the end, its limit ``C(N, d)`` and the stuck mass's share ``1/2 F(r)^N xi1`` there."""
    from onenn.theory.reduced.late_time import asymptote

    row = audit_summary(small_audit).iloc[0]
    assert row["loss_xi1_end"] == pytest.approx(row["reduced_loss_end"] * row["xi1_end"], rel=1e-12)
    assert row["asymptote"] == pytest.approx(asymptote(8, 8), rel=1e-12)
    assert row["stuck_loss_xi1_end"] == pytest.approx(0.5 * row["stuck_mass_end"] * row["xi1_end"], rel=1e-12)
