# SpecLens on a GPU box: the official vLLM image (CUDA build, pinned to the
# version the per-step trace hooks were tested with), plus the app.
#   docker build -t speclens . && docker run --gpus all -p 7860:7860 -e HF_TOKEN speclens
FROM vllm/vllm-openai:v0.33.0

WORKDIR /app
COPY . /app
# The same setup script as the README, so the two cannot drift. --system: the
# image's Python already has vllm==0.33.0; --gpu: no nvidia-smi at build time.
RUN bash scripts/setup.sh --gpu --system

ENV VLLM_ENABLE_V1_MULTIPROCESSING=0 \
    GRADIO_ANALYTICS_ENABLED=False
EXPOSE 7860
ENTRYPOINT ["python3", "app.py", "--host", "0.0.0.0", "--port", "7860"]
