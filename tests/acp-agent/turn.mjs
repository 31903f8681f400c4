// Runs one prompt turn of agent.mjs: the checked steps of a script (see
// script.mjs and agent.mjs's header), in order, until the end, a `stop`, an
// `exit` or a session/cancel.
import { spawn } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import * as acp from "@agentclientprotocol/sdk/unstable";

const PERMISSION_OPTIONS = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];
const ALLOWING = ["allow", "always"];
// The context window usage_update reports when a usage step names none.
const DEFAULT_CONTEXT_SIZE = 200000;

const textBlock = (text) => ({ type: "text", text });
const textContent = (text) => ({ type: "content", content: textBlock(text) });

/** Waits `ms`; false when `signal` aborts first. */
function sleep(ms, signal) {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((done) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      done(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      done(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Runs `sh -c command` in `cwd`: its exit code and stdout+stderr as they came. */
function runShell(command, cwd) {
  return new Promise((done) => {
    let out = "";
    const child = spawn("sh", ["-c", command], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("error", (e) => done({ code: "spawn-error", out: e.message }));
    child.on("close", (code, signal) => done({ code: code ?? signal, out }));
  });
}

/** A turn's steps against one session; `run` answers the prompt. */
export class Turn {
  /**
   * session: {sessionId, cwd}; client: the SDK's AgentContext; send(update):
   * sends and records one session/update; signal: aborts on session/cancel.
   */
  constructor({ session, client, send, signal }) {
    this.session = session;
    this.client = client;
    this.send = send;
    this.signal = signal;
    this.usage = undefined;
    // Tool calls reported and not yet finished, failed if the turn is cancelled.
    this.open = new Set();
  }

  #path(path) {
    return isAbsolute(path) ? path : resolve(this.session.cwd, path);
  }

  /** The PromptResponse. */
  async run(steps) {
    for (const step of steps) {
      if (this.signal.aborted) return this.#cancelled();
      const outcome = await this.#step(step);
      if (outcome === "cancelled") return this.#cancelled();
      if (outcome !== undefined) return this.#answer(outcome);
    }
    return this.#answer("end_turn");
  }

  #answer(stopReason) {
    return this.usage ? { stopReason, usage: this.usage } : { stopReason };
  }

  async #cancelled() {
    for (const toolCallId of this.open) {
      await this.send({
        sessionUpdate: "tool_call_update",
        toolCallId,
        status: "failed",
        content: [textContent("cancelled")],
      });
    }
    this.open.clear();
    return this.#answer("cancelled");
  }

  /** One step; a stop reason or "cancelled" ends the turn. */
  async #step({ kind, value, step }) {
    switch (kind) {
      case "say":
        return this.#say(value);
      case "think":
        return this.send({ sessionUpdate: "agent_thought_chunk", content: textBlock(value) });
      case "plan":
        return this.send({
          sessionUpdate: "plan",
          entries: value.map((e) => ({ content: e.content, status: e.status ?? "pending", priority: e.priority ?? "medium" })),
        });
      case "tool":
        return this.#tool(step);
      case "shell": {
        const { code, out } = await runShell(value, this.session.cwd);
        return this.#message(`shell exit=${code} out=${out.trim()}`);
      }
      case "usage":
        return this.#recordUsage(value);
      case "sleep":
        return (await sleep(value, this.signal)) ? undefined : "cancelled";
      case "exit":
        process.exit(value);
        break;
      case "stop":
        return value;
      case "env": {
        const set = process.env[value];
        return this.#message(`env ${value}=${set === undefined ? "<unset>" : set}`);
      }
    }
  }

  #message(text) {
    return this.send({ sessionUpdate: "agent_message_chunk", content: textBlock(text) });
  }

  // Two chunks split in the middle (by code point), so a client must join them.
  async #say(text) {
    const chars = Array.from(text);
    const middle = Math.floor(chars.length / 2);
    if (middle === 0) return this.#message(text);
    await this.#message(chars.slice(0, middle).join(""));
    await this.#message(chars.slice(middle).join(""));
  }

  async #recordUsage(u) {
    const counted = ["inputTokens", "outputTokens", "thoughtTokens", "cachedReadTokens", "cachedWriteTokens"];
    const total = counted.reduce((sum, key) => sum + (u[key] ?? 0), 0);
    this.usage = { inputTokens: u.inputTokens ?? 0, outputTokens: u.outputTokens ?? 0, totalTokens: u.totalTokens ?? total };
    for (const key of ["thoughtTokens", "cachedReadTokens", "cachedWriteTokens"]) {
      if (u[key] !== undefined) this.usage[key] = u[key];
    }
    const update = { sessionUpdate: "usage_update", used: u.used ?? total, size: u.size ?? DEFAULT_CONTEXT_SIZE };
    if (u.cost) update.cost = u.cost;
    await this.send(update);
  }

  /** The permission ask: whether the person allowed the call. */
  async #ask(call) {
    let response;
    try {
      response = await this.client.request(acp.methods.client.session.requestPermission, {
        sessionId: this.session.sessionId,
        toolCall: call,
        options: PERMISSION_OPTIONS,
      });
    } catch (e) {
      process.stderr.write(`test-agent: session/request_permission failed: ${e.message}\n`);
      return false;
    }
    const outcome = response.outcome;
    return outcome.outcome === "selected" && ALLOWING.includes(outcome.optionId);
  }

  async #tool({ tool, ask, wait, then = {} }) {
    const toolCallId = tool.id;
    const call = {
      toolCallId,
      title: tool.title ?? tool.id,
      kind: tool.kind ?? "other",
      status: "pending",
      rawInput: tool.rawInput ?? {},
      locations: (tool.locations ?? []).map((l) => ({ path: this.#path(l.path), ...(l.line !== undefined && { line: l.line }) })),
    };
    this.open.add(toolCallId);
    await this.send({ sessionUpdate: "tool_call", ...call });
    if (ask && !(await this.#ask(call))) {
      this.open.delete(toolCallId);
      await this.send({ sessionUpdate: "tool_call_update", toolCallId, status: "failed", content: [textContent("rejected")] });
      return this.signal.aborted ? "cancelled" : undefined;
    }
    if (this.signal.aborted) return "cancelled";
    await this.send({ sessionUpdate: "tool_call_update", toolCallId, status: "in_progress" });
    if (wait !== undefined && !(await sleep(wait, this.signal))) return "cancelled";
    await this.send(await this.#finish(toolCallId, then));
    this.open.delete(toolCallId);
  }

  /** The final tool_call_update, after writing the diff's file when asked. */
  async #finish(toolCallId, then) {
    let status = then.status ?? "completed";
    let text = then.text;
    const content = [];
    if (then.diff) {
      const path = this.#path(then.diff.path);
      if (then.writeFile) {
        try {
          await mkdir(dirname(path), { recursive: true });
          await writeFile(path, then.diff.newText);
        } catch (e) {
          status = "failed";
          text = `write failed: ${e.message}`;
        }
      }
      content.push({ type: "diff", path, oldText: then.diff.oldText ?? null, newText: then.diff.newText });
    }
    if (text !== undefined) content.unshift(textContent(text));
    const rawOutput = then.rawOutput ?? { status, ...(text !== undefined && { output: text }) };
    return { sessionUpdate: "tool_call_update", toolCallId, status, content, rawOutput };
  }
}
