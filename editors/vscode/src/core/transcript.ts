// An agent's transcript as text a person reads in a read-only document:
// what it was told, what it said, each tool call with its outcome, the
// files it changed and its plan. Everything untrusted goes through
// visible.ts; nothing here is interpreted.

import { planProgress, statusWord } from "./tree";
import type { Agent, FileChange, PlanItem, StatusChange, ToolActivity, TranscriptEntry } from "./types";
import * as visible from "./visible";

const RESULT_LINES = 12;

interface Block {
  type: string;
  text?: string;
  thinking?: string;
  name?: string;
  id?: string;
  input?: unknown;
  tool_use_id?: string;
  content?: unknown;
  is_error?: boolean;
}

function blocks(entry: TranscriptEntry): Block[] {
  try {
    const v: unknown = JSON.parse(Buffer.from(entry.content_json).toString("utf8"));
    return Array.isArray(v) ? (v as Block[]) : [];
  } catch {
    return [{ type: "text", text: "(content that is not JSON)" }];
  }
}

/** The one line a tool call is shown by: its command, path or pattern. */
export function callLine(name: string, input: unknown): string {
  const i = (input ?? {}) as Record<string, unknown>;
  const pick = ["command", "file_path", "path", "pattern", "url", "description", "prompt"].find((k) => typeof i[k] === "string");
  const what = pick ? String(i[pick]) : JSON.stringify(input ?? {});
  return `${visible.line(name)}: ${visible.short(what, 200)}`;
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((c) => (c && typeof c === "object" && typeof (c as Block).text === "string" ? (c as Block).text : ""))
      .join("\n");
  }
  return "";
}

function indent(text: string, prefix: string): string {
  return text
    .split("\n")
    .map((l) => prefix + l)
    .join("\n");
}

function firstLines(text: string, n: number): string {
  const lines = visible.text(text).split("\n");
  if (lines.length <= n) return lines.join("\n");
  return lines.slice(0, n).join("\n") + `\n… ${lines.length - n} more lines`;
}

export function changeLine(c: FileChange, n: number): string {
  const kind = c.created ? "created" : "changed";
  const claim = c.reported ? " (the agent's own report)" : "";
  return `✎ [change ${n}] ${kind} ${visible.line(c.path)}${claim}`;
}

export function planLines(plan: PlanItem[]): string[] {
  const mark: Record<string, string> = {
    PLAN_STATUS_COMPLETED: "[x]",
    PLAN_STATUS_IN_PROGRESS: "[>]",
    PLAN_STATUS_PENDING: "[ ]",
  };
  return plan.map((p) => `  ${mark[p.status] ?? "[?]"} ${visible.line(p.status === "PLAN_STATUS_IN_PROGRESS" ? p.active_form || p.content : p.content)}`);
}

/** What an attachment has shown of an agent so far. */
export class TranscriptView {
  agent: Agent | undefined;
  readonly entries: TranscriptEntry[] = [];
  /** Text of the response in progress (not yet persisted). */
  streaming = "";
  readonly tools = new Map<string, ToolActivity>();
  status: StatusChange | undefined;
  notices: string[] = [];

  /** The file changes, in order, numbered from 1 as the text shows them. */
  changes(): FileChange[] {
    return this.entries.flatMap((e) => e.file_changes ?? []);
  }

  addEntry(e: TranscriptEntry): void {
    if (this.entries.length > 0 && Number(e.seq) <= Number(this.entries[this.entries.length - 1].seq)) return;
    this.entries.push(e);
    this.streaming = "";
  }

  render(): string {
    const out: string[] = [];
    const a = this.agent;
    if (a) {
      const status = statusWord(this.status?.status ?? a.status);
      out.push(`agent ${a.short_id}${a.name ? ` (${visible.line(a.name)})` : ""} · ${status} · ${visible.line(a.model)}`);
      out.push(`in ${visible.line(a.worktree?.path || a.cwd)}`);
      if (a.description) out.push(visible.line(a.description));
      const waiting = this.status?.waiting_for ?? a.waiting_for;
      if (waiting) out.push(`waiting for: ${visible.line(waiting)}`);
      const p = planProgress(a.plan);
      if (p) {
        out.push(`plan: ${p.done}/${p.total} done`);
        out.push(...planLines(a.plan));
      }
    }
    let change = 0;
    for (const e of this.entries) {
      const role = e.role === "ROLE_USER" ? "user" : e.role === "ROLE_ASSISTANT" ? "assistant" : "note";
      const bs = blocks(e);
      const results = bs.filter((b) => b.type === "tool_result");
      // Tool results follow the calls they answer, without a heading.
      if (results.length === 0) out.push("", `── ${role} ──`);
      for (const b of bs) {
        if (b.type === "text" && typeof b.text === "string") out.push(visible.text(b.text));
        else if (b.type === "thinking") out.push("(thinking)");
        else if (b.type === "tool_use") out.push(`⚙ ${callLine(b.name ?? "?", b.input)}`);
        else if (b.type === "tool_result") {
          const mark = b.is_error ? "✗" : "✓";
          out.push(indent(firstLines(resultText(b.content), RESULT_LINES), `  ${mark} `));
        }
      }
      for (const c of e.file_changes ?? []) out.push(`  ${changeLine(c, ++change)}`);
    }
    for (const t of this.tools.values()) {
      if (t.phase === "PHASE_STARTED") out.push(`⋯ running ${visible.line(t.name)}: ${visible.short(t.summary, 200)}`);
    }
    if (this.streaming !== "") out.push("", "── assistant (streaming) ──", visible.text(this.streaming));
    const s = this.status;
    if (s?.status === "AGENT_STATUS_COMPLETED" && s.result) out.push("", "── result ──", visible.text(s.result));
    if (s?.status === "AGENT_STATUS_FAILED" && s.error) out.push("", "── failed ──", visible.text(s.error));
    for (const n of this.notices) out.push(`(${visible.line(n)})`);
    return out.join("\n") + "\n";
  }
}
