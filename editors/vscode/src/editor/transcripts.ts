// Transcripts as read-only documents (`agentd-transcript:/<short id>.txt?<id>`),
// live from Attach: each open document has a Follower; a change is drawn at
// most every 100 ms, and an editor showing the document's end keeps
// following the end. After a reconnection the followers resume.

import * as vscode from "vscode";
import { Follower } from "../core/follow";
import type { Session } from "../core/session";

export const SCHEME = "agentd-transcript";

export function transcriptUri(id: string, shortId: string): vscode.Uri {
  return vscode.Uri.from({ scheme: SCHEME, path: `/agent ${shortId}.txt`, query: id });
}

export class Transcripts implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly followers = new Map<string, Follower>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly pending = new Set<string>();
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly session: Session) {
    session.on("state", (s) => {
      if (s.kind !== "connected" || !session.client) return;
      for (const f of this.followers.values()) f.start(session.client);
    });
    this.subscriptions.push(
      vscode.workspace.onDidCloseTextDocument((doc) => {
        if (doc.uri.scheme !== SCHEME) return;
        const f = this.followers.get(doc.uri.query);
        f?.stop();
        this.followers.delete(doc.uri.query);
      }),
    );
  }

  /** The follower of an agent whose transcript is open, if it is. */
  follower(id: string): Follower | undefined {
    return this.followers.get(id);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const id = uri.query;
    let f = this.followers.get(id);
    if (!f) {
      f = new Follower(id);
      this.followers.set(id, f);
      f.on("changed", () => this.redraw(uri));
      f.on("ended", (err) => {
        if (err && this.session.state.kind === "connected") {
          f?.view.notices.push(`the attachment ended: ${err.message}`);
          this.redraw(uri);
        }
      });
      if (this.session.client) f.start(this.session.client);
    }
    return f.view.render();
  }

  private redraw(uri: vscode.Uri): void {
    const key = uri.toString();
    if (this.pending.has(key)) return;
    this.pending.add(key);
    setTimeout(() => {
      this.pending.delete(key);
      const editors = vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === key);
      const atEnd = editors.filter((e) => {
        const last = e.visibleRanges[e.visibleRanges.length - 1];
        return last === undefined || last.end.line >= e.document.lineCount - 2;
      });
      this.changed.fire(uri);
      // Follow the end in the editors that were showing it.
      setTimeout(() => {
        for (const e of atEnd) {
          const end = new vscode.Position(e.document.lineCount - 1, 0);
          e.revealRange(new vscode.Range(end, end), vscode.TextEditorRevealType.Default);
        }
      }, 50);
    }, 100);
  }

  dispose(): void {
    for (const f of this.followers.values()) f.stop();
    this.followers.clear();
    for (const s of this.subscriptions) s.dispose();
  }
}
