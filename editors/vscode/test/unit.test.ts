// The extension's model without a daemon: the sanitiser, socket discovery
// and its ownership checks (against real sockets), the tree from Watch
// events, transcript rendering, ask lines and Write/Edit proposals.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { askLine } from "../src/core/askLine";
import { findAgentctl, NotInstalled } from "../src/core/autostart";
import { socketPath } from "../src/core/discovery";
import { checkSocketPath, recheckSocketPath, UnsafeSocket } from "../src/core/ownership";
import { proposal } from "../src/core/proposal";
import { TranscriptView } from "../src/core/transcript";
import { AgentTree, statusWord } from "../src/core/tree";
import type { Agent, PermissionRequest, TranscriptEntry, WatchEvent } from "../src/core/types";
import * as visible from "../src/core/visible";

const me = process.getuid ? process.getuid() : 0;

function agent(id: string, over: Partial<Agent> = {}): Agent {
  return {
    id,
    short_id: id.slice(0, 8),
    name: "",
    description: `agent ${id}`,
    subagent_type: "",
    status: "AGENT_STATUS_RUNNING",
    background: true,
    parent_id: "",
    model: "anthropic:m",
    cwd: "/w/project",
    created_at: { seconds: "100", nanos: 0 },
    updated_at: { seconds: "100", nanos: 0 },
    turns: 0,
    usage: null,
    can_message: true,
    result: "",
    error: "",
    transcript_len: "0",
    tool_uses: 0,
    waiting_for: "",
    worktree: null,
    plan: [],
    executor: "",
    ...over,
  };
}

function tmpdir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-vscode-"));
  fs.chmodSync(d, 0o700);
  return d;
}

function listen(p: string): Promise<net.Server> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(p, () => resolve(s));
  });
}

test("visible: control characters, bidi overrides and invisibles get stand-ins; line() keeps one line", () => {
  assert.equal(visible.line("rm -rf /\x1b[2K\rls"), "rm -rf /␛[2K␍ls");
  assert.equal(visible.line("a\nb\tc"), "a␊b␉c");
  assert.equal(visible.text("a\r\nb\tc\x07"), "a\nb\tc␇");
  assert.equal(visible.line("evil\u202Etxt.exe"), "evil<U+202E>txt.exe");
  assert.equal(visible.line("x\u200By\u{E0041}"), "x<U+200B>y<U+E0041>");
  assert.equal(visible.line("\x9b31m\x7f"), "<U+009B>31m␡");
  assert.equal(visible.short("abcdef", 4), "abc…");
});

test("discovery: the setting, AGENTD_SOCKET, XDG_RUNTIME_DIR, then /tmp/agentd-<uid>, as agentctl", () => {
  const env = { AGENTD_SOCKET: "/s/a.sock", XDG_RUNTIME_DIR: "/run/user/7" };
  assert.equal(socketPath("/set/x.sock", { env, uid: 7 }), "/set/x.sock");
  assert.equal(socketPath("", { env, uid: 7 }), "/s/a.sock");
  assert.equal(socketPath(undefined, { env: { XDG_RUNTIME_DIR: "/run/user/7" }, uid: 7 }), "/run/user/7/agentd/agentd.sock");
  assert.equal(socketPath(undefined, { env: { AGENTD_SOCKET: "", XDG_RUNTIME_DIR: "" }, uid: 7 }), "/tmp/agentd-7/agentd.sock");
});

test("ownership: a missing socket is undefined; a socket of mine in a private directory passes", async () => {
  const d = tmpdir();
  const p = path.join(d, "agentd.sock");
  assert.equal(checkSocketPath(p, me), undefined);
  const s = await listen(p);
  try {
    fs.chmodSync(p, 0o600);
    const id = checkSocketPath(p, me);
    assert.ok(id);
    recheckSocketPath(p, me, id);
  } finally {
    s.close();
  }
});

test("ownership: a directory others can write, a socket others can write, a plain file are refused", async () => {
  const d = tmpdir();
  const p = path.join(d, "agentd.sock");
  const s = await listen(p);
  try {
    fs.chmodSync(p, 0o600);
    fs.chmodSync(d, 0o777);
    assert.throws(() => checkSocketPath(p, me), (e: unknown) => e instanceof UnsafeSocket && /writable by other users \(mode 777\)/.test(e.reason));
    fs.chmodSync(d, 0o700);
    fs.chmodSync(p, 0o666);
    assert.throws(() => checkSocketPath(p, me), (e: unknown) => e instanceof UnsafeSocket && /socket is writable by other users/.test(e.reason));
  } finally {
    s.close();
  }
  const f = path.join(d, "plain");
  fs.writeFileSync(f, "");
  assert.throws(() => checkSocketPath(f, me), (e: unknown) => e instanceof UnsafeSocket && e.reason === "it is not a socket");
});

test("ownership: a socket or directory of another uid is refused (as root: chown)", { skip: me !== 0 && "needs root to chown" }, async () => {
  const d = tmpdir();
  const p = path.join(d, "agentd.sock");
  const s = await listen(p);
  try {
    fs.chmodSync(p, 0o600);
    fs.chownSync(p, 65534, 65534);
    assert.throws(() => checkSocketPath(p, me), (e: unknown) => e instanceof UnsafeSocket && /belongs to uid 65534/.test(e.reason));
    fs.chownSync(p, me, me);
    fs.chownSync(d, 65534, 65534);
    assert.throws(() => checkSocketPath(p, me), (e: unknown) => e instanceof UnsafeSocket && /directory .* belongs to uid 65534/.test(e.reason));
  } finally {
    s.close();
  }
});

test("ownership: a socket replaced after the check is refused", async () => {
  const d = tmpdir();
  const p = path.join(d, "agentd.sock");
  const first = await listen(p);
  fs.chmodSync(p, 0o600);
  const id = checkSocketPath(p, me);
  assert.ok(id);
  first.close();
  fs.rmSync(p, { force: true });
  const second = await listen(p);
  try {
    fs.chmodSync(p, 0o600);
    assert.throws(() => recheckSocketPath(p, me, id), (e: unknown) => e instanceof UnsafeSocket && /replaced/.test(e.reason));
  } finally {
    second.close();
  }
});

test("autostart: agentctl only from an absolute setting or PATH's absolute entries", () => {
  const d = tmpdir();
  const bin = path.join(d, "agentctl");
  fs.writeFileSync(bin, "#!/bin/sh\n");
  fs.chmodSync(bin, 0o755);
  assert.equal(findAgentctl(bin, ""), bin);
  assert.throws(() => findAgentctl("agentctl", ""), NotInstalled);
  assert.equal(findAgentctl(undefined, `.:relative:${d}`), bin);
  const cwd = process.cwd();
  process.chdir(d);
  try {
    assert.throws(() => findAgentctl(undefined, ".::relative"), (e: unknown) => e instanceof NotInstalled && /not on PATH/.test(e.message));
  } finally {
    process.chdir(cwd);
  }
});

test("tree: snapshot, then events; stale events are not applied; children under parents", () => {
  const t = new AgentTree();
  const parent = agent("p0000000-1");
  const late: WatchEvent = {
    agent_id: parent.id,
    agent_short_id: parent.short_id,
    at: { seconds: "99", nanos: 0 },
    event: "status",
    status: { status: "AGENT_STATUS_PENDING", result: "", error: "", turns: 0, waiting_for: "" },
  };
  const child = agent("c0000000-1", { parent_id: parent.id, created_at: { seconds: "101", nanos: 0 }, updated_at: { seconds: "101", nanos: 0 } });
  const created: WatchEvent = { agent_id: child.id, agent_short_id: child.short_id, at: { seconds: "101", nanos: 0 }, event: "created", created: child };
  t.reset([parent], [late, created]);
  assert.equal(t.get(parent.id)?.status, "AGENT_STATUS_RUNNING", "an event older than the snapshot is not applied");
  assert.deepEqual(t.roots("all", []).map((a) => a.id), [parent.id]);
  assert.deepEqual(t.children(parent.id).map((a) => a.id), [child.id]);
  assert.ok(
    t.apply({
      agent_id: child.id,
      agent_short_id: "",
      at: { seconds: "102", nanos: 0 },
      event: "status",
      status: { status: "AGENT_STATUS_COMPLETED", result: "ok", error: "", turns: 2, waiting_for: "" },
    }),
  );
  assert.equal(t.get(child.id)?.status, "AGENT_STATUS_COMPLETED");
  assert.equal(t.running(), 1);
  assert.ok(t.apply({ agent_id: parent.id, agent_short_id: "", at: { seconds: "103", nanos: 0 }, event: "plan", plan: { items: [{ content: "a", status: "PLAN_STATUS_COMPLETED", active_form: "A" }] } }));
  assert.equal(t.get(parent.id)?.plan.length, 1);
  assert.deepEqual(t.roots("workspace", ["/elsewhere"]), []);
  assert.equal(t.roots("workspace", ["/w"]).length, 1);
  assert.equal(statusWord("AGENT_STATUS_WAITING"), "waiting");
  assert.equal(statusWord("17"), "unknown (17)");
});

test("transcript: text, calls with outcomes, changes and the plan, all made visible", () => {
  const v = new TranscriptView();
  v.agent = agent("a0000000-1", { plan: [{ content: "Write notes", status: "PLAN_STATUS_IN_PROGRESS", active_form: "Writing notes" }] });
  const entry = (seq: number, role: string, content: unknown, changes: TranscriptEntry["file_changes"] = []): TranscriptEntry => ({
    seq: String(seq),
    role,
    content_json: Buffer.from(JSON.stringify(content)),
    created_at: null,
    file_changes: changes,
    compact_boundary: null,
  });
  v.addEntry(entry(0, "ROLE_USER", [{ type: "text", text: "do it\x1b[31m" }]));
  v.addEntry(entry(1, "ROLE_ASSISTANT", [{ type: "text", text: "ok" }, { type: "tool_use", id: "t1", name: "Write", input: { file_path: "/w/n\u202E.txt", content: "x" } }]));
  v.addEntry(
    entry(2, "ROLE_USER", [{ type: "tool_result", tool_use_id: "t1", content: "wrote\x07", is_error: false }], [
      { tool_use_id: "t1", path: "/w/n.txt", created: true, before: "", after: "x", first_line: "0", before_cut: false, after_cut: false, before_binary: false, reported: false },
    ]),
  );
  v.addEntry(entry(1, "ROLE_ASSISTANT", [{ type: "text", text: "a duplicate" }]));
  const out = v.render();
  assert.ok(out.includes("do it␛[31m"), out);
  assert.ok(out.includes("⚙ Write: /w/n<U+202E>.txt"), out);
  assert.ok(out.includes("  ✓ wrote␇"), out);
  assert.ok(out.includes("✎ [change 1] created /w/n.txt"), out);
  assert.ok(out.includes("[>] Writing notes"), out);
  assert.ok(!out.includes("a duplicate"), "an entry is shown once");
  assert.equal(v.changes().length, 1);
  assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(out), "no raw control character");
});

function ask(tool: string, input: unknown): PermissionRequest {
  return {
    request_id: "r1",
    agent_id: "a",
    tool_name: tool,
    input_json: JSON.stringify(input),
    summary: "s",
    resolved: false,
    agent_short_id: "a1b2c3d4",
    tool_use_id: "t",
    remember_rules: [],
  };
}

test("asks: the notification line is the exact command, made visible; link syntax goes to the document", () => {
  assert.deepEqual(askLine(ask("Bash", { command: "make test\x1b[1A\x1b[2K" })), { text: "make test␛[1A␛[2K", inline: true });
  assert.equal(askLine(ask("Bash", { command: "echo [Allow](command:workbench.action.quit)" })).inline, false);
  assert.equal(askLine(ask("Bash", { command: "x".repeat(301) })).inline, false);
  assert.equal(askLine(ask("Write", { file_path: "/w/a.txt", content: "" })).text, "/w/a.txt");
});

test("proposal: Write and Edit show the file as it is and as the call would leave it; a FIFO is not read", () => {
  const d = tmpdir();
  const f = path.join(d, "a.txt");
  fs.writeFileSync(f, "one two two\n");
  assert.deepEqual(proposal("Edit", JSON.stringify({ file_path: f, old_string: "two", new_string: "2" })), {
    path: f,
    before: "one two two\n",
    after: "one 2 two\n",
    note: undefined,
  });
  assert.equal(proposal("Edit", JSON.stringify({ file_path: f, old_string: "two", new_string: "$&", replace_all: true }))?.after, "one $& $&\n");
  assert.match(proposal("Edit", JSON.stringify({ file_path: f, old_string: "zzz", new_string: "" }))?.note ?? "", /would fail/);
  assert.deepEqual(proposal("Write", JSON.stringify({ file_path: path.join(d, "new.txt"), content: "hi" })), {
    path: path.join(d, "new.txt"),
    before: "",
    after: "hi",
    note: undefined,
  });
  const fifo = path.join(d, "fifo");
  require("node:child_process").execFileSync("mkfifo", [fifo]);
  assert.match(proposal("Write", JSON.stringify({ file_path: fifo, content: "x" }))?.note ?? "", /not a regular file/);
  assert.equal(proposal("Bash", "{}"), undefined);
});
