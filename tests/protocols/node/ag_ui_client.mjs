// Drives agentkit's AG-UI endpoint with the official client (@ag-ui/client HttpAgent):
// a run that parks on a tool approval, then the run that approves it.
// Usage: node ag_ui_client.mjs <agent url> <thread id> <message>; prints one JSON object.
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, message] = process.argv.slice(2);
const agent = new HttpAgent({ url: `${url}/v1/ag-ui`, threadId });
agent.messages = [{ id: "user-1", role: "user", content: message }];

async function run(runId, params) {
  const events = [];
  await agent.runAgent({ runId, ...params }, { onEvent: ({ event }) => void events.push(event) });
  return events;
}

const parked = await run("run-1", {});
const finished = parked.at(-1);
const interrupts = finished?.outcome?.type === "interrupt" ? finished.outcome.interrupts : [];
const resume = interrupts.map((i) => ({
  interruptId: i.id,
  status: "resolved",
  payload: { decision: "approve" },
}));
const approved = await run("run-2", { resume });
console.log(JSON.stringify({ runs: [parked, approved], messages: agent.messages }));
