"""Progress lines of long loops (onenn.base.progress): the ETA arithmetic on a fake clock (no real timing, no
sleeps), the lines a job's log gets, and that progress changes no number and is silent by default."""

import logging
import math

import numpy as np
import pandas as pd
import pytest

from onenn.base.io import save_arrays
from onenn.base.progress import FlowProgress, ProgressBar, StepProgress, both, duration, group, per_second, step_line
from onenn.jobs.beyond import audit_job
from onenn.jobs.train import binary_train_job, train_job
from onenn.maths.prompts import make_binary_set
from onenn.theory.reduced.dynamics import gradient_descent, gradient_flow
from onenn.theory.reduced.sampling import sample_inner_products
from onenn.training.binary import BinarySettings, train_binary
from onenn.training.train import TrainSettings, train

IDENTITY = {"experiment": "e", "variant": "v", "seed": "0"}


class FakeClock:
    """Seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Loss:
    """A loss that counts how often it is read: a reporter reads it only for a line it writes."""

    def __init__(self, value: float) -> None:
        self.value, self.reads = value, 0

    def __float__(self) -> float:
        self.reads += 1
        return self.value


def test_step_lines_give_the_mean_rate_since_the_first_line_and_the_eta_of_the_steps_left():
    clock, lines = FakeClock(), []
    progress = StepProgress(lines.append, every=10.0, clock=clock)
    calls = [  # (time, step): the first line at once, then one every 10 s at most, and the last step's
        (1.0, 16),
        (6.0, 200_000),  # 5 s after the first line: not due
        (11.0, 400_016),  # 400 000 steps in 10 s since the first line: 40 000 steps/s, 599 984 steps left
        (15.0, 500_000),
        (21.0, 800_016),
        (22.0, 1_000_000),  # the end: written whatever the time
    ]
    losses = [Loss(x) for x in (0.5, 0.4, 0.3, 0.2, 0.1, 0.01234567)]
    for (now, step), loss in zip(calls, losses, strict=True):
        clock.now = now
        progress(step, 1_000_000, loss)
    assert lines == [
        "step 16/1000000 (0%), minibatch loss 0.5",
        "step 400016/1000000 (40%), minibatch loss 0.3, 40 000 steps/s, ETA 15 s",
        "step 800016/1000000 (80%), minibatch loss 0.1, 40 000 steps/s, ETA 5 s",
        "step 1000000/1000000 (100%), minibatch loss 0.01235, 47 618 steps/s, ETA 0 s",
    ]
    assert [loss.reads for loss in losses] == [1, 0, 1, 0, 1, 1]
    progress(1_000_000, 1_000_000, 0.0)  # the end is written once
    assert len(lines) == 4


def test_an_interval_of_zero_writes_every_call_and_a_prefix_and_loss_name_start_each_line():
    clock, lines = FakeClock(), []
    progress = StepProgress(lines.append, every=0.0, clock=clock, prefix="gd: ", loss_name="loss")
    for step in (10, 20, 30):
        clock.now = step / 10
        progress(step, 30, 0.25)
    assert lines == [
        "gd: step 10/30 (33%), loss 0.25",
        "gd: step 20/30 (66%), loss 0.25, 10 steps/s, ETA 1 s",
        "gd: step 30/30 (100%), loss 0.25, 10 steps/s, ETA 0 s",
    ]


def test_no_time_passed_gives_no_rate_rather_than_a_division_by_zero():
    lines = []
    progress = StepProgress(lines.append, every=0.0, clock=lambda: 5.0)
    progress(1, 3, 1.0)
    progress(2, 3, 1.0)
    assert lines == ["step 1/3 (33%), minibatch loss 1", "step 2/3 (66%), minibatch loss 1"]
    with pytest.raises(ValueError, match="every"):
        StepProgress(lines.append, every=-1.0)


def test_flow_lines_extrapolate_the_largest_share_seen_and_count_the_evaluations():
    clock, lines = FakeClock(), []
    progress = FlowProgress(lines.append, every=10.0, clock=clock, prefix="population 64 x 32: ")
    for now, time, share in [(0.0, 0.0, 0.0), (4.0, 1e3, 0.3), (10.0, 1e2, 0.25), (20.0, 1e8, 0.8)]:
        clock.now = now
        progress(time, 1e10, share)  # at 10 s the solver tried a point behind the 30% it had reached
    clock.now = 21.0
    progress(1e10, 1e10, 1.0)
    assert lines == [
        "population 64 x 32: t = 0 of 1e+10 (0%), 1 evaluation",
        # 30% in 10 s: 3%/s, 70% left
        "population 64 x 32: t = 100 of 1e+10 (30%), 3 evaluations, 0.2 evaluations/s, ETA 23 s",
        "population 64 x 32: t = 1e+08 of 1e+10 (80%), 4 evaluations, 0.15 evaluations/s, ETA 5 s",
        "population 64 x 32: t = 1e+10 of 1e+10 (100%), 5 evaluations, 0.19 evaluations/s, ETA 0 s",
    ]


def test_numbers_and_durations_are_readable():
    assert group(41_300.4) == "41 300" and group(7) == "7" and group(1_234_567) == "1 234 567"
    assert [duration(s) for s in (0, 21.4, 59.6, 185, 3600, 7620)] == [
        "0 s",
        "21 s",
        "1 min 00 s",
        "3 min 05 s",
        "1 h 00 min",
        "2 h 07 min",
    ]
    assert duration(math.inf) == "unknown"
    assert [per_second(r) for r in (41_300.4, 100, 12.54, 0.2)] == ["41 300", "100", "12.5", "0.2"]
    assert step_line(5, 10, 0.5, 0.0) == "step 5/10 (50%), minibatch loss 0.5, 0 steps/s, ETA unknown"


class Lines(logging.Handler):
    """The messages a logger gets."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def log():
    logger = logging.getLogger("onenn.test_progress")
    logger.setLevel(logging.INFO)
    handler = Lines()
    logger.addHandler(handler)
    yield logger
    logger.removeHandler(handler)


def progress_lines(logger: logging.Logger, prefix: str = "step ") -> list[str]:
    return [m for m in logger.handlers[0].messages if m.startswith(prefix)]


def test_a_training_job_logs_the_first_and_the_last_progress_line(tmp_path, log):
    s = TrainSettings(d=3, N=4, K=3, batch=8, steps=40, n_eval=3, seed=1)  # blocks of 16: 16, 32, 40
    paths = {"weights_path": str(tmp_path / "w.npz"), "run_path": str(tmp_path / "run.json")}
    train_job(s.to_dict(), identity=IDENTITY, threads=1, log=log, progress_every=0.0, **paths)
    lines = progress_lines(log)
    assert [line.split(" (")[0] for line in lines] == ["step 16/40", "step 32/40", "step 40/40"]
    loss = np.load(tmp_path / "w.npz")["minibatch_loss"]
    assert lines[0] == f"step 16/40 (40%), minibatch loss {loss[15]:.4g}"
    assert lines[-1].startswith(f"step 40/40 (100%), minibatch loss {loss[39]:.4g}, ")
    assert lines[-1].endswith(" steps/s, ETA 0 s")


def test_a_binary_training_job_logs_the_first_and_the_last_progress_line(tmp_path, log):
    s = BinarySettings(d=3, N=4, epochs=3, batch=8, train_size=20, n_eval=2)  # 2 + 1 steps an epoch
    save_arrays(tmp_path / "train.npz", **make_binary_set("train", 20, s.d, s.N, s.labels, None, 0))
    paths = {"weights_path": str(tmp_path / "w.npz"), "run_path": str(tmp_path / "run.json")}
    binary_train_job(
        s.to_dict(), identity=IDENTITY, train_path=str(tmp_path / "train.npz"), threads=1, log=log,
        progress_every=0.0, **paths,
    )  # fmt: skip
    lines = progress_lines(log)
    assert [line.split(" (")[0] for line in lines] == [f"step {t}/9" for t in (2, 3, 5, 6, 8, 9)]
    assert lines[-1].endswith(" steps/s, ETA 0 s")


def test_an_audit_job_logs_progress_for_each_stage(tmp_path, log):
    settings = {
        "N": 8, "sigma": 2.0, "lr": 0.5, "steps": 20, "sample_time_end": 1e3, "time_end": 1e5, "n_plain": 128,
        "n_max": 8, "n_gap": 8, "t1_nodes": 64, "gap_nodes": 16, "third_nodes": 2, "n_eval": 5,
    }  # fmt: skip
    audit_job(settings, identity={"experiment": "a", "variant": "sigma=2"}, output=str(tmp_path / "a.parquet"),
              log=log, progress_every=0.0)  # fmt: skip
    messages = log.handlers[0].messages
    for stage in (
        "gd: step 20/20 (100%)",
        "flow: t = ",
        "continuation: t = ",
        "plain: t = ",
        "population 64 x 16 x 2: t",
    ):
        assert any(m.startswith(stage) for m in messages), stage
    assert any(m.startswith("population/2 32 x 8 x 1: t = 1e+05 of 1e+05 (100%)") for m in messages)
    assert any(m.startswith("gd: step 1/20 (5%), loss ") for m in messages)
    assert not pd.read_parquet(tmp_path / "a.parquet").empty


def test_progress_changes_no_number_and_the_library_is_silent_by_default(tmp_path, capsys, caplog):
    caplog.set_level(logging.DEBUG, logger="onenn")
    s = TrainSettings(d=3, N=4, K=3, batch=8, steps=40, n_eval=3, seed=2)
    calls = []
    quiet, reported = train(s), train(s, progress=lambda step, steps, loss: calls.append((step, steps, float(loss))))
    for name in ("saved_steps", "W", "minibatch_loss"):
        assert quiet[name].tobytes() == reported[name].tobytes(), name
    assert calls == [(t, 40, reported["minibatch_loss"][t - 1]) for t in (16, 32, 40)]

    b = BinarySettings(d=3, N=4, epochs=2, batch=8, train_size=16, n_eval=2)
    train_set = make_binary_set("train", 16, b.d, b.N, b.labels, None, 0)
    quiet, reported = train_binary(b, train_set), train_binary(b, train_set, progress=lambda *args: None)
    for name in ("saved_steps", "W", "minibatch_loss"):
        assert quiet[name].tobytes() == reported[name].tobytes(), name

    t = sample_inner_products(64, 8, 4, np.random.default_rng(0))
    gd_calls, flow_calls = [], []
    quiet = gradient_descent(0.0, 2.0, 0.5, 10, t, 4)
    reported = gradient_descent(0.0, 2.0, 0.5, 10, t, 4, progress=lambda *a: gd_calls.append(a))
    assert np.array_equal(quiet.xi1, reported.xi1) and np.array_equal(quiet.loss, reported.loss)
    assert [c[0] for c in gd_calls] == list(range(1, 11)) and gd_calls[0][2] == pytest.approx(quiet.loss[0])
    quiet = gradient_flow(0.0, 2.0, 0.0, 100.0, t, 4)
    reported = gradient_flow(0.0, 2.0, 0.0, 100.0, t, 4, progress=lambda *a: flow_calls.append(a))
    assert np.array_equal(quiet.xi1, reported.xi1) and np.array_equal(quiet.xi2, reported.xi2)
    assert flow_calls[-1] == (100.0, 100.0, 1.0) and all(0 <= share < 1 for _, _, share in flow_calls[:-1])

    assert capsys.readouterr() == ("", "") and not [r for r in caplog.records if r.name.startswith("onenn")]


def test_a_progress_bar_counts_the_steps_shows_the_loss_and_closes_at_the_end():
    bar = ProgressBar("run", 40)
    assert bar.bar in type(bar.bar)._instances
    bar(16, 40, Loss(0.5))
    assert (bar.bar.n, bar.bar.total) == (16, 40) and "minibatch loss 0.5" in bar.bar.postfix
    bar(40, 40, Loss(0.25))
    assert bar.bar.n == 40 and "minibatch loss 0.25" in bar.bar.postfix
    assert bar.bar not in type(bar.bar)._instances  # closed at the last step


def test_both_calls_each_reporter_and_none_is_the_first_alone():
    calls = []
    first = lambda *args: calls.append(("first", args))
    assert both(first, None) is first
    both(first, lambda *args: calls.append(("second", args)))(3, 9, 0.5)
    assert calls == [("first", (3, 9, 0.5)), ("second", (3, 9, 0.5))]


def test_the_api_bar_moves_with_the_steps_and_changes_no_number(capsys):
    import onenn

    shown = onenn.train(d=3, N=4, batch=8, steps=40, n_eval=3, seeds=1, device="cpu")
    bar = capsys.readouterr().err
    assert "api default seed 0" in bar and "100%" in bar and "minibatch loss" in bar
    silent = onenn.train(d=3, N=4, batch=8, steps=40, n_eval=3, seeds=1, device="cpu", progress=False)
    assert capsys.readouterr() == ("", "")
    for name in ("saved_steps", "W", "minibatch_loss"):
        assert getattr(shown.run(0), name).tobytes() == getattr(silent.run(0), name).tobytes(), name


def test_a_flow_bar_shows_the_largest_share_in_percent_and_closes_at_the_end():
    bar = ProgressBar("flow", 100, "%")
    for time, share in [(1.0, 0.3), (0.5, 0.25), (1e3, 0.555)]:  # at t = 0.5 the solver tried a point behind 30%
        bar.flow(time, 1e6, share)
    assert (bar.bar.n, bar.bar.total) == (55, 100) and "t = 1e+03 of 1e+06" in bar.bar.postfix
    bar.flow(1e6, 1e6, 1.0)
    assert bar.bar.n == 100 and bar.bar not in type(bar.bar)._instances


def test_the_api_evaluate_and_population_flow_draw_a_bar_and_change_no_number(capsys):
    import onenn

    result = onenn.train(d=3, N=4, batch=8, steps=40, n_eval=3, seeds=2, device="cpu", progress=False)
    flow = {"N": 8, "d": 4, "time_end": 1e3, "t1_nodes": 32, "gap_nodes": 8, "third_nodes": 4}
    shown = onenn.evaluate(result), onenn.population_flow(2.0, **flow)
    bars = capsys.readouterr().err
    assert "evaluate api default: 100%" in bars and " 2/2 " in bars and "seed 1" in bars
    assert "population flow to t = 1e+03: 100%" in bars and "t = 1e+03 of 1e+03" in bars
    silent = onenn.evaluate(result, progress=False), onenn.population_flow(2.0, **flow, progress=False)
    assert capsys.readouterr() == ("", "")
    for a, b in zip(shown, silent, strict=True):
        pd.testing.assert_frame_equal(a, b)
