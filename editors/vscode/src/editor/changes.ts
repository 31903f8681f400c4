// The files an agent changed, from the daemon's record of each Write and
// Edit (TranscriptEntry.file_changes: the content before and after, kept
// as the call ran), opened in VS Code's diff editor; and a worktree's whole
// diff (DiffAgent) as a read-only document.

import * as vscode from "vscode";
import type { AgentdClient } from "../core/client";
import type { Agent, FileChange, TranscriptEntry } from "../core/types";
import * as visible from "../core/visible";
import { baseName, type VirtualDocuments } from "./virtualDocs";

/** Every file change in the agent's transcript, in order. */
export async function fileChanges(client: AgentdClient, id: string): Promise<FileChange[]> {
  const out: FileChange[] = [];
  let from = "0";
  for (;;) {
    const page = await client.call<{ entries: TranscriptEntry[]; next_seq: string; end: boolean }>("GetTranscript", {
      id,
      from_seq: from,
      limit: 1000,
    });
    for (const e of page.entries) out.push(...(e.file_changes ?? []));
    if (page.end || page.next_seq === from) return out;
    from = page.next_seq;
  }
}

function sideNote(c: FileChange): string {
  const notes: string[] = [];
  if (Number(c.first_line) > 0) notes.push(`from line ${Number(c.first_line) + 1}`);
  if (c.before_binary) notes.push("before: not text");
  if (c.before_cut || c.after_cut) notes.push("cut at 64 KiB");
  if (c.reported) notes.push("the agent's own report");
  return notes.length > 0 ? ` (${notes.join(", ")})` : "";
}

export async function openChange(docs: VirtualDocuments, agent: Agent, c: FileChange, n: number): Promise<void> {
  const key = `${agent.short_id}/change-${n}`;
  const name = baseName(c.path);
  const left = docs.put(key, `before-${name}`, c.before);
  const right = docs.put(key, name, c.after);
  const title = `${agent.short_id} change ${n}: ${visible.short(c.path, 80)}${sideNote(c)}`;
  await vscode.commands.executeCommand("vscode.diff", left, right, title);
}

/** Lets the person pick one of the agent's changes and opens it in the diff editor. */
export async function pickChange(client: AgentdClient, docs: VirtualDocuments, agent: Agent): Promise<void> {
  const changes = await fileChanges(client, agent.id);
  if (changes.length === 0) {
    void vscode.window.showInformationMessage(`agentd: ${agent.short_id} has changed no file (with Write or Edit)`);
    return;
  }
  const items = changes.map((c, i) => ({
    label: `${i + 1}. ${visible.short(c.path, 120)}`,
    description: c.created ? "created" : "changed",
    n: i + 1,
    change: c,
  }));
  const picked =
    items.length === 1 ? items[0] : await vscode.window.showQuickPick(items, { title: `Changes of ${agent.short_id}` });
  if (picked) await openChange(docs, agent, picked.change, picked.n);
}

export async function showWorktreeDiff(client: AgentdClient, docs: VirtualDocuments, agent: Agent): Promise<void> {
  const r = await client.call<{ diff: string; notice: string }>("DiffAgent", { id: agent.id, stat: false });
  const head = r.notice ? `# ${visible.line(r.notice)}\n` : "";
  const uri = docs.put(agent.short_id, "worktree.diff", head + visible.text(r.diff || "(no difference from the base)\n"));
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.languages.setTextDocumentLanguage(doc, "diff");
  await vscode.window.showTextDocument(doc, { preview: true });
}
