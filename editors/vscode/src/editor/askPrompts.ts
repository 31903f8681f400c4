// Permission asks answered in a notification: which agent asks, the tool,
// and the command (or the file and a diff of what the call would write)
// exactly, with control characters made visible. A notification renders
// `[text](link)` as a link, so text holding such syntax (or too long for a
// notification) is shown in a read-only document instead, and the
// notification says so. The answer goes to the daemon through an
// attachment to the asking agent (AttachRequest.permission_answer).

import * as vscode from "vscode";
import { answerAsk, type Decision } from "../core/attach";
import { describeError } from "../core/client";
import { proposal } from "../core/proposal";
import type { Session } from "../core/session";
import { askLine } from "../core/askLine";
import type { PermissionRequest } from "../core/types";
import * as visible from "../core/visible";
import { baseName, type VirtualDocuments } from "./virtualDocs";

const ALLOW_ONCE = "Allow once";
const ALLOW_ALWAYS = "Allow always";
const DENY = "Deny";
const SHOW = "Show details";

export class AskPrompts {
  private readonly showing = new Set<string>();

  constructor(
    private readonly session: Session,
    private readonly docs: VirtualDocuments,
  ) {
    session.on("ask", (ask) => void this.prompt(ask));
  }

  /** Prompts for every open ask (of one agent, if given) not on screen now. */
  promptAll(agentId?: string): void {
    const asks = agentId ? this.session.asks.forAgent(agentId) : this.session.asks.all();
    if (asks.length === 0) void vscode.window.showInformationMessage("agentd: no permission ask is open");
    for (const ask of asks) void this.prompt(ask);
  }

  private async prompt(ask: PermissionRequest): Promise<void> {
    if (this.showing.has(ask.request_id)) return;
    this.showing.add(ask.request_id);
    try {
      const line = askLine(ask);
      const who = `agentd ${ask.agent_short_id}`;
      const tool = visible.line(ask.tool_name);
      const message = line.inline
        ? `${who} asks to run ${tool}: ${line.text}`
        : `${who} asks to run ${tool}; what it would run is in the document "Show details" opens (it is too long, or holds link syntax, for a notification)`;
      for (;;) {
        if (!this.session.asks.has(ask.request_id)) return;
        const picked = await vscode.window.showWarningMessage(message, ALLOW_ONCE, ALLOW_ALWAYS, DENY, SHOW);
        if (picked === undefined) return; // Dismissed: the ask stays open (Answer Permission Asks… brings it back).
        if (picked === SHOW) {
          await this.showDetails(ask);
          continue;
        }
        const decision: Decision = picked === ALLOW_ONCE ? "allow_once" : picked === ALLOW_ALWAYS ? "allow_always" : "deny";
        await this.answer(ask, decision);
        return;
      }
    } finally {
      this.showing.delete(ask.request_id);
    }
  }

  private async answer(ask: PermissionRequest, decision: Decision): Promise<void> {
    const client = this.session.client;
    if (!client) {
      void vscode.window.showErrorMessage("agentd: not connected; the ask stays open");
      return;
    }
    try {
      await answerAsk(client, ask, decision, decision === "deny" ? "denied in VS Code" : "");
      this.session.asks.apply({ ...ask, resolved: true });
      this.session.emit("changed");
    } catch (e) {
      void vscode.window.showErrorMessage(`agentd: the answer was not taken: ${visible.short(describeError(e), 300)}`);
    }
  }

  /** The ask's exact input; for Write and Edit, a diff of what the call would write. */
  private async showDetails(ask: PermissionRequest): Promise<void> {
    const key = `ask-${ask.request_id.replace(/[^\w-]/g, "_")}`;
    const p = proposal(ask.tool_name, ask.input_json);
    if (p) {
      const left = this.docs.put(key, `before-${baseName(p.path)}`, p.before);
      const right = this.docs.put(key, `proposed-${baseName(p.path)}`, p.after);
      const title = `${ask.agent_short_id} asks: ${visible.short(p.path, 80)}${p.note ? ` (${visible.short(p.note, 80)})` : ""}`;
      await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
      return;
    }
    let pretty = ask.input_json;
    try {
      pretty = JSON.stringify(JSON.parse(ask.input_json), null, 2);
    } catch {
      // As sent.
    }
    const body = `${ask.agent_short_id} asks to run ${visible.line(ask.tool_name)}\n\n${visible.text(ask.summary)}\n\ninput:\n${visible.text(pretty)}\n`;
    const uri = this.docs.put(key, "ask.txt", body);
    await vscode.window.showTextDocument(uri, { preview: true });
  }
}
