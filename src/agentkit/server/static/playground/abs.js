// The A/Bs tab: per experiment, charts of the readout over time (GET /v1/abs/timeline)
// above the tables of today's readout (GET /v1/abs).

import { ApiError, api } from "./api.js";
import { emptyTab } from "./empty.js";
import { bandChart, chartWidth, lineChart, when } from "./charts.js";
import { formatCount, formatMean, formatMetric, formatMoney } from "./format.js";
import { button, el } from "./dom.js";

// The metrics charted first (guardrail metrics go before these); the rest are folded.
const HEADLINE = ["completed", "costUsd", "latencyMs", "steps"];
const ARM_METRICS = ["completed", "failed", "steps", "toolCalls", "costUsd", "latencyMs", "inputTokens", "outputTokens"];

function table(rows) {
  if (!rows.length) return el("p", "muted", "Nothing yet.");
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const t = el("table");
  const head = el("tr");
  for (const k of keys) head.append(el("th", "", k));
  t.append(head);
  for (const r of rows) {
    const tr = el("tr");
    for (const k of keys) {
      const v = r[k];
      tr.append(el("td", "", v !== null && typeof v === "object" ? JSON.stringify(v) : v ?? ""));
    }
    t.append(tr);
  }
  const wrap = el("div", "table-wrap");
  wrap.append(t);
  return wrap;
}

function signed(metric, value) {
  const text = formatMetric(metric, value);
  return value > 0 ? `+${text}` : text;
}

// ---- charts --------------------------------------------------------------------------

function pauseMarks(t, arm) {
  return (t.pauses || []).filter((p) => !arm || p.variant === arm)
    .map((p) => ({ at: p.at, label: `${p.variant} paused: ${p.reason}` }));
}

function verdict(p) {
  if (p.lower > 0) return "higher: the band is above zero";
  if (p.upper < 0) return "lower: the band is below zero";
  return "no difference yet: the band contains zero";
}

// Since when the band has excluded zero without a break (null when it does not now).
function excludedSince(points) {
  let since = null;
  for (const p of points) {
    if (p.lower > 0 || p.upper < 0) since = since || p.at;
    else since = null;
  }
  return since;
}

function comparisonChart(t, arm, metric, points, width) {
  const fmt = (v) => formatMetric(metric, v);
  const last = points[points.length - 1];
  const since = excludedSince(points);
  const summary = `${metric}, ${arm} minus ${t.control}: ${signed(metric, last.estimate)} `
    + `(95% confidence sequence ${fmt(last.lower)} to ${fmt(last.upper)}) after ${formatCount(last.n[0])} and `
    + `${formatCount(last.n[1])} turns; ${verdict(last)}`
    + (since ? `, since ${when(since)}.` : ".");
  const chart = bandChart(points, {
    title: `${metric}: ${arm} − ${t.control}`,
    summary, format: fmt, zero: true, width, pauses: pauseMarks(t, arm),
    nLabel: (p) => `${formatCount(p.n[0])} / ${formatCount(p.n[1])} turns`,
  });
  chart.dataset.arm = arm;
  chart.dataset.metric = metric;
  return chart;
}

function guardrailChart(t, g, width) {
  const fmt = (v) => formatMetric(g.metric, v);
  const last = g.points[g.points.length - 1];
  const over = last.lower > g.limit;
  const summary = `Guardrail ${g.metric} ≤ ${fmt(g.limit)} on ${g.variant}: mean ${fmt(last.estimate)} `
    + `(95% confidence sequence ${fmt(last.lower)} to ${fmt(last.upper)}) after ${formatCount(last.n)} turns; `
    + (over ? "surely over the limit." : "not surely over the limit.");
  const chart = bandChart(g.points, {
    title: `Guardrail ${g.metric} on ${g.variant}`,
    summary, format: fmt, width, pauses: pauseMarks(t, g.variant),
    limit: { value: g.limit, label: `limit ${fmt(g.limit)}` },
    nLabel: (p) => `${formatCount(p.n)} turns`,
  });
  chart.classList.add("chart-guardrail");
  chart.dataset.arm = g.variant;
  chart.dataset.metric = g.metric;
  return chart;
}

function samplesChart(t, width) {
  const arms = Object.entries(t.arms || {}).filter(([, pts]) => pts.length);
  if (!arms.length) return null;
  const series = arms.map(([arm, pts]) => ({ name: arm, points: pts.map((p) => ({ at: p.at, value: p.sessions })) }));
  const totals = arms.map(([arm, pts]) => {
    const last = pts[pts.length - 1];
    return `${arm} ${formatCount(last.sessions)} sessions, ${formatCount(last.turns)} turns`;
  });
  const chart = lineChart(series, {
    title: "Sessions per arm", width, format: (v) => formatCount(v),
    summary: `Sessions enrolled per arm over time: ${totals.join("; ")}.`,
  });
  chart.classList.add("chart-samples");
  return chart;
}

function chartsFor(t, guardrailMetrics, width) {
  const box = el("div", "charts");
  const samples = samplesChart(t, width);
  if (samples) box.append(samples);
  const order = [...new Set([...guardrailMetrics, ...HEADLINE])];
  const rank = (m) => (order.includes(m) ? order.indexOf(m) : order.length);
  const more = [];
  const flat = [];
  for (const [arm, metrics] of Object.entries(t.comparisons || {})) {
    const names = Object.keys(metrics).filter((m) => metrics[m].length).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
    for (const metric of names) {
      // A metric every turn of both arms had the same value of: a flat line says nothing.
      if (metrics[metric].every((p) => p.lower === p.upper && p.estimate === metrics[metric][0].estimate)) {
        flat.push(`${metric} (${arm} − ${t.control}: ${signed(metric, metrics[metric][0].estimate)})`);
        continue;
      }
      const make = () => comparisonChart(t, arm, metric, metrics[metric], width);
      if (rank(metric) < order.length) box.append(make());
      else more.push([`${metric} (${arm})`, make]);
    }
  }
  for (const g of t.guardrails || []) if (g.points.length && g.variant !== t.control) box.append(guardrailChart(t, g, width));
  if (flat.length) box.append(el("p", "muted charts-flat", `Constant in every turn, so not charted: ${flat.join(", ")}.`));
  if (more.length) {
    // Drawn when opened: a dozen more charts nobody asked for would slow the tab.
    const fold = el("details", "fold");
    fold.append(el("summary", "label", `${more.length} more metrics`));
    fold.addEventListener("toggle", () => {
      if (fold.open && fold.childElementCount === 1) for (const [, make] of more) fold.append(make());
    }, { once: true });
    box.append(fold);
  }
  if (!box.childElementCount) return null;
  return box;
}

// ---- tables --------------------------------------------------------------------------

function armRows(x) {
  return Object.entries(x.arms || {}).map(([arm, t]) => {
    const row = { arm, sessions: formatCount(t.sessions), turns: formatCount(t.turns) };
    for (const m of ARM_METRICS) if (t.means && m in t.means) row[`mean ${m}`] = formatMetric(m, t.means[m]);
    if (x.paused && x.paused[arm]) row.paused = "yes";
    return row;
  });
}

function comparisonRows(x) {
  const rows = [];
  for (const [arm, metrics] of Object.entries(x.comparisons || {})) {
    for (const [metric, c] of Object.entries(metrics || {})) {
      const f = (v) => formatMetric(metric, v);
      rows.push({
        arm, metric, status: c.status,
        difference: c.difference === undefined ? "" : `${signed(metric, c.difference)} [${f(c.lower)}, ${f(c.upper)}]`,
        samples: Array.isArray(c.samples) ? c.samples.map(formatCount).join(" / ") : c.samples ?? "",
      });
    }
  }
  return rows;
}

function guardrailRows(x) {
  return (x.guardrails || []).map((g) => {
    const f = (v) => formatMetric(g.metric, v);
    const row = { variant: g.variant, metric: g.metric, limit: f(g.limit), status: g.status };
    if (typeof g.mean === "number") row.mean = `${f(g.mean)} [${f(g.lower)}, ${f(g.upper)}]`;
    return row;
  });
}

function experimentBox(x, t, width) {
  const box = el("section", "surface-section");
  box.dataset.experiment = x.name;
  box.append(el("h2", "", x.name));
  const weights = Object.entries(x.weights || {}).map(([k, v]) => `${k} ${v}`).join(" · ");
  box.append(el("p", "muted", [x.description, `control ${x.control}`, weights, x.sticky ? `sticky per ${x.sticky}` : ""]
    .filter(Boolean).join(" — ")));
  const charts = t ? chartsFor(t, (x.guardrails || []).map((g) => g.metric), width) : null;
  if (charts) box.append(charts);
  box.append(el("div", "label", "Arms"), table(armRows(x)));
  const comparisons = comparisonRows(x);
  if (comparisons.length) {
    // Folded while every metric still lacks data; open once there is a result to read.
    const fold = el("details", "fold");
    fold.open = comparisons.some((c) => c.status !== "not enough data");
    fold.append(el("summary", "label", `Against ${x.control} (${comparisons.length} metrics)`));
    fold.append(table(comparisons));
    box.append(fold);
  }
  if (x.guardrails && x.guardrails.length) box.append(el("div", "label", "Guardrails"), table(guardrailRows(x)));
  if (x.srm) {
    const observed = Object.entries(x.srm.observed || {}).map(([k, v]) => `${k} ${formatCount(v)}`).join(" · ");
    const p = typeof x.srm.pValue === "number" ? formatMean(x.srm.pValue) : "?";
    const verdictText = x.srm.flagged ? "the split looks wrong" : "the split looks as configured";
    box.append(el("p", x.srm.flagged ? "error" : "muted", `Split check: ${observed} (p = ${p}): ${verdictText}`));
  }
  return box;
}

function unavailable(target, what, error) {
  const box = el("div", "unavailable");
  box.append(el("h2", "", `${what}: not available`));
  box.append(el("p", "muted", error instanceof ApiError && error.routeMissing
    ? "This server does not have the route yet."
    : String(error.message || error)));
  target.replaceChildren(box);
}

export async function loadAbs(target, openSession) {
  let data;
  let timeline = null;
  try {
    // The timeline is optional: an older server without the route still gets its tables.
    [data, timeline] = await Promise.all([api("/v1/abs"), api("/v1/abs/timeline").catch(() => null)]);
  } catch (error) {
    unavailable(target, "A/B metrics", error);
    return;
  }
  const experiments = data.experiments || [];
  if (!experiments.length) {
    target.replaceChildren(emptyTab("abs"));
    return;
  }
  const series = Object.fromEntries(((timeline && timeline.experiments) || []).map((t) => [t.name, t]));
  const width = chartWidth(target);
  const parts = experiments.map((x) => experimentBox(x, series[x.name], width));
  const sessions = el("section", "surface-section");
  sessions.append(el("h2", "", "Enrolled sessions"));
  const rows = (data.sessions || []).map((r) => ({
    session: r.sessionId,
    arms: Object.entries(r.assignments || {}).map(([k, v]) => `${k}=${v}`).join(", "),
    turns: formatCount(r.turns),
    failed: formatCount(r.failedTurns),
    cost: r.costUsd == null ? "" : formatMoney(r.costUsd),
  }));
  const tableNode = table(rows);
  for (const cell of tableNode.querySelectorAll("tr td:first-child")) {
    const sid = cell.textContent;
    cell.replaceChildren(button(sid, () => openSession(sid), "link"));
  }
  sessions.append(tableNode);
  parts.push(sessions);
  const config = Object.entries(data.config || {}).map(([k, v]) => `${k} ${v}`).join(" · ");
  if (data.method) parts.push(el("p", "muted", data.method));
  if (config) parts.push(el("p", "muted", `Config: ${config}`));
  target.replaceChildren(...parts);
}
