"""The speedup predicted from acceptance beside the measured one, and the busy-machine
flag (space/judge/predicted.py, space/observe/busy.py), on hand-made results."""
from __future__ import annotations

import pytest

from space.judge.curves import StepCosts, TippingCurve
from space.judge.predicted import Predicted, predict
from space.judge.traffic import answer, busy_used, describe
from space.observe.busy import BUSY_SHARE, GPU_BUSY_SHARE, Busy, Meter, gpu_others
from space.observe.memory import nvml_module
from space.records.verdict import SPEEDUP
from tests.helpers.traffic import item


def test_predicted_from_the_curve_or_the_runs_own_steps():
    curve = TippingCurve("measured", "m", "ngram", None, 4, "cpu", "0", "2026-12-04",
                         step_costs=[StepCosts(1, 0.010, 0.015, 0.001)])
    assert predict(3.0, 4, "ngram", 1, curve, None).speedup == pytest.approx(2.0)
    assert predict(3.0, 4, "ngram", 4, curve, None) is None  # no costs at 4, no checklist
    assert predict(None, 4, "ngram", 1, curve, None) is None  # no acceptance: no prediction
    r = answer("t", "how", [item("a", 1, 2.0), item("a", 2, 1.8)], {}, None, repeats=1,
               max_tokens=8)
    g = r.groups[0]
    assert g.predicted is not None and g.predicted.source.startswith("this run's step")
    assert g.row()["predicted_speedup"] == g.predicted.speedup


def test_a_busy_machine_is_flagged_and_the_prediction_is_believed():
    r = answer("t", "how", [item("a", 1, 2.0), item("a", 2, 1.8)], {}, None, repeats=1,
               max_tokens=8)
    g = r.groups[0]
    assert g.predicted is not None and g.figures is not None and g.figures.ci is not None
    g.predicted = Predicted(0.5, "the tipping curve x")  # far under the measured interval
    r.mark_busy(Busy(0.1, 10.0, 2, 0.005).to_dict())
    assert "this machine was busy" not in describe(r)
    assert g.advice is not None and "believe the measured figure" in g.advice
    r.mark_busy(Busy(12.0, 10.0, 2, 0.6).to_dict())
    text = describe(r)
    assert "this machine was busy: other processes used 60% of its CPU time" in text
    assert "believe the predicted figure" in g.advice and g.advice in text
    assert r.summary()["busy"]["busy"] is True and 0 < BUSY_SHARE < 1
    g.predicted = Predicted(sum(g.figures.ci) / 2, "x")  # inside: nothing to say
    r.mark_busy(None)
    assert g.advice is None
    g.predicted = Predicted(0.5, "x")
    r.mark_busy(None)  # not recorded: both ways said
    assert g.advice is not None and "if the machine was quiet (not recorded here)" in g.advice


def test_the_meter_reads_other_processes_cpu_time():
    busy = Meter().start().stop()
    assert busy is not None and busy.other_cpu_s >= 0 and busy.cpus >= 1
    assert Meter().stop() is None  # never started


class _Sample:
    def __init__(self, pid: int, stamp: int, sm: int) -> None:
        self.pid, self.timeStamp, self.smUtil = pid, stamp, sm


class _Nvml:
    """NVML's process samples as pynvml returns them (a pure unit: no GPU here)."""
    NVML_ERROR_NOT_FOUND = 6

    def __init__(self, samples=None, error=None) -> None:
        self.samples, self.error = samples, error

    def nvmlDeviceGetProcessUtilization(self, handle, since_us):
        if self.error is not None:
            raise self.error
        return self.samples


class _NvmlError(Exception):
    def __init__(self, value: int) -> None:
        self.value = value


def test_the_gpus_other_processes_from_nvmls_samples():
    own = {100, 101}  # this process and its engine core
    samples = [_Sample(100, 1, 60), _Sample(200, 1, 30), _Sample(101, 2, 50),
               _Sample(200, 2, 10), _Sample(300, 2, 0)]
    share, processes = gpu_others(_Nvml(samples), None, 0, own)
    assert share == pytest.approx((30 + 10) / 100 / 2) and processes == 1  # 300 was idle
    assert gpu_others(_Nvml([]), None, 0, own) == (0.0, 0)
    assert gpu_others(_Nvml(error=_NvmlError(6)), None, 0, own) == (0.0, 0)  # no samples: idle
    assert gpu_others(_Nvml(error=_NvmlError(3)), None, 0, own) is None  # not supported: absent
    busy = Busy(0.1, 10.0, 2, 0.005, gpu_share=0.2, gpu_processes=1)
    assert busy.busy and GPU_BUSY_SHARE < 0.2  # the CPU was quiet, the GPU was not
    assert busy_used(busy.to_dict()) == ("other processes used 0% of its CPU time and 20% of the "
                                    "GPU's SM time (1 other process(es))")
    assert "gpu_share" not in Busy(0.1, 10.0, 2, 0.005).to_dict()  # CPU only: absent, not 0
    if nvml_module() is None:  # no GPU driver here: the GPU's figures are absent, not 0
        assert Meter(gpu=0).start().stop().gpu_share is None


def test_on_a_busy_machine_the_verdict_rests_on_the_predicted_figure():
    """When the step costs come from a tipping curve (measured once, alone); with the
    run's own step medians, as noisy as the run, the measured interval decides."""
    items = [item("a", 1, 2.0), item("a", 2, 1.8)]
    curve = TippingCurve("measured", "m", "ngram", None, 4, "cpu", "0", "2026-12-04",
                         step_costs=[StepCosts(1, 0.010, 0.015, 0.001)])
    quiet = answer("t", "how", items, {}, None, repeats=1, max_tokens=8, curve=curve).groups[0]
    busy = answer("t", "how", items, {}, None, repeats=1, max_tokens=8, curve=curve,
                  busy=Busy(12.0, 10.0, 2, 0.6).to_dict())
    no_curve = answer("t", "how", items, {}, None, repeats=1, max_tokens=8,
                      busy=Busy(12.0, 10.0, 2, 0.6).to_dict()).groups[0]
    assert no_curve.checklist is not None
    assert not no_curve.checklist.check(SPEEDUP).detail.startswith("Predicted")
    g = busy.groups[0]
    assert quiet.predicted is not None and g.predicted is not None
    assert quiet.figures is not None and quiet.figures.ci is not None
    assert g.speedup == quiet.speedup  # the measured figure is still the one shown
    line = g.checklist.check(SPEEDUP) if g.checklist else None
    assert line is not None and line.value == pytest.approx(g.predicted.speedup)
    assert line.detail.startswith("Predicted from acceptance x step costs (this machine was busy")
    scale = g.predicted.speedup / quiet.speedup
    moved = (quiet.figures.ci[0] * scale, quiet.figures.ci[1] * scale)
    assert f"{moved[0]:.2f}-{moved[1]:.2f}" in line.detail  # the measured width, moved
    assert busy.busy is not None and busy.busy["busy"] is True
    assert not quiet.checklist.check(SPEEDUP).detail.startswith("Predicted")  # quiet: measured
