"""What SpecLens reads from a vLLM server's /metrics, on literal Prometheus text:
k from the per-position series, the running requests, prefix caching from
``vllm:cache_config_info``, and the operator's warning that follows from it."""
from __future__ import annotations

from space.server.client import ServerInfo, draft_positions, prefix_caching, requests_running
from space.server.compare import Checked

CACHE_OFF = ('vllm:cache_config_info{block_size="16",cache_dtype="auto",'
             'enable_prefix_caching="False",engine="0",gpu_memory_utilization="0.9"} 1.0')
CACHE_ON = CACHE_OFF.replace('"False"', '"True"')
SPEC = "\n".join(
    ['# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter'] +
    [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",position="{i}"}} 3.0'
     for i in range(4)] +
    ['vllm:num_requests_running{engine="0",model_name="m"} 2.0',
     'vllm:num_requests_running{engine="1",model_name="m"} 1.0'])


def test_prefix_caching_from_cache_config_info():
    assert prefix_caching(CACHE_OFF) is False
    assert prefix_caching("# HELP x\n" + CACHE_ON) is True
    assert prefix_caching(SPEC) is None  # not exported: unknown, never guessed


def test_k_and_running_requests_summed_over_engines():
    assert draft_positions(SPEC) == 4 and draft_positions(CACHE_OFF) == 0
    assert requests_running(SPEC) == 3.0


def test_a_caching_server_gets_one_warning_line_naming_the_flag():
    def info(caching):
        return ServerInfo("m", 2048, "0.32.0", 0, prefix_caching=caching)

    assert Checked(info(False), info(None)).warnings() == []
    (line,) = Checked(info(False), info(True)).warnings()
    assert line.startswith("the speculative server caches prefixes")
    assert "--no-enable-prefix-caching" in line and "\n" not in line
