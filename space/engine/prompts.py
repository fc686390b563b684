"""Prompt -> token ids, checked with the tokenizer alone, before any engine is built."""
from __future__ import annotations

import functools

from space.records.config import ConfigError, RequestSpec


@functools.lru_cache(maxsize=8)
def load_tokenizer(model_path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_path)


def encode(tokenizer, req: RequestSpec, max_model_len: int) -> list[int]:
    """Token ids: system, earlier turns, then the prompt through the chat template. Raw or
    without a template, only the prompt: there is no agreed way to join turns."""
    req.validate()
    if req.raw or not getattr(tokenizer, "chat_template", None):
        ids = tokenizer.encode(req.prompt)
    else:
        msgs = [{"role": "system", "content": req.system}] if req.system else []
        msgs += [{"role": role, "content": content} for role, content in req.messages]
        msgs.append({"role": "user", "content": req.prompt})
        ids = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        if not isinstance(ids, list):  # BatchEncoding in newer transformers
            ids = ids["input_ids"]
    limit = max_model_len - 1  # room for at least one output token
    if len(ids) > limit:
        raise ConfigError(f"the prompt is {len(ids)} tokens, longer than max_model_len "
                          f"{max_model_len} allows ({limit}); shorten it or raise max_model_len")
    return list(ids)
