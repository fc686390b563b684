"""vis/memory.py: the memory figure, the KV-tax sentence and the HTML table."""
import pytest

from space.observe.memory import EngineMemory, GiB, SystemMemory
from tests.helpers.memory import engines, h200
from vis.memory import memory_figure, memory_html


def _traces(fig):
    return {t.name: list(t.y) for t in fig.data}


def test_figure_stacks_each_engine_and_the_gpu():
    fig = memory_figure(engines(), h200(), None, None)
    assert list(fig.data[0].x) == ["baseline", "speculative", "GPU 0<br>NVIDIA H200"]
    t = _traces(fig)
    assert t["target weights"] == [2.0, 2.0, None]
    assert t["draft weights"] == [None, 0.25, None]
    assert t["KV cache used"] == [0.25, 0.0, None]
    assert t["KV cache reserved, unused"] == [0.75, 0.75, None]
    assert t["GPU used (all processes)"] == [None, None, 60.0]
    assert t["GPU free"] == [None, None, 80.0]
    assert fig.layout.barmode == "stack"
    # Each engine's bar is as tall as what it holds.
    for i, e in enumerate(engines()):
        assert sum(v[i] or 0 for v in t.values()) == pytest.approx(e.total_bytes / GiB)


def test_figure_on_cpu_shows_process_within_host():
    host = SystemMemory(total_bytes=16 * GiB, available_bytes=10 * GiB, used_bytes=6 * GiB)
    fig = memory_figure(engines(), None, host, 2 * GiB)
    t = _traces(fig)
    assert fig.data[0].x[-1] == "host (CPU)"
    assert t["process RSS"][-1] == 2.0
    assert t["host used, other processes"][-1] == 4.0
    assert t["host available"][-1] == 10.0
    assert not any(name.startswith("GPU") for name in t)


def test_figure_with_nothing_says_so():
    fig = memory_figure([], None, None, None)
    assert len(fig.data) == 0
    assert fig.layout.annotations[0].text == "no memory figures yet"


def test_html_states_the_kv_tax_in_tokens():
    text = memory_html(engines(), h200(), None, None)
    assert "KV tax of the draft: 16,384 tokens (50.0% of the baseline&#x27;s 32,768; 1,024 blocks" in text
    assert "GPU 0 (NVIDIA H200): 60.00 GiB used of 140.00 GiB, 80.00 GiB free, 37% busy." in text
    assert "<td>target 2.00 GiB + draft 256.0 MiB</td>" in text


def test_html_on_cpu_and_escaped_labels():
    text = memory_html(engines(), None, None, 3 * GiB)
    assert "No GPU: process RSS 3.00 GiB." in text
    odd = EngineMemory("<b>x</b>", {"target": GiB})
    assert "&lt;b&gt;x&lt;/b&gt;" in memory_html([odd], None, None, None)


def test_html_without_a_pair_or_kv_figures():
    assert "needs both a baseline and a speculative engine" in memory_html([], None, None, None)
    blank = [EngineMemory("baseline"), EngineMemory("speculative")]
    assert "unknown until both engines report" in memory_html(blank, None, None, None)
