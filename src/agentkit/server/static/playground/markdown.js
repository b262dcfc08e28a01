// A small markdown renderer that builds DOM nodes, never HTML strings: model text is only
// ever set as text content, so nothing it says can become markup, a script or a handler.
// Covers what models write: headings, paragraphs, emphasis, inline and fenced code (with
// highlighting), lists, quotes, tables, rules and links (http, https and mailto only).

import { highlight } from "./highlight.js";

const SAFE_URL = /^(https?:|mailto:)/i;

export function renderMarkdown(source) {
  const root = document.createElement("div");
  root.className = "md";
  const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/);
    if (fence) {
      const close = fence[1];
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(close)) body.push(lines[i++]);
      i += 1; // the closing fence (or the end of an unfinished stream)
      root.append(codeBlock(body.join("\n"), fence[2]));
      continue;
    }
    if (!line.trim()) {
      i += 1;
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      const h = document.createElement(`h${Math.min(heading[1].length + 2, 6)}`);
      inline(h, heading[2].replace(/\s#+\s*$/, ""));
      root.append(h);
      i += 1;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      root.append(document.createElement("hr"));
      i += 1;
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      const q = document.createElement("blockquote");
      q.append(...renderMarkdown(quoted.join("\n")).childNodes);
      root.append(q);
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
      const rows = [];
      while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) rows.push(lines[i++]);
      root.append(table(rows));
      continue;
    }
    const item = line.match(/^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/);
    if (item) {
      const ordered = /\d/.test(item[2]);
      const list = document.createElement(ordered ? "ol" : "ul");
      while (i < lines.length) {
        const m = lines[i].match(/^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/);
        if (m && /\d/.test(m[2]) === ordered) {
          const li = document.createElement("li");
          inline(li, m[3]);
          list.append(li);
          i += 1;
        } else if (lines[i].trim() && /^\s{2,}/.test(lines[i]) && list.lastChild) {
          list.lastChild.append(document.createElement("br"));
          inline(list.lastChild, lines[i].trim());
          i += 1;
        } else break;
      }
      root.append(list);
      continue;
    }
    const para = [];
    while (
      i < lines.length &&
      lines[i].trim() &&
      !/^(#{1,6}\s|\s*```|\s*~~~|\s*>|\s*([-*+]|\d{1,9}[.)])\s)/.test(lines[i])
    ) {
      para.push(lines[i++]);
    }
    if (!para.length) para.push(lines[i++]);
    const p = document.createElement("p");
    para.forEach((text, n) => {
      if (n) p.append(document.createElement("br"));
      inline(p, text);
    });
    root.append(p);
  }
  return root;
}

function codeBlock(text, lang) {
  const pre = document.createElement("pre");
  pre.className = "code";
  const code = document.createElement("code");
  if (lang) code.dataset.lang = lang;
  highlight(code, text, lang);
  pre.append(code);
  return pre;
}

function table(rows) {
  const cells = (row) => row.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  const t = document.createElement("table");
  const head = document.createElement("thead");
  const tr = document.createElement("tr");
  for (const c of cells(rows[0])) {
    const th = document.createElement("th");
    inline(th, c);
    tr.append(th);
  }
  head.append(tr);
  t.append(head);
  const body = document.createElement("tbody");
  for (const row of rows.slice(2)) {
    const r = document.createElement("tr");
    for (const c of cells(row)) {
      const td = document.createElement("td");
      inline(td, c);
      r.append(td);
    }
    body.append(r);
  }
  t.append(body);
  const wrap = document.createElement("div");
  wrap.className = "table-wrap";
  wrap.append(t);
  return wrap;
}

// Inline spans, left to right: the earliest match wins; text between matches stays text.
const INLINE = [
  ["code", /`([^`]+)`/],
  ["link", /\[([^\]]+)\]\(([^)\s]+)\)/],
  ["strong", /\*\*([^*]+)\*\*|__([^_]+)__/],
  ["em", /\*([^*\s][^*]*)\*|(?<![\w])_([^_\s][^_]*)_(?![\w])/],
  ["del", /~~([^~]+)~~/],
  ["auto", /\bhttps?:\/\/[^\s<>()]+[^\s<>().,;:!?'"]/],
];

export function inline(parent, text) {
  let rest = text;
  while (rest) {
    let best = null;
    for (const [kind, re] of INLINE) {
      const m = re.exec(rest);
      if (m && (best === null || m.index < best.m.index)) best = { kind, m };
    }
    if (!best) {
      parent.append(document.createTextNode(rest));
      return;
    }
    const { kind, m } = best;
    if (m.index) parent.append(document.createTextNode(rest.slice(0, m.index)));
    parent.append(span(kind, m));
    rest = rest.slice(m.index + m[0].length);
  }
}

function span(kind, m) {
  if (kind === "code") {
    const c = document.createElement("code");
    c.textContent = m[1];
    return c;
  }
  if (kind === "link" || kind === "auto") {
    const href = kind === "link" ? m[2] : m[0];
    const label = kind === "link" ? m[1] : m[0];
    if (!SAFE_URL.test(href)) return document.createTextNode(m[0]);
    const a = document.createElement("a");
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener noreferrer nofollow";
    if (kind === "link") inline(a, label);
    else a.textContent = label;
    return a;
  }
  const el = document.createElement(kind);
  inline(el, m[1] ?? m[2] ?? "");
  return el;
}
