// Checks agent.mjs on its own: starts it (several times, with different
// environments) and drives it with the SDK's client through every step type,
// cancels, permission answers, load after a crash and restart, and the log.
// Prints "ok <check>" per check; exits non-zero at the first failure.
// tests/tests/e2e/acp_test_agent.rs runs it.
//
//   node selftest.mjs
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk/unstable";

const AGENT = join(dirname(fileURLToPath(import.meta.url)), "agent.mjs");
const root = realpathSync(mkdtempSync(join(tmpdir(), "test-agent-selftest-")));
const state = join(root, "state");
const logFile = join(root, "agent.log");
const cwd = join(root, "work");
mkdirSync(cwd);
const watchdog = setTimeout(() => {
  console.error("selftest: still running after 120 s");
  process.exit(1);
}, 120_000);

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits (bounded) until `ready()` holds. */
async function until(what, ready) {
  for (let waited = 0; waited < 10_000; waited += 20) {
    if (ready()) return;
    await pause(20);
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The JSON-RPC error `call` ends in. */
async function errorOf(call) {
  try {
    await call;
  } catch (e) {
    return e;
  }
  assert.fail("the request succeeded");
}

/**
 * A running agent.mjs and a client connection to it. `answer(params)` (or the
 * default: select `option`) answers its permission asks.
 */
function startAgent(env = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TEST_AGENT_")));
  const child = spawn("node", [AGENT], {
    cwd: root,
    env: { ...clean, TEST_AGENT_STATE: state, TEST_AGENT_LOG: logFile, ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  const run = { child, updates: [], asks: [], option: "allow", answer: null, stdout: "", stderr: "" };
  child.stdout.on("data", (d) => (run.stdout += d));
  child.stderr.on("data", (d) => (run.stderr += d));
  run.exited = new Promise((done) => child.on("exit", (code) => done(code)));
  const app = acp
    .client({ name: "test-agent-selftest" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      run.updates.push(params.update);
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      run.asks.push(params);
      if (run.answer) return run.answer(params);
      return { outcome: { outcome: "selected", optionId: run.option } };
    });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  run.connection = app.connect(stream);
  run.agent = run.connection.agent;
  return run;
}

async function initialize(run) {
  return run.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "test-agent-selftest", version: "1.0.0" },
  });
}

async function newSession(run) {
  return (await run.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })).sessionId;
}

/** Sends a prompt, first clearing the updates seen. */
function prompt(run, sessionId, text) {
  run.updates = [];
  return run.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
}

const script = (steps) => `script:${JSON.stringify(steps)}`;
const texts = (updates, kind = "agent_message_chunk") =>
  updates.filter((u) => u.sessionUpdate === kind).map((u) => u.content.text);
const toolUpdates = (updates) =>
  updates
    .filter((u) => u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update")
    .map((u) => [u.sessionUpdate, u.status, ...(u.content ?? []).map((c) => c.content?.text ?? c.type)]);

async function stop(run) {
  run.child.stdin.end();
  assert.equal(await run.exited, 0, `the agent exits 0 when stdin closes: ${run.stderr}`);
  for (const line of run.stdout.split("\n").filter((l) => l !== "")) {
    assert.equal(JSON.parse(line).jsonrpc, "2.0", `stdout carries only protocol: ${line}`);
  }
}

const checks = [];
const check = (name, body) => checks.push([name, body]);

let first; // The agent most checks share.
let sessionId;
let crashed; // A session whose agent was killed mid-turn, and what it had sent.

check("initialize_says_who_and_what", async () => {
  first = startAgent({ TEST_AGENT_SELFTEST_VAR: "xyz" });
  const init = await initialize(first);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init.agentCapabilities.sessionCapabilities?.resume ?? null, null);
  assert.equal(init.agentInfo.name, "test-agent");
  sessionId = await newSession(first);
  assert.match(sessionId, /^ta-/);
  assert.ok(existsSync(join(state, `${sessionId}.jsonl`)));
});

check("plain_text_is_echoed", async () => {
  first.updates = [];
  const r = await first.agent.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [
      { type: "text", text: "hel" },
      { type: "text", text: "lo" },
    ],
  });
  assert.equal(r.stopReason, "end_turn");
  assert.equal(r.usage, undefined);
  assert.deepEqual(texts(first.updates), ["echo: hel\n\nlo"]);
});

check("say_think_plan_env_and_stop", async () => {
  const r = await prompt(
    first,
    sessionId,
    script([
      { say: "hello world" },
      { say: "x" },
      { think: "hmm" },
      { plan: [{ content: "a", status: "completed", priority: "high" }, { content: "b" }] },
      { env: "TEST_AGENT_SELFTEST_VAR" },
      { env: "TEST_AGENT_SELFTEST_UNSET" },
      { stop: "max_tokens" },
      { say: "never" },
    ]),
  );
  assert.equal(r.stopReason, "max_tokens");
  assert.deepEqual(texts(first.updates), [
    "hello",
    " world",
    "x",
    "env TEST_AGENT_SELFTEST_VAR=xyz",
    "env TEST_AGENT_SELFTEST_UNSET=<unset>",
  ]);
  assert.deepEqual(texts(first.updates, "agent_thought_chunk"), ["hmm"]);
  const plan = first.updates.find((u) => u.sessionUpdate === "plan");
  assert.deepEqual(plan.entries, [
    { content: "a", status: "completed", priority: "high" },
    { content: "b", status: "pending", priority: "medium" },
  ]);
});

check("shell_runs_in_the_session_cwd", async () => {
  const r = await prompt(first, sessionId, script([{ shell: "pwd; echo oops >&2; exit 3" }]));
  assert.equal(r.stopReason, "end_turn");
  assert.deepEqual(texts(first.updates), [`shell exit=3 out=${cwd}\noops`]);
});

check("usage_is_reported_both_ways", async () => {
  const r = await prompt(
    first,
    sessionId,
    script([{ usage: { inputTokens: 10, outputTokens: 5, cachedReadTokens: 100 } }, { stop: "refusal" }]),
  );
  assert.equal(r.stopReason, "refusal");
  assert.deepEqual(r.usage, { inputTokens: 10, outputTokens: 5, totalTokens: 115, cachedReadTokens: 100 });
  const update = first.updates.find((u) => u.sessionUpdate === "usage_update");
  assert.equal(update.used, 115);
  assert.equal(update.size, 200000);
});

check("allowed_tool_writes_its_file", async () => {
  first.option = "allow";
  const r = await prompt(
    first,
    sessionId,
    script([
      {
        tool: { id: "t1", title: "Write new.txt", kind: "edit", rawInput: { p: 1 }, locations: [{ path: "sub/new.txt", line: 1 }] },
        ask: true,
        then: { text: "wrote it", diff: { path: "sub/new.txt", oldText: null, newText: "fresh\n" }, writeFile: true },
      },
    ]),
  );
  assert.equal(r.stopReason, "end_turn");
  assert.equal(readFileSync(join(cwd, "sub/new.txt"), "utf8"), "fresh\n");
  const ask = first.asks.at(-1);
  assert.equal(ask.sessionId, sessionId);
  assert.equal(ask.toolCall.toolCallId, "t1");
  assert.deepEqual(
    ask.options.map((o) => [o.optionId, o.kind]),
    [
      ["allow", "allow_once"],
      ["always", "allow_always"],
      ["reject", "reject_once"],
    ],
  );
  assert.deepEqual(toolUpdates(first.updates), [
    ["tool_call", "pending"],
    ["tool_call_update", "in_progress"],
    ["tool_call_update", "completed", "wrote it", "diff"],
  ]);
  const call = first.updates[0];
  assert.deepEqual([call.title, call.kind, call.rawInput], ["Write new.txt", "edit", { p: 1 }]);
  assert.deepEqual(call.locations, [{ path: join(cwd, "sub/new.txt"), line: 1 }]);
  const diff = first.updates.at(-1).content[1];
  assert.deepEqual(diff, { type: "diff", path: join(cwd, "sub/new.txt"), oldText: null, newText: "fresh\n" });
});

check("rejected_tool_fails_and_the_turn_goes_on", async () => {
  first.option = "reject";
  const r = await prompt(
    first,
    sessionId,
    script([
      { tool: { id: "t2" }, ask: true, then: { diff: { path: "no.txt", newText: "x" }, writeFile: true } },
      { say: "after" },
    ]),
  );
  first.option = "allow";
  assert.equal(r.stopReason, "end_turn");
  assert.ok(!existsSync(join(cwd, "no.txt")));
  assert.deepEqual(toolUpdates(first.updates), [
    ["tool_call", "pending"],
    ["tool_call_update", "failed", "rejected"],
  ]);
  assert.deepEqual(texts(first.updates), ["af", "ter"]);
});

check("always_allows_and_failed_tools_report_failure", async () => {
  first.option = "always";
  const r = await prompt(
    first,
    sessionId,
    script([
      { tool: { id: "t3", kind: "execute" }, ask: true, then: { status: "failed", text: "boom" } },
      { tool: { id: "t4", kind: "read" }, then: { rawOutput: { lines: 2 } } },
    ]),
  );
  first.option = "allow";
  assert.equal(r.stopReason, "end_turn");
  assert.deepEqual(toolUpdates(first.updates), [
    ["tool_call", "pending"],
    ["tool_call_update", "in_progress"],
    ["tool_call_update", "failed", "boom"],
    ["tool_call", "pending"],
    ["tool_call_update", "in_progress"],
    ["tool_call_update", "completed"],
  ]);
  assert.deepEqual(first.updates.at(-1).rawOutput, { lines: 2 });
  assert.equal(first.asks.at(-1).toolCall.toolCallId, "t3", "t4 did not ask");
});

check("cancel_ends_a_sleep_at_once", async () => {
  const started = Date.now();
  const answer = prompt(first, sessionId, script([{ say: "zz" }, { sleep: 60_000 }, { say: "never" }]));
  await until("the first chunk", () => first.updates.length === 2);
  await first.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  const r = await answer;
  assert.equal(r.stopReason, "cancelled");
  assert.ok(Date.now() - started < 10_000);
  assert.deepEqual(texts(first.updates), ["z", "z"]);
});

check("cancel_fails_a_running_tool", async () => {
  const answer = prompt(first, sessionId, script([{ tool: { id: "t5" }, wait: 60_000, then: { text: "never" } }]));
  await until("the tool to run", () => first.updates.some((u) => u.status === "in_progress"));
  await first.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  assert.equal((await answer).stopReason, "cancelled");
  assert.deepEqual(toolUpdates(first.updates), [
    ["tool_call", "pending"],
    ["tool_call_update", "in_progress"],
    ["tool_call_update", "failed", "cancelled"],
  ]);
});

check("cancel_during_an_ask_waits_for_the_answer", async () => {
  let answerAsk;
  first.answer = () => new Promise((done) => (answerAsk = done));
  const answer = prompt(first, sessionId, script([{ tool: { id: "t6" }, ask: true }, { say: "never" }]));
  await until("the ask", () => answerAsk !== undefined);
  await first.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  await pause(200);
  assert.equal(first.updates.length, 1, "nothing more before the ask is answered");
  answerAsk({ outcome: { outcome: "cancelled" } });
  first.answer = null;
  assert.equal((await answer).stopReason, "cancelled");
  assert.deepEqual(toolUpdates(first.updates), [
    ["tool_call", "pending"],
    ["tool_call_update", "failed", "rejected"],
  ]);
  assert.deepEqual(texts(first.updates), []);
});

check("bad_scripts_are_invalid_params", async () => {
  const bad = [
    ["script:[{", /script is not JSON/],
    ['script:{"say":"x"}', /must be a JSON array/],
    [script([{ say: "ok" }, { dance: 1 }]), /step 1: must have exactly one of/],
    [script([{ say: "x", think: "y" }]), /step 0: must have exactly one of/],
    [script([{ stop: "later" }]), /step 0: stop must be one of/],
    [script([{ tool: { title: "no id" } }]), /step 0: tool.id: must be a string/],
    [script([{ tool: { id: "t" }, then: { writeFile: true } }]), /then.writeFile needs then.diff/],
  ];
  for (const [text, message] of bad) {
    const e = await errorOf(prompt(first, sessionId, text));
    assert.equal(e.code, -32602, text);
    assert.match(e.message, message);
    assert.ok(e.message.length < 300, e.message);
    assert.deepEqual(first.updates, [], "a bad script runs nothing");
  }
});

check("wrong_sessions_and_overlapping_prompts_are_refused", async () => {
  const e = await errorOf(prompt(first, "ta-nope", "hi"));
  assert.equal(e.code, -32002);
  assert.deepEqual(e.data, { sessionId: "ta-nope" });
  const running = prompt(first, sessionId, script([{ sleep: 60_000 }]));
  await pause(100);
  const overlap = await errorOf(first.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "x" }] }));
  assert.equal(overlap.code, -32600);
  await first.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  assert.equal((await running).stopReason, "cancelled");
  const relative = await errorOf(first.agent.request(acp.methods.agent.session.new, { cwd: "rel", mcpServers: [] }));
  assert.equal(relative.code, -32602);
});

check("exit_step_crashes_mid_turn", async () => {
  const run = startAgent();
  await initialize(run);
  const id = await newSession(run);
  await prompt(run, id, "first words");
  const lost = prompt(run, id, script([{ say: "before" }, { exit: 7 }, { say: "never" }]));
  assert.equal(await run.exited, 7);
  await errorOf(lost);
  assert.deepEqual(texts(run.updates), ["bef", "ore"]);
  crashed = { id };
});

check("load_after_restart_replays_the_history", async () => {
  const run = startAgent();
  await initialize(run);
  const notLoaded = await errorOf(prompt(run, crashed.id, "hi"));
  assert.equal(notLoaded.code, -32002, "a prompt needs the session opened on this connection");
  run.updates = [];
  const r = await run.agent.request(acp.methods.agent.session.load, { sessionId: crashed.id, cwd, mcpServers: [] });
  assert.deepEqual(r, {});
  assert.deepEqual(
    run.updates.map((u) => [u.sessionUpdate, u.content.text]),
    [
      ["user_message_chunk", "first words"],
      ["agent_message_chunk", "echo: first words"],
      ["user_message_chunk", script([{ say: "before" }, { exit: 7 }, { say: "never" }])],
      ["agent_message_chunk", "bef"],
      ["agent_message_chunk", "ore"],
    ],
  );
  const again = await prompt(run, crashed.id, "more");
  assert.equal(again.stopReason, "end_turn");
  assert.deepEqual(texts(run.updates), ["echo: more"]);
  const unknown = await errorOf(run.agent.request(acp.methods.agent.session.load, { sessionId: "ta-gone", cwd, mcpServers: [] }));
  assert.equal(unknown.code, -32002);
  assert.deepEqual(unknown.data, { sessionId: "ta-gone" });
  const traversal = await errorOf(run.agent.request(acp.methods.agent.session.load, { sessionId: "../state/x", cwd, mcpServers: [] }));
  assert.equal(traversal.code, -32002);
  const resume = await errorOf(run.agent.request(acp.methods.agent.session.resume, { sessionId: crashed.id, cwd }));
  assert.equal(resume.code, -32601, "resume is off unless TEST_AGENT_RESUME=1");
  await stop(run);
});

check("no_load_agent_refuses_load", async () => {
  const run = startAgent({ TEST_AGENT_NO_LOAD: "1" });
  const init = await initialize(run);
  assert.equal(init.agentCapabilities.loadSession, false);
  const e = await errorOf(run.agent.request(acp.methods.agent.session.load, { sessionId: crashed.id, cwd, mcpServers: [] }));
  assert.equal(e.code, -32601);
  assert.deepEqual(run.updates, []);
  await stop(run);
});

check("resume_reopens_without_replay", async () => {
  const run = startAgent({ TEST_AGENT_RESUME: "1" });
  const init = await initialize(run);
  assert.deepEqual(init.agentCapabilities.sessionCapabilities, { resume: {} });
  run.updates = [];
  assert.deepEqual(await run.agent.request(acp.methods.agent.session.resume, { sessionId: crashed.id, cwd }), {});
  assert.deepEqual(run.updates, []);
  assert.equal((await prompt(run, crashed.id, "resumed")).stopReason, "end_turn");
  await stop(run);
});

check("auth_var_gates_sessions_until_authenticate", async () => {
  const without = startAgent({ TEST_AGENT_AUTH_VAR: "TEST_AGENT_SELFTEST_KEY" });
  const init = await initialize(without);
  assert.deepEqual(
    init.authMethods.map((m) => m.id),
    ["login", "env-key"],
  );
  assert.equal((await errorOf(newSession(without))).code, -32000);
  const refused = await errorOf(without.agent.request(acp.methods.agent.authenticate, { methodId: "env-key" }));
  assert.equal(refused.code, -32000, "no login without the variable");
  await stop(without);
  const run = startAgent({ TEST_AGENT_AUTH_VAR: "TEST_AGENT_SELFTEST_KEY", TEST_AGENT_SELFTEST_KEY: "k" });
  await initialize(run);
  assert.equal((await errorOf(newSession(run))).code, -32000);
  const wrong = await errorOf(run.agent.request(acp.methods.agent.authenticate, { methodId: "login" }));
  assert.equal(wrong.code, -32000, "only the env_var method logs in");
  assert.deepEqual(await run.agent.request(acp.methods.agent.authenticate, { methodId: "env-key" }), {});
  assert.match(await newSession(run), /^ta-/);
  await stop(run);
});

check("log_has_what_the_client_sent", async () => {
  await stop(first);
  const lines = readFileSync(logFile, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));
  const starts = lines.filter((l) => l.event === "start");
  assert.equal(starts.length, 7, "one start per agent process");
  assert.equal(starts[0].cwd, root);
  assert.equal(starts[0].argv.at(-1), AGENT);
  assert.equal(lines.filter((l) => l.event === "exit").length, 6, "every agent but the crashed one saw stdin close");
  assert.equal(lines.at(-1).event, "exit");
  const methods = new Set(lines.map((l) => l.method).filter(Boolean));
  for (const m of ["initialize", "session/new", "session/prompt", "session/cancel", "session/load", "session/resume"]) {
    assert.ok(methods.has(m), `the log has ${m}`);
  }
  const newCall = lines.find((l) => l.method === "session/new");
  assert.deepEqual(newCall.params, { cwd, mcpServers: [] });
  const answers = lines.filter((l) => l.method === undefined && l.result?.outcome);
  assert.deepEqual(
    answers.map((l) => l.result.outcome.optionId ?? l.result.outcome.outcome),
    ["allow", "reject", "always", "cancelled"],
  );
});

check("state_directory_is_required", async () => {
  const child = spawn("node", [AGENT], { env: { PATH: process.env.PATH }, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const code = await new Promise((done) => child.on("exit", done));
  assert.equal(code, 2);
  assert.match(stderr, /TEST_AGENT_STATE is not set/);
});

for (const [name, body] of checks) {
  try {
    await body();
  } catch (e) {
    console.error(`FAILED ${name}: ${e.stack ?? e}`);
    console.error(`(its files are kept in ${root})`);
    if (first) console.error(`agent stderr:\n${first.stderr}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}
clearTimeout(watchdog);
rmSync(root, { recursive: true, force: true });
console.log(`selftest: all ${checks.length} checks passed`);
