// test-agent: a deterministic ACP agent on the official TypeScript SDK
// (@agentclientprotocol/sdk, pinned in package-lock.json), which agentd runs
// as an external agent (DESIGN §19) in the end-to-end tests. It speaks ACP v1
// over stdio: stdout carries only protocol, diagnostics go to stderr.
// selftest.mjs drives it through everything below.
//
// Environment:
//   TEST_AGENT_STATE    required: directory of the sessions (created if
//                       missing), one <sessionId>.jsonl per session holding
//                       its prompts and every session/update sent (see
//                       sessions.mjs), so session/load works after a restart.
//   TEST_AGENT_LOG      optional: file appended one JSON line per message
//                       received from the client, exactly as received
//                       (requests and notifications: method + params; answers
//                       to the agent's own requests such as
//                       session/request_permission: id + result or error),
//                       plus {"event":"start","pid":N,"cwd":"...","argv":[...]}
//                       at startup and {"event":"exit"} when stdin closes
//                       (the agent then exits 0, even mid-turn).
//   TEST_AGENT_NO_LOAD=1   initialize says loadSession false and
//                       session/load fails with -32601 (method not found).
//   TEST_AGENT_LATE_REPLAY=ms  session/load answers first and replays the
//                       history `ms` ms later (Gemini CLI 0.61 answers
//                       before its replay is written, against the spec); a
//                       prompt that comes meanwhile waits for the replay.
//   TEST_AGENT_RESUME=1    initialize offers sessionCapabilities.resume and
//                       session/resume works (answers without replaying);
//                       otherwise session/resume fails with -32601.
//   TEST_AGENT_AUTH_VAR=NAME  initialize offers the auth methods
//                       [{id "login", name "Log in"} (the agent's own),
//                       {type "env_var", id "env-key", name "Use NAME",
//                       vars [{name NAME}]}] (as codex-acp does), and
//                       session/new, load and resume fail with -32000
//                       "Authentication required" until `authenticate`
//                       {methodId "env-key"} succeeds, which it does only
//                       when NAME is set and not empty (else -32000 too).
//
// Methods: initialize (protocolVersion 1, agentInfo {name: "test-agent"}),
// session/new (cwd must be absolute; a new id "ta-<uuid>"), session/load
// (replays the history as session/update: each prompt's blocks as
// user_message_chunk, then each stored update, then answers; an unknown id
// fails with -32002 and data {sessionId}), session/resume, session/prompt,
// session/cancel. A prompt names a session opened (new, load or resume) on
// this connection, else -32002; a second prompt while one runs: -32600.
// mcpServers are accepted and not used (the log shows what was sent).
//
// Prompts: when the first text block starts with "script:", that block is
// the script (later blocks, such as agentd's worktree notice, are context);
// otherwise the text blocks, joined by a blank line, are answered with one
// agent_message_chunk "echo: <text>" and end_turn.
// "script:" is followed by a JSON array of steps, run in order (the whole
// script is checked first; a bad one fails the prompt with -32602
// "Invalid params: step N: <problem>" and nothing runs or is recorded):
//
//   {"say": "text"}     agent_message_chunk, as two chunks split in the middle
//                       (one chunk when shorter than 2 characters)
//   {"think": "text"}   agent_thought_chunk
//   {"plan": [{"content": "...", "status": "pending"|"in_progress"|"completed",
//              "priority": "high"|"medium"|"low"}]}
//                       plan update (status defaults to pending, priority to
//                       medium)
//   {"tool": {"id": "t1", "title": "...", "kind": "read"|"edit"|"delete"|"move"|
//             "search"|"execute"|"think"|"fetch"|"switch_mode"|"other",
//             "rawInput": {...}, "locations": [{"path": "p", "line": 3}]},
//    "ask": true|false, "wait": ms,
//    "then": {"status": "completed"|"failed", "text": "output",
//             "diff": {"path": "p", "oldText": "..."|null, "newText": "..."},
//             "writeFile": true|false, "rawOutput": {...}}}
//                       tool_call (status pending; title defaults to the id,
//                       kind to other, rawInput to {}); paths relative to the
//                       session's cwd are made absolute. If ask:
//                       session/request_permission with options
//                       [{optionId "allow", allow_once}, {"always",
//                       allow_always}, {"reject", reject_once}]; anything but
//                       allow/always selected (reject, cancelled, an error)
//                       sends tool_call_update failed with text "rejected" and
//                       the script goes on (or ends "cancelled" if the turn
//                       was cancelled). Then tool_call_update in_progress,
//                       then waits `wait` ms (ended by a cancel), then the
//                       final tool_call_update: status (default completed),
//                       content = [text content "output" if text] + [diff
//                       content {type "diff", path, oldText, newText} if
//                       diff], rawOutput (default {status, output: text}).
//                       writeFile: newText is written to the diff's path
//                       (parent directories made) first; if that fails the
//                       status is failed with text "write failed: <error>".
//   {"shell": "cmd"}    runs `sh -c cmd` in the session's cwd with the agent's
//                       environment; agent_message_chunk
//                       "shell exit=<code> out=<stdout+stderr, trimmed>"
//                       (code is the signal name if it was killed)
//   {"usage": {"inputTokens": n, "outputTokens": n, "cachedReadTokens": n,
//              "cachedWriteTokens": n, "thoughtTokens": n, "totalTokens": n,
//              "used": n, "size": n, "cost": {"amount": x, "currency": "USD"}}}
//                       all optional. Sends usage_update {used (default: the
//                       sum of the token counts), size (default 200000),
//                       cost}; the PromptResponse carries `usage`
//                       {inputTokens, outputTokens, totalTokens (default: the
//                       sum), and the others given} (the last usage step wins;
//                       ACP's unstable PromptResponse.usage)
//   {"sleep": ms}       waits; a session/cancel ends the wait at once and the
//                       prompt answers stopReason "cancelled"
//   {"exit": code}      the process exits at once with that code (0-255)
//   {"stop": "end_turn"|"max_tokens"|"refusal"|"max_turn_requests"}
//                       ends the turn here with that stopReason (without a
//                       stop step: end_turn)
//   {"env": "NAME"}     agent_message_chunk "env NAME=<value>" or
//                       "env NAME=<unset>"
//
// A session/cancel during a turn: the turn stops before its next step (or at
// once in a sleep or a tool's wait), every tool call reported and not
// finished gets tool_call_update failed with text "cancelled", and the prompt
// answers stopReason "cancelled". During a permission ask the agent waits for
// the client's answer (ACP: the client answers "cancelled").
import { appendFileSync } from "node:fs";
import { isAbsolute } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/unstable";
import { parseScript, quote, ScriptError } from "./script.mjs";
import { SessionStore } from "./sessions.mjs";
import { Turn } from "./turn.mjs";

const VERSION = "1.0.0";
const stateDir = process.env.TEST_AGENT_STATE;
const logFile = process.env.TEST_AGENT_LOG;
const canLoad = process.env.TEST_AGENT_NO_LOAD !== "1";
const canResume = process.env.TEST_AGENT_RESUME === "1";
const authVar = process.env.TEST_AGENT_AUTH_VAR || "";
const lateReplay = process.env.TEST_AGENT_LATE_REPLAY;
let authenticated = !authVar;

function authRequired() {
  return new acp.RequestError(-32000, "Authentication required");
}

function mustBeAuthenticated() {
  if (!authenticated) throw authRequired();
}

// Synchronous, so that a line is on disk before an `exit` step ends the process.
function log(entry) {
  if (logFile) appendFileSync(logFile, `${JSON.stringify(entry)}\n`);
}

if (!stateDir) {
  process.stderr.write("test-agent: TEST_AGENT_STATE is not set: it names the directory the sessions are kept in\n");
  process.exit(2);
}
log({ event: "start", pid: process.pid, cwd: process.cwd(), argv: process.argv });
const store = new SessionStore(stateDir);
// The sessions opened on this connection: sessionId -> {sessionId, cwd, turn}.
const active = new Map();

const notFound = (sessionId) =>
  new acp.RequestError(-32002, `Resource not found: no session ${quote(String(sessionId))}`, { sessionId });

/** Sends one update and records it in the session's history. */
async function sendRecorded(client, sessionId, update) {
  store.append(sessionId, { update });
  await client.notify(acp.methods.client.session.update, { sessionId, update });
}

/** Makes a stored session this connection's, for load and resume. */
function reopen(method, enabled, { sessionId, cwd }) {
  if (!enabled) throw acp.RequestError.methodNotFound(method);
  if (!isAbsolute(cwd)) throw acp.RequestError.invalidParams(undefined, `cwd must be absolute: ${quote(cwd)}`);
  if (!store.has(sessionId)) throw notFound(sessionId);
  const session = { sessionId, cwd, turn: null };
  active.set(sessionId, session);
  return session;
}

async function replay(client, sessionId) {
  for (const entry of store.history(sessionId)) {
    if (entry.user) {
      for (const content of entry.user) {
        await client.notify(acp.methods.client.session.update, {
          sessionId,
          update: { sessionUpdate: "user_message_chunk", content },
        });
      }
    } else {
      await client.notify(acp.methods.client.session.update, { sessionId, update: entry.update });
    }
  }
}

async function prompt({ params, client }) {
  const session = active.get(params.sessionId);
  if (!session) throw notFound(params.sessionId);
  if (session.turn) throw acp.RequestError.invalidRequest(undefined, "a prompt is already running in this session");
  await session.replaying;
  const texts = params.prompt.filter((b) => b.type === "text").map((b) => b.text);
  const text = texts.join("\n\n");
  let steps;
  try {
    steps = parseScript(texts[0] ?? "");
  } catch (e) {
    if (e instanceof ScriptError) throw acp.RequestError.invalidParams(undefined, e.message);
    throw e;
  }
  store.append(session.sessionId, { user: params.prompt });
  const send = (update) => sendRecorded(client, session.sessionId, update);
  if (steps === null) {
    await send({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: `echo: ${text}` } });
    return { stopReason: "end_turn" };
  }
  session.turn = new AbortController();
  try {
    return await new Turn({ session, client, send, signal: session.turn.signal }).run(steps);
  } finally {
    session.turn = null;
  }
}

const app = acp
  .agent({ name: "test-agent" })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: 1,
    agentCapabilities: {
      loadSession: canLoad,
      ...(canResume && { sessionCapabilities: { resume: {} } }),
    },
    agentInfo: { name: "test-agent", version: VERSION },
    authMethods: authVar
      ? [
          { id: "login", name: "Log in" },
          { type: "env_var", id: "env-key", name: `Use ${authVar}`, vars: [{ name: authVar }] },
        ]
      : [],
  }))
  .onRequest(acp.methods.agent.authenticate, ({ params }) => {
    if (params.methodId !== "env-key" || !process.env[authVar]) throw authRequired();
    authenticated = true;
    return {};
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    mustBeAuthenticated();
    if (!isAbsolute(params.cwd)) throw acp.RequestError.invalidParams(undefined, `cwd must be absolute: ${quote(params.cwd)}`);
    const sessionId = store.create(params.cwd);
    active.set(sessionId, { sessionId, cwd: params.cwd, turn: null });
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    mustBeAuthenticated();
    const session = reopen(acp.methods.agent.session.load, canLoad, params);
    if (lateReplay === undefined) {
      await replay(client, session.sessionId);
    } else {
      const delay = new Promise((resolve) => setTimeout(resolve, Number(lateReplay)));
      session.replaying = delay.then(() => replay(client, session.sessionId));
    }
    return {};
  })
  .onRequest(acp.methods.agent.session.resume, ({ params }) => {
    mustBeAuthenticated();
    reopen(acp.methods.agent.session.resume, canResume, params);
    return {};
  })
  .onRequest(acp.methods.agent.session.prompt, prompt)
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    active.get(params.sessionId)?.turn?.abort();
  });

// Every message from the client passes the log on its way in.
const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const tapped = {
  writable: stream.writable,
  readable: stream.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        log(message);
        controller.enqueue(message);
      },
    }),
  ),
};
const connection = app.connect(tapped);
connection.closed.then(
  () => {
    log({ event: "exit" });
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`test-agent: connection failed: ${e?.message ?? e}\n`);
    log({ event: "exit" });
    process.exit(1);
  },
);
