// A Try form for one server tool, generated from its JSON Schema (the tool cards of the
// Surface tab). It runs the call directly (`POST /v1/tools/<name>`) or inside the session
// open in the chat, and copies the same call as curl. A tool that needs approval says
// up front that a call parks: refused without a session, waiting for a decision in one.

import { ApiError, api, curlFor } from "./api.js";
import { exampleFor } from "./routes.js";
import { highlight } from "./highlight.js";
import { el } from "./dom.js";

function resolve(schema, defs) {
  let s = schema || {};
  for (let n = 0; s.$ref && n < 8; n += 1) s = defs[s.$ref.split("/").pop()] || {};
  const choice = s.anyOf || s.oneOf;
  if (choice && !s.type) {
    const real = choice.filter((c) => c.type !== "null");
    if (real.length === 1) return { ...resolve(real[0], defs), nullable: true, description: s.description, default: s.default, title: s.title };
  }
  return s;
}

// One input per top-level property; `read()` gives its value, or undefined to leave it out.
function field(tool, name, schema, required) {
  const id = `tool-${tool}-${name}`.replace(/[^\w-]/g, "_");
  const wrap = el("div", "tool-field");
  const label = el("label", "", name);
  label.htmlFor = id;
  if (required) label.append(el("span", "req", " *"));
  wrap.append(label);
  const initial = exampleFor(schema);
  let input;
  let read;
  if (Array.isArray(schema.enum)) {
    input = el("select");
    if (!required) input.append(el("option", "", ""));
    for (const v of schema.enum) input.append(Object.assign(el("option", "", v), { value: JSON.stringify(v) }));
    if (schema.default !== undefined) input.value = JSON.stringify(schema.default);
    read = () => (input.value ? JSON.parse(input.value) : undefined);
  } else if (schema.type === "boolean") {
    input = el("input");
    input.type = "checkbox";
    input.checked = Boolean(schema.default);
    read = () => input.checked;
  } else if (schema.type === "integer" || schema.type === "number") {
    input = el("input");
    input.type = "number";
    input.step = schema.type === "integer" ? "1" : "any";
    if (schema.default !== undefined) input.value = String(schema.default);
    read = () => {
      if (input.value === "") {
        if (required) throw new Error(`${name} is required`);
        return undefined;
      }
      return Number(input.value);
    };
  } else if (schema.type === "string") {
    input = el("input");
    input.type = "text";
    input.value = schema.default ?? "";
    read = () => {
      if (input.value === "" && required) throw new Error(`${name} is required`);
      if (input.value === "" && schema.default === undefined) return undefined;
      return input.value;
    };
  } else {
    input = el("textarea");
    input.rows = 3;
    input.spellcheck = false;
    input.value = JSON.stringify(schema.default ?? initial ?? null, null, 2);
    read = () => {
      try {
        return input.value.trim() ? JSON.parse(input.value) : undefined;
      } catch (error) {
        throw new Error(`${name} is not JSON: ${error.message}`);
      }
    };
  }
  input.id = id;
  input.name = name;
  if (required && input.type !== "checkbox") input.required = true;
  wrap.append(input);
  if (schema.description) wrap.append(el("span", "muted small", schema.description));
  return { wrap, read };
}

function output(box, value) {
  const pre = el("pre", "code json");
  const code = el("code");
  highlight(code, JSON.stringify(value, null, 2) ?? "null", "json");
  pre.append(code);
  box.replaceChildren(pre);
}

export function toolForm(tool, { getSessionId, openSession }) {
  const schema = tool.inputSchema || {};
  const defs = schema.$defs || {};
  const required = new Set(schema.required || []);
  const form = el("form", "tool-form");
  form.noValidate = true;
  form.setAttribute("aria-label", `Try ${tool.name}`);
  const fields = Object.entries(schema.properties || {}).map(([name, sub]) =>
    [name, field(tool.name, name, resolve(sub, defs), required.has(name))]);
  for (const [, f] of fields) form.append(f.wrap);
  if (!fields.length) form.append(el("p", "muted", "This tool takes no input."));
  if (tool.needsApproval) {
    form.append(el("p", "parks", "Needs approval: run directly, the call is refused; inside the open session it parks there until someone approves it in the chat."));
  }
  const result = el("div", "tool-result");
  result.setAttribute("role", "status");
  result.setAttribute("aria-live", "polite");
  const actions = el("div", "row");
  const run = el("button", "primary", "Run");
  run.type = "submit";
  const inSession = el("button", "ghost", "Run in open session");
  inSession.type = "button";
  const curl = el("button", "ghost", "Copy curl");
  curl.type = "button";
  actions.append(run, inSession, curl);
  form.append(actions, result);

  const body = (sessionId) => {
    const input = {};
    for (const [name, f] of fields) {
      const value = f.read();
      if (value !== undefined) input[name] = value;
    }
    return sessionId ? { input, sessionId } : { input };
  };
  const path = `/v1/tools/${encodeURIComponent(tool.name)}`;

  async function call(sessionId) {
    let payload;
    try {
      payload = body(sessionId);
    } catch (error) {
      result.replaceChildren(el("p", "error", error.message));
      return;
    }
    result.replaceChildren(el("p", "muted", "Running…"));
    const started = performance.now();
    try {
      const reply = await api(path, { method: "POST", body: payload });
      if (reply && reply.status === "pending_approval") {
        const line = el("p", "parks", `Parked for approval in ${sessionId} (call ${reply.callId}). `);
        const open = el("button", "link", "Open the session to decide");
        open.type = "button";
        open.addEventListener("click", () => openSession(sessionId));
        line.append(open);
        result.replaceChildren(line);
        return;
      }
      output(result, reply);
      result.prepend(el("p", reply.isError ? "error" : "ok",
        `${reply.isError ? "Error" : "Done"} in ${reply.durationMs ?? Math.round(performance.now() - started)} ms`));
    } catch (error) {
      const text = error instanceof ApiError && error.code === "approval_required"
        ? `${error.message} Open a session in the chat and use "Run in open session".`
        : error.message;
      result.replaceChildren(el("p", "error", text));
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    call(null);
  });
  inSession.addEventListener("click", () => {
    const sid = getSessionId();
    if (!sid) result.replaceChildren(el("p", "error", "No session is open: start a chat first."));
    else call(sid);
  });
  curl.addEventListener("click", async () => {
    let text;
    try {
      text = curlFor("POST", path, body(getSessionId()));
    } catch (error) {
      result.replaceChildren(el("p", "error", error.message));
      return;
    }
    try {
      await navigator.clipboard.writeText(text);
      result.replaceChildren(el("p", "muted", "Copied the curl command."));
    } catch {
      const pre = el("pre", "code");
      pre.append(el("code", "", text));
      result.replaceChildren(pre); // shown instead, to copy by hand
    }
  });
  const refresh = () => {
    inSession.disabled = !getSessionId();
    inSession.title = getSessionId() ? `Runs inside ${getSessionId()}` : "Open a session in the chat first";
  };
  form.addEventListener("focusin", refresh);
  refresh();
  return form;
}
