"""The headless CLI as a user runs it: its exit code and output.

Bad input gets exit code 2, one line on stderr and nothing on stdout: once per
command in a real process (``test_bad_input_in_a_real_process...``), every case
through the same main() in this process, as are the runs that build engines
(tests/helpers/cli.py), which share engines between them."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from space.engine import models
from tests.helpers.cli import ENGINE_FLAGS, cli, cli_in_process


@pytest.fixture(scope="module")
def other_vocab_model(tmp_path_factory):
    """A model folder whose vocabulary differs from the default's."""
    src = models.prepare_default()
    dest = tmp_path_factory.mktemp("other-vocab")
    cfg = json.loads((src / "config.json").read_text())
    cfg["vocab_size"] = 32000
    (dest / "config.json").write_text(json.dumps(cfg))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / name, dest / name)
    return dest


BAD_INPUTS = {
    "empty prompt": (["--prompt", "   "], "prompt is empty"),
    "overlong prompt": (["--prompt", "word " * 300, "--max-model-len", "128"], "longer than"),
    "k = 0": (["--prompt", "hi", "--k", "0"], "must be in 1..16"),
    "k = 17": (["--prompt", "hi", "--k", "17"], "must be in 1..16"),
    "unknown method": (["--prompt", "hi", "--method", "medusa2"], "unknown method"),
    "missing model": (["--prompt", "hi", "--model", "/nonexistent/model"], "not found"),
    "missing draft": (["--prompt", "hi", "--method", "draft_model", "--draft-model",
                       "./no-such-draft"], "not found"),
    "missing prompt file": (["--prompt-file", "/nonexistent.txt"], "cannot read"),
    "unknown dtype": (["--prompt", "hi", "--dtype", "int4"], "choose bfloat16, float16, float32"),
}


def one_line_exit_2(r: subprocess.CompletedProcess[str], needle: str) -> None:
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ") and needle in lines[0], r.stderr


@pytest.mark.parametrize("cmd", ["trace", "compare"])
def test_bad_input_in_a_real_process_is_one_line_and_exit_2(cmd):
    """The process as a user runs it: exit code 2, nothing on stdout, one line on
    stderr (no import-time warnings around it). The other cases below run the same
    ``main`` in this process: a new interpreter costs a second or two each."""
    one_line_exit_2(cli(cmd, *BAD_INPUTS["overlong prompt"][0]), "longer than")


@pytest.mark.parametrize("case", list(BAD_INPUTS))
@pytest.mark.parametrize("cmd", ["trace", "compare"])
def test_bad_input_is_one_line_and_exit_2(cmd, case):
    args, needle = BAD_INPUTS[case]
    one_line_exit_2(cli_in_process(cmd, *args), needle)


SWEEP = ["sweep", "--workload", "structured_output"]
BAD_SWEEPS = {
    "concurrency 100000": (["--variable", "concurrency", "--values", "1,100000"], "1..64"),
    "2001 points": (["--variable", "temperature", "--values",
                     ",".join(f"{i / 1000}" for i in range(2001))], "at most 32 values"),
    "too many tokens": (["--variable", "k", "--values", "1,2,3,4", "--repeats", "50",
                         "--max-tokens", "8192"], "more than the limit"),
}


@pytest.mark.parametrize("case", list(BAD_SWEEPS))
def test_sweep_bounds_are_one_line_and_exit_2(case):
    args, needle = BAD_SWEEPS[case]
    one_line_exit_2(cli_in_process(*SWEEP, *args), needle)


def test_draft_with_other_vocabulary_is_refused(other_vocab_model):
    r = cli("trace", "--prompt", "hi", "--method", "draft_model",
            "--draft-model", str(other_vocab_model))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "error: the draft's vocabulary (32000 tokens) differs from the target's (49152): "
        "a draft model must share the tokenizer"]


RUN_KEYS = {"config", "prompt_token_ids", "output_token_ids", "text", "ttft_s", "tpot_s",
            "tokens_per_s", "acceptance_rate", "mean_acceptance_length", "steps"}
STEP_KEYS = {"kind", "start_s", "end_s", "draft_token_ids", "num_accepted_tokens", "emitted_token_ids"}


def check_run_record(run):
    assert set(run) >= RUN_KEYS
    assert {"model", "model_path", "speculative_config"} <= set(run["config"])
    assert Path(run["config"]["model_path"]).is_dir()
    for s in run["steps"]:
        assert set(s) >= STEP_KEYS
    assert [t for s in run["steps"] for t in s["emitted_token_ids"]] == run["output_token_ids"]


@pytest.mark.engine
def test_trace_writes_the_json_contract(tmp_path):
    out = tmp_path / "trace.json"
    r = cli_in_process("trace", "--prompt", "Repeat after me: one two three four",
                       "--max-tokens", "16", *ENGINE_FLAGS, "--json", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    run = json.loads(out.read_text())
    check_run_record(run)
    assert run["config"]["speculative_config"]["method"] == "ngram"
    assert run["text"] in r.stdout
    assert run["config"]["dtype"] in r.stdout  # the summary names the dtype and why
    assert run["config"]["dtype_reason"] in r.stdout


@pytest.mark.engine
def test_compare_writes_the_json_contract(tmp_path):
    out = tmp_path / "compare.json"
    r = cli_in_process("compare", "--prompt", "Repeat after me: one two three four",
                       "--max-tokens", "16", "--repeats", "1", "--explain", *ENGINE_FLAGS,
                       "--json", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    rec = json.loads(out.read_text())
    for side in ("baseline", "speculative"):
        check_run_record(rec[side])
    assert rec["baseline"]["config"]["speculative_config"] is None
    assert {"speedup", "e2e_speedup", "outputs_identical"} <= set(rec)
    b, s = rec["baseline"], rec["speculative"]
    assert rec["speedup"] == pytest.approx(b["tpot_s"] / s["tpot_s"])
    assert rec["outputs_identical"] == (b["output_token_ids"] == s["output_token_ids"])
    assert "speedup (TPOT)" in r.stdout
    # --explain: the speculative run's verified drafts scored after the timed runs
    assert rec["speculative"]["explanation"]["score_s"] > 0 and "explained:" in r.stdout
    views = [v for st in s["steps"] for v in st.get("target_views", [])]
    assert len(views) == sum(min(st["num_accepted_tokens"], len(st["emitted_token_ids"]))
                             + (st["target_token_kind"] == "correction")
                             for st in s["steps"] if st["kind"] == "verify")
