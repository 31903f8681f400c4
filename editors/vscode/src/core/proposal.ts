// What a Write or Edit call that asks permission would make of its file:
// the file as it is (read safely: a regular file only, never a FIFO or a
// device, at most 1 MiB) and as the call would leave it, for a diff shown
// before the person answers.

import * as fs from "node:fs";

const MAX = 1 << 20;

export interface Proposal {
  path: string;
  before: string;
  after: string;
  /** Why the sides are not the whole story (file too large, not text, edit would not apply). */
  note: string | undefined;
}

/** The file's text now; `undefined` when there is none. */
export function readCurrent(path: string): { text: string; note?: string } | undefined {
  let fd: number;
  try {
    fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return { text: "", note: `cannot read ${path}: ${(e as Error).message}` };
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return { text: "", note: `${path} is not a regular file` };
    if (st.size > MAX) return { text: "", note: `${path} is larger than 1 MiB: not shown` };
    const buf = Buffer.alloc(st.size);
    const n = fs.readSync(fd, buf, 0, st.size, 0);
    return { text: buf.subarray(0, n).toString("utf8") };
  } finally {
    fs.closeSync(fd);
  }
}

/** A Write or Edit ask's change; `undefined` for other tools. */
export function proposal(tool: string, inputJson: string): Proposal | undefined {
  if (tool !== "Write" && tool !== "Edit") return undefined;
  let input: Record<string, unknown>;
  try {
    input = JSON.parse(inputJson) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const path = typeof input.file_path === "string" ? input.file_path : undefined;
  if (path === undefined) return undefined;
  const now = readCurrent(path);
  const before = now?.text ?? "";
  let note = now?.note;
  let after: string;
  if (tool === "Write") {
    after = typeof input.content === "string" ? input.content : "";
  } else {
    const oldS = typeof input.old_string === "string" ? input.old_string : "";
    const newS = typeof input.new_string === "string" ? input.new_string : "";
    if (oldS === "" || !before.includes(oldS)) {
      after = before;
      note = note ?? "the text to replace is not in the file: the edit would fail";
    } else {
      after = input.replace_all === true ? before.split(oldS).join(newS) : before.replace(oldS, () => newS);
    }
  }
  return { path, before, after, note };
}
