"""The deployable config: the best k per concurrency from literal k x concurrency
tables (space/judge/deploy.py, pure), validated by vLLM's own schedule reader
(space/engine/dynamic.py, which imports vLLM; no engine is built)."""
from __future__ import annotations

import json
import shlex

import pytest

from space.judge import deploy
from space.judge.deploy import Choice
from space.records.config import ConfigError

pytestmark = pytest.mark.engine


def _rows(table: dict[int, dict[int, float]]) -> list[dict]:
    """{k: {concurrency: speedup}} -> sweep rows."""
    return [{"k": k, "concurrency": c, "speedup": s} for k, per_c in table.items()
            for c, s in per_c.items()]


CASES = {
    # high concurrency gains less, then loses: k shrinks, then 0
    "shrinking": ({1: {1: 1.3, 2: 1.2, 4: 1.1, 8: 0.95}, 2: {1: 1.5, 2: 1.3, 4: 1.08, 8: 0.9},
                   4: {1: 1.7, 2: 1.25, 4: 0.97, 8: 0.8}},
                  [[1, 1, 4], [2, 3, 2], [4, 7, 1], [8, 256, 0]], 4),
    # one k best everywhere: a single entry
    "flat": ({2: {1: 1.4, 4: 1.3}, 3: {1: 1.3, 4: 1.2}}, [[1, 256, 2]], 2),
    # a gain under 1.05x is no gain: 0 there
    "noise-level gain": ({2: {1: 1.2, 4: 1.04}}, [[1, 3, 2], [4, 256, 0]], 2),
    # NaN speedups (a failed point) are skipped
    "nan": ({2: {1: 1.2, 4: float("nan")}, 3: {1: 1.1, 4: 1.06}}, [[1, 3, 2], [4, 256, 3]], 3),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_schedule_from_literal_tables_is_what_vllm_reads(case):
    from space.engine.dynamic import check_schedule

    table, expected_schedule, largest = CASES[case]
    cfg = deploy.derive(_rows(table), model="default", method="draft_model", draft="d")
    assert cfg.schedule == expected_schedule
    assert cfg.speculative_config["num_speculative_tokens"] == largest
    chosen = {c.concurrency: c.k for c in cfg.choices}
    lookup = check_schedule(cfg.schedule, largest, cfg.max_batch, chosen)
    assert len(lookup) == cfg.max_batch + 1


def test_losing_everywhere_means_no_speculative_config():
    cfg = deploy.derive(_rows({2: {1: 0.9, 4: 0.8}}), model="m", method="ngram")
    assert cfg.speculative_config is None and cfg.schedule == [[1, 256, 0]]
    assert "--speculative-config" not in cfg.command
    assert "serve without" in cfg.describe()


def test_command_is_pasteable():
    cfg = deploy.derive(_rows({4: {1: 1.6, 8: 1.1}}), model="/models/My Model",
                        method="draft_model", draft="/models/draft", max_batch=64)
    argv = shlex.split(cfg.command)
    assert argv[:3] == ["vllm", "serve", "/models/My Model"]
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec == {"method": "draft_model", "model": "/models/draft", "num_speculative_tokens": 4,
                    "num_speculative_tokens_per_batch_size": [[1, 64, 4]]}


@pytest.mark.parametrize("bad, message", [
    ([[2, 8, 4]], "must start at 1"),
    ([[1, 4, 4], [3, 8, 2]], "non-overlapping"),
    ([[1, 4, -1]], ">= 0"),
])
def test_vllm_refuses_a_bad_schedule_with_its_own_message(bad, message):
    from space.engine.dynamic import check_schedule

    with pytest.raises(ConfigError, match=message):
        check_schedule(bad, 4, 16, {})


def test_vllm_caps_k_at_num_speculative_tokens():
    """Why num_speculative_tokens is the schedule's largest k: vLLM caps each entry."""
    from space.engine.dynamic import check_schedule

    assert check_schedule([[1, 2, 4], [3, 8, 2]], 2, 8, {})[1:] == [2, 2, 2, 2, 2, 2, 2, 2]
    with pytest.raises(ConfigError, match="batch 1: k 4 expected, 2 used"):
        check_schedule([[1, 2, 4], [3, 8, 2]], 2, 8, {1: 4})


def test_max_batch_below_the_measured_range_is_refused():
    with pytest.raises(ValueError, match="below the largest measured"):
        deploy.schedule([Choice(1, 2, 1.2), Choice(16, 0, 0.9)], max_batch=8)


# Traffic's k per batch size (space/judge/dynamic_k.py), predicted from literal
# acceptance and step costs: every schedule it derives is one vLLM reads as meant.
GAINERS = {  # alpha per group, output tokens
    "strong": [(0.8, 100.0)],
    "mixed": [(0.8, 300.0), (0.5, 100.0)],
    "weak": [(0.1, 10.0)],
    "many": [(0.95, 50.0), (0.6, 200.0), (0.3, 20.0)],
}


@pytest.mark.parametrize("case", list(GAINERS), ids=list(GAINERS))
@pytest.mark.parametrize("kind", ["ngram", "draft_model"])
@pytest.mark.parametrize("max_batch", [8, 256])
def test_every_predicted_traffic_schedule_is_what_vllm_reads(case, kind, max_batch):
    import dataclasses

    from space.engine.dynamic import check_schedule
    from space.judge import theory
    from space.judge.dynamic_k import Gainer, predict
    from space.records.run import RunConfig
    from tests.helpers.traffic import NGRAM_CONFIG, NGRAM_CURVE

    config = NGRAM_CONFIG if kind == "ngram" else RunConfig.from_dict({
        **NGRAM_CONFIG.to_dict(), "method": "draft_model", "draft_model": "default-truncated",
        "speculative_config": {"method": "draft_model", "model": "/d",
                               "num_speculative_tokens": 4}})
    curve = dataclasses.replace(NGRAM_CURVE, method=kind)
    gainers = [Gainer(f"g{i}", theory.expected_tokens_per_step(a, 4), w)
               for i, (a, w) in enumerate(GAINERS[case])]
    s = predict(gainers, config, curve, max_batch=max_batch)
    assert s is not None and s.config is not None
    cfg = s.config
    if cfg.speculative_config is None:  # loses everywhere: served without speculation
        assert [k for *_, k in cfg.schedule] == [0]
        return
    largest = cfg.speculative_config["num_speculative_tokens"]
    assert largest == max(k for *_, k in cfg.schedule)
    lookup = check_schedule(cfg.schedule, largest, max_batch,
                            {c.concurrency: c.k for c in cfg.choices})
    assert len(lookup) == max_batch + 1
