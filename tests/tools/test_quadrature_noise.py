"""The quadrature-noise tool: its prototype estimator integrates the same law as the package's quadrature, and the
tool writes its table."""

import math

import numpy as np
import pytest

from onenn.theory.reduced import population as pop
from tools.quadrature_noise import D, N, main, one_draw, t3_integrated


def test_at_xi1_zero_both_estimators_give_the_exact_loss():
    # at xi1 = 0 every context score is 0: q_j = 1/Z with Z = N + e^{-xi2} for every prompt, and the loss
    # 1/2 ((Z - 1)^2 + N - 1) / Z^2 does not depend on the inner products; both estimators' weights sum to one
    xi2 = 1.5
    z = N + math.exp(-xi2)
    exact = 0.5 * ((z - 1) ** 2 + N - 1) / z**2
    q = pop.quadrature(N, D, 32, 16, 0)
    assert one_draw(0.0, xi2, q)[0] == pytest.approx(exact, rel=1e-12)
    assert t3_integrated(0.0, xi2, q, seed=0)[0] == pytest.approx(exact, rel=1e-12)


def test_the_t3_rule_integrates_the_law_of_the_third_nearest():
    # y uniform on (0, 1) and t3 = F^{-1}(F(t2) y^{1/(N-2)}): the Gauss-Legendre weights in y sum to 1, and
    # E[y^{1/(N-2)}] = (N-2)/(N-1), which the 8-node rule integrates to its error (the integrand is smooth in y)
    y, w = np.polynomial.legendre.leggauss(8)
    y, w = (y + 1) / 2, w / 2
    assert w.sum() == pytest.approx(1.0, rel=1e-14)
    assert w @ y ** (1 / (N - 2)) == pytest.approx((N - 2) / (N - 1), rel=1e-3)


def test_the_tool_writes_its_table(tmp_path, capsys):
    out = tmp_path / "noise.md"
    main(["--quick", "--output", str(out)])
    text = out.read_text()
    assert text == capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("| 1e+")]
    assert len(rows) == 4  # two times, two estimators
    assert all(float(row.split("|")[6]) >= 0 for row in rows)
