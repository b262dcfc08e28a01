// The turn timeline: a waterfall drawn from a turn's recorded events, nothing else. Steps,
// model calls (time to first output, duration, tokens, cost), tool calls (queued, waiting
// for approval, running, result), subagents nested under their `task` call, and markers
// where the turn was interrupted or continued (an approval resumes it, on Lambda in a new
// invocation). Live turns redraw as events arrive; trace files draw the same way.
//
// Times come from each event's `at` (milliseconds) plus the durations events carry:
// `step.completed.durationMs` and `action.result.durationMs`. A call that ran without an
// approval has no `action.started`, so its running bar ends at its result and starts
// `durationMs` before it.

import { formatMoney, formatUsage, formatMs } from "./format.js";
import { el } from "./dom.js";

const ms = (at) => Date.parse(at);
const MODEL_OUTPUT = new Set(["reasoning.appended", "reasoning.completed", "message.appended", "message.completed", "actions.requested"]);

// The rows of one turn, from its events in index order.
export function turnRows(events) {
  const rows = [];
  const calls = new Map();
  const markers = [];
  let start = null;
  let end = null;
  let step = null;
  let model = null;
  let ended = false;
  for (const e of events) {
    const t = ms(e.at);
    if (!Number.isFinite(t)) continue;
    if (start === null) start = t;
    end = Math.max(end ?? t, t);
    const d = e.data || {};
    if (e.type === "turn.completed" || e.type === "turn.failed") ended = true;
    switch (e.type) {
      case "turn.started":
        start = Math.min(start, t);
        break;
      case "step.started":
        step = { kind: "step", id: `step-${d.step}`, label: `Step ${d.step}`, depth: 0, start: t, end: null, segments: [] };
        model = { kind: "model", id: `model-${d.step}`, label: "Model call", depth: 1, start: t, end: null, first: null, segments: [] };
        rows.push(step, model);
        break;
      case "step.completed":
        if (step) {
          // The label gives the recorded duration; the bar spans the step's events on the
          // turn's clock (the engine's measure starts a little before `step.started`).
          step.duration = d.durationMs ?? t - step.start;
          step.end = t;
          if (model) {
            model.usage = d.usage;
            model.cost = d.costUsd;
            if (model.end === null) model.end = t;
          }
        }
        break;
      case "actions.requested":
        for (const a of d.actions || []) {
          const row = { kind: "tool", id: a.callId, label: a.toolName, depth: 1, start: t, requested: t, end: null, segments: [] };
          calls.set(a.callId, row);
          rows.push(row);
        }
        break;
      case "action.approval_requested": {
        const row = calls.get(d.callId);
        if (row) row.waitFrom = t;
        break;
      }
      case "action.approval_resolved": {
        const row = calls.get(d.callId);
        if (row) {
          row.waitTo = t;
          row.decision = d.decision;
        }
        markers.push({ kind: "continued", at: t, label: `continued after ${d.decision === "deny" ? "a denial" : "an approval"}` });
        break;
      }
      case "action.started": {
        const row = calls.get(d.callId);
        if (row) row.runFrom = t;
        break;
      }
      case "action.result": {
        const row = calls.get(d.callId);
        if (!row) break;
        row.end = t;
        row.duration = d.durationMs ?? (row.runFrom != null ? t - row.runFrom : 0);
        row.runFrom = t - row.duration; // the tool's own measure sets the bar
        row.isError = Boolean(d.isError);
        break;
      }
      case "subagent.called": {
        const parent = calls.get(d.callId);
        const row = { kind: "subagent", id: `sub-${d.callId}`, label: `Subagent ${d.subagent}`, depth: (parent ? parent.depth : 1) + 1, start: t, end: null, segments: [] };
        calls.set(`sub:${d.callId}`, row);
        // Nested right under its task call.
        rows.splice(parent ? rows.indexOf(parent) + 1 : rows.length, 0, row);
        break;
      }
      case "subagent.completed": {
        const row = calls.get(`sub:${d.callId}`);
        if (row) {
          row.end = t;
          row.usage = d.usage;
          row.cost = d.costUsd;
          row.isError = Boolean(d.error);
        }
        break;
      }
      case "turn.failed":
        markers.push({ kind: "interrupted", at: t, label: /interrupt|stop/i.test(d.error || "") ? "interrupted" : `failed: ${d.error || "unknown error"}` });
        break;
      default:
        if (model && MODEL_OUTPUT.has(e.type) && model.end === null) {
          if (model.first === null) model.first = t;
          if (e.type === "actions.requested" || e.type === "message.completed") model.end = t;
        }
    }
    // actions.requested is also the model's last output of its step.
    if (e.type === "actions.requested" && model && model.end === null) {
      if (model.first === null) model.first = t;
      model.end = t;
    }
  }
  if (start === null) return { rows: [], markers: [], start: 0, end: 0 };
  for (const row of rows) finish(row, end, ended);
  return { rows, markers, start, end };
}

function finish(row, now, ended) {
  const open = row.end === null;
  const end = open ? now : row.end;
  if (row.kind === "tool") {
    const runFrom = row.runFrom ?? (open ? null : end);
    const queuedTo = Math.min(row.waitFrom ?? runFrom ?? end, runFrom ?? end);
    if (queuedTo > row.requested) row.segments.push({ kind: "queued", start: row.requested, end: queuedTo });
    if (row.waitFrom != null) row.segments.push({ kind: "waiting", start: row.waitFrom, end: row.waitTo ?? end });
    if (runFrom != null) row.segments.push({ kind: row.isError ? "error" : "running", start: runFrom, end });
    row.duration = row.duration ?? end - runFrom;
  } else if (row.kind === "model") {
    const first = row.first ?? end;
    if (first > row.start) row.segments.push({ kind: "ttft", start: row.start, end: first });
    row.segments.push({ kind: "model", start: first, end });
    row.duration = end - row.start;
  } else {
    row.segments.push({ kind: row.kind === "subagent" ? (row.isError ? "error" : "subagent") : "step", start: row.start, end: row.kind === "step" && row.end !== null ? row.end : end });
    row.duration = row.duration ?? end - row.start;
  }
  row.open = open && !ended;
  row.unfinished = open && ended;
  row.end = end;
}

function describe(row, start) {
  const bits = [];
  if (row.kind === "model") {
    if (row.first != null) bits.push(`first output ${formatMs(row.first - row.start)}`);
    bits.push(formatMs(row.duration));
    if (row.usage) bits.push(formatUsage(row.usage));
    if (typeof row.cost === "number") bits.push(formatMoney(row.cost));
  } else if (row.kind === "tool") {
    for (const s of row.segments) bits.push(`${s.kind} ${formatMs(s.end - s.start)}`);
    if (row.decision) bits.push(row.decision === "approve" ? "approved" : "denied");
    if (row.open) bits.push("in progress");
    if (row.unfinished) bits.push("never ran to the end");
  } else {
    bits.push(formatMs(row.duration));
    if (row.usage) bits.push(formatUsage(row.usage));
    if (row.open) bits.push("in progress");
  }
  bits.unshift(`+${formatMs(row.start - start)}`);
  return bits.join(" · ");
}

// Draw a turn's waterfall into `target`.
export function drawTimeline(target, events) {
  const { rows, markers, start, end } = turnRows(events);
  const span = Math.max(end - start, 1);
  const pct = (t) => `${(((t - start) / span) * 100).toFixed(3)}%`;
  const list = el("div", "tl");
  list.setAttribute("role", "list");
  for (const row of rows) {
    const line = el("div", `tl-row row-${row.kind}`);
    line.setAttribute("role", "listitem");
    Object.assign(line.dataset, { kind: row.kind, id: row.id, depth: String(row.depth), startMs: String(row.start - start), durationMs: String(Math.round(row.duration)) });
    const label = el("div", "tl-label");
    label.append(el("span", "tl-name", row.label), el("span", "tl-meta", describe(row, start)));
    label.style.paddingLeft = `${row.depth * 14}px`;
    const track = el("div", "tl-track");
    for (const s of row.segments) {
      const bar = el("span", `tl-bar seg-${s.kind}`);
      bar.dataset.segment = s.kind;
      bar.dataset.ms = String(Math.round(s.end - s.start));
      bar.title = `${s.kind} ${formatMs(s.end - s.start)}`;
      bar.style.left = pct(s.start);
      bar.style.width = `max(2px, ${(((s.end - s.start) / span) * 100).toFixed(3)}%)`;
      track.append(bar);
    }
    for (const m of markers) {
      const mark = el("span", `tl-mark ${m.kind}`);
      mark.style.left = pct(m.at);
      mark.title = m.label;
      track.append(mark);
    }
    line.append(label, track);
    list.append(line);
  }
  const legend = el("div", "tl-legend");
  for (const [kind, text] of [["ttft", "to first output"], ["model", "model"], ["queued", "queued"], ["waiting", "waiting for approval"], ["running", "running"], ["subagent", "subagent"]]) {
    const item = el("span", "tl-key");
    item.append(el("span", `tl-swatch seg-${kind}`), text);
    legend.append(item);
  }
  for (const m of markers) legend.append(el("span", `tl-key marker ${m.kind}`, `${m.label} at +${formatMs(m.at - start)}`));
  target.replaceChildren(list, legend);
}
