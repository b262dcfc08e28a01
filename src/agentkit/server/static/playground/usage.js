// The Usage tab: turns, tokens, cost and turn latency per hour or day (GET /v1/usage),
// filtered by channel (and by principal for an admin), with where a budget or the daily
// limit bit marked on the charts. A table of the same numbers stays below.

import { ApiError, api } from "./api.js";
import { chartWidth, lineChart, when } from "./charts.js";
import { formatCount, formatMoney, formatMs } from "./format.js";
import { el } from "./dom.js";

const state = { bucket: "hour", channel: "", principal: "" };

function select(id, label, options, value, onChange) {
  const wrap = el("span", "usage-filter");
  const l = el("label", "", label);
  l.htmlFor = id;
  const s = el("select");
  s.id = id;
  for (const [v, text] of options) {
    const o = el("option", "", text);
    o.value = v;
    o.selected = v === value;
    s.append(o);
  }
  s.addEventListener("change", () => onChange(s.value));
  wrap.append(l, s);
  return wrap;
}

function query() {
  const q = new URLSearchParams({ bucket: state.bucket });
  if (state.channel) q.set("channel", state.channel);
  if (state.principal) q.set("principal", state.principal);
  return q.toString();
}

function marksOf(data) {
  const marks = (data.budgetStops || []).map((b) => ({ at: b.at, label: `budget stop: ${b.sessionId}`, cls: "chart-pause" }));
  for (const d of data.dailyLimitReached || []) {
    marks.push({ at: d.at, label: `daily limit reached: ${d.principal} (${d.limits.join(", ")})`, cls: "chart-limit" });
  }
  return marks;
}

function charts(data, width) {
  const buckets = data.buckets || [];
  const at = (b) => b.start;
  const marks = marksOf(data);
  const marksLabel = "budget or daily limit";
  const marksLegend = [["key-pause", "budget stop"], ["key-limit", "daily limit reached"]];
  const span = data.bucket === "day" ? "day" : "hour";
  const peak = (key) => Math.max(...buckets.map((b) => b[key] || 0));
  const box = el("div", "charts");
  const series = (name, key) => ({ name, points: buckets.map((b) => ({ at: at(b), value: b[key] || 0 })) });
  const turns = lineChart([series("turns", "turns"), series("failed", "failedTurns")], {
    title: `Turns per ${span}`, width, steps: false, format: formatCount, marks, marksLabel, marksLegend,
    summary: `${formatCount(data.total.turns)} turns (${formatCount(data.total.failedTurns)} failed) over `
      + `${formatCount(buckets.length)} ${span}s; busiest ${formatCount(peak("turns"))} turns in one ${span}.`,
  });
  turns.classList.add("chart-turns");
  const tokens = lineChart([series("in", "inputTokens"), series("out", "outputTokens")], {
    title: `Tokens per ${span}`, width, steps: false, format: formatCount, marks, marksLabel, marksLegend,
    summary: `${formatCount(data.total.inputTokens)} tokens in and ${formatCount(data.total.outputTokens)} out; `
      + `at most ${formatCount(peak("inputTokens"))} in during one ${span}.`,
  });
  tokens.classList.add("chart-tokens");
  box.append(turns, tokens);
  if (buckets.some((b) => typeof b.costUsd === "number")) {
    const cost = lineChart([series("cost", "costUsd")], {
      title: `Cost per ${span}`, width, steps: false, format: formatMoney, marks, marksLabel, marksLegend,
      summary: `${formatMoney(data.total.costUsd || 0)} in all; at most ${formatMoney(peak("costUsd"))} in one ${span}.`,
    });
    cost.classList.add("chart-cost");
    box.append(cost);
  }
  if (buckets.some((b) => typeof b.latencyP50Ms === "number")) {
    const latency = lineChart([series("p50", "latencyP50Ms"), series("p95", "latencyP95Ms")], {
      title: `Turn latency per ${span}`, width, steps: false, format: formatMs, marks, marksLabel, marksLegend,
      summary: `Turn latency over all turns: p50 ${formatMs(data.total.latencyP50Ms)}, p95 ${formatMs(data.total.latencyP95Ms)}; `
        + `worst p95 in one ${span} ${formatMs(peak("latencyP95Ms"))}.`,
    });
    latency.classList.add("chart-latency");
    box.append(latency);
  }
  return box;
}

function bucketTable(data) {
  const t = el("table", "usage-table");
  const head = el("tr");
  for (const h of [data.bucket, "turns", "failed", "tokens in", "tokens out", "cost", "p50", "p95", "budget stops"]) {
    head.append(el("th", "", h));
  }
  t.append(head);
  for (const b of data.buckets || []) {
    const tr = el("tr");
    const start = new Date(b.start);
    const label = data.bucket === "day"
      ? start.toLocaleDateString([], { dateStyle: "medium" })
      : start.toLocaleString([], { dateStyle: "short", timeStyle: "short" });
    for (const v of [label, formatCount(b.turns), formatCount(b.failedTurns), formatCount(b.inputTokens),
      formatCount(b.outputTokens), b.costUsd == null ? "" : formatMoney(b.costUsd),
      b.latencyP50Ms == null ? "" : formatMs(b.latencyP50Ms), b.latencyP95Ms == null ? "" : formatMs(b.latencyP95Ms),
      formatCount(b.budgetStops)]) {
      tr.append(el("td", "", v));
    }
    t.append(tr);
  }
  const wrap = el("div", "table-wrap");
  wrap.append(t);
  return wrap;
}

function limits(data) {
  const box = el("div", "usage-limits");
  const limit = data.dailyLimit || {};
  const parts = [];
  if (limit.tokens != null) parts.push(`${formatCount(limit.tokens)} tokens`);
  if (limit.usd != null) parts.push(formatMoney(limit.usd));
  box.append(el("p", "muted", parts.length ? `Daily limit per caller: ${parts.join(" or ")} per UTC day.` : "No daily limit per caller."));
  const list = el("ul", "usage-bites");
  for (const d of data.dailyLimitReached || []) {
    list.append(el("li", "warn", `${when(d.at)}: ${d.principal} reached the daily limit (${d.limits.join(", ")}); new messages refused until midnight UTC.`));
  }
  for (const b of data.budgetStops || []) {
    list.append(el("li", "warn", `${when(b.at)}: a turn of ${b.sessionId} stopped at its budget.`));
  }
  if (list.childElementCount) box.append(list);
  return box;
}

export async function loadUsage(target) {
  let data;
  try {
    data = await api(`/v1/usage?${query()}`);
  } catch (error) {
    const box = el("div", "unavailable");
    box.append(el("h2", "", "Usage: not available"));
    box.append(el("p", "muted", error instanceof ApiError && error.routeMissing
      ? "This server does not have the route yet." : String(error.message || error)));
    target.replaceChildren(box);
    return;
  }
  const section = el("section", "surface-section usage");
  section.append(el("h2", "", "Usage"));
  const filters = el("div", "row usage-filters");
  const reload = (key) => (value) => { state[key] = value; loadUsage(target); };
  filters.append(select("usage-bucket", "Per", [["hour", "hour"], ["day", "day"]], state.bucket, reload("bucket")));
  const channels = [...new Set([...(data.channels || []), state.channel].filter(Boolean))];
  filters.append(select("usage-channel", "Channel", [["", "all"], ...channels.map((c) => [c, c])], state.channel, reload("channel")));
  const principals = [...new Set([...(data.principals || []), state.principal].filter(Boolean))];
  if (principals.length > 1 || state.principal) {
    filters.append(select("usage-principal", "Principal", [["", "all"], ...principals.map((p) => [p, p])], state.principal, reload("principal")));
  }
  section.append(filters);
  if (!(data.buckets || []).length) {
    section.append(el("p", "muted", "No finished turns yet."));
    target.replaceChildren(section);
    return;
  }
  section.append(charts(data, chartWidth(target)), limits(data), bucketTable(data));
  if (data.truncated) section.append(el("p", "muted", "Only the newest sessions are counted."));
  target.replaceChildren(section);
}
