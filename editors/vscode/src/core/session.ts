// The connection to agentd and the state kept from it: connects (checking
// the socket first, autostarting through agentctl when allowed), subscribes
// to Watch, reads the snapshot, and on losing the daemon keeps the tree as
// it was and connects again — at once when the socket reappears (the
// directory is watched), else with a backoff of up to 5 s.

import { EventEmitter } from "node:events";
import * as fs from "node:fs";
import * as path from "node:path";
import { openAsks } from "./attach";
import { autostart, findAgentctl, NotInstalled } from "./autostart";
import { type AgentdClient, describeError, openClient } from "./client";
import { checkSocketPath, UnsafeSocket } from "./ownership";
import { AgentTree } from "./tree";
import { OpenAsks } from "./asks";
import type { Agent, AgentUsage, PermissionRequest, WatchEvent } from "./types";

export type ConnectionState =
  | { kind: "connecting" }
  | { kind: "connected" }
  | { kind: "disconnected"; reason: string }
  | { kind: "refused"; reason: string }
  | { kind: "not_installed"; reason: string };

export interface SessionOptions {
  protoFile: string;
  socket: string;
  uid: number;
  /** Start agentd through agentctl when none answers. */
  autostart: boolean;
  /** The agentd.agentctlPath setting. */
  agentctlPath: string | undefined;
  env: NodeJS.ProcessEnv;
}

export interface SessionEvents {
  state: [ConnectionState];
  changed: [];
  /** A permission ask opened (new to this session). */
  ask: [PermissionRequest];
  notification: [WatchEvent];
}

const MAX_BACKOFF_MS = 5_000;

export class Session extends EventEmitter<SessionEvents> {
  readonly tree = new AgentTree();
  readonly asks = new OpenAsks();
  state: ConnectionState = { kind: "connecting" };
  client: AgentdClient | undefined;
  private stopped = false;
  private backoff = 250;
  private timer: NodeJS.Timeout | undefined;
  private dirWatch: fs.FSWatcher | undefined;
  private costTimer: NodeJS.Timeout | undefined;
  private generation = 0;

  constructor(readonly opts: SessionOptions) {
    super();
  }

  start(): void {
    void this.connect(this.opts.autostart);
  }

  /** Connects again now (a person asked to): autostarts if allowed. */
  reconnect(): void {
    this.clearTimers();
    void this.connect(this.opts.autostart);
  }

  stop(): void {
    this.stopped = true;
    this.clearTimers();
    this.client?.close();
    this.client = undefined;
  }

  private clearTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.dirWatch?.close();
    this.dirWatch = undefined;
  }

  private setState(s: ConnectionState): void {
    this.state = s;
    this.emit("state", s);
  }

  private async connect(mayStart: boolean): Promise<void> {
    if (this.stopped) return;
    this.clearTimers();
    const gen = ++this.generation;
    this.client?.close();
    this.client = undefined;
    this.setState({ kind: "connecting" });
    const { socket, uid } = this.opts;
    try {
      let checked = checkSocketPath(socket, uid);
      if (checked === undefined && mayStart) {
        const agentctl = findAgentctl(this.opts.agentctlPath, this.opts.env.PATH);
        await autostart(agentctl, socket, this.opts.env);
        checked = checkSocketPath(socket, uid);
      }
      if (checked === undefined) throw new Error(`no agentd is listening on ${socket}`);
      const client = openClient(this.opts.protoFile, socket, uid, checked);
      await this.subscribe(client, gen);
    } catch (e) {
      if (gen !== this.generation) return;
      if (e instanceof NotInstalled) this.setState({ kind: "not_installed", reason: e.message });
      else if (e instanceof UnsafeSocket) this.setState({ kind: "refused", reason: e.message });
      else this.setState({ kind: "disconnected", reason: describeError(e) });
      this.retryLater();
    }
  }

  /** Watch first, then the snapshot; events meanwhile are applied after it. */
  private subscribe(client: AgentdClient, gen: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const pending: WatchEvent[] = [];
      let live = false;
      const watch = client.watch();
      watch.on("data", (raw: unknown) => {
        const e = raw as WatchEvent;
        if (live) this.onWatch(e);
        else pending.push(e);
      });
      const lost = (err?: Error) => {
        if (gen !== this.generation) return;
        const reason = err ? describeError(err) : "the daemon closed the stream";
        if (!live) {
          reject(err ?? new Error(reason));
          return;
        }
        const refusal = client.credentials.refusal;
        this.client = undefined;
        client.close();
        this.setState(refusal ? { kind: "refused", reason: refusal.message } : { kind: "disconnected", reason });
        this.retryLater();
      };
      watch.on("error", lost);
      watch.on("end", () => lost());
      client
        .call<{ agents: Agent[] }>("ListAgents", { all: false, parent_id: "" })
        .then(async (res) => {
          if (gen !== this.generation) return;
          this.tree.reset(res.agents, pending);
          this.asks.clear();
          live = true;
          this.client = client;
          this.backoff = 250;
          this.setState({ kind: "connected" });
          this.emit("changed");
          await this.catchUpAsks(client);
          this.refreshCosts();
          resolve();
        })
        .catch((err) => {
          watch.cancel();
          reject(client.credentials.refusal ?? err);
        });
    });
  }

  /** The asks open before Watch started: each waiting agent's attachment lists them. */
  private async catchUpAsks(client: AgentdClient): Promise<void> {
    const waiting = this.tree.all().filter((a) => a.status === "AGENT_STATUS_WAITING");
    for (const a of waiting) {
      try {
        for (const ask of await openAsks(client, a.id)) {
          if (this.asks.apply(ask)) this.emit("ask", ask);
        }
      } catch {
        // The agent ended meanwhile, or the daemon went away (Watch says so).
      }
    }
    this.emit("changed");
  }

  private onWatch(e: WatchEvent): void {
    if (e.event === "permission_request" && e.permission_request) {
      if (this.asks.apply(e.permission_request)) this.emit("ask", e.permission_request);
      this.emit("changed");
      return;
    }
    if (e.event === "notification") this.emit("notification", e);
    if (e.event === "status" && e.status && e.status.status !== "AGENT_STATUS_WAITING") {
      this.asks.dropAgent(e.agent_id);
    }
    if (this.tree.apply(e)) {
      if (e.event === "status") this.scheduleCosts();
      this.emit("changed");
    }
  }

  /** Costs come from GetUsage; read again shortly after statuses change (a turn ended). */
  private scheduleCosts(): void {
    if (this.costTimer) return;
    this.costTimer = setTimeout(() => {
      this.costTimer = undefined;
      this.refreshCosts();
    }, 500);
  }

  private refreshCosts(): void {
    const client = this.client;
    if (!client) return;
    client
      .call<{ agents: AgentUsage[] }>("GetUsage", { id: "", family: false })
      .then((r) => {
        this.tree.setCosts(r.agents);
        this.emit("changed");
      })
      .catch(() => undefined);
  }

  private retryLater(): void {
    if (this.stopped) return;
    this.clearTimers();
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
    this.timer = setTimeout(() => void this.connect(false), delay);
    const dir = path.dirname(this.opts.socket);
    try {
      this.dirWatch = fs.watch(dir, (_kind, name) => {
        if (name === path.basename(this.opts.socket) && this.state.kind !== "connected") {
          this.clearTimers();
          void this.connect(false);
        }
      });
      this.dirWatch.on("error", () => undefined);
    } catch {
      // No directory yet: the timer tries again.
    }
  }
}
