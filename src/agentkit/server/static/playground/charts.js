// Small SVG charts of our own: an estimate with its band over time, and lines over time.
// No library and no inline styles (the page's CSP is style-src 'self'): shapes carry
// classes, and style.css colours them for light and dark. Each chart is a <figure> whose
// <svg role="img"> has an aria-label summary, with a table of its points in a fold below,
// and every point has a <title> (shown on hover) with its exact values.

import { formatCount } from "./format.js";
import { el } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";
const HEIGHT = 190;
const PAD = { top: 12, right: 12, bottom: 26, left: 64 };

// The width to draw a chart at inside `target`: its grid column (one column below 852 px,
// two above; see .charts in style.css), so the charts' text is never scaled down.
export function chartWidth(target) {
  const inner = (target.clientWidth || 800) - 34;
  return Math.max(280, (inner >= 852 ? (inner - 12) / 2 : inner) - 18);
}

function svg(tag, attrs = {}, cls) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (cls) node.setAttribute("class", cls);
  return node;
}

function titled(node, text) {
  const title = svg("title");
  title.textContent = text;
  node.append(title);
  return node;
}

export function when(at) {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? String(at) : d.toLocaleString([], { dateStyle: "short", timeStyle: "medium" });
}

function clock(ms, span) {
  const d = new Date(ms);
  if (span > 2 * 86_400_000) return d.toLocaleDateString([], { month: "short", day: "numeric" });
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: span < 600_000 ? "2-digit" : undefined });
}

// Round tick values covering [lo, hi].
function ticks(lo, hi, count = 4) {
  const span = hi - lo || Math.abs(hi) || 1;
  const raw = span / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

// The frame both charts share: scales, grid, axes. `xs` are times in ms.
function frame(width, xs, lo, hi, formatY, formatX) {
  const w = Math.max(280, Math.round(width));
  const root = svg("svg", { viewBox: `0 0 ${w} ${HEIGHT}`, width: w, height: HEIGHT, role: "img" }, "chart-svg");
  const x0 = Math.min(...xs);
  const x1 = Math.max(...xs);
  const innerW = w - PAD.left - PAD.right;
  const innerH = HEIGHT - PAD.top - PAD.bottom;
  if (lo === hi) { lo -= 1; hi += 1; }
  const margin = (hi - lo) * 0.06;
  lo -= margin;
  hi += margin;
  const x = (t) => PAD.left + (x1 === x0 ? innerW / 2 : ((t - x0) / (x1 - x0)) * innerW);
  const y = (v) => PAD.top + (1 - (v - lo) / (hi - lo)) * innerH;
  const axes = svg("g", { "aria-hidden": "true" }, "chart-axes");
  for (const v of ticks(lo, hi)) {
    axes.append(svg("line", { x1: PAD.left, x2: w - PAD.right, y1: y(v), y2: y(v) }, "chart-grid"));
    const label = svg("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end" }, "chart-tick");
    label.textContent = formatY(v);
    axes.append(label);
  }
  const span = x1 - x0;
  for (const [t, anchor] of [[x0, "start"], [x1, "end"]]) {
    const label = svg("text", { x: x(t), y: HEIGHT - 8, "text-anchor": x1 === x0 ? "middle" : anchor }, "chart-tick");
    label.textContent = formatX ? formatX(t) : clock(t, span);
    axes.append(label);
    if (x1 === x0) break;
  }
  axes.append(svg("line", { x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: HEIGHT - PAD.bottom }, "chart-axis"));
  root.append(axes);
  return { root, x, y, w, top: PAD.top, bottom: HEIGHT - PAD.bottom };
}

function pathOf(points) {
  return points.map(([px, py], i) => `${i ? "L" : "M"}${px.toFixed(1)},${py.toFixed(1)}`).join(" ");
}

// A vertical marker (a pause) with its label, and a horizontal one (zero, a limit).
function vmark(f, t, cls, label) {
  const g = svg("g", {}, cls);
  g.append(svg("line", { x1: f.x(t), x2: f.x(t), y1: f.top, y2: f.bottom }));
  // Near the right edge the label goes to the left of its line, so it is never cut off.
  // Successive markers put their labels a line lower each (three lines, then round again),
  // so two markers close together do not print over each other.
  const right = f.x(t) > f.w - 110;
  f.marks = (f.marks || 0) + 1;
  const y = f.top + 10 + 12 * ((f.marks - 1) % 3);
  const text = svg("text", { x: f.x(t) + (right ? -3 : 3), y, "text-anchor": right ? "end" : "start" }, "chart-mark-label");
  text.textContent = label.split(":")[0];
  if (f.marks <= 6) g.append(text); // past six, the lines and their titles say it
  return titled(g, label);
}

function hmark(f, v, cls, label) {
  const g = svg("g", {}, cls);
  g.append(svg("line", { x1: PAD.left, x2: f.w - PAD.right, y1: f.y(v), y2: f.y(v) }));
  const text = svg("text", { x: f.w - PAD.right - 2, y: f.y(v) - 4, "text-anchor": "end" }, "chart-mark-label");
  text.textContent = label;
  g.append(text);
  return titled(g, label);
}

// Transparent columns, one per point: hovering anywhere over a point's time shows it.
function hits(f, xs, labels) {
  const g = svg("g", {}, "chart-hits");
  xs.forEach((t, i) => {
    const left = i ? (f.x(xs[i - 1]) + f.x(t)) / 2 : f.x(t) - 4;
    const right = i < xs.length - 1 ? (f.x(t) + f.x(xs[i + 1])) / 2 : f.x(t) + 4;
    const rect = svg("rect", { x: left, y: f.top, width: Math.max(1, right - left), height: f.bottom - f.top }, "chart-hit");
    g.append(titled(rect, labels[i]));
  });
  return g;
}

function pointsTable(caption, head, rows) {
  const fold = el("details", "fold chart-data");
  fold.append(el("summary", "label", caption));
  const t = el("table");
  const tr = el("tr");
  for (const h of head) tr.append(el("th", "", h));
  t.append(tr);
  for (const r of rows) {
    const row = el("tr");
    for (const v of r) row.append(el("td", "", v));
    t.append(row);
  }
  const wrap = el("div", "table-wrap");
  wrap.append(t);
  fold.append(wrap);
  return fold;
}

// At most `max` rows of a long series for the table (the last one kept).
function sample(list, max = 12) {
  if (list.length <= max) return list;
  const last = list.length - 1;
  return [...new Set(Array.from({ length: max }, (_, i) => Math.round((i * last) / (max - 1))))].map((i) => list[i]);
}

function figure(title, summary, root, legend, table) {
  const fig = el("figure", "chart");
  fig.append(el("figcaption", "chart-title", title));
  root.setAttribute("aria-label", summary);
  fig.append(root);
  if (legend) fig.append(legend);
  fig.append(el("p", "chart-summary muted", summary));
  if (table) fig.append(table);
  return fig;
}

// The estimate and its band over time. points: [{at, estimate, lower, upper, n}].
// options: {title, summary, format, zero, limit: {value, label}, pauses: [{at, label}],
// width, nLabel(point)}.
export function bandChart(points, options) {
  const fmt = options.format;
  const xs = points.map((p) => Date.parse(p.at));
  const values = points.flatMap((p) => [p.lower, p.upper, p.estimate]);
  if (options.zero) values.push(0);
  if (options.limit) values.push(options.limit.value);
  const f = frame(options.width, xs, Math.min(...values), Math.max(...values), fmt);
  const upper = points.map((p, i) => [f.x(xs[i]), f.y(p.upper)]);
  const lower = points.map((p, i) => [f.x(xs[i]), f.y(p.lower)]).reverse();
  f.root.append(svg("path", { d: `${pathOf([...upper, ...lower])} Z` }, "chart-band"));
  if (options.zero) f.root.append(hmark(f, 0, "chart-zero", "0"));
  if (options.limit) f.root.append(hmark(f, options.limit.value, "chart-limit", options.limit.label));
  f.root.append(svg("path", { d: pathOf(points.map((p, i) => [f.x(xs[i]), f.y(p.estimate)])) }, "chart-line"));
  for (const p of options.pauses || []) {
    const t = Date.parse(p.at);
    if (!Number.isNaN(t)) f.root.append(vmark(f, Math.min(Math.max(t, Math.min(...xs)), Math.max(...xs)), "chart-pause", p.label));
  }
  const nLabel = options.nLabel || ((p) => `n ${p.n}`);
  const labels = points.map((p) => `${when(p.at)} · ${nLabel(p)} · ${fmt(p.estimate)} [${fmt(p.lower)}, ${fmt(p.upper)}]`);
  f.root.append(hits(f, xs, labels));
  const legend = el("p", "chart-legend muted");
  legend.append(el("span", "key key-line", "estimate"), el("span", "key key-band", "95% confidence sequence"));
  if (options.zero) legend.append(el("span", "key key-zero", "zero"));
  if (options.limit) legend.append(el("span", "key key-limit", "limit"));
  if ((options.pauses || []).length) legend.append(el("span", "key key-pause", "paused"));
  const table = pointsTable(`Data (${formatCount(points.length)} points)`, ["time", "samples", "estimate", "lower", "upper"],
    sample(points).map((p) => [when(p.at), nLabel(p), fmt(p.estimate), fmt(p.lower), fmt(p.upper)]));
  return figure(options.title, options.summary, f.root, legend, table);
}

// Lines over time, one per series: [{name, points: [{at, value}]}], drawn as steps
// (cumulative counts change only when something happens), or with `steps: false` as
// straight lines with a dot per point (a trend across runs). `lo`/`hi` widen the y range;
// `formatX(ms)` names the first and last x (times by default); `marks: [{at, label}]`
// draws vertical markers (named `marksLabel` in the legend).
export function lineChart(series, options) {
  const fmt = options.format;
  const all = series.flatMap((s) => s.points);
  const xs = all.map((p) => Date.parse(p.at));
  const values = [0, ...all.map((p) => p.value), ...[options.lo, options.hi].filter((v) => typeof v === "number")];
  const f = frame(options.width, xs, Math.min(...values), Math.max(...values), fmt, options.formatX);
  const legend = el("p", "chart-legend muted");
  series.forEach((s, i) => {
    const cls = `series-${i % 4}`;
    const pts = [];
    for (const p of s.points) {
      const px = f.x(Date.parse(p.at));
      if (pts.length && options.steps !== false) pts.push([px, pts[pts.length - 1][1]]);
      pts.push([px, f.y(p.value)]);
    }
    const g = svg("g", {}, `chart-series ${cls}`);
    g.append(svg("path", { d: pathOf(pts) }, "chart-line"));
    if (options.steps === false) {
      for (const p of s.points.slice(0, -1)) {
        g.append(svg("circle", { cx: f.x(Date.parse(p.at)), cy: f.y(p.value), r: 3 }, "chart-dot"));
      }
    }
    const lastP = s.points[s.points.length - 1];
    if (lastP) {
      g.append(titled(svg("circle", { cx: f.x(Date.parse(lastP.at)), cy: f.y(lastP.value), r: 3.5 }, "chart-dot"),
        `${s.name}: ${fmt(lastP.value)} at ${when(lastP.at)}`));
    }
    f.root.append(g);
    legend.append(el("span", `key key-series ${cls}`, s.name));
  });
  for (const m of options.marks || []) {
    const t = Date.parse(m.at);
    if (!Number.isNaN(t)) f.root.append(vmark(f, Math.min(Math.max(t, Math.min(...xs)), Math.max(...xs)), m.cls || "chart-pause", m.label));
  }
  if ((options.marks || []).length) {
    // One key per kind of marker drawn: [legend class, label] pairs, or one "marked" key.
    const keys = options.marksLegend || [["key-pause", options.marksLabel || "marked"]];
    const drawn = new Set(options.marks.map((m) => m.cls || "chart-pause"));
    for (const [cls, text] of keys) if (!options.marksLegend || drawn.has(cls.replace("key-", "chart-"))) legend.append(el("span", `key ${cls}`, text));
  }
  // Hover columns over the merged times: every series' value at that time.
  const times = [...new Set(xs)].sort((a, b) => a - b);
  const at = (s, t) => {
    let v = 0;
    for (const p of s.points) if (Date.parse(p.at) <= t) v = p.value;
    return v;
  };
  const shown = times.length > 400 ? sample(times, 400) : times;
  f.root.append(hits(f, shown, shown.map((t) => `${when(t)} · ${series.map((s) => `${s.name} ${fmt(at(s, t))}`).join(" · ")}`)));
  const table = pointsTable(`Data (${formatCount(shown.length)} points)`, ["time", ...series.map((s) => s.name)],
    sample(shown).map((t) => [when(t), ...series.map((s) => fmt(at(s, t)))]));
  return figure(options.title, options.summary, f.root, legend, table);
}
