"""Page inputs -> ``EngineSpec`` / ``RequestSpec``, and the sample prompts (pure). Values
(an API client sends anything) are coerced here or refused with a one-line ``ConfigError``;
ranges are the specs' own ``validate``, as in the CLI."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from space.records import methods
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.runs import presets
from space.runs.offer import Offer

# Longest sample prompt offered on CPU: a prefill of thousands of tokens takes tens
# of seconds there.
CPU_SAMPLE_MAX_TOKENS = 1024


@dataclass(frozen=True)
class Sample:
    label: str
    text: str
    temperature: float


# Used only if the presets cannot be read.
BUILTIN_SAMPLES = (
    Sample("Code editing (built-in)",
           "Rename the variable x to total in this code and output the whole code:\n\n"
           "def add(a, b):\n    x = a + b\n    print(x)\n    return x\n", 0.0),
    Sample("Structured output (built-in)",
           "Extract the name, age and city from this text as JSON with keys name, age, "
           "city: 'Maria Lopez is 34 years old and lives in Porto.'", 0.0),
    Sample("Creative writing (built-in)", "Write a short poem about the sea at night.", 0.8),
)


def sample_prompts(on_gpu: bool = False) -> list[Sample]:
    """First prompt of each single-request workload preset (short ones on CPU)."""
    workloads = presets.load_or_warn(presets.load_workloads, "sample prompts",
                                     "using the built-in ones")
    if workloads is None:
        return list(BUILTIN_SAMPLES)
    out = [Sample(w.title, w.prompts[0].text, w.temperature) for w in workloads
           if w.concurrency == 1
           and (on_gpu or w.prompts[0].estimated_tokens <= CPU_SAMPLE_MAX_TOKENS)]
    return out or list(BUILTIN_SAMPLES)


def _number(value, name: str, kind=float):
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {value!r}") from None


def _whole(value, name: str) -> int:
    x = _number(value, name)
    if not float(x).is_integer():
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    return int(x)


def engine_spec(base: EngineSpec, method: str | None, draft: str | None, k,
                pair_id: str | None = None, *, offer: Offer) -> EngineSpec:
    """``base`` (from the command line) with the page's method, draft and k.

    The draft and the pair must be ones ``offer`` names (checked before anything
    reads the filesystem). The draft is kept only for methods that take one (a
    leftover name must not build a second, identical ngram engine). Other vLLM keys
    (e.g. ``prompt_lookup_min``) come from the chosen pair, else the command line's,
    only while method and draft are still that pair's.
    """
    if draft is not None and not isinstance(draft, str):  # free text lets an API send a list
        raise ConfigError(f"the draft must be a name, got {type(draft).__name__}")
    method = (method or "").strip() or None
    draft = (draft or "").strip() or None
    offer.check_draft(draft)
    offer.check_pair(pair_id)
    row = methods.info(method) if method else None
    if row is None or not row.takes_draft:
        draft = None
    source = base
    if pair_id:
        pair = presets.get_model_pair(str(pair_id)).engine_spec()
        if pair.model == base.model:
            source = pair
    spec = dataclasses.replace(base, method=method, draft_model=draft, k=_whole(k, "k"),
                               extra_speculative=())
    if source.method == method and (source.draft_model or None) == draft:
        spec = dataclasses.replace(spec, extra_speculative=source.extra_speculative,
                                   **source.vllm_key_fields())
    return spec


def speculative_spec(base: EngineSpec, method: str | None, draft: str | None, k,
                     pair_id: str | None = None, *, offer: Offer) -> EngineSpec:
    """``engine_spec`` with a speculative method required (Sweep, Traffic)."""
    spec = engine_spec(base, method, draft, k, pair_id, offer=offer)
    if not spec.is_speculative:
        raise ConfigError("choose a speculative method above")
    return spec


def request(prompt: str | None, temperature, top_p, max_tokens, seed, *,
            offer: Offer) -> RequestSpec:
    """The page's request; the prompt's length is bounded here, before any tokenizer."""
    if prompt is not None and not isinstance(prompt, str):
        raise ConfigError(f"the prompt must be text, got {type(prompt).__name__}")
    offer.check_prompt(prompt or "")
    seed_value = None if seed is None or seed == "" else _whole(seed, "seed")
    return RequestSpec(prompt=prompt or "", temperature=_number(temperature, "temperature"),
                       top_p=_number(top_p, "top_p"),
                       max_tokens=_whole(max_tokens, "max_tokens"), seed=seed_value)


def whole_in(value, name: str, low: int, high: int) -> int:
    n = _whole(value, name)
    if not low <= n <= high:
        raise ConfigError(f"{name} must be in {low}..{high}, got {n}")
    return n


def repeats(value) -> int:
    return whole_in(value, "repeats", 1, 10)


@dataclass(frozen=True)
class PairChoice:
    id: str
    label: str        # the title, with "(GPU only)" / "(needs ...)" when it cannot run here
    available: bool
    reason: str       # why not, "" when available


def pair_choices(on_gpu: bool, offer: Offer) -> list[PairChoice]:
    """The model-pair presets ``offer`` names, marked with whether each runs here."""
    from space.runs.workloads import pair_status

    pairs = presets.load_or_warn(presets.load_model_pairs, "model pairs", "offering none")
    out = []
    for p in [p for p in pairs or [] if p.id in offer.pairs]:
        st = pair_status(p, on_gpu)
        suffix = ("" if st.available else " (GPU only)" if p.needs_gpu and not on_gpu
                  else f" (needs {', '.join(p.requires)})")
        out.append(PairChoice(p.id, p.title + suffix, st.available, st.reason))
    return out


def workload_sample(workload_id: str) -> Sample:
    """The first prompt of a workload preset as a sample (``app.py --workload``)."""
    w = presets.get_workload(workload_id)
    return Sample(w.title, w.prompts[0].text, w.temperature)
