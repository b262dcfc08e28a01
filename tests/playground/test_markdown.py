"""The playground's markdown renderer, run in the browser from the served module: what
models write renders as structure, and nothing in the text can become live markup."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.http_server import Served

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")

RENDER = """async (source) => {
  const { renderMarkdown } = await import("./playground/assets/markdown.js");
  const node = renderMarkdown(source);
  document.body.append(node);
  return node.innerHTML;
}"""

SAMPLE = """# Plan

Some **bold**, *soft*, `inline`, ~~gone~~ and a [link](https://example.com/a).

- one
- two

1. first
2. second

> quoted

| city | tempC |
|---|---|
| Oslo | 3 |

```python
def hello(name):
    return "hi " + name  # greet
```
"""


@pytest.fixture
def md_page(shared_server: Served, page_factory: Any) -> Any:
    page = page_factory()
    page.goto(f"{shared_server.url}/playground")
    page.locator("body[data-ready]").wait_for(state="attached")
    return page


def render(page: Any, source: str) -> str:
    html: str = page.evaluate(RENDER, source)
    return html


def test_structure_renders(md_page: Any) -> None:
    html = render(md_page, SAMPLE)
    for fragment in (
        "<h3>Plan</h3>",
        "<strong>bold</strong>",
        "<em>soft</em>",
        "<code>inline</code>",
        "<del>gone</del>",
        '<a href="https://example.com/a" target="_blank" rel="noopener noreferrer nofollow">',
        "<ul><li>one</li><li>two</li></ul>",
        "<ol><li>first</li><li>second</li></ol>",
        "<blockquote><p>quoted</p></blockquote>",
        "<th>city</th>",
        "<td>Oslo</td>",
        '<code data-lang="python"><span class="tok-keyword">def</span> hello(name):',
        '<span class="tok-string">"hi "</span>',
        '<span class="tok-comment"># greet</span>',
    ):
        assert fragment in html, (fragment, html)


@pytest.mark.parametrize(
    "attack",
    [
        "<img src=x onerror=alert(1)>",
        "<script>alert(1)</script>",
        "[x](javascript:alert(1))",
        "[x](data:text/html,<script>alert(1)</script>)",
        "```html\n<iframe src=javascript:alert(1)></iframe>\n```",
        "| <b onmouseover=alert(1)>x</b> | y |\n|---|---|\n| 1 | 2 |",
        "**<svg onload=alert(1)>**",
    ],
)
def test_markup_in_text_stays_text(md_page: Any, attack: str) -> None:
    html = render(md_page, attack)
    for tag in ("<img", "<script", "<iframe", "<svg", "<b ", 'href="javascript', 'href="data'):
        assert tag not in html, html
    rendered = md_page.evaluate(
        "() => [...document.querySelectorAll('body > .md *')].map((n) => n.tagName)"
    )
    assert set(rendered) <= {
        "P",
        "A",
        "STRONG",
        "PRE",
        "CODE",
        "SPAN",
        "TABLE",
        "THEAD",
        "TBODY",
        "TR",
        "TH",
        "TD",
        "DIV",
        "BR",
    }, rendered
