// The permission asks open now, across every agent: from Watch as they open
// and close, and from each waiting agent's attachment at (re)connection
// (Watch does not replay the asks opened before it started).

import type { PermissionRequest } from "./types";

export class OpenAsks {
  private readonly open = new Map<string, PermissionRequest>();

  /** Records an ask opening or closing; true when it is new. */
  apply(ask: PermissionRequest): boolean {
    if (ask.resolved) {
      this.open.delete(ask.request_id);
      return false;
    }
    const isNew = !this.open.has(ask.request_id);
    this.open.set(ask.request_id, ask);
    return isNew;
  }

  /** Forgets the asks of an agent that stopped waiting (its asks closed with its run). */
  dropAgent(agentId: string): void {
    for (const [id, ask] of this.open) if (ask.agent_id === agentId) this.open.delete(id);
  }

  clear(): void {
    this.open.clear();
  }

  has(requestId: string): boolean {
    return this.open.has(requestId);
  }

  all(): PermissionRequest[] {
    return [...this.open.values()];
  }

  forAgent(agentId: string): PermissionRequest[] {
    return this.all().filter((a) => a.agent_id === agentId);
  }

  /** Agents with an open ask. */
  waitingAgents(): number {
    return new Set(this.all().map((a) => a.agent_id)).size;
  }
}
