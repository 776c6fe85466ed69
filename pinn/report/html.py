"""``report.html``: the run's ``report.md`` as one self-contained page (images inlined).

The Markdown is rendered by markdown-it-py (CommonMark with tables, raw HTML off), and
every image of the run folder is inlined as a base64 ``data:`` URI, so the page can be
mailed or archived alone; links to the folder's other files stay relative.
"""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

from pinn.io import write_text

__all__ = ["markdown_to_html", "write_html"]

_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
         ".svg": "image/svg+xml", ".gif": "image/gif"}

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 72rem;
       margin: 2rem auto; padding: 0 1rem; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.6rem; text-align: left; }
th:empty { display: none; }
img { max-width: 100%; height: auto; }
h2 { margin-top: 2rem; font-size: 1.15rem; }
code { background: #f4f4f4; padding: 0 0.2rem; }
"""


def _data_uri(path: Path) -> str | None:
    mime = _MIME.get(path.suffix.lower())
    if mime is None or not path.is_file():
        return None
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def markdown_to_html(text: str, base: str | os.PathLike, title: str | None = None) -> str:
    """A whole HTML page of the Markdown ``text``; images at paths relative to ``base``
    are inlined (an image that is not there keeps its path)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    base = Path(base)
    for tok in tokens:
        for child in tok.children or ():
            if child.type != "image":
                continue
            src = str(child.attrGet("src") or "")
            if src and "://" not in src and not src.startswith(("data:", "/")):
                uri = _data_uri(base / src)
                if uri is not None:
                    child.attrSet("src", uri)
    if title is None:
        title = next((tokens[i + 1].content for i, t in enumerate(tokens)
                      if t.type == "heading_open" and t.tag == "h1"), "pinn report")
    body = md.renderer.render(tokens, md.options, {})
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
            f"<body>\n{body}</body>\n</html>\n")


def write_html(run_dir: str | os.PathLike, markdown: str = "report.md",
               name: str = "report.html") -> Path:
    """Write ``name`` beside ``markdown`` in ``run_dir``: the report as one page."""
    d = Path(run_dir)
    text = (d / markdown).read_text(encoding="utf-8")
    return write_text(d / name, markdown_to_html(text, d))
