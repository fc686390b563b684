"""Speculative-decoding maths against worked examples of Leviathan et al.'s formulas."""
import pytest

from space.judge import theory


def test_tau_worked_example():
    # 1 + 0.8 + 0.64 + 0.512 + 0.4096
    assert theory.expected_tokens_per_step(0.8, 4) == pytest.approx(3.3616)


def test_tau_edges():
    assert theory.expected_tokens_per_step(0.0, 4) == 1.0   # only the target's token
    assert theory.expected_tokens_per_step(1.0, 4) == 5.0   # all drafts + bonus
    assert theory.expected_tokens_per_step(0.5, 1) == pytest.approx(1.5)


@pytest.mark.parametrize("alpha", [0.0, 0.05, 0.3, 0.6, 0.8, 0.95, 0.999])
@pytest.mark.parametrize("gamma", [1, 2, 4, 7])
def test_alpha_round_trips_through_tau(alpha, gamma):
    tau = theory.expected_tokens_per_step(alpha, gamma)
    assert theory.alpha_from_acceptance_length(tau, gamma) == pytest.approx(alpha, abs=1e-9)


def test_alpha_inverse_clamps_out_of_range():
    assert theory.alpha_from_acceptance_length(0.7, 4) == 0.0
    assert theory.alpha_from_acceptance_length(1.0, 4) == 0.0
    assert theory.alpha_from_acceptance_length(5.0, 4) == 1.0
    assert theory.alpha_from_acceptance_length(9.0, 4) == 1.0


def test_vllm_rate_is_not_alpha():
    # alpha = 0.8, k = 4: vLLM reports (tau - 1) / k = 0.5904, not 0.8
    rate = theory.acceptance_rate_from_length(3.3616, 4)
    assert rate == pytest.approx(0.5904)
    assert theory.alpha_from_acceptance_length(1.0 + rate * 4, 4) == pytest.approx(0.8)


def test_ideal_speedup_worked_examples():
    assert theory.ideal_speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    assert round(theory.ideal_speedup(0.8, 4, 0.05), 3) == 2.801
    # alpha = 0.6, c = 0.5, gamma = 4: tau = 2.3056, cost 3 -> 0.769 < 1
    assert theory.ideal_speedup(0.6, 4, 0.5) == pytest.approx(2.3056 / 3)
    assert theory.ideal_speedup(0.6, 4, 0.5) < 1


def test_best_gamma_searches_integers():
    assert theory.best_gamma(0.6, 0.5) == (1, pytest.approx(1.6 / 1.5))
    g, s = theory.best_gamma(0.8, 0.05)
    assert g == 8 and s == pytest.approx(theory.ideal_speedup(0.8, 8, 0.05))
    assert all(theory.ideal_speedup(0.8, h, 0.05) <= s for h in range(1, 17))


def test_no_gamma_helps_when_alpha_not_above_c():
    for alpha, c in [(0.4, 0.5), (0.5, 0.5), (0.0, 0.01)]:
        assert theory.best_gamma(alpha, c)[1] <= 1.0


def test_break_even():
    assert theory.break_even_acceptance_length(4, 0.25) == 2.0
    # at the break-even tau the ideal speedup is exactly 1
    alpha = theory.alpha_from_acceptance_length(2.0, 4)
    assert theory.ideal_speedup(alpha, 4, 0.25) == pytest.approx(1.0)


def test_measured_cost_speedup():
    # 3.3616 tokens per 13 ms verify step (drafting inside), against 10 ms per baseline token
    assert theory.measured_cost_speedup(3.3616, 0.010, 0.013) == pytest.approx(0.033616 / 0.013)
    assert theory.measured_cost_speedup(2.0, 0.010, 0.020) == pytest.approx(1.0)
    assert theory.measured_break_even_acceptance_length(0.010, 0.013) == pytest.approx(1.3)


def test_proposer_share_speedup():
    assert theory.proposer_share_speedup(0.8, 4, 0.05) == pytest.approx(3.3616 * 0.95)
    assert theory.proposer_share_speedup(0.0, 4, 0.05) < 1


def test_repetition_share_loop_and_clean():
    loop = [1, 2, 3, 4] * 3
    assert theory.repetition_share(loop) == pytest.approx(8 / 12)
    assert theory.repetition_share(list(range(50))) == 0.0
    assert theory.repetition_share([]) == 0.0
    assert theory.repetition_share([7] * 10) == pytest.approx(9 / 10)
    # one repeated 4-gram inside otherwise fresh text covers its 4 tokens
    assert theory.repetition_share([1, 2, 3, 4, 9, 1, 2, 3, 4, 8]) == pytest.approx(4 / 10)


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        theory.expected_tokens_per_step(1.5, 4)
    with pytest.raises(ValueError):
        theory.expected_tokens_per_step(0.5, 0)
    with pytest.raises(ValueError):
        theory.ideal_speedup(0.5, 4, -0.1)
