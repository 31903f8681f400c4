// The agents the view shows, kept from a ListAgents snapshot and the Watch
// stream: one owner of that state, no `vscode` import (tested under Node).
//
// Watch is subscribed before the snapshot is read, so nothing falls between
// them; an event older than the snapshot's record of its agent (its `at`
// before the record's `updated_at`) is not applied over it.

import { type Agent, type AgentUsage, type PlanItem, type StatusChange, seconds, type WatchEvent } from "./types";

export const LIVE = new Set(["AGENT_STATUS_PENDING", "AGENT_STATUS_RUNNING", "AGENT_STATUS_WAITING"]);

/** A status in words ("running"); an unknown value is shown as such, never as another status. */
export function statusWord(status: string): string {
  const m = /^AGENT_STATUS_([A-Z_]+)$/.exec(status);
  if (m === null || m[1] === "UNSPECIFIED") return `unknown (${status})`;
  return m[1].toLowerCase();
}

export interface PlanProgress {
  done: number;
  total: number;
  /** The item in progress, as its active form. */
  active: string | undefined;
}

export function planProgress(plan: PlanItem[]): PlanProgress | undefined {
  if (plan.length === 0) return undefined;
  const done = plan.filter((p) => p.status === "PLAN_STATUS_COMPLETED").length;
  const active = plan.find((p) => p.status === "PLAN_STATUS_IN_PROGRESS");
  return { done, total: plan.length, active: active?.active_form || active?.content };
}

export type Scope = "workspace" | "all";

function inside(dir: string, root: string): boolean {
  const r = root.endsWith("/") ? root : root + "/";
  return dir === root || dir.startsWith(r);
}

export class AgentTree {
  private readonly agents = new Map<string, Agent>();
  private readonly costs = new Map<string, number>();

  /** Replaces everything with a snapshot (ListAgents), then applies the events that came meanwhile. */
  reset(agents: Agent[], pending: WatchEvent[] = []): void {
    this.agents.clear();
    for (const a of agents) this.agents.set(a.id, a);
    for (const e of pending) this.apply(e);
  }

  /** Applies one Watch event; true when the tree changed. */
  apply(e: WatchEvent): boolean {
    if (e.event === "created" && e.created) {
      const known = this.agents.get(e.created.id);
      if (known && seconds(known.updated_at) > seconds(e.created.updated_at)) return false;
      this.agents.set(e.created.id, e.created);
      return true;
    }
    const agent = this.agents.get(e.agent_id);
    if (agent === undefined) return false;
    if (seconds(e.at) < seconds(agent.updated_at)) return false;
    if (e.event === "status" && e.status) {
      this.agents.set(agent.id, withStatus(agent, e.status, e.at));
      return true;
    }
    if (e.event === "plan" && e.plan) {
      this.agents.set(agent.id, { ...agent, plan: e.plan.items });
      return true;
    }
    return false;
  }

  /** An agent as it is after a call that returned it (GetAgent, PauseAgent, …). */
  update(agent: Agent): void {
    this.agents.set(agent.id, agent);
  }

  remove(id: string): void {
    this.agents.delete(id);
    this.costs.delete(id);
  }

  setCosts(usage: AgentUsage[]): void {
    this.costs.clear();
    for (const u of usage) if (u.cost) this.costs.set(u.id, u.cost.usd);
  }

  cost(id: string): number | undefined {
    return this.costs.get(id);
  }

  get(id: string): Agent | undefined {
    return this.agents.get(id);
  }

  /** An agent by id, short id or name. */
  find(key: string): Agent | undefined {
    const exact = this.agents.get(key);
    if (exact) return exact;
    for (const a of this.agents.values()) if (a.short_id === key || (a.name !== "" && a.name === key)) return a;
    return undefined;
  }

  all(): Agent[] {
    return [...this.agents.values()];
  }

  /**
   * The agents at the top of the view: those without a parent (or whose
   * parent is not known), newest first; with scope "workspace", only those
   * working in (or with a worktree of a checkout in) one of `folders`.
   */
  roots(scope: Scope, folders: string[]): Agent[] {
    return this.all()
      .filter((a) => a.parent_id === "" || !this.agents.has(a.parent_id))
      .filter((a) => scope === "all" || folders.some((f) => inside(a.cwd, f) || (a.worktree !== null && inside(a.worktree.checkout, f))))
      .sort(byNewest);
  }

  /** Children and forks of `id`, oldest first (the order they were started in). */
  children(id: string): Agent[] {
    return this.all()
      .filter((a) => a.parent_id === id)
      .sort((x, y) => -byNewest(x, y));
  }

  /** Agents doing work now (pending, running or waiting). */
  running(): number {
    return this.all().filter((a) => LIVE.has(a.status)).length;
  }
}

function byNewest(x: Agent, y: Agent): number {
  return seconds(y.created_at) - seconds(x.created_at);
}

function withStatus(a: Agent, s: StatusChange, at: Agent["updated_at"]): Agent {
  return {
    ...a,
    status: s.status,
    result: s.result,
    error: s.error,
    turns: s.turns,
    waiting_for: s.waiting_for,
    updated_at: at ?? a.updated_at,
  };
}
