"""The quadrature-noise tool: its estimators integrate the same law as the package's quadrature, and it writes its
table."""

import math

import pytest

from onenn.theory.reduced import population as pop
from tools.quadrature_noise import D, N, main, no_control_variates, one_draw, package


def test_at_xi1_zero_every_estimator_gives_the_exact_loss():
    # at xi1 = 0 every context score is 0: q_j = 1/Z with Z = N + e^{-xi2} for every prompt, and the loss
    # 1/2 ((Z - 1)^2 + N - 1) / Z^2 does not depend on the inner products; each estimator's weights sum to one
    xi2 = 1.5
    z = N + math.exp(-xi2)
    exact = 0.5 * ((z - 1) ** 2 + N - 1) / z**2
    q = pop.quadrature(N, D, 32, 16, 0, third_nodes=2)
    for estimate in (package(0.0, xi2, q), no_control_variates(0.0, xi2, q), one_draw(0.0, xi2, q, seed=0)):
        assert estimate[0] == pytest.approx(exact, rel=1e-12)


def test_the_tool_writes_its_table(tmp_path, capsys):
    out = tmp_path / "noise.md"
    text = main(["--quick", "--output", str(out)])
    assert out.read_text() == text == capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("| 1e+")]
    assert len(rows) == 6  # two times, three estimators
    assert all(float(row.split("|")[6]) >= 0 for row in rows)
