// One Attach stream (AgentService.Attach): events of an agent from a
// transcript position on, and the way to answer its permission asks and
// its descendants'.

import type { ClientDuplexStream } from "@grpc/grpc-js";
import type { AgentdClient } from "./client";
import type { AttachEvent, PermissionRequest } from "./types";

/** Past any transcript's end: the daemon sends no history, only what follows. */
export const NO_HISTORY = "18446744073709551615";

export type Decision = "allow_once" | "allow_always" | "deny";

const DECISIONS: Record<Decision, string> = {
  allow_once: "DECISION_ALLOW_ONCE",
  allow_always: "DECISION_ALLOW_ALWAYS",
  deny: "DECISION_DENY",
};

export class Attachment {
  private readonly stream: ClientDuplexStream<unknown, unknown>;
  private ended = false;

  constructor(
    client: AgentdClient,
    readonly agentId: string,
    fromSeq: string,
    onEvent: (e: AttachEvent) => void,
    onEnd: (err: Error | undefined) => void,
  ) {
    this.stream = client.attach();
    this.stream.on("data", (e: unknown) => onEvent(e as AttachEvent));
    this.stream.on("error", (err: Error) => this.finish(onEnd, err));
    this.stream.on("end", () => this.finish(onEnd, undefined));
    this.stream.write({ start: { id: agentId, from_seq: fromSeq, as_seen: false } });
  }

  private finish(onEnd: (err: Error | undefined) => void, err: Error | undefined): void {
    if (this.ended) return;
    this.ended = true;
    onEnd(err);
  }

  answer(requestId: string, decision: Decision, reason = ""): void {
    this.stream.write({ permission_answer: { request_id: requestId, decision: DECISIONS[decision], reason, remember: false } });
  }

  message(text: string): void {
    this.stream.write({ message: text });
  }

  /** Leaves; the agent is unaffected. */
  detach(): void {
    if (this.ended) return;
    this.stream.write({ detach: {} });
    this.stream.end();
  }

  cancel(): void {
    this.ended = true;
    this.stream.cancel();
  }
}

/** The open asks of an agent and its descendants (sent before the first status of an attachment). */
export function openAsks(client: AgentdClient, agentId: string): Promise<PermissionRequest[]> {
  return new Promise((resolve, reject) => {
    const asks: PermissionRequest[] = [];
    let done = false;
    const att = new Attachment(
      client,
      agentId,
      NO_HISTORY,
      (e) => {
        if (done) return;
        if (e.event === "permission_request" && e.permission_request && !e.permission_request.resolved) {
          asks.push(e.permission_request);
        } else if (e.event === "status") {
          done = true;
          att.detach();
          resolve(asks);
        }
      },
      (err) => {
        if (!done) {
          done = true;
          if (err) reject(err);
          else resolve(asks);
        }
      },
    );
  });
}

/**
 * Answers one ask through an attachment to the agent that asks, and
 * resolves once the daemon says the ask is closed; rejects with the
 * daemon's notice when it refuses the answer.
 */
export function answerAsk(client: AgentdClient, ask: PermissionRequest, decision: Decision, reason = ""): Promise<void> {
  return new Promise((resolve, reject) => {
    let done = false;
    let sent = false;
    const settle = (err?: Error) => {
      if (done) return;
      done = true;
      att.detach();
      if (err) reject(err);
      else resolve();
    };
    const att = new Attachment(
      client,
      ask.agent_id,
      NO_HISTORY,
      (e) => {
        if (e.event === "permission_request" && e.permission_request?.request_id === ask.request_id && e.permission_request.resolved) {
          settle();
        } else if (e.event === "status" && !sent) {
          // The open asks came before this status: the ask is still open
          // unless it was answered meanwhile (then it was not listed).
          sent = true;
          att.answer(ask.request_id, decision, reason);
        } else if (e.event === "notice" && e.notice?.is_error && sent) {
          settle(new Error(e.notice.text));
        }
      },
      (err) => settle(err ?? new Error("the attachment ended before the answer was taken")),
    );
  });
}
