// Drives `agentctl acp` with the official ACP TypeScript SDK, as an editor
// would, and prints what it sees as JSON lines for tests/tests/e2e/acp.rs.
//
//   node client.mjs <agentctl> first  <cwd>          initialize, new, three prompts
//   node client.mjs <agentctl> second <cwd> <id>     list, load (the replay)
//   node client.mjs <agentctl> third  <cwd> <id>     resume, one more prompt
//   node client.mjs <agentctl> plan   <cwd>          new, one prompt, load (tests/tests/e2e/plans.rs)
//   node client.mjs <agentctl> mcp    <cwd> <json>   new with the mcpServers <json>, one prompt, then
//                                                    sessions whose servers are refused (tests/tests/e2e/acp_mcp.rs)
//   node client.mjs <agentctl> files  <cwd> <mode>   the bridge in <mode>: new, one prompt (tests/tests/e2e/acp_fidelity.rs)
//   node client.mjs <agentctl> subagent <cwd> <mode> new, one prompt whose subagent makes calls; waits for
//                                                    the subagent's progress to be final (acp_fidelity.rs)
//   node client.mjs <agentctl> titles <cwd> <n>      titles from first prompts, n more sessions, list
//                                                    page by page, a bogus cursor (tests/tests/e2e/acp_sessions.rs)
//   node client.mjs <agentctl> errors <cwd> <root>   requests the person got wrong (<root> holds
//                                                    agentd's data directory; tests/tests/e2e/acp_sessions.rs)
//   node client.mjs <agentctl> restart <cwd>         new, a prompt during which the test restarts agentd,
//                                                    one more prompt (tests/tests/e2e/acp_restart.rs)
//
// tests/acp-client-python/client.py does the same steps with the Python SDK.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [agentctl, step, cwd, sessionId] = process.argv.slice(2);
const mode = step === "files" || step === "subagent" ? sessionId : "default";

// A bridge process and the stream to it.
function bridge(extra) {
  const child = spawn(agentctl, ["acp", "--permission-mode", mode, ...extra], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { child, stream };
}
// "external": the bridge runs new sessions with the external agent named
// in the fourth argument (DESIGN §19); the fifth is the prompt.
const { child, stream } = bridge(step === "external" ? ["--agent", sessionId] : []);
const out = (kind, value) => console.log(JSON.stringify({ kind, ...value }));

// Awaits `call`, printing the JSON-RPC error it ends in (or that it did not).
async function errorOf(what, call) {
  try {
    await call;
  } catch (e) {
    out("error", { what, code: e.code, message: e.message, data: e.data });
    return;
  }
  out("accepted", { what });
}

// Every update, in order; `cancelOn` cancels the prompt once the next
// permission ask is allowed and the tool runs.
let updates = [];
let permission = "allow_once";
let cancelOn = null;
let agentRef = null;
// Called (and cleared) once the next ask is answered.
let onAllowed = null;

const app = acp
  .client({ name: "agentd-acp-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    out("permission", {
      title: params.toolCall.title,
      toolCallId: params.toolCall.toolCallId,
      options: params.options.map((o) => o.kind),
      meta: params.toolCall._meta ?? null,
    });
    const option = params.options.find((o) => o.kind === permission);
    if (cancelOn) {
      // Allowed: cancel once the tool has had time to start running.
      const id = cancelOn;
      cancelOn = null;
      setTimeout(() => agentRef.notify(acp.methods.agent.session.cancel, { sessionId: id }), 700);
    }
    if (onAllowed) {
      const hook = onAllowed;
      onAllowed = null;
      hook();
    }
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

async function initialize(agent) {
  return agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "agentd-acp-test", version: "1.0.0" },
  });
}

async function prompt(agent, id, text) {
  updates = [];
  const r = await agent.request(acp.methods.agent.session.prompt, {
    sessionId: id,
    prompt: [{ type: "text", text }],
  });
  out("prompt", { text, stopReason: r.stopReason, updates });
}

await app.connectWith(stream, async (agent) => {
  agentRef = agent;
  const init = await initialize(agent);
  out("initialize", { init });
  if (step === "first") {
    const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const id = created.sessionId;
    out("new", { sessionId: id, modes: created.modes, configOptions: created.configOptions });
    permission = "allow_once";
    await prompt(agent, id, "TASK-ONE: write one.txt");
    permission = "reject_once";
    await prompt(agent, id, "TASK-TWO: write two.txt");
    permission = "allow_once";
    cancelOn = id;
    await prompt(agent, id, "TASK-SLOW: take your time");
    try {
      await agent.request("session/bogus", { sessionId: id });
    } catch (e) {
      out("error", { code: e.code });
    }
    try {
      await agent.request(acp.methods.agent.session.prompt, {
        sessionId: "no-such-session",
        prompt: [{ type: "text", text: "x" }],
      });
    } catch (e) {
      out("error", { code: e.code, data: e.data });
    }
  } else if (step === "second") {
    const list = await agent.request(acp.methods.agent.session.list, { cwd });
    out("list", { list });
    updates = [];
    await agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    out("load", { updates });
  } else if (step === "third") {
    updates = [];
    const resumed = await agent.request(acp.methods.agent.session.resume, { sessionId, cwd, mcpServers: [] });
    out("resume", { updates, modes: resumed.modes });
    await agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "plan" });
    const set = await agent.request(acp.methods.agent.session.setConfigOption, {
      sessionId,
      configId: "model",
      value: "anthropic:claude-other",
    });
    out("config", { configOptions: set.configOptions });
    await prompt(agent, sessionId, "TASK-FOUR: once more");
    await agent.request(acp.methods.agent.session.close, { sessionId });
    out("closed", {});
  } else if (step === "mcp") {
    const mcpServers = JSON.parse(sessionId);
    const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers });
    const id = created.sessionId;
    out("new", { sessionId: id });
    await prompt(agent, id, "TASK-MCP: call the editor's servers");
    const refused = [
      { type: "sse", name: "old", url: "http://127.0.0.1:9/sse", headers: [] },
      { name: "nocommand", args: [], env: [] },
      { name: "bad name", command: "/bin/true", args: [], env: [] },
    ];
    for (const server of refused) {
      try {
        const r = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [server] });
        out("accepted", { server: server.name, sessionId: r.sessionId });
      } catch (e) {
        out("refused", { server: server.name, code: e.code, message: e.message });
      }
    }
  } else if (step === "files") {
    const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    out("new", { sessionId: created.sessionId });
    await prompt(agent, created.sessionId, "TASK-FILES: change the files");
  } else if (step === "subagent") {
    const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    out("new", { sessionId: created.sessionId });
    updates = [];
    const r = await agent.request(acp.methods.agent.session.prompt, {
      sessionId: created.sessionId,
      prompt: [{ type: "text", text: "TASK-SUB: delegate it" }],
    });
    const atAnswer = updates.length;
    // The subagent's progress comes on a stream of its own: wait (bounded)
    // until an update shows every one of its calls ended.
    const final = (u) => {
      const calls = u._meta?.agentd?.subagent?.toolCalls;
      return calls && calls.length >= 2 && calls.every((c) => c.status === "completed" || c.status === "failed");
    };
    for (let waited = 0; waited < 20000 && !updates.some(final); waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    out("prompt", { stopReason: r.stopReason, updates, atAnswer });
  } else if (step === "titles") {
    const more = Number(sessionId);
    const newSession = async () =>
      (await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })).sessionId;
    const list = (cursor) => agent.request(acp.methods.agent.session.list, { cwd, cursor });
    const a = await newSession();
    out("new", { sessionId: a });
    await prompt(agent, a, "TASK-TITLE-A: name the first session\nwith more below");
    await prompt(agent, a, "TASK-TITLE-A2: a second prompt keeps the title");
    const b = await newSession();
    out("new", { sessionId: b });
    await prompt(agent, b, "TASK-TITLE-B: name the second session");
    out("list", { list: await list(undefined) });
    for (let i = 0; i < more; i++) await newSession();
    let cursor;
    do {
      const page = await list(cursor);
      out("page", { page });
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    await errorOf("bogus cursor", list("bogus"));
  } else if (step === "errors") {
    const root = sessionId;
    const newSession = (at) => agent.request(acp.methods.agent.session.new, { cwd: at, mcpServers: [] });
    await errorOf("missing cwd", newSession("/definitely/not/here-acp"));
    await errorOf("relative cwd", newSession("project"));
    await errorOf("cwd holds the data directory", newSession(root));
    const id = (await newSession(cwd)).sessionId;
    out("new", { sessionId: id });
    const setModel = (value) =>
      agent.request(acp.methods.agent.session.setConfigOption, { sessionId: id, configId: "model", value });
    const setMode = (modeId) => agent.request(acp.methods.agent.session.setMode, { sessionId: id, modeId });
    await errorOf("model without a key", setModel("openai:gpt-test"));
    await errorOf("not a model", setModel("nonsense"));
    await errorOf("unknown mode", setMode("yolo"));
    // While the allowed tool runs: the mode and the model wait for the turn.
    let midTurn = Promise.resolve();
    onAllowed = () => {
      midTurn = new Promise((resolve) => setTimeout(resolve, 500)).then(async () => {
        await errorOf("mode mid-turn", setMode("plan"));
        await errorOf("model mid-turn", setModel("anthropic:claude-other"));
      });
    };
    await prompt(agent, id, "TASK-MIDTURN: take a moment");
    await midTurn;
    // A bridge whose sessions use a model with no key.
    const other = bridge(["--model", "openai:gpt-test"]);
    await acp.client({ name: "agentd-acp-test" }).connectWith(other.stream, async (agent2) => {
      await initialize(agent2);
      await errorOf(
        "default model without a key",
        agent2.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }),
      );
    });
    other.child.stdin.end();
    await new Promise((resolve) => other.child.on("exit", resolve));
  } else if (step === "plan") {
    const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const id = created.sessionId;
    out("new", { sessionId: id });
    await prompt(agent, id, "TASK-PLAN: plan the work");
    updates = [];
    await agent.request(acp.methods.agent.session.load, { sessionId: id, cwd, mcpServers: [] });
    out("load", { updates });
  } else if (step === "external") {
    const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    out("new", { sessionId: created.sessionId });
    await prompt(agent, created.sessionId, process.argv[6]);
  } else if (step === "restart") {
    // The test restarts agentd while the first prompt runs.
    const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const id = created.sessionId;
    out("new", { sessionId: id });
    for (const text of ["TASK-RESTART: take your time", "TASK-AFTER: once more"]) {
      await errorOf(text, prompt(agent, id, text)).catch(() => {});
    }
  }
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
