// Drives Debian's headless Chromium with playwright-core through the test
// pages whose URLs it is given, and prints one JSON line: for each page,
// what it left in window.result (or window.failure), its console messages
// and its page errors. webtest_test.go (go test -tags webtest) starts the
// broker and the pages' server and runs it.
//
// Usage: node drive.mjs URL...   (CHROMIUM overrides /usr/bin/chromium)

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const urls = process.argv.slice(2);

const profile = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-ws-chromium-"));
let browser;
const out = [];
try {
  browser = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  for (const url of urls) {
    const page = await browser.newPage();
    const entry = { url, console: [], pageErrors: [] };
    page.on("console", (m) => entry.console.push(m.type() + ": " + m.text()));
    page.on("pageerror", (e) => entry.pageErrors.push(e.message));
    await page.goto(url);
    await page.waitForFunction(() => window.result !== undefined || window.failure !== undefined, null, { timeout: 60000 });
    Object.assign(entry, await page.evaluate(() => ({ result: window.result, failure: window.failure })));
    // The page's own log, for a failure's diagnosis.
    entry.log = await page.textContent("#log");
    await page.close();
    out.push(entry);
  }
} finally {
  if (browser) await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out) + "\n");
