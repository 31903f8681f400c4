// The status bar item: agents running and agents waiting for an answer, or
// the connection's trouble; a click focuses the Agents view (or, when
// agentd cannot be reached, connects again).

import * as vscode from "vscode";
import type { Session } from "../core/session";

export function statusBar(session: Session): vscode.StatusBarItem {
  const item = vscode.window.createStatusBarItem("agentd.status", vscode.StatusBarAlignment.Left, 50);
  item.name = "agentd";
  const draw = () => {
    const s = session.state;
    item.backgroundColor = undefined;
    if (s.kind === "connected") {
      const running = session.tree.running();
      const waiting = session.asks.waitingAgents();
      item.text = `$(hubot) ${running} running` + (waiting > 0 ? ` $(bell-dot) ${waiting} waiting` : "");
      item.tooltip = `agentd: ${running} agents running, ${waiting} waiting for your answer`;
      item.command = "agentd.focus";
      if (waiting > 0) item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
    } else if (s.kind === "connecting") {
      item.text = "$(sync~spin) agentd";
      item.tooltip = "agentd: connecting";
      item.command = "agentd.focus";
    } else {
      item.text = "$(debug-disconnect) agentd";
      item.tooltip = `agentd: ${s.reason}`;
      item.command = "agentd.reconnect";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    }
  };
  session.on("changed", draw);
  session.on("state", draw);
  draw();
  item.show();
  return item;
}
