// Browser test of the Sluice web console: a real `sluice serve`, Debian's
// headless Chromium driven by playwright-core, a raw STOMP client on
// node:net. It logs in, creates queues, sends through STOMP, filters,
// sorts and pages the destinations, reloads the overview to find the
// broker's rate history, browses a message, moves it to another queue,
// reads a stomp.py-style body as text and hex, publishes a test message
// and gets it back, reads a queue's effective policy, looks at the node
// page and at every page at 800 px, taking screenshots (docs/console-*.png,
// or $SCREENSHOTS/console-*.png). A second test logs in as a monitor, a
// read-only user, on the admin server of fixture/ (a realm with an
// administrator, a monitor and a messaging user): it sees the connections
// but cannot purge, publish or get. A third starts a three-node cluster
// and reads the Cluster page on the leader and on a follower, whose other
// pages link to the leader's console.
//
// Run: make console-test (builds bin/sluice and bin/console-fixture
// first), or SLUICE_BIN=path/to/sluice FIXTURE_BIN=path/to/fixture
// node --test console.test.mjs
// Needs: apt-get install chromium; npm ci (in this directory).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../..");
const sluiceBin = process.env.SLUICE_BIN || path.join(repo, "bin/sluice");
const fixtureBin = process.env.FIXTURE_BIN || path.join(repo, "bin/console-fixture");
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shotDir = process.env.SCREENSHOTS || path.join(repo, "docs");
const USER = "ops";
const PASSWORD = "console-test-password";
// The STOMP clients log in as a messaging user, which a broker with
// security needs.
const APP_USER = "webtest-app";
const APP_PASSWORD = "webtest-app-password";
const STOMP_LOGIN = { login: APP_USER, passcode: APP_PASSWORD };

// ---------------------------------------------------------------- helpers

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, fn, timeoutMs = 15000) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error("timed out waiting for " + what + (last ? ": " + last.message : ""));
}

// A tiny STOMP 1.2 client: enough to connect, send with receipts,
// subscribe and disconnect.
class Stomp {
  static connect(port, headers = {}) {
    return new Promise((resolve, reject) => {
      const c = new Stomp();
      c.sock = net.connect(port, "127.0.0.1");
      c.buf = Buffer.alloc(0);
      c.waiters = [];
      c.frames = [];
      c.sock.on("error", reject);
      c.sock.on("data", (d) => c.onData(d));
      c.sock.on("connect", () => {
        c.write("CONNECT", { "accept-version": "1.2", host: "sluice", "heart-beat": "0,0", ...headers });
        c.next("CONNECTED").then(() => resolve(c), reject);
      });
    });
  }

  write(command, headers, body = "") {
    const b = Buffer.from(body, "utf8");
    let head = command + "\n";
    for (const [k, v] of Object.entries(headers)) if (v !== null) head += k + ":" + v + "\n"; // null: left out
    if (b.length > 0) head += "content-length:" + b.length + "\n";
    this.sock.write(Buffer.concat([Buffer.from(head + "\n", "utf8"), b, Buffer.from([0])]));
  }

  onData(d) {
    this.buf = Buffer.concat([this.buf, d]);
    for (;;) {
      while (this.buf.length && (this.buf[0] === 10 || this.buf[0] === 13)) this.buf = this.buf.subarray(1); // heart-beats
      const headEnd = this.buf.indexOf("\n\n");
      if (headEnd < 0) return;
      const lines = this.buf.subarray(0, headEnd).toString("utf8").split("\n");
      const headers = {};
      for (const l of lines.slice(1)) {
        const i = l.indexOf(":");
        if (i > 0 && !(l.slice(0, i) in headers)) headers[l.slice(0, i)] = l.slice(i + 1);
      }
      let end;
      if (headers["content-length"] !== undefined) {
        end = headEnd + 2 + Number(headers["content-length"]);
        if (this.buf.length < end + 1) return;
      } else {
        end = this.buf.indexOf(0, headEnd + 2);
        if (end < 0) return;
      }
      const frame = { command: lines[0], headers, body: this.buf.subarray(headEnd + 2, end).toString("utf8") };
      this.buf = this.buf.subarray(end + 1);
      const w = this.waiters.findIndex((x) => x.match(frame));
      if (w >= 0) this.waiters.splice(w, 1)[0].resolve(frame);
      else this.frames.push(frame);
    }
  }

  next(command, match = () => true) {
    const m = (f) => (f.command === command && match(f)) || f.command === "ERROR";
    const i = this.frames.findIndex(m);
    const check = (f) => (f.command === "ERROR" ? Promise.reject(new Error("STOMP ERROR: " + f.headers.message + " " + f.body)) : f);
    if (i >= 0) return Promise.resolve(this.frames.splice(i, 1)[0]).then(check);
    return new Promise((resolve) => this.waiters.push({ match: m, resolve })).then(check);
  }

  async send(destination, body, headers = {}) {
    const receipt = "r-" + Math.random().toString(36).slice(2);
    this.write("SEND", { destination, "content-type": "text/plain", receipt, ...headers }, body);
    await this.next("RECEIPT", (f) => f.headers["receipt-id"] === receipt);
  }

  async subscribe(destination, id, headers = {}) {
    const receipt = "s-" + id;
    this.write("SUBSCRIBE", { destination, id, receipt, ...headers });
    await this.next("RECEIPT", (f) => f.headers["receipt-id"] === receipt);
  }

  async disconnect() {
    this.write("DISCONNECT", { receipt: "bye" });
    await Promise.race([this.next("RECEIPT", (f) => f.headers["receipt-id"] === "bye"), sleep(2000)]);
    this.sock.destroy();
  }
}

// openConsole launches headless Chromium on a fresh profile (closed by
// cleanup) and returns its page, the problems it reports (page errors,
// console errors but the failed requests whose status matches expected,
// requests to any host but base's) and shot, which takes a screenshot
// named console-NAME.png.
async function openConsole(base, cleanup, expected = /401/) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-chromium-"));
  cleanup.push(() => fs.rmSync(profile, { recursive: true, force: true }));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
    viewport: { width: 1360, height: 820 },
    deviceScaleFactor: 1,
  });
  cleanup.push(() => browser.close());
  const page = browser.pages()[0] || (await browser.newPage());
  const problems = [];
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("console", (m) => { if (m.type() === "error" && !expected.test(m.text())) problems.push("console error: " + m.text()); });
  page.on("request", (r) => { if (!r.url().startsWith(base + "/") && !r.url().startsWith("blob:") && !r.url().startsWith("data:")) problems.push("request elsewhere: " + r.url()); });
  page.on("dialog", (d) => d.accept());
  const shot = async (name) => {
    await page.evaluate(() => document.querySelectorAll("#toast div").forEach((d) => d.remove()));
    await page.screenshot({ path: path.join(shotDir, "console-" + name + ".png") });
  };
  return { page, problems, shot };
}

// login fills in the console's login form and submits it.
async function login(page, user, password) {
  await page.locator("#login-form").waitFor();
  await page.fill("#login-user", user);
  await page.fill("#login-password", password);
  await page.click("#login-submit");
}

// ---------------------------------------------------------------- the tests

test("web console: log in, create queues, send through STOMP, browse, move", { timeout: 180000 }, async (t) => {
  assert.ok(fs.existsSync(sluiceBin), "no sluice binary at " + sluiceBin + ": run make console-test (or set SLUICE_BIN)");
  assert.ok(fs.existsSync(chromiumPath), "no Chromium at " + chromiumPath + ": apt-get install chromium");
  fs.mkdirSync(shotDir, { recursive: true });

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-webtest-"));
  const stompPort = await freePort();
  const adminPort = await freePort();
  const base = "http://127.0.0.1:" + adminPort;
  const hash = execFileSync(sluiceBin, ["admin", "hash-password"], { input: PASSWORD + "\n" }).toString().trim();
  const appHash = execFileSync(sluiceBin, ["admin", "hash-password"], { input: APP_PASSWORD + "\n" }).toString().trim();
  const configFile = path.join(tmp, "sluice.toml");
  fs.writeFileSync(configFile, [
    `data = ${JSON.stringify(path.join(tmp, "data"))}`,
    `log_level = "warn"`,
    `[listeners]`,
    `stomp = "127.0.0.1:${stompPort}"`,
    `amqp = ""`,
    `admin = "127.0.0.1:${adminPort}"`,
    `websocket = ""`,
    `[[admin.users]]`,
    `name = "${USER}"`,
    `password_hash = "${hash}"`,
    // The STOMP clients log in as the application user: with any user
    // configured, security is on for the messaging listeners too.
    `[[security.users]]`,
    `name = "${APP_USER}"`,
    `password_hash = "${appHash}"`,
    `roles = ["app"]`,
    `[[security.grants]]`,
    `role = "app"`,
    `match = "*"`,
    `actions = ["*"]`,
    // The orders queue's policy, which its Policy tab explains.
    `[[destination]]`,
    `match = "orders"`,
    `kind = "queue"`,
    `redelivery_limit = 3`,
    ``,
  ].join("\n"));
  const server = spawn(sluiceBin, ["serve", "--config", configFile], { stdio: ["ignore", "inherit", "inherit"] });
  let serverExited = false;
  server.on("exit", () => { serverExited = true; });

  const cleanup = [];
  t.after(async () => {
    for (const fn of cleanup.reverse()) {
      try { await fn(); } catch (e) { /* best effort */ }
    }
    if (!serverExited) {
      server.kill("SIGTERM");
      await waitFor("sluice to stop", () => serverExited, 20000).catch(() => server.kill("SIGKILL"));
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const auth = "Basic " + Buffer.from(USER + ":" + PASSWORD).toString("base64");
  const api = async (p, method = "GET", body) => {
    const r = await fetch(base + p, { method, headers: { Authorization: auth, "Content-Type": "application/json" }, body: body && JSON.stringify(body) });
    assert.ok(r.status === 200 || r.status === 201, method + " " + p + ": " + r.status);
    return r.json();
  };
  await waitFor("sluice to be ready", async () => !serverExited && (await fetch(base + "/readyz")).status === 200);

  // The browser: Debian's Chromium, headless, with a fresh profile.
  const { page, problems, shot } = await openConsole(base, cleanup);

  // Log in.
  await page.goto(base + "/");
  await page.locator("#login-form").waitFor();
  await shot("login");
  await page.fill("#login-user", USER);
  await page.fill("#login-password", "wrong");
  await page.click("#login-submit");
  await page.locator("#login-error", { hasText: "Wrong user name or password" }).waitFor();
  await page.fill("#login-password", PASSWORD);
  await page.click("#login-submit");
  await page.locator("#stat-queues").waitFor();
  assert.match(await page.textContent("#who"), /Logged in as ops/);
  assert.ok(await page.locator("#nav-cluster").isHidden(), "a single node has no Cluster tab");

  // Create two queues from the Destinations page.
  await page.click('nav a[data-page="destinations"]');
  for (const name of ["orders", "archive"]) {
    await page.fill("#create-name", name);
    await page.selectOption("#create-kind", "queue");
    await page.click("#create-submit");
    await page.locator(`tr[data-dest="/queue/${name}"]`).waitFor();
  }

  // STOMP: a durable subscriber that goes away, a consumer of a busy queue,
  // and the message to browse and move.
  const audit = await Stomp.connect(stompPort, { ...STOMP_LOGIN, "client-id": "audit-service" });
  await audit.subscribe("/topic/events", "1", { ack: "client", "durable-subscription-name": "audit-trail", selector: "severity <> 'debug'" });
  await audit.disconnect();
  const app = await Stomp.connect(stompPort, { ...STOMP_LOGIN, "client-id": "webtest-app" });
  cleanup.push(() => app.disconnect());
  await app.subscribe("/queue/work", "w", { ack: "auto" });
  await app.send("/queue/orders", "order #1001: 3 × widget, ship to Lyon", {
    persistent: "true", priority: "7", "correlation-id": "cart-42", type: "order", region: "eu", customer: "ACME",
  });
  for (let i = 0; i < 3; i++) {
    await app.send("/topic/events", JSON.stringify({ event: "stock-low", sku: "W-" + i }), { persistent: "true", severity: "warn" });
  }
  // A stomp.py-style message: content-length and no content-type, so a
  // bytes body, which the console still shows as text.
  await app.send("/queue/inbound", JSON.stringify({ sku: "W-7", qty: 2 }), { "content-type": null, persistent: "true" });
  await page.locator('tr[data-dest="/queue/orders"] td:nth-child(3)', { hasText: /^1$/ }).waitFor();
  await shot("destinations");

  // Filter, sort and page the destinations: thirty more queues make two
  // pages of 25.
  for (let i = 0; i < 30; i++) await api("/api/destinations", "POST", { kind: "queue", name: "bulk-" + String(i).padStart(2, "0") });
  const destRows = page.locator("#destinations-table tbody tr[data-dest]");
  await page.locator("#dest-info", { hasText: /^1–25 of \d+/ }).waitFor();
  assert.equal(await destRows.count(), 25, "the first page holds 25 destinations");
  const total = Number((await page.textContent("#dest-info")).match(/of (\d+)/)[1]);
  await page.click("#dest-next");
  await page.locator("#dest-info", { hasText: "26–" + total + " of " + total }).waitFor();
  assert.equal(await destRows.count(), total - 25);
  await page.fill("#dest-filter", "ord");
  await page.locator("#dest-info", { hasText: /^1–1 of 1 / }).waitFor();
  assert.deepEqual(await destRows.evaluateAll((rs) => rs.map((r) => r.dataset.dest)), ["/queue/orders"]);
  await page.fill("#dest-filter", "");
  await page.click('#destinations-table th[data-sort="messages"]');
  await page.locator('#destinations-table th[data-sort="messages"][aria-sort="descending"]').waitFor();
  const depths = await destRows.evaluateAll((rs) => rs.map((r) => Number(r.children[2].textContent.replace(/,/g, ""))));
  assert.deepEqual(depths, [...depths].sort((a, b) => b - a), "sorted by messages, most first");
  assert.ok(depths[0] >= 1);
  await page.click('#destinations-table th[data-sort="name"]');
  await page.locator('#destinations-table th[data-sort="name"][aria-sort="ascending"]').waitFor();
  await page.selectOption("#dest-size", "50");
  await page.locator("#dest-info", { hasText: "1–" + total + " of " + total + " · page 1 of 1" }).waitFor();

  // Overview with live counters and throughput: traffic during several
  // polls, some of it consumed (work) and some left waiting (backlog).
  await page.click('nav a[data-page="overview"]');
  await page.locator("#stat-queues").waitFor();
  let sending = true;
  const traffic = (async () => {
    for (let i = 0; sending; i++) {
      await app.send("/queue/work", "job " + i, { persistent: "false" });
      if (i % 3 === 0) await app.send("/queue/backlog", "later " + i, { persistent: "false" });
      await sleep(60 + ((i * 37) % 11) * 20);
    }
  })();
  await page.locator("#stat-connections .v", { hasText: /^[1-9]/ }).waitFor();
  await page.locator("#stat-flow .v", { hasText: "flowing" }).waitFor();
  assert.ok(await page.locator("#flow-banner").isHidden(), "no flow-control banner while producers flow");
  await sleep(13000);
  // The history is the broker's: a page loaded now draws it at once.
  await page.reload();
  await page.locator("#rates-chart path.series").first().waitFor();
  const points = Number(await page.getAttribute('#rates-chart path[data-series="enqueued"]', "data-points"));
  assert.ok(points >= 2, "a fresh page shows the history the broker kept (" + points + " samples)");
  await page.locator("#stat-enqueued-rate .v", { hasText: /^[1-9]/ }).waitFor();
  await shot("overview");

  // A busy queue's page: its counters and its hour of rates and depth.
  await page.goto(base + "/#/queue/backlog");
  await page.locator('#dest-rates path[data-series="enqueued"]').waitFor();
  await page.locator("#messages-table tbody tr[data-id]").first().waitFor();
  await shot("destination");
  sending = false;
  await traffic;

  // Browse the queue, then move the message to the other queue. (The
  // reload started the destinations table afresh, 25 a page: find orders
  // with the filter.)
  await page.click('nav a[data-page="destinations"]');
  await page.fill("#dest-filter", "orders");
  await page.click('tr[data-dest="/queue/orders"] a.dest-link');
  const row = page.locator("#messages-table tbody tr[data-id]");
  await row.first().waitFor();
  assert.equal(await row.count(), 1);
  const rowText = await row.first().textContent();
  assert.match(rowText, /order #1001/);
  assert.match(rowText, /region=eu:string/);
  await shot("messages");
  await page.check("#messages-table tbody tr[data-id] input.pick");
  await page.fill("#move-to", "/queue/archive");
  await page.click("#move-selected");
  await page.locator("#toast div", { hasText: "Moved 1 message to /queue/archive" }).waitFor();
  await page.locator("#messages-table .empty").waitFor();
  const orders = await api("/api/destinations/queue/orders");
  const archive = await api("/api/destinations/queue/archive");
  assert.equal(orders.messages, 0, "orders is empty after the move");
  assert.equal(archive.messages, 1, "archive holds the moved message");

  // The moved message, with its headers and typed properties, in the other queue.
  await page.goto(base + "/#/queue/archive");
  await row.first().waitFor();
  await row.first().locator("td.mono a").click();
  await page.locator("#detail-headers").waitFor();
  assert.match(await page.textContent('#detail-headers tr:has(th:text-is("JMSTimestamp"))'), /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC/, "the timestamp is a date");
  const detail = JSON.parse(await page.textContent("#detail-json"));
  assert.equal(detail.destination, "/queue/archive");
  assert.equal(detail.priority, 7);
  assert.equal(detail.correlationId, "cart-42");
  assert.ok(detail.properties.some((p) => p.name === "customer" && p.value === "ACME"));
  await page.evaluate(() => { window.scrollTo(0, 0); document.querySelectorAll("#toast div").forEach((d) => d.remove()); });
  await page.screenshot({ path: path.join(shotDir, "console-moved.png"), fullPage: true });

  // The stomp.py-style body: text in the table and the detail, and the
  // same bytes as hex and base64.
  const bodyJSON = JSON.stringify({ sku: "W-7", qty: 2 });
  await page.goto(base + "/#/queue/inbound");
  await row.first().waitFor();
  const preview = await row.first().locator("td.body-preview").textContent();
  assert.match(preview, /^bytes/, "a bytes body");
  assert.ok(preview.includes(bodyJSON) && !preview.includes("base64"), "shown as text, not base64: " + preview);
  await row.first().locator("td.mono a").click();
  await page.locator("#body-content").waitFor();
  assert.equal(await page.textContent("#body-content"), bodyJSON);
  await page.click("#body-hex");
  assert.match(await page.textContent("#body-content"), /^00000000  7b 22 73 6b 75 22 3a 22/);
  await page.click("#body-base64");
  assert.equal(await page.textContent("#body-content"), Buffer.from(bodyJSON).toString("base64"));
  await page.click("#body-text");
  await page.locator(".message-detail").scrollIntoViewIfNeeded();
  await shot("message");

  // Publish a test message to orders from its page, find it, then get it
  // (which consumes it).
  await page.goto(base + "/#/queue/orders");
  await page.click("#tab-publish");
  await page.fill("#publish-body", "hello from the console");
  await page.fill("#publish-correlation", "console-1");
  await page.selectOption("#publish-priority", "6");
  await page.click("#publish-prop-add");
  await page.fill("#publish-props .prop-row:nth-child(1) .prop-name", "region");
  await page.fill("#publish-props .prop-row:nth-child(1) .prop-value", "eu");
  await page.click("#publish-prop-add");
  await page.fill("#publish-props .prop-row:nth-child(2) .prop-name", "qty");
  await page.selectOption("#publish-props .prop-row:nth-child(2) .prop-type", "int");
  await page.fill("#publish-props .prop-row:nth-child(2) .prop-value", "3");
  await page.click("#publish-submit");
  await page.locator("#publish-result", { hasText: "Published ID:" }).waitFor();
  await page.evaluate(() => document.getElementById("tab-publish").scrollIntoView());
  await shot("publish");
  assert.equal((await api("/api/destinations/queue/orders")).messages, 1, "the published message is on orders");
  await page.click("#tab-messages");
  await page.click("#apply");
  await page.locator("#messages-table tbody tr[data-id]", { hasText: "hello from the console" }).waitFor();
  const published = await row.first().textContent();
  assert.match(published, /region=eu:string/);
  assert.match(published, /qty=3:int/);
  assert.match(published, /console-1/);
  await page.click("#tab-get");
  await page.click("#get-submit");
  await page.locator("#get-result .message-detail", { hasText: "hello from the console" }).waitFor();
  assert.equal((await api("/api/destinations/queue/orders")).messages, 0, "get consumed it");

  // The queue's effective policy: the [[destination]] section and the
  // connection factory.
  await page.click("#tab-policy");
  await page.locator("#policy-table").waitFor();
  assert.match(await page.textContent("#policy-section"), /destination\[0\] applies \(match orders, kind queue\)/);
  assert.match(await page.textContent('#policy-table tr[data-setting="redelivery_limit"]'), /3.*destination\[0\].*destination\[0\]\.redelivery_limit/);
  assert.match(await page.textContent('#policy-table tr[data-setting="priority"]'), /4.*connection factory.*connection\.priority/);
  await shot("policy");

  // Durable subscriptions and connections.
  await page.click('nav a[data-page="subscriptions"]');
  await page.locator("#subscriptions-table td", { hasText: "audit-trail" }).waitFor();
  assert.match(await page.textContent("#subscriptions-table"), /inactive/);
  await shot("subscriptions");
  await page.click('nav a[data-page="connections"]');
  // The client ID and the user are both webtest-app.
  const appRow = page.locator("#connections-table tr[data-conn]", { hasText: "webtest-app" });
  await appRow.first().waitFor();
  assert.equal(await appRow.first().locator("td.conn-user").textContent(), APP_USER);
  assert.ok((await page.locator("#connections-table th").allTextContents()).includes("User"), "the connections table has a User column");
  await shot("connections");

  // The node: memory, goroutines, files, the data directory.
  await page.click('nav a[data-page="node"]');
  await page.locator("#node-rss .v", { hasText: /[KMG]iB$/ }).waitFor();
  assert.match(await page.textContent("#node-goroutines .v"), /^\d+$/);
  assert.match(await page.textContent("#node-free .v"), /[KMGT]iB$/);
  assert.match(await page.textContent("#node-store .v"), /[KM]iB$/);
  assert.equal(await page.textContent("#node-data-path"), path.join(tmp, "data"));
  await shot("node");

  // 800 px wide: nothing wider than the window; the tables scroll inside.
  await page.setViewportSize({ width: 800, height: 900 });
  for (const [hash, ready] of [["#/destinations", 'tr[data-dest="/queue/orders"]'], ["#/queue/backlog", "#dest-rates"], ["#/", "#rates-chart"], ["#/connections", "#connections-table tr[data-conn]"]]) {
    await page.goto(base + "/" + hash);
    await page.locator(ready).first().waitFor();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 800, hash + " is " + width + " px wide at 800 px");
  }
  await page.goto(base + "/#/destinations");
  await page.fill("#dest-filter", "");
  await page.locator('tr[data-dest="/queue/archive"]').waitFor();
  await shot("narrow");

  assert.deepEqual(problems, [], "the console ran without errors and fetched nothing from elsewhere");
});

test("web console: a monitor sees the connections but cannot purge", { timeout: 120000 }, async (t) => {
  assert.ok(fs.existsSync(fixtureBin), "no fixture binary at " + fixtureBin + ": run make console-test (or set FIXTURE_BIN)");
  assert.ok(fs.existsSync(chromiumPath), "no Chromium at " + chromiumPath + ": apt-get install chromium");
  fs.mkdirSync(shotDir, { recursive: true });
  const password = "fixture-password";
  const fixture = spawn(fixtureBin, ["-password", password], { stdio: ["pipe", "pipe", "inherit"] });
  let exited = false;
  fixture.on("exit", () => { exited = true; });
  const cleanup = [];
  t.after(async () => {
    for (const fn of cleanup.reverse()) {
      try { await fn(); } catch (e) { /* best effort */ }
    }
    fixture.stdin.end(); // the fixture serves until its standard input closes
    await waitFor("the fixture to stop", () => exited, 10000).catch(() => fixture.kill("SIGKILL"));
  });
  let out = "";
  fixture.stdout.on("data", (d) => { out += d; });
  const addr = await waitFor("the fixture's address", () => !exited && out.includes("\n") && JSON.parse(out.split("\n")[0]).admin);
  const base = "http://" + addr;
  const asOps = "Basic " + Buffer.from("ops:" + password).toString("base64");
  const depth = async () => (await (await fetch(base + "/api/destinations/queue/orders", { headers: { Authorization: asOps } })).json()).messages;
  assert.equal(await depth(), 2, "the fixture's queue holds two orders");

  const { page, problems, shot } = await openConsole(base, cleanup, /40[13]/);
  await page.goto(base + "/");

  // A messaging user without an admin grant gets no session.
  await login(page, "app", password);
  await page.locator("#login-error", { hasText: "user app has no admin or monitor grant" }).waitFor();

  // The monitor logs in; the console says it is read-only.
  await login(page, "watcher", password);
  await page.locator("#stat-queues").waitFor();
  assert.match(await page.textContent("#who"), /Logged in as watcher/);
  await page.locator("#read-only").waitFor();

  // It sees the connections, with their users, and no Close button.
  await page.click('nav a[data-page="connections"]');
  const billing = page.locator("#connections-table tr", { hasText: "billing-app" });
  await billing.waitFor();
  assert.equal(await billing.locator("td.conn-user").textContent(), "app");
  assert.equal(await page.locator("#connections-table tr", { hasText: "health-probe" }).locator("td.conn-user").textContent(), "anonymous");
  assert.equal(await page.locator("#connections-table button").count(), 0, "a monitor gets no Close button");
  await page.locator(".read-only-note", { hasText: "cannot close connections" }).waitFor();
  await shot("read-only");

  // The destinations and the messages, without Create, Purge, Delete, Move.
  await page.click('nav a[data-page="destinations"]');
  await page.locator('tr[data-dest="/queue/orders"] td:nth-child(3)', { hasText: /^2$/ }).waitFor();
  assert.equal(await page.locator("#create-form").count(), 0, "a monitor gets no Create form");
  assert.equal(await page.locator("#destinations-table button", { hasText: /Purge|Delete/ }).count(), 0, "a monitor gets no Purge or Delete button");
  await page.click('tr[data-dest="/queue/orders"] a.dest-link');
  await page.locator("#messages-table tbody tr[data-id]").first().waitFor();
  assert.equal(await page.locator("#messages-table tbody tr[data-id]").count(), 2);
  assert.equal(await page.locator("#messages-table input.pick").count(), 0, "a monitor gets no message checkboxes");
  for (const id of ["#move-selected", "#delete-selected", "#delete-matching", "#import", "#tab-publish", "#tab-get"]) {
    assert.equal(await page.locator(id).count(), 0, "a monitor gets no " + id);
  }
  await page.locator("#export").waitFor();
  await page.click("#tab-policy");
  await page.locator("#policy-section", { hasText: "No [[destination]] section applies" }).waitFor();

  // The purge the console would send, in the monitor's session: refused
  // with the server's reason, and the queue keeps its messages.
  const refused = await page.evaluate(async () => {
    const r = await fetch("/api/destinations/queue/orders/purge", { method: "POST", headers: { "X-Sluice-Console": "1" } });
    return { status: r.status, body: await r.json() };
  });
  assert.equal(refused.status, 403);
  assert.match(refused.body.error, /user watcher has the monitor role, which is read-only/);
  assert.equal(await depth(), 2, "the refused purge deleted nothing");

  assert.deepEqual(problems, [], "the console ran without errors and fetched nothing from elsewhere");
});

// startCluster starts three `sluice serve` nodes of one cluster on free
// loopback ports, each with the administrator USER, and returns their
// admin bases, IDs and processes; cleanup stops them.
async function startCluster(cleanup) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "sluice-webtest-cluster-"));
  const hash = execFileSync(sluiceBin, ["admin", "hash-password"], { input: PASSWORD + "\n" }).toString().trim();
  const nodes = [];
  for (let i = 0; i < 3; i++) {
    nodes.push({ id: "n" + (i + 1), raft: await freePort(), stomp: await freePort(), amqp: await freePort(), admin: await freePort() });
  }
  const members = nodes.map((n) => [
    `[[cluster.members]]`, `id = "${n.id}"`, `raft = "127.0.0.1:${n.raft}"`, `stomp = "127.0.0.1:${n.stomp}"`,
    `amqp = "127.0.0.1:${n.amqp}"`, `admin = "127.0.0.1:${n.admin}"`].join("\n")).join("\n");
  for (const n of nodes) {
    n.base = "http://127.0.0.1:" + n.admin;
    n.addr = "127.0.0.1:" + n.admin;
    const conf = path.join(tmp, n.id + ".toml");
    fs.writeFileSync(conf, [
      `data = ${JSON.stringify(path.join(tmp, n.id))}`,
      `log_level = "warn"`,
      `consume_before_store = false`,
      `[listeners]`,
      `stomp = "127.0.0.1:${n.stomp}"`,
      `amqp = "127.0.0.1:${n.amqp}"`,
      `admin = "127.0.0.1:${n.admin}"`,
      `websocket = ""`,
      `[[admin.users]]`,
      `name = "${USER}"`,
      `password_hash = "${hash}"`,
      `[cluster]`,
      `node_id = "${n.id}"`,
      `bootstrap = true`,
      members,
      ``,
    ].join("\n"));
    n.proc = spawn(sluiceBin, ["serve", "--config", conf], { stdio: ["ignore", "inherit", "inherit"] });
    n.exited = false;
    n.proc.on("exit", () => { n.exited = true; });
  }
  cleanup.push(async () => {
    for (const n of nodes) if (!n.exited) n.proc.kill("SIGTERM");
    for (const n of nodes) await waitFor(n.id + " to stop", () => n.exited, 20000).catch(() => n.proc.kill("SIGKILL"));
    fs.rmSync(tmp, { recursive: true, force: true });
  });
  return nodes;
}

// leaderOf waits for the one node whose /readyz is 200: the leader, serving.
async function leaderOf(nodes) {
  return waitFor("a leader", async () => {
    const ready = [];
    for (const n of nodes) {
      if (n.exited) continue;
      try { if ((await fetch(n.base + "/readyz")).status === 200) ready.push(n); } catch (e) { /* not up yet */ }
    }
    return ready.length === 1 && ready[0];
  }, 30000);
}

// memberRows reads the members table: id → {role, contact, commit, applied, last}.
async function memberRows(page) {
  return page.locator("#members-table tbody tr[data-member]").evaluateAll((rs) => Object.fromEntries(rs.map((r) => [r.dataset.member, {
    role: r.querySelector("td.member-role").textContent,
    self: r.classList.contains("self"),
    contact: r.querySelector("td.member-contact").textContent,
    commit: r.children[8].textContent, applied: r.children[9].textContent, last: r.children[10].textContent,
  }])));
}

test("web console: the cluster page on the leader and on a follower", { timeout: 180000 }, async (t) => {
  assert.ok(fs.existsSync(sluiceBin), "no sluice binary at " + sluiceBin + ": run make console-test (or set SLUICE_BIN)");
  assert.ok(fs.existsSync(chromiumPath), "no Chromium at " + chromiumPath + ": apt-get install chromium");
  fs.mkdirSync(shotDir, { recursive: true });
  const cleanup = [];
  t.after(async () => {
    for (const fn of cleanup.reverse()) {
      try { await fn(); } catch (e) { /* best effort */ }
    }
  });
  const nodes = await startCluster(cleanup);
  const leader = await leaderOf(nodes);
  const followers = nodes.filter((n) => n !== leader);
  const asOps = { Authorization: "Basic " + Buffer.from(USER + ":" + PASSWORD).toString("base64") };
  // Some entries to index: queues created on the leader.
  for (const name of ["orders", "audit"]) {
    const r = await fetch(leader.base + "/api/destinations", { method: "POST", headers: { ...asOps, "Content-Type": "application/json" }, body: JSON.stringify({ kind: "queue", name }) });
    assert.equal(r.status, 201, "create " + name + " on the leader");
  }

  // On the leader: the Cluster tab, this node leading, the others
  // followers (they answer its heartbeats; their indexes it cannot see),
  // its indexes.
  const onLeader = await openConsole(leader.base, cleanup);
  await onLeader.page.goto(leader.base + "/");
  await login(onLeader.page, USER, PASSWORD);
  await onLeader.page.locator("#stat-queues").waitFor();
  await onLeader.page.click("#nav-cluster");
  await onLeader.page.locator("#members-table tbody tr[data-member]").nth(2).waitFor();
  assert.equal(await onLeader.page.textContent("#cluster-role .v"), "leader");
  assert.equal(await onLeader.page.textContent("#cluster-leader .v"), leader.id);
  assert.equal(await onLeader.page.textContent("#cluster-contact .v"), "leading");
  let rows = await memberRows(onLeader.page);
  assert.deepEqual(Object.keys(rows).sort(), ["n1", "n2", "n3"]);
  assert.deepEqual(rows[leader.id], { ...rows[leader.id], role: "leader", self: true, contact: "this node leads" });
  assert.ok(Number(rows[leader.id].commit.replace(/,/g, "")) >= 2, "the leader's commit index counts the creations: " + rows[leader.id].commit);
  assert.match(rows[leader.id].applied, /^\d[\d,]*$/);
  for (const f of followers) assert.deepEqual([rows[f.id].role, rows[f.id].commit], ["follower", "–"], f.id + " on the leader's page");
  assert.match(await onLeader.page.textContent("#cluster-note"), /as unreachable, with when it last answered/);
  assert.ok(await onLeader.page.locator("#cluster-follower-note").count() === 0, "no follower note on the leader");
  await onLeader.shot("cluster");
  await onLeader.page.setViewportSize({ width: 800, height: 900 });
  assert.ok(await onLeader.page.evaluate(() => document.documentElement.scrollWidth) <= 800, "the cluster page fits 800 px");

  // On a follower: the console and its login are served; the overview
  // points to the leader's console; the cluster page shows this node
  // following, the leader with this node's last contact, the third
  // member unknown.
  const f = followers[0];
  const onFollower = await openConsole(f.base, cleanup);
  await onFollower.page.goto(f.base + "/");
  await login(onFollower.page, USER, PASSWORD);
  await onFollower.page.locator("#follower-note").waitFor();
  assert.match(await onFollower.page.textContent("#follower-note"), new RegExp("This node, " + f.id + ", is a follower"));
  assert.equal(await onFollower.page.textContent("#leader-link"), leader.addr);
  assert.equal(await onFollower.page.getAttribute("#leader-link", "href"), leader.base + "/");
  await onFollower.shot("follower");
  // The node page is the follower's own: its process and data directory.
  await onFollower.page.click('nav a[data-page="node"]');
  await onFollower.page.locator("#node-rss .v", { hasText: /[KMG]iB$/ }).waitFor();
  assert.match(await onFollower.page.textContent("#node-data-path"), new RegExp(f.id + "$"));
  await onFollower.page.click('nav a[data-page="overview"]');
  await onFollower.page.click("#follower-cluster-link");
  await onFollower.page.locator("#members-table tbody tr[data-member]").nth(2).waitFor();
  assert.equal(await onFollower.page.textContent("#cluster-role .v"), "follower");
  await onFollower.page.locator("#cluster-follower-note #leader-link").waitFor();
  rows = await memberRows(onFollower.page);
  assert.equal(rows[f.id].role, "follower");
  assert.ok(rows[f.id].self);
  assert.equal(rows[leader.id].role, "leader");
  assert.match(rows[leader.id].contact, /^\d+\.\d s ago$/, "the follower's last contact with the leader: " + rows[leader.id].contact);
  const third = followers[1];
  assert.equal(rows[third.id].role, "unknown");
  await onFollower.page.locator(`#members-table tr[data-member="${f.id}"] td:nth-child(9)`, { hasText: /^[1-9]/ }).waitFor();
  assert.match(await onFollower.page.textContent("#cluster-contact .v"), /s ago$/);
  await onFollower.shot("cluster-follower");

  assert.deepEqual(onLeader.problems, [], "the leader's console ran without errors and fetched nothing from elsewhere");
  await onLeader.page.close(); // its node is going away

  // The leader stops: the follower's page, refreshing, shows the new one.
  leader.proc.kill("SIGTERM");
  await waitFor("the old leader to stop", () => leader.exited, 20000);
  const next = await leaderOf(nodes);
  await onFollower.page.locator("#cluster-leader .v", { hasText: next.id }).waitFor({ timeout: 20000 });
  rows = await memberRows(onFollower.page);
  assert.equal(rows[next.id].role, "leader");
  if (next === f) {
    // This node leads now: its heartbeats to the stopped one fail.
    await onFollower.page.locator(`#members-table tr[data-member="${leader.id}"] .member-role`, { hasText: "unreachable" }).waitFor({ timeout: 20000 });
  } else {
    assert.equal(rows[leader.id].role, "unknown", "the stopped leader is unknown to a follower");
  }
  if (next === f) {
    // This node leads now: its overview is its own.
    await onFollower.page.click('nav a[data-page="overview"]');
    await onFollower.page.locator("#stat-queues .v", { hasText: "2" }).waitFor();
  }

  assert.deepEqual(onFollower.problems, [], "the follower's console ran without errors and fetched nothing from elsewhere");
});
