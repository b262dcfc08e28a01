// Channel routes from GET /v1/info: listing them, building example bodies from their JSON
// Schemas, and calling them.

import { api } from "./api.js";

export function channelRoutes(info) {
  const out = [];
  for (const channel of (info && info.channels) || []) {
    for (const route of channel.routes || []) {
      out.push({
        channel: channel.name,
        kind: channel.kind,
        channelDescription: channel.description,
        ...route,
      });
    }
  }
  return out;
}

// The slash command of a route: its last path segment (`/v1/channels/drive` -> `drive`).
export function commandName(route) {
  const parts = route.path.split("/").filter((p) => p && !p.startsWith("{") && !p.startsWith(":"));
  const last = parts[parts.length - 1] || route.channel;
  return last.toLowerCase().replace(/[^a-z0-9_-]/g, "-");
}

export function exampleFor(schema, defs = (schema && schema.$defs) || {}) {
  if (!schema || typeof schema !== "object") return null;
  if (schema.$ref) {
    const name = schema.$ref.split("/").pop();
    return exampleFor(defs[name], defs);
  }
  if (schema.default !== undefined) return schema.default;
  if (schema.examples && schema.examples.length) return schema.examples[0];
  if (schema.enum && schema.enum.length) return schema.enum[0];
  const choice = schema.anyOf || schema.oneOf;
  if (choice && choice.length) return exampleFor(choice.find((s) => s.type !== "null") || choice[0], defs);
  switch (schema.type) {
    case "object": {
      const out = {};
      for (const [key, sub] of Object.entries(schema.properties || {})) out[key] = exampleFor(sub, defs);
      return out;
    }
    case "array":
      return [];
    case "string":
      return "";
    case "integer":
    case "number":
      return 0;
    case "boolean":
      return false;
    default:
      return null;
  }
}

// The one required field of a schema, when it is a string or a number: `/drive <value>`
// can then fill it (`{name, type}`), or null.
export function soleField(schema) {
  if (!schema || schema.type !== "object") return null;
  const props = schema.properties || {};
  const required = schema.required || Object.keys(props);
  if (required.length !== 1 || !props[required[0]]) return null;
  const type = props[required[0]].type;
  return ["string", "integer", "number"].includes(type) ? { name: required[0], type } : null;
}

// The body `/command <arg>` sends for a route with a sole field; throws on a bad number.
export function bodyFromArgument(field, arg) {
  if (field.type === "string") return { [field.name]: arg };
  const value = Number(arg);
  if (!arg || !Number.isFinite(value) || (field.type === "integer" && !Number.isInteger(value))) {
    throw new Error(`${field.name} must be ${field.type === "integer" ? "a whole number" : "a number"}`);
  }
  return { [field.name]: value };
}

export async function callRoute(route, body) {
  const method = (route.method || "POST").toUpperCase();
  return api(route.path, { method, body: method === "GET" ? undefined : body });
}

const KEY = "agentkit.try.";

export function rememberedBody(route) {
  return localStorage.getItem(`${KEY}${route.method} ${route.path}`);
}

export function rememberBody(route, text) {
  localStorage.setItem(`${KEY}${route.method} ${route.path}`, text);
}
