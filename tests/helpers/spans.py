"""Token spans in the HTML the views render, as a user's browser would read them."""
from __future__ import annotations

from html.parser import HTMLParser


class TokenSpans(HTMLParser):
    """Collects ``span.tok`` elements: their attributes and visible model text.

    Text inside ``tok-glyph`` spans (the ↵ and ∅ marks) is left out, so a
    span's text is the token's own text.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.spans: list[dict] = []
        self._stack: list[str] = []  # role of each open span: "tok", "glyph" or "other"

    def handle_starttag(self, tag, attrs):
        if tag != "span":
            return
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if "data-status" in a:
            self._stack.append("tok")
            self.spans.append({**a, "text": ""})
        else:
            self._stack.append("glyph" if "tok-glyph" in classes else "other")

    def handle_endtag(self, tag):
        if tag == "span" and self._stack:
            self._stack.pop()

    def handle_data(self, data):
        if "tok" in self._stack and "glyph" not in self._stack:
            self.spans[-1]["text"] += data


def parse_spans(html_text: str) -> list[dict]:
    p = TokenSpans()
    p.feed(html_text)
    return p.spans
