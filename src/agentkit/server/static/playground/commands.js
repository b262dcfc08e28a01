// Slash commands in the composer: `/help`, `/new`, `/open <id>`, and one per channel route
// (a `drive` route becomes `/drive <text>`), with autocomplete.

import { bodyFromArgument, callRoute, channelRoutes, commandName, soleField } from "./routes.js";
import { openTry } from "./try.js";

const BUILTIN = [
  ["/help", "list the commands"],
  ["/open", "<session id> open a session"],
  ["/try", "<command> open the Try form of a channel route"],
];

export class Commands {
  constructor({ input, list, onHelp, onSession, onHint }) {
    this.input = input;
    this.list = list;
    this.onHelp = onHelp;
    this.onSession = onSession;
    this.onHint = onHint;
    this.routes = [];
    this.active = -1;
    input.addEventListener("input", () => this.suggest());
    input.addEventListener("blur", () => setTimeout(() => this.close(), 150));
  }

  setInfo(info) {
    this.routes = channelRoutes(info).map((route) => ({ ...route, command: commandName(route) }));
  }

  entries() {
    const routeLines = this.routes.map((r) => {
      const field = soleField(r.bodySchema);
      return [`/${r.command}`, `${field ? `<${field.name}> ` : ""}${r.description || `${r.method} ${r.path}`}`];
    });
    return [...BUILTIN, ...routeLines];
  }

  suggest() {
    const text = this.input.value;
    if (!text.startsWith("/") || text.includes(" ") || text.includes("\n")) {
      this.close();
      return;
    }
    const matches = this.entries().filter(([name]) => name.startsWith(text.toLowerCase()));
    this.list.replaceChildren();
    matches.forEach(([name, help], n) => {
      const li = document.createElement("li");
      li.role = "option";
      li.id = `cmd-${n}`;
      const code = document.createElement("code");
      code.textContent = name;
      li.append(code, document.createTextNode(` ${help}`));
      li.addEventListener("mousedown", (e) => {
        e.preventDefault();
        this.pick(name);
      });
      this.list.append(li);
    });
    this.active = matches.length ? 0 : -1;
    this.mark();
    this.list.hidden = !matches.length;
  }

  mark() {
    [...this.list.children].forEach((li, n) => li.setAttribute("aria-selected", String(n === this.active)));
    if (this.active >= 0) this.input.setAttribute("aria-activedescendant", `cmd-${this.active}`);
    else this.input.removeAttribute("aria-activedescendant");
  }

  close() {
    this.list.hidden = true;
    this.active = -1;
    this.input.removeAttribute("aria-activedescendant");
  }

  pick(name) {
    this.input.value = `${name} `;
    this.close();
    this.input.focus();
  }

  // Arrow keys, Tab and Escape while the list is open; true when the key was used.
  handleKey(e) {
    if (this.list.hidden) return false;
    const count = this.list.children.length;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      this.active = (this.active + (e.key === "ArrowDown" ? 1 : count - 1)) % count;
      this.mark();
    } else if (e.key === "Tab" || (e.key === "Enter" && this.active >= 0)) {
      const code = this.list.children[this.active].querySelector("code").textContent;
      // A command typed out in full runs on Enter (`/help`), it is not completed again.
      if (e.key === "Enter" && this.input.value.trim().toLowerCase() === code) {
        this.close();
        return false;
      }
      this.pick(code);
    } else if (e.key === "Escape") {
      this.close();
    } else return false;
    e.preventDefault();
    return true;
  }

  // Run a command line; true when the composer may be cleared.
  async run(line) {
    const [head, ...rest] = line.split(/\s+/);
    const arg = line.slice(head.length).trim();
    const name = head.slice(1).toLowerCase();
    if (name === "help") {
      this.onHelp(this.entries());
      return true;
    }
    if (name === "open") {
      if (!arg) this.onHint("Usage: /open <session id>", "error");
      else this.onSession(arg);
      return Boolean(arg);
    }
    const target = name === "try" ? rest[0] && rest[0].replace(/^\//, "") : name;
    const route = this.routes.find((r) => r.command === target);
    if (!route) {
      this.onHint(`Unknown command /${target || name}. Type /help for the list.`, "error");
      return false;
    }
    const field = soleField(route.bodySchema);
    if (name === "try" || !arg || (!field && !arg.startsWith("{"))) {
      openTry(route);
      return true;
    }
    let body;
    try {
      body = arg.startsWith("{") ? JSON.parse(arg) : bodyFromArgument(field, arg);
    } catch (error) {
      this.onHint(`/${name}: ${error.message}`, "error");
      return false;
    }
    try {
      const reply = await callRoute(route, body);
      if (reply && reply.sessionId) this.onSession(reply.sessionId);
      else this.onHint(`/${name}: ${JSON.stringify(reply)}`);
      return true;
    } catch (error) {
      this.onHint(`/${name}: ${error.message}`, "error");
      return false;
    }
  }
}
