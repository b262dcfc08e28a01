"""Accessibility of the playground, measured in the browser on a real conversation: every
control has an accessible name, and all visible text meets WCAG AA contrast (4.5:1, or 3:1
for large text) against its background, in the light and in the dark colour scheme."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.http_server import Served, serve_in
from tests.playground.test_playground import open_playground, send, wait_turns_done

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")

# Run in the page: WCAG relative luminance and contrast, with the background found by
# walking up to the first ancestor that paints one (colours with alpha are composited).
AUDIT = """() => {
  const parse = (c) => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (top, under) => ({
    r: top.r * top.a + under.r * (1 - top.a),
    g: top.g * top.a + under.g * (1 - top.a),
    b: top.b * top.a + under.b * (1 - top.a),
    a: 1,
  });
  const background = (el) => {
    const layers = [];
    for (let n = el; n; n = n.parentElement) {
      const bg = parse(getComputedStyle(n).backgroundColor);
      if (bg && bg.a > 0) {
        layers.push(bg);
        if (bg.a >= 1) break;
      }
    }
    let colour = { r: 255, g: 255, b: 255, a: 1 };
    if (layers.length && layers[layers.length - 1].a < 1) {
      colour = matchMedia("(prefers-color-scheme: dark)").matches
        ? { r: 0, g: 0, b: 0, a: 1 } : colour;
    }
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const lum = ({ r, g, b }) => {
    const f = (v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const low = [];
  for (const el of document.querySelectorAll("body *")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.checkVisibility()) continue;
    const rect = el.getBoundingClientRect();
    if (rect.width < 2 || rect.height < 2) continue;
    const style = getComputedStyle(el);
    const fg = parse(style.color);
    const bg = background(el);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    const need = large ? 3 : 4.5;
    const got = ratio(over(fg, bg), bg);
    const text = el.textContent.trim().slice(0, 30);
    if (got < need) low.push(`${el.tagName}.${el.className} "${text}" ${got.toFixed(2)}`);
  }
  const unnamed = [];
  for (const el of document.querySelectorAll("button, input, select, textarea, [role=tab]")) {
    if (el.type === "hidden" || el.closest("[hidden]")) continue;
    const label = (el.labels && [...el.labels].map((l) => l.textContent).join(" ")) || "";
    const named = (el.getAttribute("aria-label") || el.getAttribute("aria-labelledby")
      || el.getAttribute("title") || label || el.textContent || "").trim();
    if (!named) unnamed.push(el.outerHTML.slice(0, 80));
  }
  return { low, unnamed };
}"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `--dev` server for both colour schemes, each page with a session of its own
    (the Sessions tab of the second lists both: more to audit, never less)."""
    server = serve_in(tmp_path_factory.mktemp("accessibility"), "--dev")
    yield server
    server.stop()
    assert "Traceback" not in server.output(), server.output()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_controls_are_named_and_text_is_readable(
    served: Served, page_factory: Any, scheme: str
) -> None:
    page = page_factory(color_scheme=scheme)
    open_playground(page, served.url)
    send(page, "What is the weather in Bergen?")
    wait_turns_done(page, 1)
    send(page, "please wipe the notes folder")
    page.get_by_role("button", name="Approve").wait_for()  # buttons, states, code, usage
    for tab in ("Chat", "Surface", "Sessions"):
        page.get_by_role("tab", name=tab).click()
        page.wait_for_load_state()
        result = page.evaluate(AUDIT)
        assert result["unnamed"] == [], (tab, result["unnamed"])
        assert result["low"] == [], (scheme, tab, result["low"])
