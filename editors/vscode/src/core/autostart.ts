// Starting agentd when none answers, through agentctl: `agentctl status`
// autostarts a daemon on the socket it is given (DESIGN §12) and waits
// for it to be ready, so the extension does not start `agentd` itself.
//
// agentctl is looked up on PATH directories that are absolute only (an
// empty or relative PATH entry would mean the workspace a repository put
// there), or taken from the machine-scoped `agentd.agentctlPath` setting,
// which a workspace's settings cannot set; it runs in the home directory.

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

export class NotInstalled extends Error {
  constructor(detail: string) {
    super(
      `agentctl was not found (${detail}). Install agentd (as its README says: cargo build --release --workspace, then put target/release on PATH), ` +
        "or set agentd.agentctlPath to the agentctl binary.",
    );
    this.name = "NotInstalled";
  }
}

function executable(p: string): boolean {
  try {
    const s = fs.statSync(p);
    return s.isFile() && (s.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** The agentctl to run: the setting (absolute), else the first on PATH's absolute entries. */
export function findAgentctl(setting: string | undefined, pathVar: string | undefined): string {
  if (setting !== undefined && setting !== "") {
    if (!path.isAbsolute(setting)) throw new NotInstalled(`agentd.agentctlPath must be absolute, not ${setting}`);
    if (!executable(setting)) throw new NotInstalled(`${setting} is not an executable file`);
    return setting;
  }
  for (const dir of (pathVar ?? "").split(":")) {
    if (!path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, "agentctl");
    if (executable(candidate)) return candidate;
  }
  throw new NotInstalled("not on PATH");
}

/** Runs `agentctl status --socket <socket> --json`, which starts agentd if none answers. */
export function autostart(agentctl: string, socket: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      agentctl,
      ["status", "--socket", socket, "--json"],
      { cwd: os.homedir(), env, timeout: 60_000, maxBuffer: 1 << 20 },
      (err, _stdout, stderr) => {
        if (err) {
          const said = String(stderr).trim().split("\n").slice(-3).join(" ");
          reject(new Error(`agentctl could not start agentd: ${said || err.message}`));
        } else resolve();
      },
    );
  });
}
