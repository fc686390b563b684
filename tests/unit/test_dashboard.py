"""deploy/: every metric the Grafana dashboard queries is one the app exports,
and the compose stack's files point at each other."""
import json
import re
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from space.observe.prom import Metrics
from tests.helpers.memory import engines, h200
from tests.helpers.traces import ngram_run, short_baseline

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "speclens-dashboard.json"

_NOT_METRICS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                "and", "or", "unless", "offset", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: identifiers that are not functions,
    keywords, label names or values, durations or numbers."""
    s = re.sub(r'"(?:\\.|[^"\\])*"', " ", expr)               # strings
    s = re.sub(r"\{[^}]*\}", " ", s)                            # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)                           # range selectors
    s = re.sub(r"\boffset\s+\S+", " ", s)                       # offset 5m
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    s = re.sub(r"(?<![\w:])\d+(\.\d+)?([eE][+-]?\d+)?", " ", s)  # numbers
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", s):
        if m.group() in _NOT_METRICS or s[m.end():].lstrip().startswith("("):
            continue  # keywords; functions and aggregations are followed by "("
        names.add(m.group())
    return names


def all_panels(dash: dict) -> list[dict]:
    out = []
    for p in dash["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))  # collapsed rows hold their panels
    return out


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in all_panels(dash) for t in p.get("targets", []) if "expr" in t]


def exported_sample_names() -> set[str]:
    """Sample names in the scrape after a run of each engine and a memory reading.
    Histograms expose name_bucket/_sum/_count and counters name_total, so the
    queried names are compared to these as they are, with no suffix stripped."""
    m = Metrics()
    m.observe_run("baseline", short_baseline())
    m.observe_run("speculative", ngram_run())
    m.observe_error("baseline")
    m.observe_memory(engines(), h200())
    return {s.name for fam in text_string_to_metric_families(m.render().decode())
            for s in fam.samples}


def test_metric_names_parses_promql():
    expr = ('histogram_quantile(0.9, sum by (engine, le) (rate(speclens_tpot_seconds_bucket'
            '{engine=~"spec.*"}[$__rate_interval]))) / on() group_left() '
            'sum(increase(x_total[5m] offset 1h)) * 1e3 + max without (gpu) (y:recorded)')
    assert metric_names(expr) == {"speclens_tpot_seconds_bucket", "x_total", "y:recorded"}


def test_every_queried_metric_is_exported():
    exprs = dashboard_exprs()
    queried = set().union(*(metric_names(e) for e in exprs))
    exported = exported_sample_names()
    assert len(exprs) >= 10 and len(queried) >= 10  # guard against a vacuous pass
    assert queried - exported == set()


def test_a_wrong_name_would_fail():
    assert metric_names("rate(speclens_tpot_seconds_total[1m])") - exported_sample_names() \
        == {"speclens_tpot_seconds_total"}


def test_dashboard_panels_and_datasource():
    dash = json.loads(DASHBOARD.read_text())
    assert 38 <= dash["schemaVersion"] <= 41
    assert [i["name"] for i in dash["__inputs"]] == ["DS_PROMETHEUS"]
    # The same name as a datasource variable, so provisioning (which ignores
    # __inputs) resolves ${DS_PROMETHEUS} too.
    assert any(v["name"] == "DS_PROMETHEUS" and v["type"] == "datasource"
               for v in dash["templating"]["list"])
    panels = all_panels(dash)
    assert len({p["id"] for p in panels}) == len(panels)
    for p in panels:
        for t in [p] + p.get("targets", []):
            assert t["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
    titles = " | ".join(p["title"] for p in panels)
    for word in ("TPOT", "acceptance", "position", "KV-cache", "GPU memory"):
        assert word.lower() in titles.lower()


def test_prometheus_scrapes_the_app():
    conf = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    (job,) = conf["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"][0]["targets"] == ["app:7860"]
    # The dashboard's RSS query names this job.
    assert any(f'job="{job["job_name"]}"' in e for e in dashboard_exprs())


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def test_compose_app_reserves_an_nvidia_gpu(compose):
    app = compose["services"]["app"]
    assert app["build"]["context"] == ".."
    (dev,) = app["deploy"]["resources"]["reservations"]["devices"]
    assert dev["driver"] == "nvidia" and "gpu" in dev["capabilities"]
    assert "7860:7860" in app["ports"]


def test_compose_mounts_exist_and_grafana_finds_the_dashboard(compose):
    mounts = {}
    for svc in compose["services"].values():
        for v in svc.get("volumes", []):
            host, container = v.split(":")[:2]
            if host.startswith("."):
                assert (DEPLOY / host).exists(), host
                mounts[container] = DEPLOY / host
    provider = yaml.safe_load(
        (DEPLOY / "grafana/provisioning/dashboards/speclens.yml").read_text())["providers"][0]
    folder = provider["options"]["path"]
    assert mounts[f"{folder}/speclens-dashboard.json"] == DASHBOARD
    ds = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    assert ds["datasources"][0]["url"] == "http://prometheus:9090"
    assert ds["datasources"][0]["isDefault"] is True
