// Untrusted text made visible: the same rules as agentd's own sanitiser
// (shared/src/visible.rs, docs/security.md). Model output, tool output, file
// names and agent-chosen descriptions are written by whoever controls the
// model or the repository; a control character, a bidi override or an
// invisible format character in them is shown as a stand-in, never
// interpreted and never dropped.

/** Characters a terminal would act on, or that a reader cannot see. */
export function needsStandIn(u: number): boolean {
  if (u <= 0x1f || u === 0x7f) return true;
  if (u >= 0x20 && u <= 0x7e) return false;
  if ((u >= 0x80 && u <= 0x9f) || u === 0xad) return true;
  if (u === 0x061c || u === 0x180e) return true;
  if ((u >= 0x200b && u <= 0x200f) || (u >= 0x2028 && u <= 0x202e)) return true;
  if (u >= 0x2060 && u <= 0x206f) return true;
  if (u === 0xfeff || (u >= 0xfff9 && u <= 0xfffb)) return true;
  if (u >= 0xe0000 && u <= 0xe007f) return true;
  return false;
}

function standIn(u: number): string {
  if (u <= 0x1f) return String.fromCodePoint(0x2400 + u);
  if (u === 0x7f) return "\u2421";
  return `<U+${u.toString(16).toUpperCase().padStart(4, "0")}>`;
}

function visible(s: string, keep: (u: number) => boolean): string {
  let out = "";
  for (const ch of s) {
    const u = ch.codePointAt(0) ?? 0;
    out += keep(u) ? ch : standIn(u);
  }
  return out;
}

/**
 * Multi-line text: `\n` and `\t` stay; a CR that ends a line (`\r\n`) is a
 * line end; every other control or invisible character becomes visible.
 */
export function text(s: string): string {
  return visible(s.replace(/\r\n/g, "\n"), (u) => u === 0x0a || u === 0x09 || !needsStandIn(u));
}

/** One-line places (a tree label, a notification): `\n` shows as `␊`, `\t` as `␉`. */
export function line(s: string): string {
  return visible(s, (u) => !needsStandIn(u));
}

/** At most `max` characters of a line, with `…` when cut. */
export function short(s: string, max: number): string {
  const chars = Array.from(line(s));
  return chars.length <= max ? chars.join("") : chars.slice(0, max - 1).join("") + "…";
}
