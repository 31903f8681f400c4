// Where agentd listens: the same order agentctl resolves it in
// (shared/src/paths.rs), so the extension finds the daemon agentctl would
// start. The setting `agentd.socket` plays the part of agentctl's --socket.

import * as path from "node:path";

export interface Environment {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly uid: number;
}

function nonEmpty(v: string | undefined): string | undefined {
  return v !== undefined && v !== "" ? v : undefined;
}

/** `setting`, else `$AGENTD_SOCKET`, else `$XDG_RUNTIME_DIR/agentd/agentd.sock`, else `/tmp/agentd-<uid>/agentd.sock`. */
export function socketPath(setting: string | undefined, e: Environment): string {
  const chosen = nonEmpty(setting) ?? nonEmpty(e.env.AGENTD_SOCKET);
  if (chosen !== undefined) return path.resolve(chosen);
  const runtime = nonEmpty(e.env.XDG_RUNTIME_DIR);
  if (runtime !== undefined) return path.join(runtime, "agentd", "agentd.sock");
  return path.join("/tmp", `agentd-${e.uid}`, "agentd.sock");
}

export function currentEnvironment(): Environment {
  return { env: process.env, uid: process.getuid ? process.getuid() : 0 };
}
