// The playground's two DOM builders, shared by every view so that each one makes its
// nodes the same way: text always goes in as textContent, never as markup.

/** A new `tag` element with class `cls` and, when given, `text` as its text. */
export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A `type="button"` button labelled `label` that calls `onClick`. */
export function button(label, onClick, cls = "ghost") {
  const b = el("button", cls, label);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}
