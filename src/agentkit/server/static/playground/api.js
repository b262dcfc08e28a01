// The HTTP API as the playground calls it: same origin, JSON bodies, the bearer token
// from the navbar on every call. Nothing here has privileges curl does not have.

const TOKEN_KEY = "agentkit.token";
const SESSION_TOKENS_KEY = "agentkit.continuation";

// The page lives at <base>/playground; every API route is <base>/v1/...
export const base = location.pathname.replace(/\/playground\/?$/, "");

export function apiUrl(path) {
  return base + path;
}

export function absoluteUrl(path) {
  return location.origin + apiUrl(path);
}

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(extra = {}) {
  const headers = { ...extra };
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  return headers;
}

export class ApiError extends Error {
  constructor(status, body) {
    const code = body && body.error ? body.error : `http_${status}`;
    super(body && body.message ? `${code}: ${body.message}` : code);
    this.status = status;
    this.code = code;
    this.body = body;
  }

  // An unknown route (not a known route answering 404 about a missing thing).
  get routeMissing() {
    return this.status === 404 && (this.code === "not_found" || this.code === "http_404");
  }
}

// Call a JSON route. A body is always sent as application/json (the server refuses
// other content types on state-changing routes).
export async function api(path, { method = "GET", body, signal } = {}) {
  const init = { method, signal, headers: authHeaders({ accept: "application/json" }) };
  if (method !== "GET" && method !== "HEAD") {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body === undefined ? {} : body);
  }
  const response = await fetch(apiUrl(path), init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Continuation tokens of the sessions this browser tab started or followed up, so a
// reload or a deep link can keep talking in them.
function tokens() {
  try {
    return JSON.parse(sessionStorage.getItem(SESSION_TOKENS_KEY) || "{}");
  } catch {
    return {};
  }
}

export function continuationToken(sessionId) {
  return tokens()[sessionId] || null;
}

export function rememberContinuation(sessionId, token) {
  const all = tokens();
  all[sessionId] = token;
  sessionStorage.setItem(SESSION_TOKENS_KEY, JSON.stringify(all));
}

export function curlFor(method, path, body) {
  const parts = [`curl -X ${method} '${absoluteUrl(path)}'`];
  if (getToken()) parts.push(`-H 'authorization: Bearer ${getToken().replace(/'/g, "")}'`);
  if (body !== undefined) {
    parts.push("-H 'content-type: application/json'");
    parts.push(`-d '${JSON.stringify(body).replace(/'/g, "'\\''")}'`);
  }
  return parts.join(" \\\n  ");
}
