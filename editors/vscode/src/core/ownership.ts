// Before a byte goes to the socket, the extension makes sure it talks to its
// own user's daemon, with the checks agentctl makes (shared/src/client.rs,
// docs/security.md): the socket's directory belongs to this user (or root)
// and is not writable by others (a world-writable one only if it is root's
// and sticky, like /tmp); the socket is a socket, this user's, and not
// writable by others.
//
// agentctl then reads the listening process's uid from the connected socket
// (SO_PEERCRED). Node offers no way to read it, so the extension closes the
// same gap another way: the path is checked again once connected, and must
// still be the very socket file checked before (same device, inode and
// inode change time).
// connect(2) reached the socket bound to that inode, and that file was made
// by the process that bound it, which is this user's: its owner is this
// user. Swapping the file in between needs write access to a directory only
// this user (or root) can write.

import * as fs from "node:fs";
import * as path from "node:path";

/** What is at the socket path must not be used. */
export class UnsafeSocket extends Error {
  constructor(
    readonly socket: string,
    readonly reason: string,
  ) {
    super(
      `refusing to talk to ${socket}: ${reason}. Someone else may be listening there; ` +
        "remove it if it is stale, or use another socket (the agentd.socket setting, AGENTD_SOCKET or XDG_RUNTIME_DIR)",
    );
    this.name = "UnsafeSocket";
  }
}

/** The socket file that was checked. */
export interface SocketIdentity {
  readonly dev: bigint;
  readonly ino: bigint;
  /** The inode's change time, in ns: a file made again in a freed inode differs. */
  readonly ctimeNs: bigint;
}

function mode(m: number): string {
  return (m & 0o7777).toString(8);
}

function notFound(e: unknown): boolean {
  return (e as NodeJS.ErrnoException).code === "ENOENT";
}

/**
 * Checks the socket's directory and the socket file. `undefined`: there is
 * no socket yet (nothing listens; autostart may start a daemon).
 */
export function checkSocketPath(socket: string, me: number): SocketIdentity | undefined {
  const dir = path.dirname(socket);
  let d: fs.Stats;
  try {
    d = fs.statSync(dir);
  } catch (e) {
    if (notFound(e)) return undefined;
    throw new UnsafeSocket(socket, `cannot check ${dir}: ${(e as Error).message}`);
  }
  if (d.uid !== me && d.uid !== 0) {
    throw new UnsafeSocket(socket, `its directory ${dir} belongs to uid ${d.uid}, not to you (uid ${me})`);
  }
  const writableByOthers = (d.mode & 0o022) !== 0;
  const sharedSticky = d.uid === 0 && (d.mode & 0o1000) !== 0;
  if (writableByOthers && !sharedSticky) {
    throw new UnsafeSocket(socket, `its directory ${dir} is writable by other users (mode ${mode(d.mode)})`);
  }
  let s: fs.BigIntStats;
  try {
    s = fs.lstatSync(socket, { bigint: true });
  } catch (e) {
    if (notFound(e)) return undefined;
    throw new UnsafeSocket(socket, `cannot check it: ${(e as Error).message}`);
  }
  if (!s.isSocket()) throw new UnsafeSocket(socket, "it is not a socket");
  if (s.uid !== BigInt(me)) {
    throw new UnsafeSocket(socket, `the socket belongs to uid ${s.uid}, not to you (uid ${me})`);
  }
  if ((s.mode & 0o022n) !== 0n) {
    throw new UnsafeSocket(socket, `the socket is writable by other users (mode ${(s.mode & 0o777n).toString(8)})`);
  }
  return { dev: s.dev, ino: s.ino, ctimeNs: s.ctimeNs };
}

/** After connecting: the path must still be the socket file checked before. */
export function recheckSocketPath(socket: string, me: number, before: SocketIdentity): void {
  const now = checkSocketPath(socket, me);
  if (now === undefined) throw new UnsafeSocket(socket, "the socket went away while connecting");
  if (now.dev !== before.dev || now.ino !== before.ino || now.ctimeNs !== before.ctimeNs) {
    throw new UnsafeSocket(socket, "the socket was replaced while connecting");
  }
}
