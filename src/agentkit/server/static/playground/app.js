// The playground's entry point: boot from GET /v1/meta, tabs, the chat and the sessions list.

import { api, continuationToken, getToken, rememberContinuation, setToken } from "./api.js";
import { StreamFollower, parseTrace } from "./stream.js";
import { Transcript } from "./transcript.js";
import { Commands } from "./commands.js";
import { initPanels, loadSurface, showPanel } from "./panels.js";

const $ = (id) => document.getElementById(id);

const state = {
  meta: null,
  info: null,
  sessionId: null,
  follower: null,
  source: "none", // "live" | "trace" | "none"
  rawLines: [],
};

// The welcome text leaves the DOM while a conversation shows, so keep hold of it.
const emptyState = $("empty-state");
const emptyName = $("empty-name");
const transcript = new Transcript($("transcript"), { onDecision: decide });

// ---- connection status ---------------------------------------------------------------

const STATUS_TEXT = {
  live: "live",
  reconnecting: "reconnecting…",
  ended: "finished",
  error: "stream error",
  trace: "trace file",
  "": "",
};

function setStatus(status) {
  const pill = $("conn");
  pill.textContent = STATUS_TEXT[status] ?? status;
  pill.dataset.state = status;
}

function hint(text, kind = "") {
  const node = $("composer-hint");
  node.textContent = text;
  node.dataset.kind = kind;
}

// ---- the raw pane --------------------------------------------------------------------

function recordRaw(event) {
  const entry = { index: event.index, line: JSON.stringify(event) };
  state.rawLines.push(entry);
  if (!$("raw").hidden) appendRawLine(entry);
}

// One event's line. A live session's lines each carry "Fork from here": a new session
// whose history is this one's events up to that line (POST /v1/session/:id/fork). The
// button's caption is drawn by the stylesheet, so the pane's text stays the NDJSON itself.
function rawLine(entry) {
  const row = document.createElement("div");
  row.className = "raw-line";
  const text = document.createElement("span");
  text.textContent = entry.line;
  row.append(text);
  if (state.source === "live" && Number.isInteger(entry.index)) {
    const fork = document.createElement("button");
    fork.type = "button";
    fork.className = "raw-fork";
    fork.dataset.index = String(entry.index);
    fork.title = `Fork from here: a new session with events 0 to ${entry.index}`;
    fork.setAttribute("aria-label", `Fork from here (event ${entry.index})`);
    fork.addEventListener("click", () => forkAt(entry.index));
    row.append(fork);
  }
  return row;
}

function appendRawLine(entry) {
  const pre = $("raw-lines");
  pre.append(rawLine(entry));
  pre.parentElement.scrollTop = pre.parentElement.scrollHeight;
}

async function forkAt(index) {
  const from = state.sessionId;
  if (!from) return;
  try {
    const reply = await api(`/v1/session/${encodeURIComponent(from)}/fork`, {
      method: "POST",
      body: { atIndex: index },
    });
    rememberContinuation(reply.sessionId, reply.continuationToken);
    openSession(reply.sessionId);
    hint(`Forked from ${from} at event ${index}.`);
  } catch (error) {
    hint(explain(error), "error");
  }
}

$("raw-toggle").addEventListener("change", (e) => {
  const raw = $("raw");
  raw.hidden = !e.target.checked;
  if (!raw.hidden) {
    $("raw-lines").replaceChildren(...state.rawLines.map(rawLine));
    raw.scrollTop = raw.scrollHeight;
  }
});

// ---- sessions in the chat ------------------------------------------------------------

function clearChat() {
  if (state.follower) state.follower.stop();
  state.follower = null;
  state.sessionId = null;
  state.rawLines = [];
  $("raw-lines").replaceChildren();
  transcript.reset();
  setStatus("");
}


function showEmpty(show) {
  if (show && !emptyState.isConnected) $("transcript").append(emptyState);
  if (!show && emptyState.isConnected) emptyState.remove();
}

function scrollToEnd() {
  const box = $("transcript");
  const nearEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 160;
  if (nearEnd) requestAnimationFrame(() => (box.scrollTop = box.scrollHeight));
}

export function openSession(sessionId, { pushUrl = true } = {}) {
  clearChat();
  state.sessionId = sessionId;
  state.source = "live";
  transcript.setInteractive(true);
  $("session-label").textContent = sessionId;
  if (pushUrl) {
    const url = new URL(location.href);
    url.searchParams.set("sessionId", sessionId);
    history.replaceState(null, "", url);
  }
  updateComposer();
  showPanel("chat");
  const follower = new StreamFollower(sessionId, {
    start: 0,
    onEvent(event) {
      recordRaw(event);
      transcript.apply(event);
      trackTurn(event);
      scrollToEnd();
    },
    onStatus: setStatus,
    onFatal(error) {
      hint(`Could not follow ${sessionId}: ${error.message}`, "error");
    },
  });
  state.follower = follower;
  follower.run();
}

function trackTurn(event) {
  if (event.type === "turn.started") $("stop").hidden = false;
  if (event.type === "turn.completed" || event.type === "turn.failed") $("stop").hidden = true;
}

function updateComposer() {
  const message = $("message");
  if (state.source === "trace") {
    message.disabled = true;
    $("send").disabled = true;
    hint("Reading a trace file: nothing is sent. Start a new chat to talk.");
    return;
  }
  message.disabled = false;
  $("send").disabled = false;
  if (state.sessionId && !continuationToken(state.sessionId)) {
    hint("This session was opened without its continuation token: a message starts a new chat.");
  } else hint("");
}

async function send(text) {
  showEmpty(false);
  const sid = state.sessionId;
  const token = sid ? continuationToken(sid) : null;
  $("send").disabled = true;
  try {
    if (sid && token) {
      const reply = await api(`/v1/session/${encodeURIComponent(sid)}`, {
        method: "POST",
        body: { continuationToken: token, message: text },
      });
      rememberContinuation(sid, reply.continuationToken);
      hint("");
    } else {
      const reply = await api("/v1/session", { method: "POST", body: { message: text } });
      rememberContinuation(reply.sessionId, reply.continuationToken);
      openSession(reply.sessionId);
    }
    return true;
  } catch (error) {
    hint(explain(error), "error");
    return false;
  } finally {
    $("send").disabled = state.source === "trace";
  }
}

export function explain(error) {
  if (error && error.status === 401) return `${error.message} Paste the server's token into the Token field.`;
  return error && error.message ? error.message : String(error);
}

async function decide(callId, decision) {
  await api(
    `/v1/session/${encodeURIComponent(state.sessionId)}/approvals/${encodeURIComponent(callId)}`,
    { method: "POST", body: { decision } },
  );
}

$("stop").addEventListener("click", async () => {
  if (!state.sessionId) return;
  try {
    await api(`/v1/session/${encodeURIComponent(state.sessionId)}/stop`, { method: "POST" });
  } catch (error) {
    hint(explain(error), "error");
  }
});

$("new-chat").addEventListener("click", () => {
  clearChat();
  state.source = "none";
  $("session-label").textContent = "No session yet";
  const url = new URL(location.href);
  url.searchParams.delete("sessionId");
  history.replaceState(null, "", url);
  $("transcript").append(emptyState);
  updateComposer();
  $("message").focus();
});

// ---- the composer --------------------------------------------------------------------

const commands = new Commands({
  input: $("message"),
  list: $("suggest"),
  onHelp: (lines) => {
    showEmpty(false);
    transcript.root.append(helpNote(lines));
    scrollToEnd();
  },
  onSession: (sessionId) => openSession(sessionId),
  onHint: hint,
});

function helpNote(lines) {
  const box = document.createElement("div");
  box.className = "note help";
  const title = document.createElement("strong");
  title.textContent = "Commands";
  box.append(title);
  const list = document.createElement("ul");
  for (const [name, text] of lines) {
    const li = document.createElement("li");
    const code = document.createElement("code");
    code.textContent = name;
    li.append(code, document.createTextNode(` ${text}`));
    list.append(li);
  }
  box.append(list);
  return box;
}

$("composer").addEventListener("submit", async (e) => {
  e.preventDefault();
  const input = $("message");
  const text = input.value.trim();
  if (!text) return;
  if (text.startsWith("/")) {
    if (await commands.run(text)) input.value = "";
    return;
  }
  if (await send(text)) {
    input.value = "";
    autosize();
  }
});

function autosize() {
  const input = $("message");
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
}

$("message").addEventListener("input", autosize);
$("message").addEventListener("keydown", (e) => {
  if (commands.handleKey(e)) return;
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("composer").requestSubmit();
  }
});

// ---- trace files ---------------------------------------------------------------------

function openTrace(name, text) {
  let events;
  try {
    events = parseTrace(text);
  } catch (error) {
    hint(`${name}: ${error.message}`, "error");
    return;
  }
  clearChat();
  showEmpty(false);
  state.source = "trace";
  transcript.setInteractive(false);
  $("session-label").textContent = `${name} (${events.length} events)`;
  for (const event of events) {
    recordRaw(event);
    transcript.apply(event);
  }
  setStatus("trace");
  updateComposer();
  showPanel("chat");
}

async function readFile(file) {
  openTrace(file.name, await file.text());
}

$("trace-file").addEventListener("change", (e) => {
  const [file] = e.target.files;
  if (file) readFile(file);
  e.target.value = "";
});

const drop = $("drop-zone");
drop.addEventListener("dragover", (e) => {
  e.preventDefault();
  drop.classList.add("dragging");
});
drop.addEventListener("dragleave", () => drop.classList.remove("dragging"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("dragging");
  const [file] = e.dataTransfer.files;
  if (file) readFile(file);
});

// ---- token ---------------------------------------------------------------------------

$("token").value = getToken();
$("token-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  setToken($("token").value.trim());
  hint(getToken() ? "Token saved for this browser tab." : "Token cleared.");
  await boot();
});

// ---- boot ----------------------------------------------------------------------------

async function boot() {
  try {
    state.meta = await api("/v1/meta");
  } catch (error) {
    hint(`Cannot reach the agent: ${explain(error)}`, "error");
    return;
  }
  const meta = state.meta;
  $("agent-name").textContent = meta.name;
  emptyName.textContent = meta.name;
  document.title = `${meta.name} · agentkit playground`;
  $("dev-badge").hidden = !meta.dev;
  $("tab-dev").hidden = !meta.dev;
  try {
    state.info = await api("/v1/info");
  } catch (error) {
    state.info = null;
    hint(explain(error), "error");
  }
  commands.setInfo(state.info);
  if ($("message").value.startsWith("/")) commands.suggest();
  loadSurface(state.info, meta);
  const wanted = new URL(location.href).searchParams.get("sessionId");
  if (wanted && wanted !== state.sessionId) openSession(wanted, { pushUrl: false });
  document.body.dataset.ready = "true"; // booted: meta and the manifest are in
}

showEmpty(true);
initPanels({
  openSession,
  getInfo: () => state.info,
  getMeta: () => state.meta,
  getSessionId: () => (state.source === "live" ? state.sessionId : null),
});
updateComposer();
boot();
