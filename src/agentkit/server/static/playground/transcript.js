// The conversation view: a fold over a session's events. Live streams, replays of finished
// sessions and trace files all go through `apply`, one event at a time in index order, so a
// live turn and a replayed one render the same.

import { renderMarkdown } from "./markdown.js";
import { highlight } from "./highlight.js";
import { drawTimeline } from "./timeline.js";
import { formatMoney, formatMs, formatUsage } from "./format.js";
import { el } from "./dom.js";

function jsonBlock(value) {
  const pre = el("pre", "code json");
  const code = el("code");
  // Plain text (an error message, a string result) is shown as it is, not highlighted.
  if (typeof value === "string") code.textContent = value;
  else highlight(code, JSON.stringify(value, null, 2) ?? "null", "json");
  pre.append(code);
  return pre;
}

function formatCost(data) {
  const cost = data.costUsd ?? data.cost ?? (data.usage && data.usage.costUsd);
  return typeof cost === "number" ? formatMoney(cost) : "";
}

// " by alice" when an event names who acted, "" when it does not.
function byWhom(name) {
  return name ? ` by ${name}` : "";
}

function between(from, to) {
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) && ms >= 0 ? ms : null;
}

function seconds(from, to) {
  return formatMs(between(from, to) ?? undefined);
}

export class Transcript {
  constructor(root, { onDecision, interactive = true } = {}) {
    this.root = root;
    this.onDecision = onDecision;
    this.interactive = interactive;
    this.reset();
  }

  reset() {
    this.root.replaceChildren();
    this.turns = new Map();
    this.calls = new Map();
    this.turn = null;
    this.text = null; // the text block being streamed in the current step
    this.reasoning = null;
    this.count = 0;
    this.pendingRender = new Set();
  }

  setInteractive(value) {
    this.interactive = value;
    for (const buttons of this.root.querySelectorAll(".decide button")) buttons.disabled = !value;
  }

  // The element of the event's turn, created on first sight.
  turnFor(event) {
    const id = event.turnId || "_";
    let turn = this.turns.get(id);
    if (!turn) {
      const node = el("article", "turn");
      node.dataset.turnId = id;
      node.setAttribute("aria-label", "Agent turn");
      turn = { id, node, body: el("div", "turn-body"), startedAt: event.at, events: [] };
      // The waterfall of the turn, drawn from its events while it is open.
      const box = el("details", "timeline-box");
      box.append(el("summary", "", "Timeline"));
      turn.timeline = el("div", "timeline");
      box.append(turn.timeline);
      box.addEventListener("toggle", () => this.redraw(turn));
      turn.timelineBox = box;
      node.append(turn.body, box);
      this.root.append(node);
      this.turns.set(id, turn);
    }
    if (turn !== this.turn) {
      this.turn = turn;
      this.text = null;
      this.reasoning = null;
    }
    return turn;
  }

  apply(event) {
    this.count += 1;
    const data = event.data || {};
    const handler = HANDLERS[event.type];
    if (handler) handler.call(this, event, data);
    const turn = event.turnId && this.turns.get(event.turnId);
    if (turn) {
      turn.events.push(event);
      this.redraw(turn);
    }
    // A type from a newer server: shown plainly, it is not a fault of the session.
    if (!handler) this.note(event, event.type, "unknown");
  }

  note(event, text, cls = "") {
    const node = el("div", `note ${cls}`.trim(), text);
    if (event.turnId && this.turns.has(event.turnId)) this.turnFor(event).body.append(node);
    else this.root.append(node);
    return node;
  }

  // The timeline redraws at most once per frame, and only while it is open.
  redraw(turn) {
    if (!turn.timelineBox.open || turn.drawing) return;
    turn.drawing = true;
    requestAnimationFrame(() => {
      turn.drawing = false;
      drawTimeline(turn.timeline, turn.events);
    });
  }

  // Markdown is rendered again at most once per frame while text streams in.
  schedule(block) {
    if (this.pendingRender.has(block)) return;
    this.pendingRender.add(block);
    requestAnimationFrame(() => {
      this.pendingRender.delete(block);
      this.renderBlock(block);
    });
  }

  renderBlock(block) {
    block.content.replaceChildren(renderMarkdown(block.raw));
  }

  streamBlock(kind, event) {
    const turn = this.turnFor(event);
    const node = el("div", kind === "text" ? "assistant" : "reasoning");
    if (kind === "reasoning") {
      const details = el("details", "reasoning-box");
      details.open = false;
      details.append(el("summary", "", "Reasoning"));
      const content = el("div", "reasoning-text");
      details.append(content);
      node.append(details);
      turn.body.append(node);
      return { node, content, raw: "", kind };
    }
    const content = el("div", "assistant-text");
    node.append(content);
    turn.body.append(node);
    return { node, content, raw: "", kind };
  }

  callCard(event, call) {
    const card = el("details", "tool");
    card.open = true;
    card.dataset.callId = call.callId;
    const summary = el("summary");
    const name = el("span", "tool-name", call.toolName);
    const state = el("span", "tool-state pending", "running");
    summary.append(el("span", "tool-icon", "⚙"), name, state);
    card.append(summary);
    const args = el("div", "tool-section");
    args.append(el("div", "label", "Arguments"), jsonBlock(call.arguments || {}));
    card.append(args);
    const entry = { card, state, summary, requestedAt: event.at };
    this.calls.set(call.callId, entry);
    return entry;
  }
}

const HANDLERS = {
  "session.started"(event, data) {
    const bits = [`Session ${event.sessionId}`, `channel ${data.channelId}`, `${data.mode} mode`];
    this.note(event, bits.join(" · "), "session-start");
  },
  "session.forked"(event, data) {
    // The events after it, up to atIndex + 1, are the original's, copied.
    this.note(event, `Forked from ${data.fromSessionId} at event ${data.atIndex}`, "meta forked");
  },
  "agent.bound"(event, data) {
    if (data.model) this.note(event, `model ${data.model}`, "meta");
  },
  "ab.assigned"(event, data) {
    this.note(event, `A/B ${data.experiment}: ${data.variant}`, "meta");
  },
  "ab.paused"(event, data) {
    const why = data.reason ? `: ${data.reason}` : "";
    this.note(event, `A/B ${data.experiment}: variant ${data.variant} paused${why}; new sessions get the control`, "meta");
  },
  "session.waiting"() {}, // the session is idle until the next message: nothing to show
  // The brakes (POST /pause, /resume, /kill): who pulled them, in the session's own line.
  "session.paused"(event, data) {
    this.note(event, `Paused${byWhom(data.by)}: no new turns until resumed`, "meta paused");
  },
  "session.resumed"(event, data) {
    this.note(event, `Resumed${byWhom(data.by)}`, "meta resumed");
  },
  "session.killed"(event, data) {
    this.note(event, `Killed${byWhom(data.by)}: the session takes no more turns`, "meta killed");
  },
  "message.queued"(event, data) {
    // Not yet a turn: shown apart until its message.received (same queueId) arrives.
    const box = el("div", "user queued");
    box.dataset.queueId = data.queueId;
    const who = data.source && data.source !== "http" ? `queued from ${data.source}` : "Queued";
    box.append(el("div", "who", `${who} · waits for the running turn`));
    box.append(el("div", "user-text", data.message));
    this.root.append(box);
  },
  "context.compacted"(event, data) {
    const bits = ["Context compacted"];
    if (data.strategy === "window") bits.push("older turns dropped");
    else if (data.strategy === "summarize") bits.push("older turns summarized");
    if (data.messagesBefore != null && data.messagesAfter != null) bits.push(`${data.messagesBefore} → ${data.messagesAfter} messages`);
    if (data.tokensBefore != null && data.tokensAfter != null) bits.push(`${data.tokensBefore} → ${data.tokensAfter} tokens`);
    const node = this.note(event, bits.join(" · "), "meta compacted");
    if (data.summary) {
      const details = el("details", "fold");
      details.append(el("summary", "", "Summary the model keeps"), renderMarkdown(String(data.summary)));
      node.append(details);
    }
    if (data.summaryError) node.append(el("div", "error", `The summary failed: ${data.summaryError}`));
  },
  "session.completed"(event, data) {
    const node = this.note(event, "Session completed", "session-end ok");
    if (data.result) node.append(renderMarkdown(data.result));
  },
  "session.failed"(event, data) {
    this.note(event, `Session failed: ${data.error}`, "session-end error");
  },
  "message.received"(event, data) {
    if (data.queueId) {
      for (const q of this.root.querySelectorAll(".user.queued")) if (q.dataset.queueId === data.queueId) q.remove();
    }
    const turn = this.turnFor(event);
    const user = el("div", "user");
    const who = data.source && data.source !== "http" ? `from ${data.source}` : "You";
    user.append(el("div", "who", who));
    user.append(el("div", "user-text", data.message));
    turn.node.insertBefore(user, turn.body);
  },
  "turn.started"(event) {
    const turn = this.turnFor(event);
    turn.startedAt = event.at;
    turn.node.classList.add("running");
  },
  "step.started"(event) {
    this.turnFor(event);
    this.text = null;
    this.reasoning = null;
  },
  "step.completed"() {},
  "reasoning.appended"(event, data) {
    this.turnFor(event);
    if (!this.reasoning) this.reasoning = this.streamBlock("reasoning", event);
    this.reasoning.raw += data.text;
    this.schedule(this.reasoning);
  },
  "reasoning.completed"(event, data) {
    this.turnFor(event);
    if (!this.reasoning) this.reasoning = this.streamBlock("reasoning", event);
    this.reasoning.raw = data.text;
    this.renderBlock(this.reasoning);
    this.reasoning = null;
  },
  "message.appended"(event, data) {
    this.turnFor(event);
    if (!this.text) this.text = this.streamBlock("text", event);
    this.text.raw += data.text;
    this.text.node.classList.add("streaming");
    this.schedule(this.text);
  },
  "message.completed"(event, data) {
    this.turnFor(event);
    if (!this.text) this.text = this.streamBlock("text", event);
    this.text.raw = data.text;
    this.text.node.classList.remove("streaming");
    this.renderBlock(this.text);
    this.text = null;
  },
  "actions.requested"(event, data) {
    const turn = this.turnFor(event);
    this.text = null;
    for (const call of data.actions || []) turn.body.append(this.callCard(event, call).card);
  },
  "action.approval_requested"(event, data) {
    const turn = this.turnFor(event);
    const entry = this.calls.get(data.callId) || this.callCard(event, data);
    if (!entry.card.isConnected) turn.body.append(entry.card);
    entry.state.textContent = "needs approval";
    entry.state.className = "tool-state waiting";
    const box = el("div", "decide");
    // A budget or loop question is the turn asking to go on, not a tool: say so.
    const args = data.arguments || {};
    const id = String(data.callId || "");
    const budget = data.toolName === "budget" && id.startsWith("budget_");
    const looping = data.toolName === "loop_guard" && id.startsWith("loop_");
    const why = budget ? args.reason : looping ? args.message : null;
    const ask = why
      ? `${why} Approve to let the turn go on; Deny ends it.`
      : `${data.toolName} wants to run with the arguments above.`;
    box.append(el("span", "ask", ask));
    for (const [decision, label, cls] of [["approve", "Approve", "primary"], ["deny", "Deny", "danger"]]) {
      const button = el("button", cls, label);
      button.type = "button";
      button.dataset.decision = decision;
      button.disabled = !this.interactive;
      button.addEventListener("click", async () => {
        for (const b of box.querySelectorAll("button")) b.disabled = true;
        try {
          await this.onDecision(data.callId, decision);
        } catch (error) {
          for (const b of box.querySelectorAll("button")) b.disabled = false;
          box.append(el("span", "error", String(error.message || error)));
        }
      });
      box.append(button);
    }
    entry.decide = box;
    entry.card.append(box);
  },
  "action.approval_resolved"(event, data) {
    const entry = this.calls.get(data.callId);
    const verdict = data.decision === "approve" ? "Approved" : "Denied";
    const text = `${verdict}${byWhom(data.principal)}`;
    if (!entry) {
      this.note(event, text, "meta");
      return;
    }
    if (entry.decide) entry.decide.replaceWith(el("div", `decided ${data.decision}`, text));
    else entry.card.append(el("div", `decided ${data.decision}`, text));
    entry.state.textContent = data.decision === "approve" ? "running" : "denied";
    entry.state.className = `tool-state ${data.decision === "approve" ? "pending" : "error"}`;
  },
  "action.started"(event, data) {
    const turn = this.turnFor(event);
    const entry = this.calls.get(data.callId) || this.callCard(event, { ...data, arguments: {} });
    if (!entry.card.isConnected) turn.body.append(entry.card);
    entry.startedAt = event.at;
    entry.state.textContent = "running";
    entry.state.className = "tool-state pending";
  },
  "action.result"(event, data) {
    const turn = this.turnFor(event);
    const entry = this.calls.get(data.callId) || this.callCard(event, { ...data, arguments: {} });
    if (!entry.card.isConnected) turn.body.append(entry.card);
    const section = el("div", "tool-section");
    section.append(el("div", "label", data.isError ? "Error" : "Output"));
    section.append(jsonBlock(data.isError ? data.error ?? data.result : data.result));
    entry.card.append(section);
    // The tool's own measure when it has one, else the time since the call started.
    const ms = data.durationMs ?? between(entry.startedAt || entry.requestedAt, event.at);
    const took = ms != null ? ` · ${formatMs(ms)}` : "";
    entry.state.textContent = (data.isError ? "error" : "done") + took;
    entry.state.className = `tool-state ${data.isError ? "error" : "ok"}`;
    if (!data.isError) entry.card.open = false;
  },
  "subagent.called"(event, data) {
    const turn = this.turnFor(event);
    const box = el("div", "subagent");
    box.dataset.callId = data.callId;
    box.append(el("div", "label", `Subagent ${data.subagent}`));
    box.append(el("div", "sub-prompt", data.prompt));
    const parent = this.calls.get(data.callId);
    (parent ? parent.card : turn.body).append(box);
    this.calls.set(`sub:${data.callId}`, { box });
  },
  "subagent.completed"(event, data) {
    const entry = this.calls.get(`sub:${data.callId}`);
    const box = entry ? entry.box : this.turnFor(event).body.appendChild(el("div", "subagent"));
    if (data.error) box.append(el("div", "error", data.error));
    else if (data.result) box.append(renderMarkdown(data.result));
    if (data.usage) {
      const line = [formatUsage(data.usage), formatCost(data)].filter(Boolean).join(" · ");
      box.append(el("div", "usage", line));
    }
  },
  "turn.completed"(event, data) {
    const turn = this.turnFor(event);
    turn.node.classList.remove("running");
    const foot = el("footer", "turn-foot ok");
    const took = seconds(turn.startedAt, event.at);
    const cost = formatCost(data);
    foot.textContent = ["Turn completed", took, formatUsage(data.usage), cost].filter(Boolean).join(" · ");
    turn.node.append(foot);
    this.text = null;
  },
  "turn.failed"(event, data) {
    const turn = this.turnFor(event);
    turn.node.classList.remove("running");
    const foot = el("footer", "turn-foot error");
    foot.textContent = ["Turn failed", data.error, formatUsage(data.usage)].filter(Boolean).join(" · ");
    turn.node.append(foot);
    this.text = null;
  },
};
