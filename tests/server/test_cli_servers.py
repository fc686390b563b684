"""``python -m space trace|compare --baseline-url --speculative-url``: refusals at
start are one line and exit 2; a run through the real servers prints as in-process."""
from __future__ import annotations

import json
import os

import pytest

from space.cli.main import main
from space.records import schema
from space.records.run import SERVER
from space.records.trace import TRACE_VERSION, CompareRecord
from tests.helpers.engine import CODE_PROMPT
from tests.helpers.servers import free_port


def _refused(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err
    return err


def test_tensor_parallel_in_process_points_to_servers(capsys):
    err = _refused(capsys, ["trace", "--prompt", "hi", "--tensor-parallel-size", "2"])
    assert "--baseline-url URL --speculative-url URL" in err


def test_half_a_pair_and_a_bad_scheme_are_refused(capsys):
    assert "both" in _refused(capsys, ["compare", "--prompt", "hi",
                                       "--baseline-url", "http://gpu-box:8000/v1"])
    assert "http://" in _refused(capsys, ["compare", "--prompt", "hi",
                                          "--baseline-url", "file:///etc/passwd",
                                          "--speculative-url", "http://gpu-box:8001/v1"])


def test_a_down_server_is_one_line(capsys):
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["trace", "--prompt", "hi", "--baseline-url", url,
                 "--speculative-url", url]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "down or unreachable" in err and "\n" not in err


@pytest.mark.engine
def test_compare_through_servers(pair, capsys, tmp_path):
    out = tmp_path / "compare.json"
    assert main(["compare", "--prompt", CODE_PROMPT, "--max-tokens", "24", "--repeats", "1",
                 "--max-model-len", "2048", "--baseline-url", pair.baseline.url,
                 "--speculative-url", pair.speculative.url, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "through a vLLM 0.32" in printed and "speedup (TPOT)" in printed
    record = schema.load(out.read_text())
    assert isinstance(record, CompareRecord) and record.speculative.config.source == SERVER
    assert json.loads(out.read_text())["version"] == TRACE_VERSION
    # judged as an in-process compare is, from the servers' own counts; the memory
    # lines stay unmeasured (the servers' devices are not this machine)
    assert record.checklist is not None and "verdict: " in printed
    rate = record.checklist.check("acceptance rate")
    assert rate.value == pytest.approx(record.speculative.acceptance_rate)
    assert record.checklist.check("spare memory").passed is None


def test_server_sweeps_only_concurrency(capsys):
    err = _refused(capsys, ["sweep", "--workload", "code_editing", "--variable", "k",
                            "--baseline-url", "http://gpu-box:8000/v1",
                            "--speculative-url", "http://gpu-box:8001/v1"])
    assert "concurrency" in err


@pytest.mark.engine
def test_sweep_concurrency_through_servers(pair, capsys, tmp_path):
    out = tmp_path / "sweep.json"
    assert main(["sweep", "--workload", "code_editing", "--variable", "concurrency",
                 "--values", "1,2", "--max-tokens", "16", "--repeats", "1",
                 "--max-model-len", "2048", "--baseline-url", pair.baseline.url,
                 "--speculative-url", pair.speculative.url, "--json", str(out)]) == 0
    saved = json.loads(out.read_text())  # an in-process sweep's table, from the servers
    assert saved["variable"] == "concurrency"
    assert [r["value"] for r in saved["table"]] == [1, 2]
    assert saved["results"][1]["config"]["source"] == SERVER
    # as in-process: each of the 3 prompts alone at 1, then 2 different prompts at once
    ones, twos = ([it["prompt_id"] for it in r["items"]] for r in saved["results"])
    assert len(ones) == 3 and len(twos) == 2
    assert twos[0].split("#")[0] != twos[1].split("#")[0]
    assert "crossover (speedup = 1)" in capsys.readouterr().out


def test_the_page_refuses_a_down_server_at_start(capsys, monkeypatch, tmp_path):
    import app
    from space.ui import datadir

    # app.main points Gradio's upload cache at its data folder: undone after, for the
    # package's page (server_page), whose uploads are checked against the cache it had
    monkeypatch.setenv("GRADIO_TEMP_DIR", os.environ.get("GRADIO_TEMP_DIR", ""))  # "": default
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(datadir, "ACTIVE", datadir.ACTIVE)
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert app.main(["--baseline-url", url, "--speculative-url", url]) == 2
    out = capsys.readouterr().out.strip().splitlines()[-1]
    assert out.startswith("error: ") and "down or unreachable" in out
