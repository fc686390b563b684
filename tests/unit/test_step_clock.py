"""The step clock (space/engine/anatomy.py) without an engine: steps timed one in n,
the hook table per model runner, the V2 runner's hooks on plain objects that call
each other as vLLM's do, and the V2 runner's names checked against the vllm
0.33.0 wheel's source when the wheel is on this machine (no GPU runs them)."""
from __future__ import annotations

import ast
import functools
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
)
from space.records.anatomy import (
    FORWARD,
    PROPOSER,
    RECORDING,
    REJECTION,
    SAMPLING,
    SCHEDULING,
)

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
    assert hooks_for(V2()) == V2_HOOKS and hooks_for(V1()) == V1_HOOKS


class FakeModel:
    """nn.Module's convention: ``model(...)`` runs ``self.forward``."""

    def __call__(self, **inputs):
        return self.forward(**inputs)

    def forward(self, **inputs):
        return "hidden"

    def compute_logits(self, hidden):
        return "logits"


class FakeGraphs:
    def run_fullgraph(self, desc):
        return "hidden"  # a graph replay: no forward call at all

    def run_pw_graph(self, model, inputs):
        return model(**inputs)  # piecewise graphs run inside the model's forward


class FakeMicroBatches:
    def run(self, model, inputs, state):
        return [model(**inputs), model(**inputs)]


class Watermarking:
    """Stands for ``GPUWatermarkSampler``, which the runner checks with ``isinstance``."""


class FakeSampler(Watermarking):
    def __call__(self, logits, input_batch):
        return "sampled"


class FakeRejectionSampler:
    def __call__(self, logits, input_batch, draft_logits=None, invalid_drafts=None):
        return "verified"


FakeV2Runner = type("GPUModelRunner", (), {"__module__": V2_RUNNER_MODULE})


def _v2(sync=None, **objects) -> tuple[StepClock, object, SimpleNamespace]:
    runner = FakeV2Runner()
    parts = dict(model=FakeModel(), cudagraph_manager=FakeGraphs(),
                 ubatch_runner=FakeMicroBatches(), sampler=FakeSampler(),
                 rejection_sampler=FakeRejectionSampler(),
                 speculator=SimpleNamespace(propose=lambda *a: "drafts"))
    for name, obj in {**parts, **objects}.items():
        setattr(runner, name, obj)
    scheduler = SimpleNamespace(schedule=lambda: None, update_draft_token_ids=lambda ids: None)
    clock = StepClock(sync)
    clock.hook(runner, scheduler)
    return clock, runner, scheduler


def test_every_v2_forward_path_and_both_samplers_are_timed_once():
    syncs: list[int] = []
    clock, r, _ = _v2(lambda: syncs.append(1))
    paths = {"eager": lambda: r.model(input_ids=[1]),
             "full graph": lambda: r.cudagraph_manager.run_fullgraph("desc"),
             "piecewise": lambda: r.cudagraph_manager.run_pw_graph(r.model, {}),
             "micro-batches": lambda: r.ubatch_runner.run(r.model, {}, None)}
    for verify in (False, True):
        for path, forward in paths.items():
            clock.begin_step()
            before = len(syncs)
            forward()
            r.model.compute_logits("hidden")
            if verify:
                r.rejection_sampler("logits", None, None, None)
            else:
                r.sampler("logits", None)
            r.speculator.propose()
            a = clock.take()
            assert a is not None
            # the model called inside a graph or micro-batch runner counts once, in it
            assert [i.part for i in a.intervals] == [
                FORWARD, FORWARD, REJECTION if verify else SAMPLING, PROPOSER], path
            assert len(syncs) - before == 8, path  # around each part, not the inner call
    assert clock.untimed == []


def test_v2_hooks_keep_the_objects_and_detach_restores_them():
    sampler, model = FakeSampler(), FakeModel()
    clock, r, scheduler = _v2(sampler=sampler, model=model)
    assert r.sampler is sampler and isinstance(r.sampler, Watermarking)
    assert type(sampler).__name__ == "FakeSampler" and type(sampler) is not FakeSampler
    clock.begin_step()
    FakeSampler()("logits", None)  # another instance of the class: not this engine's
    assert clock.take().intervals == []
    clock.detach()
    assert type(sampler) is FakeSampler and type(r.rejection_sampler) is FakeRejectionSampler
    assert "forward" not in vars(model) and "run_fullgraph" not in vars(r.cudagraph_manager)
    assert "schedule" in vars(scheduler)  # it was an instance attribute before: kept
    clock.begin_step()
    r.model(input_ids=[1]), r.sampler("logits", None), scheduler.schedule()
    assert clock.take().intervals == []  # nothing is timed any more


def test_a_v2_baseline_hooks_what_it_has_and_reports_what_it_cannot():
    clock, _, _ = _v2(rejection_sampler=None, speculator=None, ubatch_runner=None)
    assert clock.parts == {FORWARD, SAMPLING, SCHEDULING} and clock.untimed == []
    # an instance of a built-in type cannot get a class of its own: named, not hidden
    clock, r, _ = _v2(sampler=functools.partial(lambda logits, batch: "sampled"))
    assert clock.untimed == ["partial.__call__"] and r.sampler("logits", None) == "sampled"


def _classes(zf: zipfile.ZipFile, path: str) -> dict[str, ast.ClassDef]:
    tree = ast.parse(zf.read(path).decode())
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}


def _defines(cls: ast.ClassDef, name: str) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in cls.body)


def _self_calls(node: ast.AST) -> set[tuple[str, str]]:
    """(attribute, method) of every ``self.<attribute>.<method>(...)`` call in ``node``,
    and ("", attribute) of every ``self.<attribute>(...)`` (a method, or an object called)."""
    return {_called(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)} - {None}


def _called(f: ast.expr) -> tuple[str, str] | None:
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
        return "", f.attr
    if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute)
            and isinstance(f.value.value, ast.Name) and f.value.value.id == "self"):
        return f.value.attr, f.attr
    return None


def _hook_of(call: tuple[str, str] | None) -> tuple[str, str] | None:
    """The V2 hook a call goes through: ``self.model(...)`` runs ``model.forward``,
    ``self.sampler(...)`` the sampler's ``__call__``."""
    if call is not None and call[0] == "":
        call = (call[1], "forward" if call[1] == "model" else "__call__")
    return call if call in {(o, n) for o, n, _ in V2_HOOKS} else None


def _assigned(fn: ast.FunctionDef, name: str) -> list[ast.expr]:
    """The value of every ``name = ...`` in ``fn``."""
    return [n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and t.id == name]


@pytest.mark.skipif(WHEEL is None, reason="the vllm 0.33.0 wheel is not on this machine "
                                          "(pip download vllm==0.33.0 --no-deps -d /tmp/vllm033)")
def test_every_v2_path_goes_through_a_hook_in_the_cuda_wheels_source():
    with zipfile.ZipFile(str(WHEEL)) as zf:
        source = zf.read(V2_RUNNER_MODULE.replace(".", "/") + ".py").decode()
        runner = _classes(zf, V2_RUNNER_MODULE.replace(".", "/") + ".py")["GPUModelRunner"]
        methods = {n.name: n for n in runner.body if isinstance(n, ast.FunctionDef)}
        # every path by which execute_model runs the target goes through a hook
        paths = [_called(v.func) for v in _assigned(methods["execute_model"], "model_output")
                 if isinstance(v, ast.Call)]
        assert len(paths) == len(_assigned(methods["execute_model"], "model_output")) == 4
        assert all(_hook_of(p) for p in paths), paths
        # sample() computes the logits and calls one of the two samplers as objects
        wanted = {("model", "compute_logits"), ("", "sampler"), ("", "rejection_sampler")}
        assert wanted <= _self_calls(methods["sample"]) and all(map(_hook_of, wanted))
        # its output is None (no requests on this rank), a sampler's, or the gather of
        # the ranks' outputs under tensor-parallel sharded sampling (docs: D6)
        for v in _assigned(methods["sample"], "sampler_output"):
            assert (isinstance(v, ast.Constant) or _hook_of(_called(v.func))
                    or ast.unparse(v.func) == "gather_sampler_output"), ast.unparse(v)
        assert ("speculator", "propose") in _self_calls(methods["sample_tokens"])
        assert _hook_of(("speculator", "propose"))
        # the hooked classes define the hooked methods, and the runner never checks a
        # sampler's exact type (each instance gets a subclass of its own)
        graphs = _classes(zf, "vllm/v1/worker/gpu/cudagraph_utils.py")
        assert graphs["ModelCudaGraphManager"].bases[0].id == "CudaGraphManager"  # type: ignore[attr-defined]
        assert all(_defines(graphs["CudaGraphManager"], m) for m in ("run_fullgraph", "run_pw_graph"))
        assert _defines(_classes(zf, "vllm/v1/worker/gpu/ubatch_utils.py")["UBatchRunner"], "run")
        base = _classes(zf, "vllm/v1/worker/gpu/spec_decode/speculator.py")["BaseSpeculator"]
        assert _defines(base, "propose")
        sampler = _classes(zf, "vllm/v1/worker/gpu/sample/sampler.py")["Sampler"]
        rejection = _classes(zf, "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py")
        for cls in (sampler, rejection["RejectionSampler"]):
            assert _defines(cls, "__call__") and not _defines(cls, "forward")
        assert "type(self.sampler)" not in source and "type(self.rejection_sampler)" not in source
        # why V2 needs its own table: none of the V1 runner's own methods is there
        for owner, name, _part in V1_HOOKS:
            if not owner:
                assert name not in methods, name


def test_each_clock_hook_states_whether_it_attached_and_why_not():
    """Issue 30: every hook point attaches or says why; a failed wrap never raises."""
    from space.records import hooks

    clock, _, _ = _v2()
    assert all(s.attached for s in clock.states(speculative=True))
    assert [s.name for s in clock.states(speculative=False)] == [
        hooks.CLOCK_FORWARD, hooks.CLOCK_SAMPLING, hooks.CLOCK_SCHEDULING]
    # a sampler whose class cannot change, and a runner without a speculator
    clock, _, _ = _v2(sampler=functools.partial(lambda logits, batch: "sampled"), speculator=None)
    states = {s.name: s for s in clock.states(speculative=True)}
    assert states[hooks.CLOCK_SAMPLING].state == hooks.MISSING
    assert "partial.__call__: TypeError" in states[hooks.CLOCK_SAMPLING].why
    assert states[hooks.PROPOSER_TIMER].why == "this model runner has no such hook point"
    assert states[hooks.CLOCK_FORWARD].attached and states[hooks.CLOCK_SCHEDULING].attached
