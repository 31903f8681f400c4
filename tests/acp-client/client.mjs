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
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [agentctl, step, cwd, sessionId] = process.argv.slice(2);
const mode = step === "files" || step === "subagent" ? sessionId : "default";
const child = spawn(agentctl, ["acp", "--permission-mode", mode], {
  stdio: ["pipe", "pipe", "inherit"],
});
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const out = (kind, value) => console.log(JSON.stringify({ kind, ...value }));

// Every update, in order; `cancelOn` cancels the prompt once the next
// permission ask is allowed and the tool runs.
let updates = [];
let permission = "allow_once";
let cancelOn = null;
let agentRef = null;

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
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

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
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "agentd-acp-test", version: "1.0.0" },
  });
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
  } else if (step === "plan") {
    const created = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    const id = created.sessionId;
    out("new", { sessionId: id });
    await prompt(agent, id, "TASK-PLAN: plan the work");
    updates = [];
    await agent.request(acp.methods.agent.session.load, { sessionId: id, cwd, mcpServers: [] });
    out("load", { updates });
  }
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
