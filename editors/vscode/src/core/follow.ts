// Following one agent live: an attachment from the transcript's start
// feeding a TranscriptView. After the daemon goes away it is resumed from
// the next entry the view lacks, so each entry is shown once.

import { EventEmitter } from "node:events";
import { Attachment } from "./attach";
import type { AgentdClient } from "./client";
import { TranscriptView } from "./transcript";
import type { AttachEvent } from "./types";

export class Follower extends EventEmitter<{ changed: []; ended: [Error | undefined] }> {
  readonly view = new TranscriptView();
  private attachment: Attachment | undefined;

  constructor(readonly agentId: string) {
    super();
  }

  /** The next sequence number to ask for. */
  cursor(): string {
    const last = this.view.entries[this.view.entries.length - 1];
    return last ? String(Number(last.seq) + 1) : "0";
  }

  start(client: AgentdClient): void {
    this.attachment?.cancel();
    this.view.tools.clear();
    this.view.streaming = "";
    this.attachment = new Attachment(
      client,
      this.agentId,
      this.cursor(),
      (e) => this.onEvent(e),
      (err) => this.emit("ended", err),
    );
  }

  private onEvent(e: AttachEvent): void {
    const v = this.view;
    switch (e.event) {
      case "agent":
        v.agent = e.agent;
        break;
      case "entry":
        if (e.entry) v.addEntry(e.entry);
        break;
      case "delta":
        if (e.delta?.text !== undefined) v.streaming += e.delta.text;
        break;
      case "tool":
        if (e.tool) {
          if (e.tool.phase === "PHASE_FINISHED") v.tools.delete(e.tool.tool_use_id);
          else v.tools.set(e.tool.tool_use_id, e.tool);
        }
        break;
      case "status":
        v.status = e.status;
        break;
      case "plan":
        if (v.agent && e.plan) v.agent = { ...v.agent, plan: e.plan.items };
        break;
      case "retry":
        v.streaming = "";
        break;
      case "notice":
        if (e.notice?.is_error) v.notices.push(e.notice.text);
        break;
      default:
        return;
    }
    this.emit("changed");
  }

  stop(): void {
    this.attachment?.detach();
    this.attachment = undefined;
  }
}
