"""The dtype rule (space/engine/hardware.py): bf16 only where the CPU has bf16 units,
float32 otherwise, the model's own on GPU, ``--dtype`` over all; bad names refused.

The probes are vLLM's own (torch.cpu); here they are replaced to play each kind
of machine, and one test checks the real answer on this one against torch.
"""
from __future__ import annotations

import json

import pytest

from space.engine import hardware
from space.records.config import ConfigError, EngineSpec, MiB


@pytest.fixture(autouse=True)
def no_dtype_env(monkeypatch):
    """These tests play the machine's own choice: a SPECLENS_DTYPE set for the
    whole suite (to check float32 memory) would override it."""
    monkeypatch.delenv(hardware.DTYPE_ENV, raising=False)


@pytest.fixture
def machine(monkeypatch):
    """Play a machine: ``machine(gpu=False, flags=())``."""
    def play(gpu: bool = False, flags: tuple[str, ...] = (), bf16_gpu: bool = True):
        monkeypatch.setattr(hardware, "on_gpu", lambda: gpu)
        monkeypatch.setattr(hardware, "cpu_bf16_flags", lambda: flags)
        monkeypatch.setattr(hardware, "cpu_model", lambda: "Test CPU 9000")
        if gpu:
            import torch

            monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16_gpu)
    return play


def test_cpu_without_bf16_units_runs_float32(machine):
    machine(flags=())
    choice = hardware.choose_dtype()
    assert (choice.dtype, choice.reason) == ("float32", hardware.BY_NO_BF16)
    assert choice.sentence == "Engines run in float32 (this CPU has no native bf16) on Test CPU 9000."
    assert (choice.cpu_model, tuple(choice.bf16_flags)) == ("Test CPU 9000", ())


@pytest.mark.parametrize("flags", [("avx512_bf16",), ("amx_tile",), ("arm_bf16",),
                                   ("avx512_bf16", "amx_tile")])
def test_cpu_with_bf16_units_runs_bf16(machine, flags):
    machine(flags=flags)
    choice = hardware.choose_dtype("auto")
    assert (choice.dtype, choice.reason, choice.bf16_flags) == \
        ("bfloat16", hardware.BY_BF16_UNITS, flags)


@pytest.mark.parametrize("given, canonical", [("bfloat16", "bfloat16"), ("half", "float16"),
                                              ("float", "float32"), (" Float32 ", "float32")])
def test_dtype_flag_overrides_and_is_canonical(machine, given, canonical):
    machine(flags=())
    choice = hardware.choose_dtype(given)
    assert (choice.dtype, choice.reason) == (canonical, hardware.BY_FLAG)


@pytest.mark.parametrize("bad", ["int8", "fp8", "bf16; rm -rf /", "<b>", ""])
def test_unknown_dtype_is_one_line_naming_what_runs(machine, bad):
    machine()
    with pytest.raises(ConfigError) as e:
        hardware.resolve_spec(EngineSpec(dtype=bad or " "))
    msg = str(e.value)
    assert "\n" not in msg and "bfloat16, float16, float32" in msg


@pytest.mark.parametrize("config_dtype, bf16_gpu, expected", [
    ("bfloat16", True, "bfloat16"), ("float16", True, "float16"),
    ("float32", True, "bfloat16"),   # vLLM downcasts a float32 checkpoint on GPU
    ("float32", False, "float16"),   # ... to float16 before compute capability 8.0
    ("bfloat16", False, "float16"),  # a bf16 checkpoint where bf16 is not supported
])
def test_gpu_takes_the_models_own_dtype_as_vllm_auto_does(machine, tmp_path, config_dtype,
                                                         bf16_gpu, expected):
    machine(gpu=True, bf16_gpu=bf16_gpu)
    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": config_dtype}))
    choice = hardware.choose_dtype(None, tmp_path)
    assert (choice.dtype, choice.reason, choice.device) == (expected, hardware.BY_MODEL, "gpu")


def test_resolve_spec_is_idempotent_and_keys_pools(machine):
    machine(flags=())
    spec = hardware.resolve_spec(EngineSpec(method="ngram"))
    assert spec.dtype == "float32"
    assert hardware.resolve_spec(spec) is spec
    assert hardware.resolve_spec(EngineSpec(method="ngram")) == spec  # same pool key
    assert hardware.resolve_spec(EngineSpec(dtype="half")).dtype == "float16"
    assert spec.baseline().dtype == "float32"


def test_explain_tells_the_machine_choice_from_the_flag(machine):
    machine(flags=())
    assert hardware.explain("float32").reason == hardware.BY_NO_BF16
    assert hardware.explain("bfloat16").reason == hardware.BY_FLAG


def test_float32_kv_budget_holds_the_same_tokens():
    assert hardware.kv_cache_bytes(256 * MiB, "bfloat16") == 256 * MiB
    assert hardware.kv_cache_bytes(256 * MiB, "float32") == 512 * MiB


def test_this_machine_is_probed_with_vllms_own_probes():
    """No fake: the answer here follows torch.cpu's probes (the ones vLLM's CPU
    kernels use), whatever this machine is."""
    import platform

    import torch

    if hardware.on_gpu():
        pytest.skip("a GPU box: the model's dtype decides")
    flags = hardware.cpu_bf16_flags()
    if platform.machine() == "x86_64":
        assert ("avx512_bf16" in flags) == torch.cpu._is_avx512_bf16_supported()
        assert ("amx_tile" in flags) == torch.cpu._is_amx_tile_supported()
    assert hardware.choose_dtype().dtype == ("bfloat16" if flags else "float32")
    assert hardware.cpu_model()


def test_speclens_dtype_sets_the_default_and_dtype_flag_wins(machine, monkeypatch):
    machine(flags=("amx_tile",))
    monkeypatch.setenv(hardware.DTYPE_ENV, "float")
    choice = hardware.choose_dtype()
    assert (choice.dtype, choice.reason) == ("float32", hardware.BY_ENV)
    assert hardware.resolve_spec(EngineSpec()).dtype == "float32"
    assert hardware.choose_dtype("bfloat16").reason == hardware.BY_FLAG
    monkeypatch.setenv(hardware.DTYPE_ENV, "auto")  # as if unset
    assert hardware.choose_dtype().dtype == "bfloat16"


def test_a_bad_speclens_dtype_is_one_line(machine, monkeypatch):
    machine()
    monkeypatch.setenv(hardware.DTYPE_ENV, "fp8<script>")
    with pytest.raises(ConfigError) as e:
        hardware.choose_dtype()
    assert "SPECLENS_DTYPE" in str(e.value) and "\n" not in str(e.value)


def test_the_probes_answer_is_kept_for_the_next_start(monkeypatch, tmp_path):
    """The app's start reads the cached answer instead of importing torch."""
    monkeypatch.setattr(hardware, "cache_dir", lambda: tmp_path)
    calls = []
    monkeypatch.setattr(hardware, "_probe_bf16", lambda: calls.append(1) or ("amx_tile",))
    hardware.cpu_bf16_flags.cache_clear()
    try:
        assert hardware.cpu_bf16_flags() == ("amx_tile",)
        hardware.cpu_bf16_flags.cache_clear()
        assert hardware.cpu_bf16_flags() == ("amx_tile",) and calls == [1]  # read back
        saved = json.loads((tmp_path / hardware.PROBE_FILE).read_text())
        (tmp_path / hardware.PROBE_FILE).write_text(json.dumps({**saved, "torch": "0.0"}))
        hardware.cpu_bf16_flags.cache_clear()
        assert hardware.cpu_bf16_flags() == ("amx_tile",) and calls == [1, 1]  # probed anew
    finally:
        hardware.cpu_bf16_flags.cache_clear()
