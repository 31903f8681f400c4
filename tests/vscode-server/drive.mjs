// Clicks through agentd's VS Code extension in a real VS Code (code-server)
// with Debian's chromium, headless: the Agents view lists the agent, opening
// it shows its live output, its permission ask is answered in the
// notification, its file change opens in the diff editor, and it is
// stopped. A screenshot of each step goes to OUTDIR (NN-step.png).
//
//   node drive.mjs URL OUTDIR SHORT_ID MARKER
//
// URL is code-server's workbench with the project folder open; MARKER a
// text the agent's first response holds. Prints one line per step done;
// on a failure, "drive.mjs: <step>: <what>" on stderr, a screenshot of the
// moment, and exit status 1.

import * as fs from "node:fs";
import * as path from "node:path";
import puppeteer from "puppeteer-core";

const [url, outdir, shortId, marker] = process.argv.slice(2);
if (!marker) {
  console.error("usage: node drive.mjs URL OUTDIR SHORT_ID MARKER");
  process.exit(2);
}
fs.mkdirSync(outdir, { recursive: true });
const LIMIT = 90_000;
const browserPath = fs.existsSync("/usr/lib/chromium/chromium") ? "/usr/lib/chromium/chromium" : "/usr/bin/chromium";

let shot = 0;
let step = "start";
let page;

async function screenshot(name) {
  shot += 1;
  const file = path.join(outdir, `${String(shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

async function done(name) {
  const file = await screenshot(name);
  console.log(`step ${name}: ok (${file})`);
}

/** Waits for an element matching `selector` whose text holds `text`; returns it. */
async function waitForText(selector, text, what) {
  step = what;
  const handle = await page.waitForFunction(
    (sel, t) => [...document.querySelectorAll(sel)].find((e) => (e.textContent ?? "").replace(/\u00a0/g, " ").includes(t)),
    { timeout: LIMIT, polling: 200 },
    selector,
    text,
  );
  return handle.asElement();
}

async function palette(command) {
  step = `open the command palette for "${command}"`;
  await page.keyboard.down("Control");
  await page.keyboard.down("Shift");
  await page.keyboard.press("KeyP");
  await page.keyboard.up("Shift");
  await page.keyboard.up("Control");
  await page.waitForSelector(".quick-input-widget .quick-input-box input", { visible: true, timeout: LIMIT });
  await page.keyboard.type(command);
  const row = await waitForText(".quick-input-list .monaco-list-row", command, `find "${command}" in the command palette`);
  await row.click();
}

async function pickInQuickInput(text, what) {
  const row = await waitForText(".quick-input-list .monaco-list-row", text, what);
  await row.click();
}

async function main() {
  const browser = await puppeteer.launch({
    executablePath: browserPath,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"],
    defaultViewport: { width: 1400, height: 900 },
  });
  try {
    page = await browser.newPage();
    step = "open the workbench";
    await page.goto(url, { waitUntil: "domcontentloaded", timeout: LIMIT });
    await page.waitForSelector(".monaco-workbench .activitybar", { timeout: LIMIT });
    await done("workbench");

    // 1. The Agents view lists the agent made with `agentctl run --background`.
    step = "open the agentd view";
    const icon = await page.waitForSelector('.activitybar .action-item a[aria-label*="agentd"], .activitybar .action-item[aria-label*="agentd"]', {
      timeout: LIMIT,
    });
    await icon.click();
    const row = await waitForText(".pane-body .monaco-list-row", shortId, "the Agents view lists the agent");
    await done("agents-view");

    // 2. Opening it shows its live output.
    await row.click();
    await waitForText(".monaco-editor .view-lines", marker, "the transcript shows the agent's output");
    await done("transcript");

    // 3. Its permission ask, answered in the notification.
    const toast = await waitForText(".notification-toast", `agentd ${shortId} asks to run Write`, "the ask's notification");
    const text = (await toast.evaluate((e) => e.textContent)) ?? "";
    if (!text.includes("notes.txt")) throw new Error(`the notification does not name the file: ${text}`);
    await done("ask");
    step = "click Allow once";
    const allow = await page.waitForFunction(
      () => [...document.querySelectorAll(".notification-toast .monaco-button")].find((b) => b.textContent === "Allow once"),
      { timeout: LIMIT },
    );
    await allow.asElement().click();
    await waitForText(".monaco-editor .view-lines", "[change 1]", "the transcript shows the file change");
    await done("answered");

    // 4. The change in the diff editor.
    await palette("agentd: Show File Changes");
    await pickInQuickInput(shortId, "pick the agent for its changes");
    step = "the diff editor opens";
    await page.waitForSelector(".monaco-diff-editor", { visible: true, timeout: LIMIT });
    await waitForText(".tabs-container .tab", "change 1", "the diff editor's tab names the change");
    await waitForText(".monaco-diff-editor .modified .view-lines", "written by the agent", "the diff shows the new content");
    await done("diff");

    // 5. Stop.
    await palette("agentd: Stop");
    await pickInQuickInput(shortId, "pick the agent to stop");
    step = "the view shows the agent cancelled";
    await page.waitForFunction(
      (id) =>
        [...document.querySelectorAll(".pane-body .monaco-list-row")].some((r) => {
          const t = r.textContent ?? "";
          return t.includes(id) && t.includes("cancelled");
        }),
      { timeout: LIMIT, polling: 200 },
      shortId,
    );
    await done("stopped");
  } catch (e) {
    try {
      await screenshot("failure");
    } catch {
      // No page to take.
    }
    throw e;
  } finally {
    await browser.close();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`drive.mjs: ${step}: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
