// The palette's and the context menu's commands. Each takes the agent it
// was invoked on (the view passes it) or asks which one; each reports the
// daemon's refusal in its own words (gRPC status and message).

import * as vscode from "vscode";
import { describeError } from "../core/client";
import type { Session } from "../core/session";
import { LIVE } from "../core/tree";
import type { Agent } from "../core/types";
import * as visible from "../core/visible";
import type { AgentsView } from "./agentsView";
import type { AskPrompts } from "./askPrompts";
import { pickChange, showWorktreeDiff } from "./changes";
import { transcriptUri } from "./transcripts";
import type { VirtualDocuments } from "./virtualDocs";

interface Deps {
  session: Session;
  view: AgentsView;
  treeView: vscode.TreeView<Agent>;
  asks: AskPrompts;
  docs: VirtualDocuments;
}

function client(d: Deps) {
  const c = d.session.client;
  if (!c) throw new Error("not connected to agentd (agentd: Reconnect starts it)");
  return c;
}

async function pickAgent(d: Deps, given: unknown, filter: (a: Agent) => boolean = () => true): Promise<Agent | undefined> {
  if (given && typeof given === "object" && "id" in given) return d.session.tree.get((given as Agent).id) ?? (given as Agent);
  if (typeof given === "string") return d.session.tree.find(given);
  const items = d.session.tree
    .all()
    .filter(filter)
    .map((a) => ({ label: a.short_id, description: visible.short(a.description, 80), agent: a }));
  const picked = await vscode.window.showQuickPick(items, { title: "Which agent?" });
  return picked?.agent;
}

function newFolderFor(): string | undefined {
  const active = vscode.window.activeTextEditor?.document.uri;
  const folder = (active && vscode.workspace.getWorkspaceFolder(active)) ?? vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.fsPath;
}

async function run(d: Deps): Promise<void> {
  const cwd = newFolderFor();
  if (!cwd) throw new Error("open a folder first: the agent works in it");
  const prompt = await vscode.window.showInputBox({ title: "Run an agent: what should it do?", ignoreFocusOut: true });
  if (!prompt) return;
  const model = await vscode.window.showInputBox({
    title: "Model (<scheme>:<model>); empty: the daemon's default",
    ignoreFocusOut: true,
  });
  if (model === undefined) return;
  const options = await vscode.window.showQuickPick(
    [
      { label: "Background", description: "run without this window following it", picked: true, key: "background" },
      { label: "Worktree", description: "work in a new git worktree of its own", picked: false, key: "worktree" },
    ],
    { title: "How it runs", canPickMany: true, ignoreFocusOut: true },
  );
  if (options === undefined) return;
  const keys = new Set(options.map((o) => o.key));
  const agent = await client(d).call<Agent>("CreateAgent", {
    prompt,
    model,
    cwd,
    background: keys.has("background"),
    isolation: keys.has("worktree") ? "ISOLATION_WORKTREE" : "ISOLATION_UNSPECIFIED",
  });
  d.session.tree.update(agent);
  d.session.emit("changed");
  await open(agent);
}

async function open(agent: Agent): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(transcriptUri(agent.id, agent.short_id));
  await vscode.window.showTextDocument(doc, { preview: false });
}

async function confirm(message: string, detail: string, button: string): Promise<boolean> {
  return (await vscode.window.showWarningMessage(message, { modal: true, detail }, button)) === button;
}

async function simple(d: Deps, rpc: string, agent: Agent, done: string): Promise<void> {
  const a = await client(d).call<Agent>(rpc, { id: agent.id });
  d.session.tree.update(a);
  d.session.emit("changed");
  vscode.window.setStatusBarMessage(`agentd: ${agent.short_id} ${done}`, 4000);
}

async function merge(d: Deps, agent: Agent): Promise<void> {
  const checkout = agent.worktree?.checkout ?? "its checkout";
  if (!(await confirm(`Merge ${agent.short_id}'s branch into its checkout?`, visible.line(checkout), "Merge"))) return;
  const r = await client(d).call<{ result: string; branch: string; commit: string }>("MergeAgent", { id: agent.id, squash: false });
  const how = r.result.replace(/^MERGE_RESULT_/, "").toLowerCase().replace(/_/g, " ");
  void vscode.window.showInformationMessage(`agentd: merged ${agent.short_id} into ${visible.line(r.branch)} (${how}, ${r.commit.slice(0, 12)})`);
}

async function rm(d: Deps, agent: Agent): Promise<void> {
  const live = LIVE.has(agent.status);
  const holds = agent.worktree?.owned ? `Its worktree ${visible.line(agent.worktree.path)} is kept if it holds work.` : "";
  if (!(await confirm(`Remove ${agent.short_id}${live ? " (it is running: it will be stopped)" : ""}?`, holds, "Remove"))) return;
  const r = await client(d).call<{ worktree_removed: boolean; worktree: { path: string } | null }>("RemoveAgent", {
    id: agent.id,
    force: live,
    discard_worktree: false,
    cwd: newFolderFor() ?? "",
  });
  d.session.tree.remove(agent.id);
  d.session.emit("changed");
  const kept = r.worktree && !r.worktree_removed ? `; its worktree ${visible.line(r.worktree.path)} was kept` : "";
  void vscode.window.showInformationMessage(`agentd: removed ${agent.short_id}${kept}`);
}

export function registerCommands(d: Deps): vscode.Disposable[] {
  const withAgent =
    (f: (a: Agent) => Promise<void>, filter?: (a: Agent) => boolean) =>
    async (given?: unknown): Promise<void> => {
      const a = await pickAgent(d, given, filter);
      if (a) await f(a);
    };
  const table: Record<string, (arg?: unknown) => Promise<void>> = {
    "agentd.run": () => run(d),
    "agentd.open": withAgent((a) => open(a)),
    "agentd.send": withAgent(async (a) => {
      const message = await vscode.window.showInputBox({ title: `Message for ${a.short_id}`, ignoreFocusOut: true });
      if (!message) return;
      const r = await client(d).call<{ agent: Agent }>("SendMessage", { id: a.id, message });
      if (r.agent) d.session.tree.update(r.agent);
      d.session.emit("changed");
    }),
    "agentd.fork": withAgent(async (a) => {
      const directive = await vscode.window.showInputBox({ title: `Fork ${a.short_id}: what should the fork do?`, ignoreFocusOut: true });
      if (!directive) return;
      const f = await client(d).call<Agent>("ForkAgent", { parent_id: a.id, directive, background: true });
      d.session.tree.update(f);
      d.session.emit("changed");
      await open(f);
    }),
    "agentd.interrupt": withAgent((a) => simple(d, "InterruptAgent", a, "interrupted"), (a) => LIVE.has(a.status)),
    "agentd.pause": withAgent((a) => simple(d, "PauseAgent", a, "paused"), (a) => LIVE.has(a.status)),
    "agentd.stop": withAgent((a) => simple(d, "CancelAgent", a, "stopped"), (a) => LIVE.has(a.status)),
    "agentd.compact": withAgent(async (a) => {
      await client(d).call("CompactAgent", { id: a.id }, 300_000);
      vscode.window.setStatusBarMessage(`agentd: ${a.short_id} compacted`, 4000);
    }),
    "agentd.changes": withAgent((a) => pickChange(client(d), d.docs, a)),
    "agentd.diff": withAgent((a) => showWorktreeDiff(client(d), d.docs, a), (a) => a.worktree !== null),
    "agentd.merge": withAgent((a) => merge(d, a), (a) => a.worktree !== null),
    "agentd.rm": withAgent((a) => rm(d, a)),
    "agentd.answer": async (given?: unknown) => {
      const a = given ? await pickAgent(d, given) : undefined;
      d.asks.promptAll(a?.id);
    },
    "agentd.showAll": async () => d.view.setScope("all"),
    "agentd.showWorkspace": async () => d.view.setScope("workspace"),
    "agentd.reconnect": async () => d.session.reconnect(),
    "agentd.focus": async () => {
      await vscode.commands.executeCommand("agentd.agents.focus");
    },
  };
  return Object.entries(table).map(([name, f]) =>
    vscode.commands.registerCommand(name, async (arg?: unknown) => {
      try {
        await f(arg);
      } catch (e) {
        void vscode.window.showErrorMessage(`agentd: ${visible.short(describeError(e), 400)}`);
      }
    }),
  );
}
