// Empty tabs that explain themselves: what to add, a starting point, and the docs page.

import { el } from "./dom.js";

let getMeta = () => null;

export function initEmpty(metaGetter) {
  getMeta = metaGetter;
}

export const EMPTY = {
  evals: {
    title: "No evals yet",
    text: "An eval is a conversation with the agent and checks on what happened. Add evals/evals.config.py and a case such as evals/smoke.eval.py, then run them here.",
    example: 'from agentkit import define_eval, succeeded\n\ncase = define_eval(message="Hello", assertions=[succeeded()])',
    page: "evals",
  },
  abs: {
    title: "No A/B experiments",
    text: "An experiment compares variants of the agent on live traffic. Add agent/ab.py (or agent/ab/<name>.py) with define_ab(...); its arms and metrics show here.",
    example: 'from agentkit import define_ab, variant\n\nab = define_ab(variants={"control": variant(weight=1), "concise": variant(weight=1, instructions="Answer in one sentence.")})',
    page: "ab",
  },
  schedules: {
    title: "No schedules",
    text: "A schedule starts a task session on a cron. Add agent/schedules/<name>.md with a cron in its frontmatter and the prompt as its body.",
    example: '---\ncron: "0 9 * * 1-5"\n---\n\nSummarise yesterday\'s tickets.',
    page: "schedules",
  },
  logs: {
    title: "No log lines yet",
    text: "Server log lines show here as they are written: requests, tool calls (a tool's ctx.logger lines included), warnings. Send a message in the chat to see some.",
    page: "playground",
  },
};

export function docsUrl(page) {
  const meta = getMeta();
  if (!meta || !meta.docs) return null;
  const prefix = location.pathname.replace(/\/playground\/?$/, "");
  const root = meta.basePath && prefix.endsWith(meta.basePath) ? prefix.slice(0, prefix.length - meta.basePath.length) : prefix;
  return `${root}/docs/${page}`;
}

export function emptyTab(kind) {
  const spec = EMPTY[kind];
  const box = el("div", "empty-tab");
  box.dataset.empty = kind;
  box.append(el("h2", "", spec.title), el("p", "muted", spec.text));
  if (spec.example) {
    const pre = el("pre", "code");
    pre.append(el("code", "", spec.example));
    box.append(pre);
  }
  const href = docsUrl(spec.page);
  if (href) {
    const link = el("a", "", `Read the ${spec.page === "ab" ? "A/B" : spec.page} docs`);
    link.href = href;
    box.append(link);
  }
  return box;
}

