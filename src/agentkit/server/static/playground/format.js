// Numbers for people. The whole page formats numbers here, so a count, a mean, a rate,
// money and a duration read the same way in every tab.

// A count: 1969 -> "1,969".
export function formatCount(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "";
  return Math.round(value).toLocaleString("en-US");
}

// A mean or any measured quantity: 3 significant digits, separators for large values,
// so 1971.3 reads "1,971" and 0.9 reads "0.9", never "0.9000".
export function formatMean(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "";
  if (value === 0) return "0";
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString("en-US");
  return Number(value.toPrecision(3)).toLocaleString("en-US", { maximumSignificantDigits: 3 });
}

// A rate (a share between 0 and 1) as a percentage: 0.9 -> "90%", 0.1234 -> "12.3%".
export function formatRate(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "";
  const pct = value * 100;
  if (pct === 0 || Math.abs(pct) >= 10) return `${Math.round(pct)}%`;
  return `${Number(pct.toPrecision(2))}%`;
}

// Money in dollars: cents for a dollar or more, four places below that ("$0.0123",
// "$0.50"), so a small model call is not shown as "$0.00".
export function formatMoney(value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "";
  const sign = value < 0 ? "-" : "";
  const abs = Math.abs(value);
  if (abs === 0) return "$0";
  if (abs < 0.00005) return `${sign}<$0.0001`;
  if (abs >= 1) return `${sign}$${abs.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  return `${sign}$${abs.toFixed(4).replace(/(\.\d\d)(\d*?)0+$/, "$1$2")}`;
}

export function formatUsage(usage) {
  if (!usage) return "";
  const n = (v) => formatCount(Number(v || 0));
  const parts = [`${n(usage.inputTokens)} in`, `${n(usage.outputTokens)} out`];
  if (usage.cacheReadTokens) parts.push(`${n(usage.cacheReadTokens)} cached`);
  return parts.join(" · ") + " tokens";
}

// A duration for people: "840 ms", "2.4 s", "3 min 5 s"; "" when unknown.
export function formatMs(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) return "";
  if (ms === 0) return "0 ms";
  if (ms < 1) return "<1 ms";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

// The A/B metrics that are shares of turns (a mean of 0/1 per turn): printed as rates.
const RATE_METRICS = new Set(["completed", "failed", "deniedApproval", "failureRate", "completionRate", "deniedApprovalRate"]);
const MONEY_METRICS = new Set(["costUsd", "costPerTurn"]);

// A per-turn metric's mean (or a difference of means) in the metric's own unit:
// completed 0.9 -> "90%", costUsd 0.0123 -> "$0.0123", latencyMs 840 -> "840 ms",
// inputTokens 1971.3 -> "1,971".
export function formatMetric(metric, value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return "";
  if (RATE_METRICS.has(metric)) return formatRate(value);
  if (MONEY_METRICS.has(metric)) return formatMoney(value);
  if (metric === "latencyMs") return value < 0 ? `-${formatMs(-value)}` : formatMs(value);
  return formatMean(value);
}

// A metric's unit in words, for chart axes and summaries.
export function metricUnit(metric) {
  if (RATE_METRICS.has(metric)) return "share of turns";
  if (MONEY_METRICS.has(metric)) return "dollars per turn";
  if (metric === "latencyMs") return "time per turn";
  return "per turn";
}
