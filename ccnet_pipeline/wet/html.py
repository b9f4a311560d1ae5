"""Main text of an HTML page (WARC input), with resiliparse. Plain Python, no Beam."""

from __future__ import annotations

import codecs
from typing import Optional, Tuple

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding
from resiliparse.parse.html import HTMLTree


def charset_of(content_type: str) -> Optional[str]:
    """The charset of an HTTP Content-Type header when Python knows it, else None."""
    for part in content_type.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.lower() == "charset" and value:
            try:
                return codecs.lookup(value.strip().strip("\"'")).name
            except LookupError:
                return None
    return None


def html_to_text(body: bytes, content_type: str = "") -> Tuple[str, str]:
    """(title, main text) of an HTML page. The charset comes from the HTTP header when it names
    one, else from the page's own <meta> or byte-level detection; text lines are stripped and
    empty ones dropped."""
    encoding = charset_of(content_type) or detect_encoding(body, from_html_meta=True)
    tree = HTMLTree.parse_from_bytes(body, encoding, errors="replace")
    text = extract_plain_text(tree, main_content=True, list_bullets=False)
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return " ".join((tree.title or "").split()), "\n".join(line for line in lines if line)
