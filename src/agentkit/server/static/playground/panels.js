// The tabs besides the chat: sessions, surface, logs, evals, A/Bs and dev.

import { ApiError, api } from "./api.js";
import { initTry, openTry } from "./try.js";
import { channelRoutes } from "./routes.js";
import { highlight } from "./highlight.js";
import { EMPTY, emptyTab, initEmpty } from "./empty.js";
import { toolForm } from "./toolform.js";
import { formatCount, formatMoney } from "./format.js";
import { loadAbs } from "./abs.js";
import { loadUsage } from "./usage.js";
import { evalHistory } from "./evalhistory.js";
import { chartWidth } from "./charts.js";
import { button, el } from "./dom.js";

const $ = (id) => document.getElementById(id);
const TABS = ["chat", "sessions", "surface", "logs", "evals", "abs", "usage", "dev"];
let ctx = null;
let logsTimer = null;
let logsCursor = 0;

function code(value) {
  const pre = el("pre", "code json");
  const c = el("code");
  highlight(c, JSON.stringify(value, null, 2), "json");
  pre.append(c);
  return pre;
}

function unavailable(target, what, error) {
  const box = el("div", "unavailable");
  box.append(el("h2", "", `${what}: not available`));
  box.append(el("p", "muted", error instanceof ApiError && error.routeMissing
    ? "This server does not have the route yet."
    : String(error.message || error)));
  target.replaceChildren(box);
}

// ---- tabs ----------------------------------------------------------------------------

export function showPanel(name) {
  for (const tab of TABS) {
    const selected = tab === name;
    const button = $(`tab-${tab}`);
    button.setAttribute("aria-selected", String(selected));
    button.tabIndex = selected ? 0 : -1;
    $(`panel-${tab}`).hidden = !selected;
    // On a narrow screen the tab strip scrolls: keep the chosen tab in sight.
    if (selected) button.scrollIntoView({ block: "nearest", inline: "nearest" });
  }
  clearInterval(logsTimer);
  logsTimer = null;
  if (name === "sessions") loadSessions();
  if (name === "logs") startLogs();
  if (name === "evals") loadEvals();
  if (name === "abs") loadAbs($("abs"), ctx.openSession);
  if (name === "usage") loadUsage($("usage"));
  if (name === "dev") loadDev();
  if (name === "surface") loadSurface(ctx.getInfo(), ctx.getMeta());
}

function visibleTabs() {
  return TABS.filter((t) => !$(`tab-${t}`).hidden);
}

export function initPanels(context) {
  ctx = context;
  initTry(context.openSession);
  initEmpty(context.getMeta);
  for (const tab of TABS) {
    $(`tab-${tab}`).addEventListener("click", () => showPanel(tab));
    $(`tab-${tab}`).addEventListener("keydown", (e) => {
      if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
      const tabs = visibleTabs();
      const next = tabs[(tabs.indexOf(tab) + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
      showPanel(next);
      $(`tab-${next}`).focus();
    });
  }
  $("session-search").addEventListener("input", filterSessions);
  $("session-search").addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    const id = e.target.value.trim();
    if (id) context.openSession(id);
  });
  $("sessions-refresh").addEventListener("click", () => loadSessions());
  $("sessions-more").addEventListener("click", () => loadSessions(sessionsCursor));
}

// ---- sessions ------------------------------------------------------------------------

let sessionsCursor = null;

async function loadSessions(cursor = null) {
  const list = $("sessions-list");
  let page;
  try {
    page = await api(`/v1/sessions?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
  } catch (error) {
    unavailable(list, "Sessions", error);
    return;
  }
  if (!cursor) list.replaceChildren();
  if (!cursor && !page.sessions.length) list.append(el("p", "muted", "No sessions yet."));
  for (const s of page.sessions) {
    const row = el("button", "session-row");
    row.type = "button";
    row.dataset.sessionId = s.sessionId;
    row.append(el("code", "sid", s.sessionId));
    row.append(el("span", `status ${s.status}`, s.status));
    const cost = typeof s.costUsd === "number" ? ` · ${formatMoney(s.costUsd)}` : "";
    row.append(el("span", "muted", `${s.channelId} · ${s.mode}${cost}`));
    row.append(el("time", "muted", new Date(s.updatedAt).toLocaleString()));
    row.addEventListener("click", () => ctx.openSession(s.sessionId));
    list.append(row);
  }
  sessionsCursor = page.cursor;
  $("sessions-more").hidden = !page.cursor;
  filterSessions();
}

function filterSessions() {
  const needle = $("session-search").value.trim().toLowerCase();
  for (const row of $("sessions-list").querySelectorAll(".session-row")) {
    row.hidden = Boolean(needle) && !row.dataset.sessionId.toLowerCase().includes(needle);
  }
}

// ---- surface -------------------------------------------------------------------------

function section(title, items, render, empty = "None.") {
  const box = el("section", "surface-section");
  box.append(el("h2", "", `${title} (${items.length})`));
  if (!items.length) box.append(EMPTY[empty] ? emptyTab(empty) : el("p", "muted", empty));
  for (const item of items) box.append(render(item));
  return box;
}

function card(title, subtitle, ...children) {
  const box = el("details", "card");
  const summary = el("summary");
  summary.append(el("strong", "", title));
  if (subtitle) summary.append(el("span", "muted", ` ${subtitle}`));
  box.append(summary, ...children);
  return box;
}

export function loadSurface(info, meta) {
  const target = $("surface");
  if (!info) {
    target.replaceChildren(el("p", "muted", "The agent's manifest could not be read (GET /v1/info)."));
    return;
  }
  const agent = info.agent || {};
  const head = el("section", "surface-section");
  head.append(el("h2", "", agent.name || meta.name));
  head.append(el("p", "muted", `model ${agent.model || "default"} · max ${agent.maxSteps} steps · slug ${agent.slug}`));
  const parts = [head];
  parts.push(section("Tools", info.tools || [], (t) => {
    const schema = el("details", "fold");
    schema.append(el("summary", "label", "Input schema"), code(t.inputSchema));
    const tryIt = t.execution === "server"
      ? toolForm(t, { getSessionId: ctx.getSessionId, openSession: ctx.openSession })
      : el("p", "muted", "Runs in the agent's workspace: only the model calls it, inside a turn.");
    const box = card(t.name, `${t.execution}${t.needsApproval ? " · needs approval" : ""}`,
      el("p", "", t.description), tryIt, schema);
    box.dataset.tool = t.name;
    return box;
  }));
  parts.push(section("Skills", info.skills || [], (s) => card(s.name, s.source, el("p", "", s.description))));
  parts.push(section("Subagents", info.subagents || [], (s) =>
    card(s.name, s.model || "", el("p", "", s.description))));
  parts.push(section("MCP connections", info.mcpConnections || [], (m) =>
    card(m.name, `${m.transport} ${m.url || (m.command || []).join(" ")}`, el("p", "", m.description || ""))));
  parts.push(section("Channels", info.channels || [], (c) => {
    const routes = channelRoutes({ channels: [c] });
    const list = el("ul", "routes");
    for (const r of routes) {
      const li = el("li");
      const tryIt = button("Try", () => openTry(r));
      tryIt.setAttribute("aria-label", `Try ${r.method} ${r.path}`);
      li.append(el("code", "", `${r.method} ${r.path}`), " ", tryIt);
      list.append(li);
    }
    const box = card(c.name, c.kind, el("p", "", c.description || ""), list);
    box.open = true; // its Try buttons are the point of this section
    return box;
  }));
  parts.push(section("Hooks", info.hooks || [], (h) => card(h.name, (h.events || []).join(", "))));
  parts.push(section("Schedules", info.schedules || [], (s) => {
    const box = card(s.id, s.cron, el("p", "", s.prompt || s.source));
    if (meta && meta.dev) box.append(button("Dispatch now", () => dispatchSchedule(s.id, box)));
    return box;
  }, "schedules"));
  parts.push(section("A/B experiments", info.abs || [], (a) =>
    card(a.name, (a.variants || []).join(" / "), el("p", "", a.description || "")), "abs"));
  parts.push(section("Diagnostics", info.diagnostics || [], (d) =>
    el("p", `diag ${d.severity}`, `${d.severity} ${d.code} ${d.path}: ${d.message}`), "No problems found."));
  target.replaceChildren(...parts);
}

// ---- logs ----------------------------------------------------------------------------

function startLogs() {
  pollLogs();
  logsTimer = setInterval(pollLogs, 2000);
}

async function pollLogs() {
  const pre = $("logs");
  try {
    const page = await api(`/v1/logs?after=${logsCursor}`);
    if (page.cursor < logsCursor) pre.textContent = "";
    for (const line of page.lines) {
      const row = el("span", `log ${line.level.toLowerCase()}`, `${line.at} ${line.level.padEnd(7)} ${line.logger}: ${line.message}\n`);
      pre.append(row);
    }
    logsCursor = page.cursor;
    const empty = $("logs-empty");
    if (!pre.childElementCount && !page.lines.length) {
      if (!empty) pre.before(Object.assign(emptyTab("logs"), { id: "logs-empty" }));
    } else if (empty) empty.remove();
    pre.hidden = !pre.childElementCount;
    if ($("logs-follow").checked && page.lines.length) pre.scrollTop = pre.scrollHeight;
  } catch (error) {
    pre.hidden = false;
    pre.textContent = `Logs are not available: ${error.message}`;
  }
}

// ---- evals ---------------------------------------------------------------------------

let evalTimer = null;

async function loadEvals() {
  const target = $("evals");
  let listing;
  let runs;
  try {
    [listing, runs] = await Promise.all([api("/v1/dev/evals"), api("/v1/dev/evals/runs")]);
  } catch (error) {
    unavailable(target, "Evals", error);
    return;
  }
  const box = el("section", "surface-section");
  box.append(el("h2", "", `Evals (${listing.evals.length})`));
  if (!listing.evals.length) {
    target.replaceChildren(emptyTab("evals"));
    return;
  }
  const list = el("ul", "evals");
  for (const e of listing.evals) {
    const li = el("li");
    const id = `eval-${e.id.replace(/[^\w-]/g, "_")}`;
    const check = el("input");
    check.type = "checkbox";
    check.id = id;
    check.value = e.id;
    const label = el("label", "", e.id);
    label.htmlFor = id;
    li.append(check, label, el("span", "muted", ` ${(e.tags || []).join(", ")} ${e.description || ""}`));
    list.append(li);
  }
  box.append(list);
  if (listing.evals.length) {
    box.append(button("Run selected (all when none)", async () => {
      const ids = [...list.querySelectorAll("input:checked")].map((c) => c.value);
      try {
        await api("/v1/dev/evals/runs", { method: "POST", body: ids.length ? { filterIds: ids } : {} });
      } catch (error) {
        box.append(el("p", "error", error.message));
      }
      loadEvals();
    }, "primary"));
  }
  const runBox = el("section", "surface-section");
  runBox.append(el("h2", "", "Runs"));
  if (!runs.runs.length) runBox.append(el("p", "muted", "No runs yet."));
  for (const run of runs.runs) {
    const counts = run.counts ? Object.entries(run.counts).map(([k, v]) => `${k} ${formatCount(v)}`).join(" · ") : "";
    const cases = el("ul", "cases");
    for (const c of run.cases || []) cases.append(el("li", `case ${c.status}`, `${c.status} · ${c.id}`));
    for (const error of run.errors || []) cases.append(el("li", "error", error));
    const details = card(run.runId, `${run.status} ${counts}`, cases);
    details.open = run.status === "running";
    runBox.append(details);
  }
  const history = evalHistory(listing, runs.runs, chartWidth(target));
  target.replaceChildren(...[box, history, runBox].filter(Boolean));
  clearTimeout(evalTimer);
  if (runs.activeRunId && !$("panel-evals").hidden) evalTimer = setTimeout(loadEvals, 1500);
}

// ---- dev -----------------------------------------------------------------------------

async function dispatchSchedule(id, where) {
  try {
    const reply = await api(`/v1/dev/schedules/${encodeURIComponent(id)}`, { method: "POST" });
    const line = el("p", "");
    line.append(`Dispatched ${id}: `);
    for (const sid of reply.sessionIds || []) line.append(button(sid, () => ctx.openSession(sid), "link"), " ");
    where.append(line);
  } catch (error) {
    where.append(el("p", "error", error.message));
  }
}

async function loadDev() {
  const target = $("dev");
  const info = ctx.getInfo() || {};
  const schedules = section("Schedules", info.schedules || [], (s) => {
    const row = el("div", "card flat");
    row.append(el("strong", "", s.id), el("span", "muted", ` ${s.cron} `));
    row.append(button("Dispatch now", () => dispatchSchedule(s.id, row)));
    return row;
  }, "schedules");
  let reminders;
  try {
    reminders = (await api("/v1/dev/reminders")).reminders;
  } catch (error) {
    const box = el("div");
    unavailable(box, "Reminders", error);
    target.replaceChildren(schedules, box);
    return;
  }
  const reminderBox = section("Reminders", reminders, (r) => {
    const row = el("div", "card flat");
    const when = r.nextFireAt ? `next ${new Date(r.nextFireAt).toLocaleString()}` : "";
    row.append(el("strong", "", r.purpose || r.id), el("span", "muted", ` ${r.status || ""} ${when} ${r.sessionId || ""} `));
    row.append(button("Fire now", async () => {
      try {
        await api(`/v1/dev/reminders/${encodeURIComponent(r.id)}`, { method: "POST" });
        row.append(el("span", "ok", " fired"));
        if (r.sessionId) ctx.openSession(r.sessionId);
      } catch (error) {
        row.append(el("span", "error", ` ${error.message}`));
      }
    }));
    return row;
  }, "No reminders.");
  target.replaceChildren(schedules, reminderBox);
}
