"""Driving the page's run endpoint through gradio_client, and reading what it served."""
from __future__ import annotations

import urllib.request

from space.trace import CompareRecord, load

DEFAULTS = dict(method="ngram", draft="", k=4, temperature=0.0, top_p=1.0, max_tokens=48,
                seed=0, repeats=1)


def run(client, prompt, **kw):
    a = {**DEFAULTS, **kw}
    return client.predict(prompt, a["method"], a["draft"], a["k"], a["temperature"],
                          a["top_p"], a["max_tokens"], a["seed"], a["repeats"], api_name="/run")


def fetch_record(app_url: str, update: dict) -> CompareRecord:
    """The trace JSON behind the page's download button."""
    with urllib.request.urlopen(f"{app_url}gradio_api/file={update['value']}") as r:
        return load(r.read().decode())
