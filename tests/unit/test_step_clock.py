"""The step clock (space/engine/anatomy.py) without an engine: steps timed one in n,
the hook table per model runner, and the V2 runner's names checked against the
vllm 0.33.0 wheel's source when the wheel is on this machine."""
from __future__ import annotations

import ast
import glob
import os
import time
import zipfile
from types import SimpleNamespace

import pytest

from space.engine.anatomy import (
    V1_HOOKS,
    V2_HOOKS,
    V2_RUNNER_MODULE,
    StepClock,
    hooks_for,
    is_v2_runner,
)
from space.records.anatomy import FORWARD, PROPOSER, RECORDING, REJECTION, SAMPLING

# `pip download vllm==0.33.0 --no-deps -d /tmp/vllm033` puts it here (docs/vllm-hooks.md)
WHEEL = os.environ.get("SPECLENS_VLLM_WHEEL") or next(
    iter(sorted(glob.glob("/tmp/vllm033/vllm-0.33.0-*.whl"))), None)


class FakeV1Runner:
    """The V1 runner's hooked methods, each leaving a mark."""

    def __init__(self) -> None:
        self.model = SimpleNamespace(compute_logits=lambda h: h)
        self.calls: list[str] = []

    def _model_forward(self, *args):
        self.calls.append("forward")

    def _sample(self, logits, spec_decode_metadata):
        self.calls.append("sample")

    def propose_draft_token_ids(self, *args):
        self.calls.append("propose")


def _clock(n: int) -> tuple[StepClock, FakeV1Runner, list[int]]:
    syncs: list[int] = []
    clock = StepClock(lambda: syncs.append(1), every_n_steps=n)
    runner = FakeV1Runner()
    for owner, name, part in V1_HOOKS:
        clock._wrap(getattr(runner, owner) if owner else runner, name, part, clock.sync)
    return clock, runner, syncs


def _step(clock: StepClock, runner: FakeV1Runner, verify: bool):
    clock.begin_step()
    runner._model_forward()
    runner.model.compute_logits(None)
    runner._sample(None, SimpleNamespace(num_draft_tokens=[4] if verify else [0]))
    runner.propose_draft_token_ids()
    now = time.perf_counter()
    clock.add(RECORDING, now, now)
    return clock.seconds(PROPOSER) >= 0 and clock.proposer_ran(), clock.take()


def test_every_step_is_timed_by_default():
    clock, runner, _ = _clock(1)
    _, a = _step(clock, runner, verify=True)
    assert a is not None
    assert [i.part for i in a.intervals][:4] == [FORWARD, FORWARD, REJECTION, PROPOSER]
    assert clock.settings["every_n_steps"] == 1 and clock.settings["steps"] == "every engine step"


def test_one_step_in_n_is_timed_and_the_others_do_not_synchronize():
    clock, runner, syncs = _clock(3)
    taken = []
    for i in range(7):
        before = len(syncs)
        ran, a = _step(clock, runner, verify=i % 2 == 1)
        taken.append(a)
        # a timed step synchronizes around its 4 model-runner parts, the others
        # around the proposer only (timed on every step, as before the anatomy)
        assert len(syncs) - before == (8 if i % 3 == 0 else 2)
        assert ran  # the drafter-skipped check sees the proposer on every step
    assert [a is not None for a in taken] == [True, False, False, True, False, False, True]
    assert {i.part for i in taken[3].intervals} == {FORWARD, REJECTION, PROPOSER, RECORDING}
    assert SAMPLING in {i.part for i in taken[0].intervals}
    assert runner.calls.count("forward") == 7  # untimed steps still run everything
    settings = clock.settings
    assert settings["every_n_steps"] == 3 and settings["steps"].startswith("one engine step in 3")
    assert "carry no anatomy" in settings["steps"]


def test_a_sampling_setting_below_one_is_refused():
    with pytest.raises(ValueError, match="every_n_steps must be >= 1"):
        StepClock(None, every_n_steps=0)


def test_the_hook_table_follows_the_model_runner():
    V2 = type("GPUModelRunner", (), {"__module__": V2_RUNNER_MODULE})
    V1 = type("GPUModelRunner", (), {"__module__": "vllm.v1.worker.gpu_model_runner"})
    assert is_v2_runner(V2()) and hooks_for(V2()) == V2_HOOKS
    assert not is_v2_runner(V1()) and hooks_for(V1()) == V1_HOOKS


def _classes(zf: zipfile.ZipFile, path: str) -> dict[str, ast.ClassDef]:
    tree = ast.parse(zf.read(path).decode())
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def _defines(cls: ast.ClassDef, name: str) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in cls.body)


def _self_calls(cls: ast.ClassDef) -> set[tuple[str, str]]:
    """(attribute, method) of every ``self.<attribute>.<method>(...)`` call in ``cls``."""
    out = set()
    for n in ast.walk(cls):
        f = n.func if isinstance(n, ast.Call) else None
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute)
                and isinstance(f.value.value, ast.Name) and f.value.value.id == "self"):
            out.add((f.value.attr, f.attr))
    return out


@pytest.mark.skipif(WHEEL is None, reason="the vllm 0.33.0 wheel is not on this machine "
                                          "(pip download vllm==0.33.0 --no-deps -d /tmp/vllm033)")
def test_v2_hook_names_are_in_the_cuda_wheels_source():
    with zipfile.ZipFile(str(WHEEL)) as zf:
        runner = _classes(zf, V2_RUNNER_MODULE.replace(".", "/") + ".py")["GPUModelRunner"]
        calls = _self_calls(runner)
        for owner, name, _part in V2_HOOKS:
            assert (owner, name) in calls, f"GPUModelRunner calls no self.{owner}.{name}(...)"
        base = _classes(zf, "vllm/v1/worker/gpu/spec_decode/speculator.py")["BaseSpeculator"]
        assert _defines(base, "propose")
        # why V2 needs its own table: none of the V1 names is there
        for owner, name, _part in V1_HOOKS:
            if not owner:
                assert not _defines(runner, name), name
        # why its samplers stay untimed: called as objects, no forward to wrap
        sampler = _classes(zf, "vllm/v1/worker/gpu/sample/sampler.py")["Sampler"]
        rejection = _classes(zf, "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py")
        for cls in (sampler, rejection["RejectionSampler"]):
            assert _defines(cls, "__call__") and not _defines(cls, "forward")
