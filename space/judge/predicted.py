"""The speedup a group's acceptance predicts, beside the measured one (pure): at
temperature 0 acceptance counts are exact whatever else runs on the machine; timings
are not.
"""
from __future__ import annotations

from dataclasses import dataclass

from space.judge.curves import LOOKUP_METHODS, TippingCurve
from space.judge.dynamic_k import plain_step_s, step_model_speedup, verify_step_s
from space.records.verdict import PREDICTED_MEASURED, Checklist


@dataclass
class Predicted:
    speedup: float
    source: str        # where the step costs come from
    from_curve: bool = False  # the step costs were measured once, alone (a tipping curve)


def predict(tau: float | None, k: int | None, method: str | None, concurrency: int,
            curve: TippingCurve | None, checklist: Checklist | None,
            drafted: float | None = None) -> Predicted | None:
    """The group's predicted speedup (dynamic_k.step_model_speedup), or None without
    acceptance or step costs; ``drafted``: f, the share of steps that drafted (None:
    every step did). The step costs come from the tipping curve cached for the pair and
    k (measured once, with many repeats), else from the run's own step medians."""
    if tau is None or not k:
        return None
    f = 1.0 if drafted is None else drafted
    if curve is not None and (costs := curve.costs_at(concurrency)) is not None:
        lookup = str(method) in LOOKUP_METHODS
        return Predicted(step_model_speedup(tau, costs.decode_step_s,
                                            verify_step_s(costs, curve.k, k, lookup),
                                            plain_step_s(costs, lookup), f),
                         f"the tipping curve {curve.label} ({curve.kind}, {curve.date[:10]})",
                         from_curve=True)
    if checklist is not None:
        line = next((c for c in checklist.checks if c.name == PREDICTED_MEASURED), None)
        if line is not None and isinstance(line.value, int | float) and line.value > 0:
            # The line is tau x decode / verify: in units of a decode step, verify is
            # tau / line; a plain step is taken as one decode step.
            return Predicted(step_model_speedup(tau, 1.0, tau / float(line.value), 1.0, f),
                             "this run's step medians (as noisy as the run)")
    return None


def advice(predicted: Predicted | None, ci: tuple[float, float] | None,
           busy: bool | None) -> str | None:
    """Which figure to believe when the prediction falls outside the measured interval;
    ``busy`` None: not recorded."""
    if predicted is None or ci is None or ci[0] <= predicted.speedup <= ci[1]:
        return None
    return f"measured {ci[0]:.2f}-{ci[1]:.2f}x, predicted {predicted.speedup:.2f}x: " + {
        True: "believe the predicted figure: this machine was busy, so the timings "
              "are not comparable, while acceptance is exact",
        None: "believe the measured figure if the machine was quiet (not recorded "
              "here), the predicted one if it was busy",
        False: "believe the measured figure: the machine was quiet, and it holds what "
               "the step model leaves out (prefill, scheduling, the steps' own spread)"}[busy]
