// The Agents view: the tree of agents (children and forks under their
// parents) with status, plan progress, cost and the waiting-for-you mark,
// redrawn whenever the session's state changes (Watch events, no polling).

import * as vscode from "vscode";
import type { Session } from "../core/session";
import { LIVE, planProgress, type Scope, statusWord } from "../core/tree";
import type { Agent } from "../core/types";
import * as visible from "../core/visible";

const ICONS: Record<string, string> = {
  AGENT_STATUS_PENDING: "clock",
  AGENT_STATUS_RUNNING: "sync~spin",
  AGENT_STATUS_WAITING: "bell-dot",
  AGENT_STATUS_PAUSED: "debug-pause",
  AGENT_STATUS_COMPLETED: "pass",
  AGENT_STATUS_FAILED: "error",
  AGENT_STATUS_CANCELLED: "circle-slash",
  AGENT_STATUS_INTERRUPTED: "debug-disconnect",
};

/** One line's description: status, plan, cost, what it waits for. */
export function describe(a: Agent, cost: number | undefined, asking: boolean): string {
  const parts = [statusWord(a.status)];
  const p = planProgress(a.plan);
  if (p) parts.push(`plan ${p.done}/${p.total}`);
  if (cost !== undefined) parts.push(`$${cost.toFixed(cost < 1 ? 4 : 2)}`);
  if (asking) parts.push("waiting for you");
  return parts.join(" · ");
}

export class AgentsView implements vscode.TreeDataProvider<Agent> {
  private readonly changed = new vscode.EventEmitter<Agent | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  scope: Scope = "workspace";

  constructor(private readonly session: Session) {
    session.on("changed", () => this.changed.fire(undefined));
    session.on("state", () => this.changed.fire(undefined));
  }

  setScope(scope: Scope): void {
    this.scope = scope;
    void vscode.commands.executeCommand("setContext", "agentd.scope", scope);
    this.changed.fire(undefined);
  }

  private folders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  }

  getChildren(parent?: Agent): Agent[] {
    const tree = this.session.tree;
    if (parent) return tree.children(parent.id);
    const folders = this.folders();
    // Without a folder open, "this workspace" has nothing: show all.
    return tree.roots(folders.length === 0 ? "all" : this.scope, folders);
  }

  getParent(a: Agent): Agent | undefined {
    return a.parent_id ? this.session.tree.get(a.parent_id) : undefined;
  }

  getTreeItem(a: Agent): vscode.TreeItem {
    const tree = this.session.tree;
    const asking = this.session.asks.forAgent(a.id).length > 0;
    const label = a.name ? `${visible.short(a.name, 40)} ${a.short_id}` : a.short_id;
    const title = visible.short(a.description || "(no description)", 80);
    const item = new vscode.TreeItem(
      `${label} — ${title}`,
      tree.children(a.id).length > 0 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None,
    );
    item.id = a.id;
    item.description = describe(a, tree.cost(a.id), asking);
    item.iconPath = new vscode.ThemeIcon(asking ? "bell-dot" : (ICONS[a.status] ?? "question"));
    const tip = new vscode.MarkdownString();
    tip.appendText(`${a.short_id} · ${statusWord(a.status)} · ${visible.line(a.model)}\n`);
    tip.appendText(`${visible.line(a.worktree?.path || a.cwd)}\n`);
    if (a.waiting_for) tip.appendText(`waiting for: ${visible.line(a.waiting_for)}\n`);
    if (a.error) tip.appendText(`error: ${visible.short(a.error, 300)}\n`);
    item.tooltip = tip;
    const ctx = ["agent"];
    if (LIVE.has(a.status)) ctx.push("live");
    if (asking) ctx.push("asking");
    if (a.worktree && a.worktree.owned) ctx.push("worktree");
    item.contextValue = ctx.join(" ");
    item.command = { command: "agentd.open", title: "Open Transcript", arguments: [a] };
    return item;
  }
}
