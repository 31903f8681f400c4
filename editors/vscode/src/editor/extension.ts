// The extension's entry point: one Session (the connection and the state
// kept from it) shared by the Agents view, the status bar, the transcript
// documents, the ask notifications and the commands. Agents belong to the
// daemon: closing VS Code leaves them running; reopening shows them as
// they are.

import * as path from "node:path";
import * as vscode from "vscode";
import { currentEnvironment, socketPath } from "../core/discovery";
import { Session } from "../core/session";
import type { Agent } from "../core/types";
import { AgentsView } from "./agentsView";
import { AskPrompts } from "./askPrompts";
import { registerCommands } from "./commands";
import { statusBar } from "./statusBar";
import { SCHEME as TRANSCRIPT, Transcripts } from "./transcripts";
import { SCHEME as TEXT, VirtualDocuments } from "./virtualDocs";

let session: Session | undefined;

function newSession(context: vscode.ExtensionContext): Session {
  const cfg = vscode.workspace.getConfiguration("agentd");
  const e = currentEnvironment();
  return new Session({
    protoFile: path.join(context.extensionPath, "proto", "agentd", "v1", "agentd.proto"),
    socket: socketPath(cfg.get<string>("socket"), e),
    uid: e.uid,
    autostart: cfg.get<boolean>("autostart") ?? true,
    agentctlPath: cfg.get<string>("agentctlPath"),
    env: process.env,
  });
}

export function activate(context: vscode.ExtensionContext): void {
  const s = newSession(context);
  session = s;
  const docs = new VirtualDocuments();
  const view = new AgentsView(s);
  const treeView = vscode.window.createTreeView<Agent>("agentd.agents", { treeDataProvider: view, showCollapseAll: true });
  const transcripts = new Transcripts(s);
  const asks = new AskPrompts(s, docs);
  const updateBadge = () => {
    const waiting = s.asks.waitingAgents();
    treeView.badge = waiting > 0 ? { value: waiting, tooltip: `${waiting} agents wait for your answer` } : undefined;
    treeView.message =
      s.state.kind === "connected" || s.state.kind === "connecting" ? undefined : `agentd: ${s.state.reason}`;
  };
  s.on("changed", updateBadge);
  s.on("state", updateBadge);
  s.on("state", (st) => {
    if (st.kind === "not_installed" || st.kind === "refused") void vscode.window.showErrorMessage(`agentd: ${st.reason}`);
  });
  context.subscriptions.push(
    treeView,
    transcripts,
    statusBar(s),
    vscode.workspace.registerTextDocumentContentProvider(TRANSCRIPT, transcripts),
    vscode.workspace.registerTextDocumentContentProvider(TEXT, docs),
    ...registerCommands({ session: s, view, treeView, asks, docs }),
    { dispose: () => s.stop() },
  );
  view.setScope("workspace");
  s.start();
}

export function deactivate(): void {
  session?.stop();
  session = undefined;
}
