// The test page: what a web app does with @stomp/stompjs and Sluice's
// STOMP over WebSocket. It reads its settings from the query string
// (ws: the broker's URL; login, passcode; scenario: main or refused), runs
// the scenario and leaves its findings in window.result, or the reason it
// could not in window.failure, for drive.mjs to collect. Every wait is
// bounded.
"use strict";

const params = new URLSearchParams(location.search);
const brokerURL = params.get("ws");
const WAIT = 10000;

const logEl = document.getElementById("log");
function log(s) {
  logEl.textContent += s + "\n";
}

function timeout(promise, what, ms = WAIT) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error("timed out: " + what)), ms)),
  ]);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// client makes a stompjs Client; the type (text or binary) of every
// WebSocket message it receives goes to types.
function client(name, { passcode = params.get("passcode"), types = [], ...extra } = {}) {
  return new StompJs.Client({
    webSocketFactory: () => {
      // The subprotocols stompjs offers by default, highest first.
      const ws = new WebSocket(brokerURL, ["v12.stomp", "v11.stomp", "v10.stomp"]);
      ws.addEventListener("message", (e) => types.push(typeof e.data === "string" ? "text" : "binary"));
      return ws;
    },
    connectHeaders: { login: params.get("login"), passcode },
    reconnectDelay: 0, // a lost connection is a failure here
    debug: (s) => log("[" + name + "] " + s),
    ...extra,
  });
}

// connect activates c and resolves with CONNECTED, or rejects with the
// ERROR frame's message or the WebSocket close.
function connect(c, name) {
  return timeout(new Promise((resolve, reject) => {
    c.onConnect = resolve;
    c.onStompError = (f) => reject(new Error("ERROR " + f.headers.message));
    c.onWebSocketClose = (e) => reject(Object.assign(new Error("closed " + e.code), { code: e.code }));
    c.activate();
  }), name + " CONNECTED");
}

// receipt publishes or subscribes with a receipt and waits for it.
function receipt(c, id, act) {
  const got = new Promise((resolve) => c.watchForReceipt(id, resolve));
  act();
  return timeout(got, "receipt " + id);
}

async function waitUntil(what, cond) {
  for (let i = 0; i < WAIT / 50; i++) {
    if (cond()) return;
    await sleep(50);
  }
  throw new Error("timed out waiting for " + what);
}

async function main() {
  const result = {};
  const types = [];
  const app = client("app", { types });
  const connected = await connect(app, "app");
  result.version = connected.headers.version;
  result.subprotocol = app.webSocket.protocol;
  result.server = connected.headers.server;

  // A selector: only red orders.
  const red = [];
  const sub = await (async () => {
    let s;
    await receipt(app, "sub-red", () => {
      s = app.subscribe("/queue/webtest.orders", (m) => red.push({
        body: m.body, color: m.headers.color, bytes: Array.from(m.binaryBody), contentType: m.headers["content-type"],
      }), { selector: "color = 'red'", receipt: "sub-red" });
    });
    return s;
  })();
  await receipt(app, "p-blue", () => app.publish({ destination: "/queue/webtest.orders", body: "blue order", headers: { color: "blue", receipt: "p-blue" } }));
  await receipt(app, "p-red", () => app.publish({ destination: "/queue/webtest.orders", body: "red order", headers: { color: "red", receipt: "p-red" } }));
  await receipt(app, "p-bin", () => app.publish({
    destination: "/queue/webtest.orders",
    binaryBody: new Uint8Array([0, 1, 2, 0xff, 0xfe, 0, 10]),
    headers: { color: "red", "content-type": "application/octet-stream", receipt: "p-bin" },
  }));
  await waitUntil("the red orders", () => red.length >= 2);
  await sleep(500); // nothing else may come
  result.red = red;
  sub.unsubscribe();

  // The blue order waits in the queue for a subscriber without a selector.
  const rest = [];
  app.subscribe("/queue/webtest.orders", (m) => rest.push(m.body));
  await waitUntil("the blue order", () => rest.length >= 1);
  await sleep(300);
  result.rest = rest;

  // Large text frames split across WebSocket messages (stompjs'
  // splitLargeFrames), and frames sent in binary messages.
  const other = [];
  app.subscribe("/queue/webtest.other", (m) => other.push(m.body));
  const splitter = client("splitter", { splitLargeFrames: true, maxWebSocketChunkSize: 1000 });
  await connect(splitter, "splitter");
  const large = "0123456789".repeat(2000) + "!";
  await receipt(splitter, "p-large", () => splitter.publish({ destination: "/queue/webtest.other", body: large, headers: { receipt: "p-large" } }));
  const binary = client("binary", { forceBinaryWSFrames: true });
  await connect(binary, "binary");
  await receipt(binary, "p-binframe", () => binary.publish({ destination: "/queue/webtest.other", body: "sent in a binary message", headers: { receipt: "p-binframe" } }));
  await waitUntil("the other messages", () => other.length >= 2);
  result.largeOK = other[0] === large;
  result.largeLength = other[0].length;
  result.fromBinary = other[1];
  await splitter.deactivate();
  await binary.deactivate();

  // A wrong passcode is refused with the one authentication ERROR.
  try {
    await connect(client("intruder", { passcode: "wrong" }), "intruder");
    result.badLogin = "connected";
  } catch (e) {
    result.badLogin = e.message;
  }

  await app.deactivate();
  result.types = types;
  return result;
}

// refused: this page's origin is not allowed, so the WebSocket never opens.
async function refused() {
  try {
    await connect(client("refused"), "refused");
    return { connected: true };
  } catch (e) {
    return { connected: false, error: e.message, code: e.code };
  }
}

const scenarios = { main, refused };
(scenarios[params.get("scenario")] || (() => Promise.reject(new Error("no scenario " + params.get("scenario")))))()
  .then((r) => { window.result = r; log("done: " + JSON.stringify(r)); })
  .catch((e) => { window.failure = String(e && e.stack || e); log("failed: " + window.failure); });
