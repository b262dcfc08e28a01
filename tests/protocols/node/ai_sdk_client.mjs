// Drives agentkit's AI SDK chat endpoint with the `ai` package's own DefaultChatTransport
// and readUIMessageStream: a turn that asks approval for a tool call, then the request
// that approves it. Usage: node ai_sdk_client.mjs <agent url> <chat id> <message>.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, chatId, text] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api: `${url}/v1/ai-sdk/chat` });

async function send(messages, message) {
  const stream = await transport.sendMessages({
    trigger: "submit-message",
    chatId,
    messageId: undefined,
    messages,
    abortSignal: undefined,
  });
  let last;
  for await (const snapshot of readUIMessageStream({ message, stream, terminateOnError: true })) {
    last = snapshot;
  }
  return last;
}

const user = { id: "user-1", role: "user", parts: [{ type: "text", text }] };
const asked = await send([user]);
// What useChat's addToolApprovalResponse does: the tool part moves to approval-responded.
const answered = {
  ...asked,
  parts: asked.parts.map((p) =>
    p.state === "approval-requested"
      ? { ...p, state: "approval-responded", approval: { ...p.approval, approved: true } }
      : p,
  ),
};
// As useChat does, the response continues that assistant message.
const done = await send([user, answered], answered);
console.log(JSON.stringify({ asked, done }));
