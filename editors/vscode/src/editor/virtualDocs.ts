// Read-only documents of text the extension holds in memory: the two
// sides of a file change, a worktree's diff, an ask's exact input. Served
// under the `agentd-text` scheme, so VS Code's own editors (the diff editor
// among them) show them and nothing can be saved back.

import * as vscode from "vscode";

export const SCHEME = "agentd-text";

export class VirtualDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  /** A document at `/<key>/<name>` holding `text` (replacing what was there). */
  put(key: string, name: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${key}/${name}` });
    this.texts.set(uri.toString(), text);
    this.changed.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "(this document is no longer held: open it again from the Agents view)\n";
  }
}

/** A file name safe to put in a URI path segment: the last component, made visible, without slashes. */
export function baseName(p: string): string {
  const last = p.split("/").filter((s) => s !== "").pop() ?? "file";
  return last.replace(/[^\w.\-]/g, "_").slice(0, 80) || "file";
}
