// The "Try" dialog: send a body to a channel route, remembered per endpoint, with Copy curl.
// A reply that names a session opens it.

import { curlFor } from "./api.js";
import { callRoute, exampleFor, rememberBody, rememberedBody } from "./routes.js";

const $ = (id) => document.getElementById(id);
let current = null;
let openSession = () => {};

export function initTry(open) {
  openSession = open;
  $("try-close").addEventListener("click", () => $("try-dialog").close());
  $("try-curl").addEventListener("click", copyCurl);
  $("try-form").addEventListener("submit", (e) => {
    e.preventDefault();
    sendTry();
  });
}

export function openTry(route) {
  current = route;
  $("try-title").textContent = `${route.method} ${route.path}`;
  $("try-desc").textContent =
    route.description || route.channelDescription || `A route of the ${route.channel} channel.`;
  const remembered = rememberedBody(route);
  $("try-body").value = remembered ?? JSON.stringify(exampleFor(route.bodySchema) ?? {}, null, 2);
  $("try-result").textContent = "";
  $("try-dialog").showModal();
  $("try-body").focus();
}

function parsedBody() {
  const text = $("try-body").value.trim();
  return text ? JSON.parse(text) : {};
}

async function copyCurl() {
  let text;
  try {
    text = curlFor(current.method, current.path, parsedBody());
  } catch (error) {
    $("try-result").textContent = `The body is not JSON: ${error.message}`;
    return;
  }
  try {
    // The clipboard API exists only on secure origins (https, or localhost).
    await navigator.clipboard.writeText(text);
    $("try-result").textContent = "Copied the curl command.";
  } catch {
    $("try-result").textContent = text; // shown instead, to copy by hand
  }
}

async function sendTry() {
  let body;
  try {
    body = parsedBody();
  } catch (error) {
    $("try-result").textContent = `The body is not JSON: ${error.message}`;
    return;
  }
  rememberBody(current, $("try-body").value);
  $("try-result").textContent = "Sending…";
  try {
    const reply = await callRoute(current, body);
    $("try-result").textContent = JSON.stringify(reply);
    if (reply && reply.sessionId) {
      $("try-dialog").close();
      openSession(reply.sessionId);
    }
  } catch (error) {
    $("try-result").textContent = error.message;
  }
}
