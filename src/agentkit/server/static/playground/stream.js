// Following a session's NDJSON stream, resumably.
//
// The follower keeps `next`, the index of the next event it expects. Every (re)connection
// asks for `?startIndex=next`, so after a drop (server restart, lost network, the end of a
// Lambda stream window) it resumes where it stopped. Each event is handed on at most once,
// in index order: an index below `next` is a repeat and is skipped; an index above it means
// something was missed, and the follower reconnects from `next` rather than show a gap.
// A partial line at the moment of a drop is thrown away; its event arrives again whole.

import { apiUrl, authHeaders } from "./api.js";

const FINAL = new Set(["session.completed", "session.failed"]);
const MAX_BACKOFF_MS = 3000;

export class StreamFollower {
  constructor(sessionId, { start = 0, onEvent, onStatus, onFatal }) {
    this.sessionId = sessionId;
    this.next = start;
    this.onEvent = onEvent;
    this.onStatus = onStatus || (() => {});
    this.onFatal = onFatal || (() => {});
    this.controller = new AbortController();
    this.finished = false;
    this.reconnects = 0;
  }

  stop() {
    this.controller.abort();
  }

  get stopped() {
    return this.controller.signal.aborted;
  }

  async run() {
    let backoff = 250;
    while (!this.stopped && !this.finished) {
      try {
        const progressed = await this.connectOnce();
        if (progressed) backoff = 250;
        if (this.finished || this.stopped) break;
        // The server ended the response (a window ran out, or it is shutting down).
        this.onStatus("reconnecting");
      } catch (error) {
        if (this.stopped) break;
        if (error && error.fatal) {
          this.onStatus("error");
          this.onFatal(error);
          return;
        }
        this.onStatus("reconnecting");
      }
      this.reconnects += 1;
      await sleep(backoff, this.controller.signal);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
    if (this.finished) this.onStatus("ended");
  }

  // One request; resolves when the response ends, true when it delivered events.
  async connectOnce() {
    const url = apiUrl(
      `/v1/session/${encodeURIComponent(this.sessionId)}/stream?startIndex=${this.next}`,
    );
    const response = await fetch(url, {
      headers: authHeaders({ accept: "application/x-ndjson" }),
      signal: this.controller.signal,
      cache: "no-store",
    });
    if (!response.ok) {
      let body = null;
      try {
        body = await response.json();
      } catch {
        body = null;
      }
      const error = new Error((body && body.message) || `stream answered ${response.status}`);
      // Auth and missing sessions will not fix themselves by retrying; 5xx and 502s might.
      error.fatal = response.status >= 400 && response.status < 500;
      error.status = response.status;
      throw error;
    }
    this.onStatus("live");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let delivered = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, cut).trim();
        buffer = buffer.slice(cut + 1);
        if (!line) continue;
        const event = JSON.parse(line);
        if (event.index < this.next) continue; // already shown
        if (event.index > this.next) {
          // A gap: never render past it; ask again from the first missing index.
          await reader.cancel();
          return delivered;
        }
        this.next = event.index + 1;
        delivered = true;
        this.onEvent(event);
        if (FINAL.has(event.type)) {
          this.finished = true;
          await reader.cancel();
          return delivered;
        }
      }
    }
    return delivered;
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

// Parse a trace file's text (NDJSON, or a JSON array of events) into events in order.
export function parseTrace(text) {
  const trimmed = text.trim();
  let events;
  if (trimmed.startsWith("[")) {
    events = JSON.parse(trimmed);
  } else {
    events = trimmed
      .split(/\r?\n/)
      .filter((line) => line.trim())
      .map((line, n) => {
        try {
          return JSON.parse(line);
        } catch {
          throw new Error(`line ${n + 1} is not JSON`);
        }
      });
  }
  if (!Array.isArray(events) || !events.every((e) => e && typeof e.type === "string")) {
    throw new Error("not an events file: every line needs a `type`");
  }
  return events;
}
