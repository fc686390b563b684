"""``python -m space doctor`` on CPU with the session's engines: every check
passes on the default pair (NVML's is skipped with its reason) and the JSON
report validates (issue 30)."""
from __future__ import annotations

import json

from space.records import doctor as rec
from space.records import hooks
from space.runs import doctor


def test_the_doctor_passes_on_the_default_pair(pool, ngram_engine, baseline_engine, tmp_path):
    report = doctor.run(spec=ngram_engine.spec, pool=pool, max_tokens=16, hub_timeout_s=0.5)
    assert report.failed == [], report.checks
    by_name = {c.name: c for c in report.checks}
    assert set(by_name) == set(rec.CHECK_NAMES)
    assert by_name[rec.COUNTS_EQUAL].passed and by_name[rec.FORWARD_TIMED].passed
    assert by_name[rec.HOOKS_ATTACHED].passed
    assert by_name[rec.NVML_MEMORY].passed is None and "no GPU" in by_name[rec.NVML_MEMORY].detail
    assert [h.name for h in report.hooks] == list(hooks.HOOK_NAMES)
    assert report.machine["device"] == "cpu" and report.machine["cpu"]["model"]
    assert report.dtype["value"] == ngram_engine.config.dtype and report.dtype["reason"]
    methods = {m.name: m for m in report.methods}
    assert methods["ngram"].available and methods["draft_model"].available
    assert not methods["eagle3"].available and "GPU" in methods["eagle3"].why
    path = tmp_path / "doctor.json"
    path.write_text(json.dumps(report.to_dict()))
    assert rec.problems(json.loads(path.read_text())) == []
