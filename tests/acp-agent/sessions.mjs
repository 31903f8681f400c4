// The sessions of agent.mjs on disk: one JSON Lines file per session in the
// state directory ($TEST_AGENT_STATE/<sessionId>.jsonl), so a session
// outlives the process and `session/load` after a restart can replay it.
//
// Line 1: {"sessionId": ..., "cwd": ...}. Each further line is one entry,
// appended as it happens: {"user": [ContentBlock, ...]} for a prompt, or
// {"update": SessionUpdate} for a session/update the agent sent.
import { randomUUID } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

// Ids this agent makes: also the only names it opens in the state directory.
const ID_SHAPE = /^ta-[0-9a-f-]{36}$/;

export class SessionStore {
  constructor(dir) {
    mkdirSync(dir, { recursive: true });
    this.dir = dir;
  }

  #file(sessionId) {
    return join(this.dir, `${sessionId}.jsonl`);
  }

  /** A new session's id, its file written. */
  create(cwd) {
    const sessionId = `ta-${randomUUID()}`;
    writeFileSync(this.#file(sessionId), `${JSON.stringify({ sessionId, cwd })}\n`);
    return sessionId;
  }

  /** Whether `sessionId` names a session stored here. */
  has(sessionId) {
    return typeof sessionId === "string" && ID_SHAPE.test(sessionId) && existsSync(this.#file(sessionId));
  }

  /** The stored entries of a session, oldest first (without the header). */
  history(sessionId) {
    const lines = readFileSync(this.#file(sessionId), "utf8").split("\n").filter((l) => l !== "");
    return lines.slice(1).map((l) => JSON.parse(l));
  }

  /** Appends one entry: `{user: blocks}` or `{update}`. */
  append(sessionId, entry) {
    appendFileSync(this.#file(sessionId), `${JSON.stringify(entry)}\n`);
  }
}
