// Parses and checks the `script:` prompts of agent.mjs (its header documents
// the format). The whole script is checked before any step runs, so a bad
// script changes nothing and the prompt fails with one short message.

const KINDS = ["say", "think", "plan", "tool", "shell", "usage", "sleep", "exit", "stop", "env"];
const STOP_REASONS = ["end_turn", "max_tokens", "refusal", "max_turn_requests"];
const PLAN_STATUSES = ["pending", "in_progress", "completed"];
const PLAN_PRIORITIES = ["high", "medium", "low"];
const TOOL_STATUSES = ["completed", "failed"];
const TOOL_KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"];
const TOOL_STEP_KEYS = ["tool", "ask", "wait", "then"];
const TOOL_THEN_KEYS = ["status", "text", "diff", "writeFile", "rawOutput"];
const USAGE_KEYS = [
  "inputTokens",
  "outputTokens",
  "totalTokens",
  "thoughtTokens",
  "cachedReadTokens",
  "cachedWriteTokens",
  "used",
  "size",
  "cost",
];

/** A script's problem: becomes the prompt's invalid-params error. */
export class ScriptError extends Error {}

/** The first `max` characters of `value` as JSON, for messages. */
export function quote(value, max = 60) {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isCount = (v) => Number.isInteger(v) && v >= 0;

function need(ok, where, what) {
  if (!ok) throw new ScriptError(`${where}: ${what}`);
}

function checkString(value, where) {
  need(typeof value === "string", where, `must be a string, got ${quote(value)}`);
}

function checkPlan(entries, where) {
  need(Array.isArray(entries), where, "plan must be an array of entries");
  entries.forEach((entry, i) => {
    const at = `${where}: plan[${i}]`;
    need(isObject(entry), at, "must be an object");
    checkString(entry.content, `${at}.content`);
    need(entry.status === undefined || PLAN_STATUSES.includes(entry.status), at, `status must be one of ${PLAN_STATUSES.join(", ")}`);
    need(entry.priority === undefined || PLAN_PRIORITIES.includes(entry.priority), at, `priority must be one of ${PLAN_PRIORITIES.join(", ")}`);
  });
}

function checkTool(step, where) {
  for (const key of Object.keys(step)) {
    need(TOOL_STEP_KEYS.includes(key), where, `a tool step takes only ${TOOL_STEP_KEYS.join(", ")}, not ${quote(key)}`);
  }
  const tool = step.tool;
  need(isObject(tool), where, "tool must be an object");
  checkString(tool.id, `${where}: tool.id`);
  need(tool.title === undefined || typeof tool.title === "string", where, "tool.title must be a string");
  need(tool.kind === undefined || TOOL_KINDS.includes(tool.kind), where, `tool.kind must be one of ${TOOL_KINDS.join(", ")}`);
  need(tool.locations === undefined || Array.isArray(tool.locations), where, "tool.locations must be an array");
  (tool.locations ?? []).forEach((loc, i) => {
    need(isObject(loc), where, `tool.locations[${i}] must be an object`);
    checkString(loc.path, `${where}: tool.locations[${i}].path`);
    need(loc.line === undefined || isCount(loc.line), where, `tool.locations[${i}].line must be a count`);
  });
  need(step.ask === undefined || typeof step.ask === "boolean", where, "ask must be true or false");
  need(step.wait === undefined || isCount(step.wait), where, "wait must be a number of milliseconds");
  const then = step.then ?? {};
  need(isObject(then), where, "then must be an object");
  for (const key of Object.keys(then)) {
    need(TOOL_THEN_KEYS.includes(key), where, `then takes only ${TOOL_THEN_KEYS.join(", ")}, not ${quote(key)}`);
  }
  need(then.status === undefined || TOOL_STATUSES.includes(then.status), where, `then.status must be one of ${TOOL_STATUSES.join(", ")}`);
  need(then.text === undefined || typeof then.text === "string", where, "then.text must be a string");
  need(then.writeFile === undefined || typeof then.writeFile === "boolean", where, "then.writeFile must be true or false");
  if (then.diff !== undefined) {
    need(isObject(then.diff), where, "then.diff must be an object");
    checkString(then.diff.path, `${where}: then.diff.path`);
    checkString(then.diff.newText, `${where}: then.diff.newText`);
    need(then.diff.oldText == null || typeof then.diff.oldText === "string", where, "then.diff.oldText must be a string or null");
  }
  need(!then.writeFile || then.diff !== undefined, where, "then.writeFile needs then.diff");
}

function checkUsage(usage, where) {
  need(isObject(usage), where, "usage must be an object");
  for (const [key, value] of Object.entries(usage)) {
    need(USAGE_KEYS.includes(key), where, `usage takes ${USAGE_KEYS.join(", ")}, not ${quote(key)}`);
    if (key === "cost") {
      need(isObject(value) && typeof value.amount === "number" && typeof value.currency === "string", where, "usage.cost must be {amount, currency}");
    } else {
      need(isCount(value), where, `usage.${key} must be a count`);
    }
  }
}

function checkStep(step, i) {
  const where = `step ${i}`;
  need(isObject(step), where, `must be an object, got ${quote(step)}`);
  const kinds = Object.keys(step).filter((k) => KINDS.includes(k));
  need(kinds.length === 1, where, `must have exactly one of ${KINDS.join(", ")}: ${quote(step)}`);
  const kind = kinds[0];
  const value = step[kind];
  if (kind === "tool") {
    checkTool(step, where);
    return { kind, step };
  }
  need(Object.keys(step).length === 1, where, `a ${kind} step takes no other keys: ${quote(step)}`);
  if (kind === "say" || kind === "think" || kind === "shell" || kind === "env") checkString(value, `${where}: ${kind}`);
  if (kind === "plan") checkPlan(value, where);
  if (kind === "usage") checkUsage(value, where);
  if (kind === "sleep") need(isCount(value), where, "sleep must be a number of milliseconds");
  if (kind === "exit") need(Number.isInteger(value) && value >= 0 && value <= 255, where, "exit must be a code from 0 to 255");
  if (kind === "stop") need(STOP_REASONS.includes(value), where, `stop must be one of ${STOP_REASONS.join(", ")}`);
  return { kind, value };
}

/**
 * The steps of a prompt: null when `text` is not a script (the agent echoes
 * it), else the checked steps. Throws ScriptError when the script is bad.
 */
export function parseScript(text) {
  if (!text.startsWith("script:")) return null;
  const body = text.slice("script:".length);
  let steps;
  try {
    steps = JSON.parse(body);
  } catch (e) {
    throw new ScriptError(`script is not JSON (${e.message}): ${quote(body.trim())}`);
  }
  need(Array.isArray(steps), "script", `must be a JSON array of steps, got ${quote(steps)}`);
  return steps.map(checkStep);
}
