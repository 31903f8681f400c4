// The line a permission ask's notification shows: the exact command (or
// file) the call would run on, made visible. A VS Code notification renders
// `[text](link)` as a link a click follows, so such text, or text too long
// for a notification, is marked not inline: it is shown in a document.

import type { PermissionRequest } from "./types";
import * as visible from "./visible";

const MAX_INLINE = 300;

/** The line the notification shows of an ask. */
export function askLine(ask: PermissionRequest): { text: string; inline: boolean } {
  let what = ask.summary;
  try {
    const input = JSON.parse(ask.input_json) as Record<string, unknown>;
    if (ask.tool_name === "Bash" && typeof input.command === "string") what = input.command;
    else if (typeof input.file_path === "string") what = input.file_path;
  } catch {
    // The summary then.
  }
  const shown = visible.line(what);
  const inline = shown.length <= MAX_INLINE && !/\[[^\]]*\]\(/.test(shown);
  return { text: shown, inline };
}

