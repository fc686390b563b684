"""The Sweep tab and the model-pair dropdown through gradio_client, on the real
CPU engine: a tiny sweep returns a figure and a CSV equal to its table; a GPU
pair on CPU is refused with the reason."""
from __future__ import annotations

import json

import pandas as pd
import pytest

pytestmark = pytest.mark.engine


def test_tiny_sweep_returns_plot_and_csv_equal_to_table(client):
    status, plot, table, csv, deploy = client.predict(
        "structured_output", "k", "1,2", 8, 1, "ngram", "", 4, api_name="/sweep")
    assert deploy == ""  # only a k x concurrency sweep derives a deployable config
    assert 'data-kind="done"' in status, status
    figure = json.loads(plot["plot"]) if isinstance(plot, dict) else plot
    names = [t.get("name") for t in figure["data"]]
    assert "acceptance rate" in names
    shown = pd.DataFrame(table["data"], columns=table["headers"])
    saved = pd.read_csv(csv["value"] if isinstance(csv, dict) else csv)
    assert len(saved) == len(shown) == 2
    assert list(saved["value"]) == [1, 2] == list(shown["value"])
    for col in ("speedup", "acceptance_rate", "baseline_tpot_ms", "speculative_tpot_ms"):
        assert saved[col].round(3).tolist() == pd.to_numeric(shown[col]).tolist(), col
    assert (saved["variable"] == "k").all()


def test_k_x_concurrency_sweep_gives_a_deployable_config(client):
    """The preset behind the deployable config: best k per concurrency, a
    --speculative-config vLLM's own schedule reader accepted, the serve command."""
    status, plot, table, csv, deploy = client.predict(
        "structured_output", "k_x_concurrency", "1,2 x 1,2", 8, 1, "ngram", "", 4,
        api_name="/sweep")
    assert 'data-kind="done"' in status and "best k per concurrency" in status, status
    saved = pd.read_csv(csv["value"] if isinstance(csv, dict) else csv)
    assert sorted(zip(saved["k"], saved["concurrency"], strict=True)) == [
        (1, 1), (1, 2), (2, 1), (2, 2)]
    assert "| concurrency | best k" in deploy
    assert "vllm serve" in deploy or "serve without it" in deploy
    if "vllm serve" in deploy:
        spec = json.loads(deploy.split("--speculative-config '")[1].split("'")[0])
        schedule = spec["num_speculative_tokens_per_batch_size"]
        assert schedule[0][0] == 1 and spec["num_speculative_tokens"] == max(
            k for _, _, k in schedule)
    figure = json.loads(plot["plot"]) if isinstance(plot, dict) else plot
    assert {"k=1", "k=2", "chosen k"} <= {t.get("name") for t in figure["data"]}


@pytest.mark.parametrize("variable, values, message", [
    ("k", "1,x", "comma"),
    ("concurrency", "1,100000", "concurrency values must be in 1..64"),
    ("temperature", ",".join(f"{i / 1000}" for i in range(2001)), "at most 32 values"),
    ("k_x_concurrency", "1,2", "k x concurrency values look like"),
    ("k_x_concurrency", "1,2,4,8,16,3,5 x 1,2,4,8,16", "at most 32 points"),
])
def test_bad_sweep_values_give_a_message(client, variable, values, message):
    status, *_ = client.predict("structured_output", variable, values, 16, 1, "ngram", "", 4,
                                api_name="/sweep")
    assert 'data-kind="error"' in status and message in status


def test_a_pair_this_machine_cannot_run_is_listed_with_the_reason(client):
    method, draft, k, note = client.predict("cpu-suffix", api_name="/pair")
    assert "arctic-inference" in note and "not applied" in note
    # the controls are left as they were: a no-op update, not the pair's values
    assert isinstance(method, dict) and "value" not in method
    assert isinstance(k, dict) and "value" not in k


def test_cpu_pair_fills_method_draft_and_k(client):
    method, draft, k, note = client.predict("cpu-bad-draft", api_name="/pair")
    assert (method, draft, k) == ("draft_model", "default-truncated", 4)
    assert "untrained" in note
