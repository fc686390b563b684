"""The lesson's style and step-through script (vis/assets/lesson.*), written inline by
vis/lesson.py; the file's Content-Security-Policy allows the script by its hash only. The
script marks the current step ``aria-current="step"`` in its section, tokens and timeline."""
from __future__ import annotations

import base64
import hashlib

from space.common.paths import asset

LESSON_CSS = asset(__file__, "lesson.css")
LESSON_JS = asset(__file__, "lesson.js")


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script: 'sha256-<base64>'.

        >>> script_hash("")
        "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    """
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
