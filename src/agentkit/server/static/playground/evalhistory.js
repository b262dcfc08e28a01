// The Evals tab's history: over the stored runs (GET /v1/dev/evals/runs), the trend of the
// pass rate and of the run's duration, and each case's outcome per run, with the newest
// run's differences from the committed baseline (GET /v1/dev/evals `baseline`) marked.

import { lineChart, when } from "./charts.js";
import { formatCount, formatMs, formatRate } from "./format.js";
import { el } from "./dom.js";

const RUNS_SHOWN = 10;
const RANK = { passed: 2, flaky: 1, failed: 0, error: 0 };
const MARK = { passed: "✓", flaky: "≈", failed: "✗", error: "!" };

function passRate(run) {
  const done = (run.cases || []).filter((c) => c.status in RANK);
  return done.length ? done.filter((c) => c.status === "passed").length / done.length : 0;
}

function durationMs(run) {
  const start = Date.parse(run.createdAt);
  const end = Date.parse(run.finishedAt);
  if (!Number.isNaN(start) && !Number.isNaN(end) && end >= start) return end - start;
  return (run.cases || []).reduce((sum, c) => sum + (typeof c.durationMs === "number" ? c.durationMs : 0), 0);
}

// The newest run's case against the baseline: "worse", "better" or "" (same or unknown).
function change(status, base) {
  if (!base || !(status in RANK)) return "";
  const a = RANK[base.status] ?? 0;
  const b = RANK[status];
  if (b < a) return "worse";
  if (b > a) return "better";
  return "";
}

function cell(status) {
  const td = el("td", `case-cell ${status || "absent"}`);
  td.append(el("span", "case-mark", MARK[status] || "–"), " ", el("span", "case-word", status || "not run"));
  return td;
}

export function evalHistory(listing, allRuns, width) {
  const runs = (allRuns || []).filter((r) => r.status === "completed").slice(0, RUNS_SHOWN).reverse();
  if (!runs.length) return null;
  const box = el("section", "surface-section eval-history");
  box.append(el("h2", "", `History (${formatCount(runs.length)} runs)`));
  const charts = el("div", "charts");
  if (runs.length > 1) {
    const number = new Map(runs.map((r, i) => [Date.parse(r.createdAt), `run #${i + 1}`]));
    const formatX = (t) => number.get(t) || when(t);
    const rates = runs.map((r) => ({ at: r.createdAt, value: passRate(r) }));
    const first = rates[0].value;
    const last = rates[rates.length - 1].value;
    const rate = lineChart([{ name: "pass rate", points: rates }], {
      title: "Pass rate per run", width, steps: false, formatX, format: formatRate, hi: 1,
      summary: `Pass rate over the last ${formatCount(runs.length)} runs: from ${formatRate(first)} to ${formatRate(last)}`
        + `; lowest ${formatRate(Math.min(...rates.map((p) => p.value)))}.`,
    });
    rate.classList.add("chart-pass-rate");
    const times = runs.map((r) => ({ at: r.createdAt, value: durationMs(r) }));
    const took = lineChart([{ name: "duration", points: times }], {
      title: "Duration per run", width, steps: false, formatX, format: formatMs,
      summary: `Run duration over the last ${formatCount(runs.length)} runs: from ${formatMs(times[0].value)} to `
        + `${formatMs(times[times.length - 1].value)}; longest ${formatMs(Math.max(...times.map((p) => p.value)))}.`,
    });
    took.classList.add("chart-duration");
    charts.append(rate, took);
    box.append(charts);
  }
  // One row per case, one column per run (oldest first), then the baseline and the change.
  const baseline = listing.baseline || null;
  const ids = [...new Set([...runs.flatMap((r) => (r.cases || []).map((c) => c.id)), ...Object.keys(baseline || {})])].sort();
  const newest = runs[runs.length - 1];
  const t = el("table", "eval-grid");
  t.append(el("caption", "visually-hidden", "Each case's outcome per run, oldest run first"));
  const head = el("tr");
  head.append(el("th", "", "case"));
  runs.forEach((r, i) => {
    const th = el("th", "", `#${i + 1}`);
    th.title = `${r.runId} · ${when(r.createdAt)}`;
    th.scope = "col";
    head.append(th);
  });
  if (baseline) head.append(el("th", "", "baseline"), el("th", "", "vs baseline"));
  t.append(head);
  let changed = 0;
  for (const id of ids) {
    const tr = el("tr");
    tr.dataset.case = id;
    tr.append(el("th", "case-id", id));
    for (const r of runs) tr.append(cell(((r.cases || []).find((c) => c.id === id) || {}).status));
    if (baseline) {
      const base = baseline[id];
      tr.append(cell(base && base.status));
      const now = ((newest.cases || []).find((c) => c.id === id) || {}).status;
      const kind = change(now, base);
      const td = el("td", kind ? `diff ${kind}` : "muted", kind ? `${kind}: ${base.status} → ${now}` : "same");
      if (kind) {
        changed += 1;
        tr.classList.add("changed", kind);
        tr.children[runs.length].classList.add("diff", kind);
      }
      tr.append(td);
    }
    t.append(tr);
  }
  const wrap = el("div", "table-wrap");
  wrap.append(t);
  if (baseline) {
    box.append(el("p", changed ? "diff-summary warn" : "muted",
      changed ? `${formatCount(changed)} cases differ from the baseline in the newest run.` : "The newest run matches the baseline."));
  }
  box.append(wrap);
  return box;
}
