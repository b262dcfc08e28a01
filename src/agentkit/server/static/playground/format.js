// Numbers for people: token counts and durations.

export function formatUsage(usage) {
  if (!usage) return "";
  const n = (v) => Number(v || 0).toLocaleString("en-US");
  const parts = [`${n(usage.inputTokens)} in`, `${n(usage.outputTokens)} out`];
  if (usage.cacheReadTokens) parts.push(`${n(usage.cacheReadTokens)} cached`);
  return parts.join(" · ") + " tokens";
}

// A duration for people: "840 ms", "2.4 s", "3 min 5 s"; "" when unknown.
export function formatMs(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "";
  if (ms < 1) return "<1 ms";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

