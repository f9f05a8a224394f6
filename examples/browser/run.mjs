// Runs the browser quick start (index.html: @stomp/stompjs over WebSocket,
// a message selector) in headless Chromium, driven by playwright-core.
//
// It serves this folder's index.html and stompjs's UMD bundle (from
// examples/node's node_modules: `cd examples/node && npm ci` first) on a
// free loopback port, opens http://127.0.0.1:PORT/?port=WS_PORT, waits at
// most 15 s for the page's result line, prints what the page shows and
// exits 0 on PASS, 1 otherwise. The broker's WebSocket port is
// SLUICE_WEBSOCKET_PORT (default 15674); the page's origin is another port
// of 127.0.0.1, which examples/config/quickstart.toml lets in
// (websocket_allowed_origins).
//
//   node examples/browser/run.mjs               # run it, as `make examples` does
//   node examples/browser/run.mjs --serve [PORT] # only serve the page (PORT 8000), to open by hand
//
// Chromium is /usr/bin/chromium (CHROMIUM overrides it; apt-get install
// chromium fonts-dejavu-core). Without it the quick start is skipped (exit
// 0), except under CI (CI set) or with SLUICE_EXAMPLES_REQUIRE=1, where that
// is a failure.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "node", "package.json")); // examples/node's packages
const wsPort = Number(process.env.SLUICE_WEBSOCKET_PORT || 15674);
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const fail = (why) => { console.error(`FAIL: ${why}`); process.exit(1); };

let bundle;
try {
  // The package exports only ".": its "require" entry is bundles/stomp.umd.js.
  bundle = path.join(path.dirname(require.resolve("@stomp/stompjs")), "stomp.umd.min.js");
} catch {
  fail("@stomp/stompjs is not installed: run `npm ci` in examples/node");
}
const files = { "/": "index.html", "/index.html": "index.html", "/stomp.umd.min.js": bundle };
const server = http.createServer((req, res) => {
  const file = files[new URL(req.url, "http://x").pathname];
  if (!file || req.method !== "GET") return res.writeHead(404).end("not found\n");
  const type = file.endsWith(".html") ? "text/html; charset=utf-8" : "text/javascript; charset=utf-8";
  res.writeHead(200, { "Content-Type": type, "Cache-Control": "no-store" });
  fs.createReadStream(path.resolve(here, file)).pipe(res);
});

if (process.argv[2] === "--serve") {
  const port = Number(process.argv[3] || 8000);
  server.listen(port, "127.0.0.1", () => {
    console.log(`serving the page: open http://127.0.0.1:${port}/?port=${wsPort} (Ctrl-C stops)`);
  });
} else {
  await drive().catch((e) => fail(e.message));
}

async function drive() {
  if (!fs.existsSync(chromiumPath)) {
    const why = `${chromiumPath} not found (apt-get install chromium fonts-dejavu-core)`;
    if (process.env.CI || process.env.SLUICE_EXAMPLES_REQUIRE === "1") fail(why);
    console.log(`SKIP: ${why}`);
    process.exit(0);
  }
  setTimeout(() => fail("not done within 45 s"), 45000).unref();
  const { chromium } = require("playwright-core");
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/?port=${wsPort}`;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-browser-example-"));
  let browser, result;
  const console_ = [];
  try {
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
    const page = await browser.newPage();
    page.on("console", (m) => console_.push(`console ${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => console_.push(`page error: ${e.message}`));
    console.log(`opening ${url}`);
    await page.goto(url);
    try {
      await page.waitForFunction(() => /^(PASS|FAIL)/.test(document.getElementById("result").textContent),
        null, { timeout: 15000 });
    } catch {
      console_.push("no result line within 15 s");
    }
    process.stdout.write(await page.textContent("#log"));
    result = await page.textContent("#result");
  } finally {
    if (browser) await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
    server.close();
  }
  if (result.startsWith("PASS")) return console.log(result);
  for (const line of console_) console.error(line);
  fail(result.startsWith("FAIL: ") ? result.slice(6) : "the page wrote no result");
}
