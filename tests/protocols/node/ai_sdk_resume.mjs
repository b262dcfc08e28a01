// Reconnects to a chat's response in flight with the `ai` package's DefaultChatTransport,
// as useChat's `resume` does, and reads it with readUIMessageStream. Prints `reading` once
// the first part has arrived, then the final message as JSON; only `null` when the
// server says no response is in flight. Usage: node ai_sdk_resume.mjs <agent url> <chat id>.
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [url, chatId] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api: `${url}/v1/ai-sdk/chat` });
const stream = await transport.reconnectToStream({ chatId });
if (stream === null) {
  console.log("null");
} else {
  let last;
  for await (const snapshot of readUIMessageStream({ stream, terminateOnError: true })) {
    if (last === undefined) console.log("reading");
    last = snapshot;
  }
  console.log(JSON.stringify(last));
}
