// Sluice console: a small single-page app over the admin JSON API
// (docs/admin-api.md). No framework, no external assets; charts are SVG
// drawn here.
"use strict";

(function () {
  const main = document.getElementById("main");
  let timers = [];
  // clustered: this broker is a node of a cluster (whoami says so);
  // cluster: the node's latest view of it (GET /api/cluster), null until
  // read and on a single node.
  let state = { authRequired: false, user: "", role: "", clustered: false, cluster: null };
  // The destinations table's filter, sort and page, kept while the
  // console is open.
  const destView = { filter: "", kind: "", sort: "name", desc: false, page: 0, size: 25 };

  // canChange: the caller may change things (the admin role). A monitor
  // reads only: the console leaves out what the server would refuse.
  const canChange = () => state.role === "admin";

  // ---------------------------------------------------------------- helpers

  // h builds an element: h("td", {class: "num"}, "text", childNode, ...).
  // Text always goes in as text, never as HTML.
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    return fill(el, attrs, kids);
  }

  // svgNS is the SVG namespace, as the HTML parser gives it (so that no
  // URL appears in the console, which fetches nothing from elsewhere).
  const svgNS = (() => {
    const t = document.createElement("template");
    t.innerHTML = "<svg></svg>";
    return t.content.firstChild.namespaceURI;
  })();

  // s builds an SVG element the same way.
  function s(tag, attrs, ...kids) {
    return fill(document.createElementNS(svgNS, tag), attrs, kids);
  }

  function fill(el, attrs, kids) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "class") el.setAttribute("class", v);
      else if (k === "dataset") Object.assign(el.dataset, v);
      else if (v === true) el.setAttribute(k, "");
      else el.setAttribute(k, String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === undefined || kid === null || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  function toast(msg, isErr) {
    const el = h("div", { class: isErr ? "err" : "" }, msg);
    document.getElementById("toast").append(el);
    setTimeout(() => el.remove(), isErr ? 8000 : 4000);
  }

  class APIError extends Error {
    constructor(status, body) {
      let msg = (body && body.error) || "HTTP " + status;
      if (body && body.position) msg += " (at column " + body.position.column + ")";
      if (body && body.line) msg += " (line " + body.line + ")";
      super(msg);
      this.status = status;
      this.body = body;
    }
  }

  async function api(method, path, body, contentType) {
    const opts = { method, headers: { "X-Sluice-Console": "1" }, credentials: "same-origin" };
    if (body !== undefined) {
      if (contentType) {
        opts.headers["Content-Type"] = contentType;
        opts.body = body;
      } else {
        opts.headers["Content-Type"] = "application/json";
        opts.body = JSON.stringify(body);
      }
    }
    const res = await fetch(path, opts);
    let data = null;
    const text = await res.text();
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = { error: text }; }
    if (res.status === 401) {
      showLogin();
      throw new APIError(401, data);
    }
    if (res.status === 503 && data && /follower/.test(data.error || "")) {
      // This node stopped leading: its pages are the leader's now.
      const e = new APIError(503, data);
      e.follower = true;
      followerSeen();
      throw e;
    }
    if (!res.ok) throw new APIError(res.status, data);
    return data;
  }

  function every(ms, fn) {
    fn();
    timers.push(setInterval(fn, ms));
  }

  // quiet reports an API error unless it is the 401 that showed the login.
  function quiet(e) { if (e.status !== 401 && !e.follower) toast(e.message, true); }

  function fmtNum(n) { return Number(n).toLocaleString("en-US"); }
  function plural(n, word) { return fmtNum(n) + " " + word + (n === 1 ? "" : "s"); }
  function fmtBytes(n) {
    if (n === null || n === undefined) return "–";
    if (n < 1024) return n + " B";
    const units = ["KiB", "MiB", "GiB", "TiB"];
    let v = n / 1024, i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return v.toFixed(1) + " " + units[i];
  }
  function fmtRate(v) { return v >= 100 ? Math.round(v).toLocaleString("en-US") : v.toFixed(1); }
  // fmtTime is a JMS time (ms) as a UTC date.
  function fmtTime(ms) {
    if (!ms) return "";
    return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
  }
  function fmtDuration(sec) {
    sec = Math.max(0, Math.floor(sec));
    const d = Math.floor(sec / 86400), hh = Math.floor((sec % 86400) / 3600), mm = Math.floor((sec % 3600) / 60), ss = sec % 60;
    if (d) return d + " d " + hh + " h";
    if (hh) return hh + " h " + mm + " min";
    if (mm) return mm + " min " + ss + " s";
    return ss + " s";
  }
  // fmtAgo says how far ms is from now: "3 min ago", "in 20 s".
  function fmtAgo(ms) {
    const d = (Date.now() - ms) / 1000;
    return d >= 0 ? fmtDuration(d) + " ago" : "in " + fmtDuration(-d);
  }
  function destPath(kind, name) {
    return "/api/destinations/" + encodeURIComponent(kind) + "/" + encodeURIComponent(name);
  }
  function subPath(clientId, name) {
    return "/api/subscriptions/" + encodeURIComponent(clientId || "-") + "/" + encodeURIComponent(name);
  }
  // destHash is the console page of a destination.
  function destHash(kind, name) { return "#/" + kind + "/" + encodeURIComponent(name); }
  function table(headers, rows, emptyText, attrs) {
    const head = h("tr", null, headers.map((c) => h("th", { class: c.endsWith("#") ? "num" : "" }, c.replace(/#$/, ""))));
    const body = h("tbody", null, rows);
    if (rows.length === 0) body.append(h("tr", null, h("td", { colspan: headers.length, class: "empty" }, emptyText || "Nothing here yet.")));
    return h("div", { class: "table-wrap" }, h("table", attrs || null, h("thead", null, head), body));
  }
  const num = (v, cls) => h("td", { class: "num" + (cls ? " " + cls : "") }, fmtNum(v));
  const stat = (k, v, id, title) => h("div", { class: "stat", id, title }, h("div", { class: "v" }, v), h("div", { class: "k" }, k));

  // ---------------------------------------------------------------- bodies

  // The bytes of a message body, from its full typed JSON form; null for
  // map and stream bodies, which have no bytes of their own.
  function bodyBytes(body) {
    if (!body || body.kind === "none") return new Uint8Array(0);
    if (body.kind === "map" || body.kind === "stream") return null;
    if (body.text !== undefined) return new TextEncoder().encode(body.text);
    return fromBase64(body.data || "");
  }
  function fromBase64(b64) {
    const bin = atob(b64);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  function toBase64(bytes) {
    let bin = "";
    for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(bin);
  }
  // readableText decodes bytes that read as text (valid UTF-8 without
  // control characters but tabs and line breaks), else returns null: the
  // rule the server's previews follow.
  function readableText(bytes) {
    for (const c of bytes) if ((c < 0x20 && c !== 9 && c !== 10 && c !== 13) || c === 0x7f) return null;
    try { return new TextDecoder("utf-8", { fatal: true }).decode(bytes); } catch (e) { return null; }
  }
  const maxHex = 16384;
  function hexDump(bytes) {
    const lines = [];
    const n = Math.min(bytes.length, maxHex);
    for (let off = 0; off < n; off += 16) {
      const row = Array.from(bytes.subarray(off, Math.min(off + 16, n)));
      const hex = row.map((b) => b.toString(16).padStart(2, "0")).join(" ");
      const ascii = row.map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");
      lines.push(off.toString(16).padStart(8, "0") + "  " + hex.padEnd(47) + "  " + ascii);
    }
    if (bytes.length > n) lines.push("… the first " + fmtBytes(maxHex) + " of " + fmtBytes(bytes.length) + " shown");
    return lines.join("\n");
  }

  // messageDetail shows one message (an entry with its full typed form,
  // .message): headers with times as dates, typed properties, and the body
  // as text, hex or base64.
  function messageDetail(m) {
    const full = m.message || {};
    const when = (ms, none) => ms ? [fmtTime(ms) + " UTC", h("span", { class: "muted" }, " (" + fmtAgo(ms) + ")")] : h("span", { class: "muted" }, none);
    const rows = [
      ["JMSMessageID", h("span", { class: "mono" }, m.id)],
      ["JMSDestination", m.destination],
      ["JMSTimestamp", when(m.timestamp, "none")],
      ["JMSExpiration", when(m.expiration, "never")],
      ["JMSDeliveryTime", when(m.deliveryTime, "at once")],
      ["JMSPriority", m.priority],
      ["JMSDeliveryMode", m.deliveryMode],
      ["JMSCorrelationID", m.correlationId || h("span", { class: "muted" }, "none")],
      ["JMSType", m.type || h("span", { class: "muted" }, "none")],
      ["JMSReplyTo", m.replyTo || h("span", { class: "muted" }, "none")],
      ["JMSRedelivered", m.redelivered ? "true" : "false"],
      ["JMSXDeliveryCount", m.deliveryCount],
      ["JMSRedeliveryLimit", m.redeliveryLimit < 0 ? h("span", { class: "muted" }, "none") : m.redeliveryLimit],
      ["State", m.scheduled ? ["scheduled for ", when(m.deliverAt, "")] : "ready"],
    ];
    const headers = h("table", { class: "kv", id: "detail-headers" }, h("tbody", null, rows.map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))));
    const props = table(["Property", "Type", "Value"], m.properties.map((p) =>
      h("tr", null, h("td", { class: "mono" }, p.name), h("td", null, p.type), h("td", { class: "mono" }, p.value === undefined ? "null" : String(p.value)))),
    "No properties.", { id: "detail-properties" });

    const bytes = bodyBytes(full.body);
    const text = bytes ? readableText(bytes) : JSON.stringify(full.body && (full.body.map || full.body.stream) || null, null, 2);
    const content = h("pre", { class: "body-content", id: "body-content" });
    const views = {
      text: () => text === null ? "" : text,
      hex: () => hexDump(bytes),
      base64: () => toBase64(bytes),
    };
    const buttons = {};
    const show = (v) => {
      content.textContent = views[v]();
      content.dataset.view = v;
      for (const [k, b] of Object.entries(buttons)) b.classList.toggle("on", k === v);
    };
    for (const v of ["text", "hex", "base64"]) {
      const disabled = (v === "text" && text === null) || (v !== "text" && bytes === null);
      buttons[v] = h("button", { class: "small", id: "body-" + v, type: "button", disabled, title: disabled && v === "text" ? "The body is not readable text" : null, onclick: () => show(v) },
        { text: "Text", hex: "Hex", base64: "Base64" }[v]);
    }
    const body = h("div", { class: "body-view" },
      h("div", { class: "toolbar" }, h("h3", { class: "grow" }, "Body ", h("span", { class: "badge gray" }, m.bodyKind), " ",
        h("span", { class: "muted" }, fmtBytes(m.bodySize))), h("div", { class: "segmented" }, Object.values(buttons))),
      content);
    show(text !== null ? "text" : "hex");
    return h("div", { class: "card message-detail" },
      h("h2", null, "Message ", h("span", { class: "mono" }, m.id)),
      h("div", { class: "detail-grid" }, headers, props),
      body,
      h("details", null, h("summary", null, "Typed JSON (the export form)"), h("pre", { class: "detail", id: "detail-json" }, JSON.stringify(full, null, 2))));
  }

  // ---------------------------------------------------------------- charts

  const RATES = [
    { key: "enqueued", label: "enqueued", cls: "c-enq" },
    { key: "delivered", label: "delivered", cls: "c-del" },
    { key: "acknowledged", label: "acknowledged", cls: "c-ack" },
    { key: "redelivered", label: "redelivered", cls: "c-red" },
  ];
  const DEPTH = [{ key: "messages", label: "waiting messages", cls: "c-depth" }];

  // niceStep is the least of 1, 2, 2.5, 5 times a power of ten that is
  // at least v: the y axis has four such steps.
  function niceStep(v) {
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p + 1e-9) return m * p;
    return 10 * p;
  }
  // Chart spans: the shortest that holds every sample, up to what the
  // broker keeps; and the time between two labels of each.
  const SPANS = [[5, 1], [15, 5], [30, 5], [60, 10], [180, 30], [360, 60], [1440, 240]];
  function shortNum(v) {
    if (v >= 1e6) return (v / 1e6).toFixed(v % 1e6 ? 1 : 0) + "M";
    if (v >= 1e3) return (v / 1e3).toFixed(v % 1e3 ? 1 : 0) + "k";
    return String(Number(v.toFixed(2))); // 0.25, 2.5, 7.5
  }
  const hhmm = (ms) => new Date(ms).toISOString().slice(11, 16);

  // historyFeed keeps the samples of one history endpoint, asking only for
  // the new ones after the first load.
  function historyFeed(path) {
    const feed = { samples: [], interval: 5, capacity: 720, tracked: true, untracked: 0 };
    feed.load = async () => {
      const last = feed.samples.length ? feed.samples[feed.samples.length - 1].time : 0;
      const r = await api("GET", path + (last ? "?since=" + last : ""));
      feed.interval = r.interval;
      feed.capacity = r.capacity;
      feed.tracked = r.tracked;
      feed.untracked = r.untracked || 0;
      feed.samples.push(...r.samples);
      if (feed.samples.length > feed.capacity) feed.samples.splice(0, feed.samples.length - feed.capacity);
      return feed;
    };
    return feed;
  }

  // chart draws series of a feed's samples into box as SVG lines over the
  // feed's whole span (an hour), sized to the box; hovering shows the
  // values of the nearest sample.
  function chart(box, feed, series, opts) {
    const W = Math.max(260, Math.floor(box.clientWidth || 600)), H = opts.height || 170;
    const padL = 44, padR = 10, padT = 10, padB = 20;
    const samples = feed.samples;
    const end = samples.length ? Math.max(samples[samples.length - 1].time, Date.now() - 1000 * feed.interval) : Date.now();
    const kept = feed.interval * feed.capacity * 1000;
    const held = samples.length ? end - samples[0].time : 0;
    let [span, tick] = [kept, 10 * 60 * 1000];
    for (const [m, t] of SPANS) {
      if (m * 60000 >= Math.min(held, kept)) { span = Math.min(m * 60000, kept); tick = t * 60000; break; }
    }
    const t0 = end - span;
    let max = 0;
    for (const p of samples) for (const sr of series) max = Math.max(max, p[sr.key]);
    max = 4 * niceStep((max || 1) / 4);
    const x = (t) => padL + ((W - padL - padR) * (t - t0)) / span;
    const y = (v) => padT + (H - padT - padB) * (1 - v / max);
    const el = s("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "chart", role: "img", "aria-label": opts.label, id: opts.id });
    for (let i = 0; i <= 4; i++) {
      const v = (max * (4 - i)) / 4, yy = y(v);
      el.append(s("line", { x1: padL, x2: W - padR, y1: yy, y2: yy, class: "grid" }), s("text", { x: padL - 6, y: yy + 4, class: "axis", "text-anchor": "end" }, shortNum(v)));
    }
    for (let t = Math.ceil(t0 / tick) * tick; t <= end; t += tick) {
      el.append(s("line", { x1: x(t), x2: x(t), y1: padT, y2: H - padB, class: "grid" }), s("text", { x: x(t), y: H - 5, class: "axis", "text-anchor": "middle" }, hhmm(t)));
    }
    if (samples.length === 0) {
      el.append(s("text", { x: W / 2, y: H / 2, class: "axis", "text-anchor": "middle" },
        feed.tracked ? "No samples yet: the broker samples every " + feed.interval + " s." : "No history for this destination."));
    }
    const gap = 2.5 * feed.interval * 1000;
    for (const sr of series) {
      let d = "";
      samples.forEach((p, i) => {
        const cmd = i === 0 || p.time - samples[i - 1].time > gap ? "M" : "L";
        d += cmd + x(p.time).toFixed(1) + " " + y(p[sr.key]).toFixed(1) + " ";
      });
      if (d) el.append(s("path", { d, class: "series " + sr.cls, dataset: { series: sr.key }, "data-points": samples.length }));
    }
    // Hover: the nearest sample's values.
    const cursor = s("line", { y1: padT, y2: H - padB, class: "cursor", visibility: "hidden" });
    const tip = s("g", { class: "tip", visibility: "hidden" });
    const overlay = s("rect", { x: padL, y: padT, width: W - padL - padR, height: H - padT - padB, class: "overlay" });
    overlay.addEventListener("mousemove", (ev) => {
      if (!samples.length) return;
      const r = el.getBoundingClientRect();
      const t = t0 + ((ev.clientX - r.left - padL) / (W - padL - padR)) * span;
      let best = samples[0];
      for (const p of samples) if (Math.abs(p.time - t) < Math.abs(best.time - t)) best = p;
      const xx = x(best.time);
      cursor.setAttribute("x1", xx);
      cursor.setAttribute("x2", xx);
      cursor.setAttribute("visibility", "visible");
      const lines = [hhmm(best.time) + new Date(best.time).toISOString().slice(16, 19) + " UTC",
        ...series.map((sr) => sr.label + ": " + (sr.key === "messages" ? fmtNum(best[sr.key]) : fmtRate(best[sr.key]) + "/s"))];
      tip.replaceChildren(s("rect", { x: 0, y: 0, width: 150, height: 8 + 15 * lines.length, rx: 4, class: "tip-box" }),
        ...lines.map((l, i) => s("text", { x: 8, y: 17 + 15 * i }, l)));
      const tx = xx + 160 > W ? xx - 160 : xx + 10;
      tip.setAttribute("transform", "translate(" + tx + "," + (padT + 4) + ")");
      tip.setAttribute("visibility", "visible");
    });
    overlay.addEventListener("mouseleave", () => { cursor.setAttribute("visibility", "hidden"); tip.setAttribute("visibility", "hidden"); });
    el.append(cursor, overlay, tip);
    box.replaceChildren(el);
    return span;
  }

  function legend(series) {
    return h("div", { class: "legend" }, series.map((sr) => h("span", { class: sr.cls }, sr.label)));
  }

  // chartCard is a card with a title, legend and a chart box; draw(feed)
  // redraws it.
  function chartCard(title, series, id) {
    const box = h("div", { class: "chart-box" });
    const span = h("span", { class: "muted span" });
    const card = h("div", { class: "card chart-card" },
      h("div", { class: "toolbar" }, h("h2", { class: "grow" }, title, " ", span), legend(series)), box);
    card.draw = (feed) => {
      const ms = chart(box, feed, series, { label: title, id });
      span.textContent = "last " + (ms >= 3600000 ? (ms / 3600000) + " h" : (ms / 60000) + " min");
    };
    return card;
  }

  // ---------------------------------------------------------------- login

  function showLogin() {
    clearTimers();
    main.replaceChildren();
    document.getElementById("login").hidden = false;
    document.getElementById("nav").hidden = true;
    document.getElementById("login-user").focus();
  }

  document.getElementById("login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const err = document.getElementById("login-error");
    err.textContent = "";
    try {
      const r = await api("POST", "/api/login", {
        user: document.getElementById("login-user").value,
        password: document.getElementById("login-password").value,
      });
      document.getElementById("login-password").value = "";
      setUser(r);
      document.getElementById("login").hidden = true;
      document.getElementById("nav").hidden = false;
      await loadCluster();
      route();
    } catch (e) {
      err.textContent = e.status === 401 ? "Wrong user name or password." : e.message;
    }
  });

  document.getElementById("logout").addEventListener("click", async () => {
    await api("POST", "/api/logout", {});
    setUser({ user: "", authRequired: true });
    showLogin();
  });

  function setUser(r) {
    state.user = r.user;
    state.authRequired = r.authRequired;
    state.role = r.role || "";
    const who = document.getElementById("who");
    who.replaceChildren(r.user ? "Logged in as " + r.user : (r.authRequired ? "" : "No authentication configured (loopback only)"));
    if (r.user && state.role === "monitor") {
      who.append(" ", h("span", { class: "badge gray", id: "read-only", title: "The monitor role may look but not change anything" }, "read-only"));
    }
    document.getElementById("logout").hidden = !r.user;
    state.clustered = !!r.cluster;
    document.getElementById("nav-cluster").hidden = !state.clustered;
  }

  // readOnlyNote says why a page has no buttons to change things.
  function readOnlyNote(what) {
    return h("p", { class: "muted read-only-note" }, "Read-only: your role (monitor) cannot " + what + ".");
  }

  // ---------------------------------------------------------------- router

  function clearTimers() {
    timers.forEach(clearInterval);
    timers = [];
  }

  // redraws are the current page's chart redraws, run when the window is
  // resized.
  let redraws = [];
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => redraws.forEach((fn) => fn()), 150);
  });

  function route() {
    clearTimers();
    redraws = [];
    followerShown = false;
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    const page = parts[0] || "overview";
    const destPages = ["queue", "topic", "temp-queue", "temp-topic"];
    for (const a of document.querySelectorAll("#nav a")) {
      const p = a.dataset.page;
      a.classList.toggle("active", p === page || (p === "destinations" && destPages.includes(page)) || (p === "subscriptions" && page === "subscription"));
    }
    main.replaceChildren();
    if (page === "cluster") return clusterPage();
    if (state.cluster && !state.cluster.serving && page !== "node") return followerPage(page);
    if (destPages.includes(page)) return destinationPage(page, parts.slice(1).join("/"));
    switch (page) {
      case "overview": return overviewPage();
      case "destinations": return destinationsPage();
      case "subscription": return subscriptionPage(parts[1], parts.slice(2).join("/"));
      case "subscriptions": return subscriptionsPage();
      case "connections": return connectionsPage();
      case "node": return nodePage();
      default: main.append(h("p", null, "No such page."));
    }
  }
  window.addEventListener("hashchange", route);

  // ---------------------------------------------------------------- overview

  function overviewPage() {
    const cards = h("div", { class: "cards", id: "overview-cards" });
    const rates = chartCard("Messages per second", RATES, "rates-chart");
    const depth = chartCard("Waiting messages", DEPTH, "depth-chart");
    const note = h("p", { class: "muted", id: "history-note" });
    const flow = h("p", { class: "error", id: "flow-banner", hidden: true });
    main.append(h("h1", null, "Overview"), flow, cards, h("div", { class: "charts" }, rates, depth), note, h("p", { class: "muted", id: "overview-meta" }));
    const feed = historyFeed("/api/history");
    const draw = () => { rates.draw(feed); depth.draw(feed); };
    redraws.push(draw);
    every(2000, async () => {
      let o;
      try { o = await api("GET", "/api/overview"); } catch (e) { quiet(e); return; }
      const last = feed.samples.length ? feed.samples[feed.samples.length - 1] : { enqueued: 0, delivered: 0, acknowledged: 0 };
      cards.replaceChildren(
        stat("Messages", fmtNum(o.messages), "stat-messages"),
        stat("In flight", fmtNum(o.inFlight)),
        stat("Scheduled", fmtNum(o.scheduled)),
        stat("Enqueued / s", fmtRate(last.enqueued), "stat-enqueued-rate", "In the last sampling interval"),
        stat("Delivered / s", fmtRate(last.delivered), "stat-delivered-rate"),
        stat("Acknowledged / s", fmtRate(last.acknowledged), "stat-acked-rate"),
        stat("Queues", fmtNum(o.queues), "stat-queues"),
        stat("Topics", fmtNum(o.topics)),
        stat("Durable subscriptions", fmtNum(o.durableSubscriptions)),
        stat("Connections", fmtNum(o.connections), "stat-connections"),
        stat("Consumers", fmtNum(o.consumers)),
        stat("Stored bytes", fmtBytes(o.bytes)),
        stat("Producers", o.flow.blocked ? "held (" + o.flow.reasons.join(", ") + ")" : "flowing", "stat-flow",
          "Flow control holds producers while the memory budget or the disk watermark is reached"),
        stat("Memory", o.flow.memoryLimit ? fmtBytes(o.flow.memoryUsed) + " of " + fmtBytes(o.flow.memoryLimit) : "no limit", "stat-memory",
          "Message memory (the Go heap) against [limits] memory_limit"));
      flow.hidden = !o.flow.blocked;
      flow.textContent = o.flow.blocked
        ? "Producers are held since " + o.flow.since + ": " + o.flow.reasons.map((r) => r === "memory"
          ? "the memory budget is reached (" + fmtBytes(o.flow.memoryUsed) + " of " + fmtBytes(o.flow.memoryLimit) + ")"
          : "the data directory is short of space (" + fmtBytes(o.flow.diskFree) + " free, " + fmtBytes(o.flow.diskFreeLimit) + " needed)").join("; ") +
          ". They resume by themselves once consumers have made room."
        : "";
      document.getElementById("overview-meta").textContent =
        "Sluice " + o.version + " · up " + fmtDuration(o.uptimeSeconds) + " · " + (o.ready ? "ready" : "starting");
    });
    every(feed.interval * 1000, async () => {
      try { await feed.load(); } catch (e) { quiet(e); return; }
      note.textContent = "Sampled by the broker every " + feed.interval + " s; the last " + fmtDuration(feed.interval * feed.capacity) + " are kept." +
        (feed.untracked ? " " + plural(feed.untracked, "destination") + " over the limit have no history of their own." : "");
      draw();
    });
  }

  // ---------------------------------------------------------------- destinations

  const DEST_COLUMNS = [
    { key: "kind", label: "Kind" },
    { key: "name", label: "Name" },
    { key: "messages", label: "Messages", num: true, title: "Depth: ready + scheduled + in flight" },
    { key: "ready", label: "Ready", num: true },
    { key: "inFlight", label: "In flight", num: true },
    { key: "scheduled", label: "Scheduled", num: true, wide: true },
    { key: "consumers", label: "Consumers", num: true },
    { key: "enqueued", label: "Enqueued", num: true },
    { key: "delivered", label: "Delivered", num: true, wide: true, title: "Deliveries to consumers, redeliveries included" },
    { key: "dequeued", label: "Acked", num: true, title: "Acknowledged by consumers" },
    { key: "expired", label: "Expired", num: true, wide: true },
    { key: "redelivered", label: "Redelivered", num: true, wide: true },
    { key: "bytes", label: "Size", num: true, wide: true },
  ];

  function destinationsPage() {
    const body = h("div", { id: "destinations-table" });
    const kind = h("select", { id: "create-kind" }, h("option", { value: "queue" }, "queue"), h("option", { value: "topic" }, "topic"));
    const name = h("input", { id: "create-name", placeholder: "name, e.g. orders", required: true });
    const form = h("form", { class: "toolbar", id: "create-form", onsubmit: async (ev) => {
      ev.preventDefault();
      try {
        const d = await api("POST", "/api/destinations", { kind: kind.value, name: name.value });
        toast("Created " + d.destination);
        name.value = "";
        refresh();
      } catch (e) { toast(e.message, true); }
    } }, h("strong", null, "Create"), kind, name, h("button", { class: "primary", type: "submit", id: "create-submit" }, "Create"));

    const filter = h("input", { id: "dest-filter", type: "search", placeholder: "filter by name", value: destView.filter, class: "grow",
      oninput: () => { destView.filter = filter.value; destView.page = 0; render(); } });
    const kindSel = h("select", { id: "dest-kind", onchange: () => { destView.kind = kindSel.value; destView.page = 0; render(); } },
      [["", "all kinds"], ["queue", "queues"], ["topic", "topics"], ["temporary", "temporary"]].map(([v, l]) => h("option", { value: v, selected: destView.kind === v }, l)));
    const size = h("select", { id: "dest-size", title: "Rows per page", onchange: () => { destView.size = Number(size.value); destView.page = 0; render(); } },
      [25, 50, 100, 500].map((n) => h("option", { value: n, selected: destView.size === n }, n + " a page")));
    const info = h("span", { class: "muted", id: "dest-info" });
    const prev = h("button", { id: "dest-prev", onclick: () => { destView.page = Math.max(0, destView.page - 1); render(); } }, "‹ Previous");
    const next = h("button", { id: "dest-next", onclick: () => { destView.page++; render(); } }, "Next ›");

    main.append(h("h1", null, "Destinations"),
      canChange() ? h("div", { class: "card" }, form) : readOnlyNote("create, purge or delete destinations"),
      h("div", { class: "toolbar" }, filter, kindSel, size),
      body,
      h("div", { class: "pager" }, prev, next, info));

    let all = [];
    function matches(d) {
      if (destView.kind === "temporary" ? !d.temporary : destView.kind && d.kind !== destView.kind) return false;
      return !destView.filter || d.name.toLowerCase().includes(destView.filter.toLowerCase());
    }
    function sortBy(key) {
      if (destView.sort === key) destView.desc = !destView.desc;
      else { destView.sort = key; destView.desc = DEST_COLUMNS.find((c) => c.key === key).num === true; }
      destView.page = 0;
      render();
    }
    function render() {
      const col = DEST_COLUMNS.find((c) => c.key === destView.sort) || DEST_COLUMNS[1];
      const shown = all.filter(matches);
      shown.sort((a, b) => {
        const x = a[col.key], y = b[col.key];
        const c = col.num ? x - y : String(x).localeCompare(String(y));
        return (destView.desc ? -c : c) || a.name.localeCompare(b.name);
      });
      const pages = Math.max(1, Math.ceil(shown.length / destView.size));
      destView.page = Math.min(destView.page, pages - 1);
      const from = destView.page * destView.size;
      const rows = shown.slice(from, from + destView.size).map((d) => {
        const isQueue = d.kind === "queue" || d.kind === "temp-queue";
        return h("tr", { dataset: { dest: d.destination } },
          h("td", null, h("span", { class: "badge" + (d.kind.endsWith("topic") ? " orange" : "") }, d.kind)),
          h("td", { class: "name" }, h("a", { href: destHash(d.kind, d.name), class: "dest-link" }, d.name)),
          DEST_COLUMNS.slice(2, -1).map((c) => num(d[c.key], c.wide ? "wide" : "")),
          h("td", { class: "num wide" }, fmtBytes(d.bytes)),
          h("td", { class: "actions" },
            isQueue && canChange() ? h("button", { class: "small", onclick: () => purge(d) }, "Purge") : null, " ",
            d.temporary || !canChange() ? null : h("button", { class: "small danger", onclick: () => del(d) }, "Delete")));
      });
      const head = h("tr", null, DEST_COLUMNS.map((c) => {
        const on = c.key === destView.sort;
        return h("th", { class: (c.num ? "num " : "") + (c.wide ? "wide " : "") + "sortable" + (on ? " sorted" : ""), title: c.title,
          "aria-sort": on ? (destView.desc ? "descending" : "ascending") : "none", dataset: { sort: c.key }, onclick: () => sortBy(c.key) },
        c.label, on ? (destView.desc ? " ▼" : " ▲") : "");
      }), h("th", null, ""));
      const tbody = h("tbody", null, rows);
      if (rows.length === 0) {
        tbody.append(h("tr", null, h("td", { colspan: DEST_COLUMNS.length + 1, class: "empty" },
          all.length ? "No destination matches the filter." : "No destinations: create one above.")));
      }
      body.replaceChildren(h("div", { class: "table-wrap" }, h("table", { class: "destinations" }, h("thead", null, head), tbody)));
      info.textContent = shown.length ? (from + 1) + "–" + Math.min(from + destView.size, shown.length) + " of " + shown.length +
        (shown.length < all.length ? " (" + all.length + " in all)" : "") + " · page " + (destView.page + 1) + " of " + pages : "";
      prev.disabled = destView.page === 0;
      next.disabled = destView.page >= pages - 1;
    }
    async function refresh() {
      try { all = await api("GET", "/api/destinations"); } catch (e) { quiet(e); return; }
      render();
    }
    async function purge(d) {
      if (!confirm("Delete every waiting message of " + d.destination + "?")) return;
      try { const r = await api("POST", destPath(d.kind, d.name) + "/purge"); toast("Purged " + plural(r.purged, "message")); refresh(); }
      catch (e) { toast(e.message, true); }
    }
    async function del(d) {
      if (!confirm("Delete " + d.destination + " with its messages and subscriptions?")) return;
      try { await api("DELETE", destPath(d.kind, d.name)); toast("Deleted " + d.destination); refresh(); }
      catch (e) { toast(e.message, true); }
    }
    every(3000, refresh);
  }

  // ---------------------------------------------------------------- one destination

  // destinationPage is a queue's or topic's page: its counters, an hour
  // of rates and depth, and tabs: messages (queues) or subscriptions
  // (topics), publish and get (administrators), policy.
  function destinationPage(kind, name) {
    const isQueue = kind === "queue" || kind === "temp-queue";
    const path = destPath(kind, name);
    const label = { queue: "Queue", topic: "Topic", "temp-queue": "Temporary queue", "temp-topic": "Temporary topic" }[kind];
    const stats = h("div", { class: "cards compact", id: "dest-stats" });
    const rates = chartCard("Messages per second", RATES, "dest-rates");
    const depth = chartCard("Waiting messages", DEPTH, "dest-depth");
    const tabs = [];
    const bar = h("div", { class: "tabs", role: "tablist" });
    const panels = h("div", { class: "panels" });
    function tab(id, title, build) {
      const panel = h("div", { class: "panel", id: "panel-" + id, hidden: true });
      const btn = h("button", { class: "tab", role: "tab", id: "tab-" + id, type: "button", onclick: () => select(id) }, title);
      tabs.push({ id, btn, panel, build, built: false });
      bar.append(btn);
      panels.append(panel);
    }
    function select(id) {
      for (const t of tabs) {
        const on = t.id === id;
        t.btn.classList.toggle("active", on);
        t.btn.setAttribute("aria-selected", on ? "true" : "false");
        t.panel.hidden = !on;
        if (on && !t.built) { t.built = true; t.build(t.panel); }
      }
    }
    if (isQueue) tab("messages", "Messages", (p) => messagesView({ kind, name }, p));
    else tab("subscriptions", "Subscriptions", (p) => topicSubscriptions(name, p));
    if (canChange()) {
      tab("publish", "Publish", (p) => publishView(kind, name, p, () => refreshStats()));
      if (isQueue) tab("get", "Get", (p) => getView(kind, name, p, () => refreshStats()));
    }
    tab("policy", "Policy", (p) => policyView(kind, name, p));

    main.append(
      h("div", { class: "crumbs" }, h("a", { href: "#/destinations" }, "Destinations"), " › ", name),
      h("h1", { id: "messages-title" }, label + " " + name),
      stats,
      h("div", { class: "charts" }, rates, depth),
      bar, panels);
    select(tabs[0].id);

    const feed = historyFeed(path + "/history");
    const draw = () => { rates.draw(feed); depth.draw(feed); };
    redraws.push(draw);
    async function refreshStats() {
      let d;
      try { d = await api("GET", path); } catch (e) {
        if (e.status === 404) { stats.replaceChildren(h("p", { class: "error" }, e.message)); return; }
        quiet(e);
        return;
      }
      const last = feed.samples.length ? feed.samples[feed.samples.length - 1] : null;
      stats.replaceChildren(...[
        stat("Messages", fmtNum(d.messages), "dest-messages", "Ready + scheduled + in flight"),
        stat("Ready", fmtNum(d.ready)),
        stat("In flight", fmtNum(d.inFlight)),
        stat("Scheduled", fmtNum(d.scheduled)),
        stat("Consumers", fmtNum(d.consumers)),
        isQueue ? null : stat("Subscriptions", fmtNum(d.subscriptions)),
        stat("Enqueued / s", last ? fmtRate(last.enqueued) : "–"),
        stat("Delivered / s", last ? fmtRate(last.delivered) : "–"),
        stat("Enqueued", fmtNum(d.enqueued), null, "Since it was created or the broker started"),
        stat("Acknowledged", fmtNum(d.dequeued)),
        stat("Redelivered", fmtNum(d.redelivered)),
        stat("Size", fmtBytes(d.bytes)),
        stat("Oldest ready", d.oldestTimestamp ? fmtAgo(d.oldestTimestamp).replace(" ago", "") : "–", null, d.oldestTimestamp ? fmtTime(d.oldestTimestamp) + " UTC" : null),
      ].filter(Boolean));
    }
    every(3000, refreshStats);
    every(5000, async () => {
      try { await feed.load(); } catch (e) { if (e.status !== 404) quiet(e); return; }
      draw();
    });
  }

  function topicSubscriptions(topic, root) {
    const body = h("div", { id: "topic-subscriptions" });
    root.append(body);
    const refresh = async () => {
      if (root.hidden) return;
      let subs;
      try { subs = await api("GET", "/api/subscriptions"); } catch (e) { quiet(e); return; }
      const rows = subs.filter((x) => x.topic === "/topic/" + topic).map((x) => h("tr", null,
        h("td", null, x.durable ? h("a", { href: "#/subscription/" + encodeURIComponent(x.clientId || "-") + "/" + encodeURIComponent(x.name) }, x.name) : (x.name || h("span", { class: "muted" }, "(non-durable)"))),
        h("td", null, x.clientId || h("span", { class: "muted" }, "(none)")),
        h("td", { class: "mono" }, x.selector),
        h("td", null, [x.durable ? "durable" : "", x.shared ? "shared" : ""].filter(Boolean).join(", ")),
        h("td", null, x.active ? h("span", { class: "badge green" }, "active (" + x.consumers + ")") : h("span", { class: "badge gray" }, "inactive")),
        num(x.pending), num(x.inFlight), num(x.enqueued), num(x.dequeued)));
      body.replaceChildren(table(["Name", "Client ID", "Selector", "Kind", "State", "Pending#", "In flight#", "Enqueued#", "Acked#"], rows, "No subscriptions: messages published now go nowhere."));
    };
    refresh();
    timers.push(setInterval(refresh, 3000));
  }

  // publishView is the form that sends a test message.
  function publishView(kind, name, root, changed) {
    const propRows = h("div", { class: "props", id: "publish-props" });
    const TYPES = ["string", "int", "long", "double", "boolean", "short", "byte", "float"];
    function addProp(n, t, v) {
      const row = h("div", { class: "prop-row" },
        h("input", { class: "prop-name", placeholder: "name", value: n || "" }),
        h("select", { class: "prop-type" }, TYPES.map((x) => h("option", { value: x, selected: x === (t || "string") }, x))),
        h("input", { class: "prop-value", placeholder: "value", value: v || "" }),
        h("button", { type: "button", class: "small", title: "Remove", onclick: () => row.remove() }, "✕"));
      propRows.append(row);
    }
    const field = (label, input) => h("label", { class: "field" }, h("span", null, label), input);
    const body = h("textarea", { id: "publish-body", rows: 5, placeholder: "message body" });
    const enc = h("select", { id: "publish-encoding" }, h("option", { value: "text" }, "text"), h("option", { value: "base64" }, "base64 (bytes)"));
    const corr = h("input", { id: "publish-correlation", placeholder: "JMSCorrelationID" });
    const type = h("input", { id: "publish-type", placeholder: "JMSType" });
    const replyTo = h("input", { id: "publish-reply-to", placeholder: "/queue/replies" });
    const prio = h("select", { id: "publish-priority" }, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((p) => h("option", { value: p, selected: p === 4 }, p)));
    const mode = h("select", { id: "publish-mode" }, h("option", { value: "PERSISTENT" }, "persistent"), h("option", { value: "NON_PERSISTENT" }, "non-persistent"));
    const ttl = h("input", { id: "publish-ttl", type: "number", min: 0, placeholder: "0 = never expires" });
    const delay = h("input", { id: "publish-delay", type: "number", min: 0, placeholder: "0 = at once" });
    const result = h("p", { class: "muted", id: "publish-result", role: "status" });
    const form = h("form", { class: "card publish", id: "publish-form", onsubmit: async (ev) => {
      ev.preventDefault();
      const req = { body: body.value, bodyEncoding: enc.value, priority: Number(prio.value), deliveryMode: mode.value };
      if (corr.value) req.correlationId = corr.value;
      if (type.value) req.type = type.value;
      if (replyTo.value) req.replyTo = replyTo.value;
      if (ttl.value) req.timeToLive = Number(ttl.value);
      if (delay.value) req.deliveryDelay = Number(delay.value);
      const props = [];
      for (const row of propRows.querySelectorAll(".prop-row")) {
        const n = row.querySelector(".prop-name").value.trim();
        if (!n) continue;
        const t = row.querySelector(".prop-type").value;
        let v = row.querySelector(".prop-value").value;
        if (["int", "short", "byte", "double", "float"].includes(t)) v = Number(v);
        else if (t === "boolean") v = v === "true";
        props.push({ name: n, type: t, value: v });
      }
      if (props.length) req.properties = props;
      try {
        const r = await api("POST", destPath(kind, name) + "/messages/publish", req);
        result.replaceChildren("Published ", h("span", { class: "mono" }, r.id), " to " + r.destination + " at " + fmtTime(Date.now()) + " UTC.");
        toast("Published " + r.id);
        changed();
      } catch (e) { result.textContent = ""; toast(e.message, true); }
    } },
    h("h2", null, "Publish a test message"),
    h("p", { class: "muted" }, "Sent as a client would send it: the destination's policy applies and the broker assigns the JMSMessageID and timestamp."),
    h("div", { class: "form-grid" },
      field("Correlation ID", corr), field("Type", type), field("Reply to", replyTo),
      field("Priority", prio), field("Delivery mode", mode), field("Time to live (ms)", ttl), field("Delivery delay (ms)", delay)),
    h("div", { class: "toolbar" }, h("strong", { class: "grow" }, "Properties"),
      h("button", { type: "button", class: "small", id: "publish-prop-add", onclick: () => addProp() }, "+ Property")),
    propRows,
    h("div", { class: "toolbar" }, h("strong", { class: "grow" }, "Body"), h("label", { class: "field inline" }, h("span", null, "encoding"), enc)),
    body,
    h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary", id: "publish-submit" }, "Publish"), result));
    root.append(form);
  }

  // getView consumes one message from a queue, after saying so.
  function getView(kind, name, root, changed) {
    const sel = h("input", { id: "get-selector", class: "grow", placeholder: "selector (optional), e.g. JMSPriority > 4" });
    const timeout = h("input", { id: "get-timeout", type: "number", min: 0, max: 60000, value: 1000, title: "How long to wait for a message (ms)" });
    const result = h("div", { id: "get-result" });
    root.append(h("div", { class: "card" },
      h("h2", null, "Get one message"),
      h("p", { class: "warn-note" }, "Get consumes the message: it is acknowledged and removed from the queue. To look without taking it, use Messages."),
      h("div", { class: "toolbar" }, sel, h("label", { class: "field inline" }, h("span", null, "wait (ms)"), timeout),
        h("button", { class: "danger", id: "get-submit", onclick: async () => {
          if (!confirm("Consume the next message of " + name + "? It is removed from the queue.")) return;
          const req = { timeout: Number(timeout.value) || 0 };
          if (sel.value.trim()) req.selector = sel.value.trim();
          try {
            const r = await api("POST", destPath(kind, name) + "/messages/get", req);
            if (!r.message) { result.replaceChildren(h("p", { class: "muted", id: "get-none" }, "No message within " + req.timeout + " ms.")); return; }
            toast("Consumed " + r.message.id);
            result.replaceChildren(messageDetail(r.message));
            changed();
          } catch (e) { toast(e.message, true); }
        } }, "Get and consume"))),
    result);
  }

  // policyView shows the destination's effective policy.
  function policyView(kind, name, root) {
    const box = h("div", { id: "policy" });
    root.append(box);
    (async () => {
      let p;
      try { p = await api("GET", destPath(kind, name) + "/policy"); } catch (e) { quiet(e); return; }
      const src = (v) => h("span", { class: "badge" + (v.source.startsWith("destination") ? " orange" : v.source === "default" ? " gray" : "") }, v.source);
      const rows = p.values.map((v) => h("tr", { dataset: { setting: v.name } },
        h("td", { class: "mono" }, v.name),
        h("td", { class: "mono" }, v.value === "" ? h("span", { class: "muted" }, "none") : v.value, v.override ? h("span", { class: "muted", title: "Replaces what producers and sessions set" }, " (override)") : null),
        h("td", null, src(v)),
        h("td", { class: "mono muted" }, v.key || "")));
      box.replaceChildren(h("div", { class: "card" },
        h("h2", null, "Effective policy"),
        h("p", { id: "policy-section" }, p.section >= 0
          ? ["The ", h("code", null, "[[destination]]"), " section destination[" + p.section + "] applies (match ", h("code", null, p.match), p.kind ? ", kind " + p.kind : "", "): the first that fits."]
          : ["No ", h("code", null, "[[destination]]"), " section applies: the connection factory's and the built-in defaults do."]),
        table(["Setting", "Value", "Source", "Configuration key"], rows, "", { id: "policy-table" }),
        h("p", { class: "muted" }, "Connection-factory values are defaults a producer may change per message; a section's overrides replace them.")));
    })();
  }

  // ---------------------------------------------------------------- messages

  function subscriptionPage(clientId, sub) {
    const title = "Durable subscription " + sub + " (client ID " + (clientId === "-" ? "none" : clientId) + ")";
    main.append(
      h("div", { class: "crumbs" }, h("a", { href: "#/subscriptions" }, "Durable subscriptions"), " › ", sub),
      h("h1", { id: "messages-title" }, title));
    messagesView({ clientId, sub }, main);
  }

  // messagesView browses, moves, deletes, exports and imports the waiting
  // messages of a queue or durable subscription, into root.
  function messagesView(target, root) {
    const isSub = target.sub !== undefined;
    const base = isSub ? subPath(target.clientId === "-" ? "" : target.clientId, target.sub) : destPath(target.kind, target.name);
    let offset = 0;
    const limit = 50;
    const selected = new Set();
    let page = { total: 0, messages: [] };

    const selector = h("input", { id: "selector", class: "grow", placeholder: "selector, e.g. JMSPriority > 4 AND color = 'red'" });
    const sort = h("select", { id: "sort" },
      h("option", { value: "" }, "delivery order"),
      ["JMSTimestamp", "-JMSTimestamp", "-JMSPriority", "JMSPriority", "JMSMessageID", "JMSCorrelationID", "JMSType", "-JMSXDeliveryCount", "JMSExpiration", "-size"]
        .map((f) => h("option", { value: f }, f.startsWith("-") ? f.slice(1) + " ↓" : f + " ↑")));
    const moveTo = h("input", { id: "move-to", placeholder: "/queue/other" });
    const info = h("span", { class: "muted", id: "page-info" });
    const listing = h("div", { id: "messages-table" });
    const detail = h("div", { id: "message-detail" });
    const fileInput = h("input", { type: "file", id: "import-file", accept: ".ndjson,.jsonl,.json,application/x-ndjson" });

    root.append(
      h("div", { class: "card" },
        h("form", { class: "toolbar", onsubmit: (ev) => { ev.preventDefault(); offset = 0; selected.clear(); load(); } },
          selector, sort, h("button", { type: "submit", class: "primary", id: "apply" }, "Apply")),
        canChange() ? h("div", { class: "toolbar" },
          h("strong", null, "Selected:"),
          moveTo, h("button", { id: "move-selected", onclick: () => act("move", true) }, "Move selected"),
          h("button", { id: "delete-selected", class: "danger", onclick: () => act("delete", true) }, "Delete selected"),
          h("span", { class: "muted sep" }, "│"),
          h("button", { id: "move-matching", onclick: () => act("move", false) }, "Move all matching"),
          h("button", { id: "delete-matching", class: "danger", onclick: () => act("delete", false) }, "Delete all matching")) : null,
        h("div", { class: "toolbar" },
          h("button", { id: "export", onclick: exportMessages }, "Export matching (.ndjson)"),
          canChange() ? [h("span", { class: "muted sep" }, "│"), fileInput, h("button", { id: "import", onclick: importMessages }, "Import file")] : null),
        canChange() ? null : readOnlyNote("move, delete or import messages")),
      listing,
      h("div", { class: "pager" },
        h("button", { id: "prev", onclick: () => { offset = Math.max(0, offset - limit); load(); } }, "‹ Previous"),
        h("button", { id: "next", onclick: () => { if (offset + limit < page.total) { offset += limit; load(); } } }, "Next ›"),
        info),
      detail);

    function query(extra) {
      const p = new URLSearchParams();
      if (selector.value.trim()) p.set("selector", selector.value.trim());
      if (sort.value) p.set("sort", sort.value);
      for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
      return p.toString();
    }

    async function load() {
      try {
        page = await api("GET", base + "/messages?" + query({ offset, limit }));
      } catch (e) {
        if (e.status !== 401) {
          listing.replaceChildren(h("p", { class: "error", id: "messages-error" }, e.message));
          info.textContent = "";
        }
        return;
      }
      render();
    }

    function render() {
      const all = h("input", { type: "checkbox", id: "select-all", title: "select this page", onchange: (ev) => {
        for (const m of page.messages) ev.target.checked ? selected.add(m.id) : selected.delete(m.id);
        render();
      } });
      all.checked = page.messages.length > 0 && page.messages.every((m) => selected.has(m.id));
      const rows = page.messages.map((m) => {
        const box = h("input", { type: "checkbox", class: "pick", checked: selected.has(m.id), onchange: (ev) => {
          ev.target.checked ? selected.add(m.id) : selected.delete(m.id);
          ev.target.closest("tr").classList.toggle("selected", ev.target.checked);
        } });
        return h("tr", { class: selected.has(m.id) ? "selected" : "", dataset: { id: m.id } },
          canChange() ? h("td", null, box) : null,
          h("td", { class: "mono" }, h("a", { href: "#", onclick: (ev) => { ev.preventDefault(); showDetail(m.id); } }, m.id)),
          h("td", { class: "num" }, m.priority),
          h("td", { class: "mono", title: fmtAgo(m.timestamp) }, fmtTime(m.timestamp)),
          h("td", { class: "num" }, m.deliveryCount),
          h("td", null, m.scheduled ? h("span", { class: "badge orange", title: "deliverable at " + fmtTime(m.deliverAt) + " UTC" }, "scheduled") : h("span", { class: "badge green" }, "ready"),
            m.deliveryMode === "PERSISTENT" ? null : h("span", { class: "badge gray" }, "non-persistent")),
          h("td", null, m.type || "", m.correlationId ? h("div", { class: "muted mono" }, m.correlationId) : null),
          h("td", null, m.properties.map((p) => h("span", { class: "prop" }, p.name, "=", p.value === undefined ? "null" : String(p.value), h("i", null, ":" + p.type)))),
          h("td", { class: "body-preview mono" }, h("span", { class: "badge gray" }, m.bodyKind), m.bodyEncoding === "base64" ? h("span", { class: "badge gray", title: "Not readable text: shown in base64" }, "base64") : null,
            " ", m.body, m.bodyTruncated ? "…" : ""));
      });
      listing.replaceChildren(table([...(canChange() ? [""] : []), "JMSMessageID", "Prio#", "Timestamp (UTC)", "Deliveries#", "State", "Type / correlation", "Properties", "Body"], rows,
        "No waiting messages" + (selector.value.trim() ? " match this selector." : ".")));
      if (canChange()) listing.querySelector("th").replaceChildren(all);
      const to = Math.min(offset + limit, page.total);
      info.textContent = page.total ? (offset + 1) + "–" + to + " of " + page.total + (selected.size ? " · " + selected.size + " selected" : "") : "0 messages";
    }

    async function showDetail(id) {
      try {
        const r = await api("GET", base + "/messages?" + new URLSearchParams({ id, full: "true" }));
        const m = r.messages[0];
        detail.replaceChildren(m ? messageDetail(m) : h("div", { class: "card" }, h("p", null, "Message " + id + " is no longer waiting.")));
        detail.scrollIntoView({ behavior: "smooth" });
      } catch (e) { toast(e.message, true); }
    }

    async function act(what, onlySelected) {
      const req = {};
      if (onlySelected) {
        if (selected.size === 0) { toast("Select messages first.", true); return; }
        req.ids = Array.from(selected);
      } else if (selector.value.trim()) {
        req.selector = selector.value.trim();
      } else {
        req.all = true;
      }
      let what2 = onlySelected ? selected.size + " selected messages" : (req.all ? "every waiting message" : "every message matching the selector");
      if (what === "move") {
        if (!moveTo.value.trim()) { toast("Say where to move to, e.g. /queue/other.", true); moveTo.focus(); return; }
        req.to = moveTo.value.trim();
        if (!onlySelected && !confirm("Move " + what2 + " to " + req.to + "?")) return;
      } else if (!confirm("Delete " + what2 + "?")) return;
      try {
        const r = await api("POST", base + "/messages/" + what, req);
        toast(what === "move" ? "Moved " + plural(r.moved, "message") + " to " + req.to : "Deleted " + plural(r.deleted, "message"));
        selected.clear();
        load();
      } catch (e) { toast(e.message, true); }
    }

    async function exportMessages() {
      try {
        const res = await fetch(base + "/messages/export?" + query(), { headers: { "X-Sluice-Console": "1" }, credentials: "same-origin" });
        if (!res.ok) {
          const b = await res.json().catch(() => ({}));
          throw new APIError(res.status, b);
        }
        const blob = await res.blob();
        const a = h("a", { href: URL.createObjectURL(blob), download: (isSub ? target.sub : target.name) + ".ndjson" });
        document.body.append(a);
        a.click();
        a.remove();
        toast("Exported " + plural(Number(res.headers.get("X-Sluice-Messages")), "message"));
      } catch (e) { toast(e.message, true); }
    }

    async function importMessages() {
      const f = fileInput.files[0];
      if (!f) { toast("Choose an .ndjson file first.", true); return; }
      try {
        const r = await api("POST", base + "/messages/import", await f.text(), "application/x-ndjson");
        toast("Imported " + plural(r.imported, "message"));
        fileInput.value = "";
        load();
      } catch (e) { toast(e.message, true); }
    }

    load();
    timers.push(setInterval(() => { if (!root.hidden && selected.size === 0 && document.activeElement !== selector) load(); }, 5000));
  }

  // ---------------------------------------------------------------- subscriptions

  function subscriptionsPage() {
    const body = h("div", { id: "subscriptions-table" });
    main.append(h("h1", null, "Durable subscriptions"), canChange() ? "" : readOnlyNote("purge or delete subscriptions"), body);
    async function refresh() {
      let subs;
      try { subs = await api("GET", "/api/subscriptions?durable=true"); } catch (e) { quiet(e); return; }
      const rows = subs.map((x) => h("tr", null,
        h("td", null, x.clientId || h("span", { class: "muted" }, "(none)")),
        h("td", null, h("a", { href: "#/subscription/" + encodeURIComponent(x.clientId || "-") + "/" + encodeURIComponent(x.name) }, x.name)),
        h("td", null, h("a", { href: destHash("topic", x.topic.replace(/^\/topic\//, "")) }, x.topic)),
        h("td", { class: "mono" }, x.selector),
        h("td", null, x.noLocal ? "yes" : ""),
        h("td", null, x.shared ? "yes" : ""),
        h("td", null, x.active ? h("span", { class: "badge green" }, "active (" + x.consumers + ")") : h("span", { class: "badge gray" }, "inactive")),
        num(x.pending), num(x.inFlight), num(x.enqueued), num(x.dequeued),
        h("td", null,
          h("button", { class: "small", onclick: () => { location.hash = "#/subscription/" + encodeURIComponent(x.clientId || "-") + "/" + encodeURIComponent(x.name); } }, "Browse"), " ",
          canChange() ? [h("button", { class: "small", onclick: () => purge(x) }, "Purge"), " ",
            h("button", { class: "small danger", disabled: x.active, onclick: () => del(x) }, "Delete")] : null)));
      body.replaceChildren(table(["Client ID", "Name", "Topic", "Selector", "No local", "Shared", "State", "Pending#", "In flight#", "Enqueued#", "Acked#", ""], rows, "No durable subscriptions."));
    }
    async function purge(x) {
      if (!confirm("Delete every waiting message of subscription " + x.name + "?")) return;
      try { const r = await api("POST", subPath(x.clientId, x.name) + "/purge"); toast("Purged " + plural(r.purged, "message")); refresh(); }
      catch (e) { toast(e.message, true); }
    }
    async function del(x) {
      if (!confirm("Delete durable subscription " + x.name + " and its messages?")) return;
      try { await api("DELETE", subPath(x.clientId, x.name)); toast("Deleted subscription " + x.name); refresh(); }
      catch (e) { toast(e.message, true); }
    }
    every(3000, refresh);
  }

  // ---------------------------------------------------------------- connections

  function connectionsPage() {
    const body = h("div", { id: "connections-table" });
    main.append(h("h1", null, "Connections"), canChange() ? "" : readOnlyNote("close connections"), body);
    async function refresh() {
      let cs;
      try { cs = await api("GET", "/api/connections"); } catch (e) { quiet(e); return; }
      const rows = cs.map((c) => h("tr", { dataset: { conn: c.id } },
        num(c.id),
        h("td", null, c.clientId),
        h("td", { class: "conn-user" }, c.user || h("span", { class: "muted" }, "anonymous")),
        h("td", { class: "mono" }, c.remoteAddr),
        h("td", null, c.protocol),
        h("td", null, c.started ? h("span", { class: "badge green" }, "started") : h("span", { class: "badge gray" }, "stopped")),
        h("td", { class: "mono", title: fmtAgo(Date.parse(c.created)) }, c.created.replace("T", " ").replace(/\.\d+Z$/, "")),
        num(c.sessions.length), num(c.consumers),
        h("td", null, c.sessions.flatMap((x) => x.consumers.map((k) => h("div", { class: "mono" }, k.destination + (k.subscription ? " [" + k.subscription + "]" : "") + (k.selector ? " where " + k.selector : ""))))),
        h("td", null, canChange() ? h("button", { class: "small danger", onclick: () => closeConn(c) }, "Close") : null)));
      body.replaceChildren(table(["ID#", "Client ID", "User", "Remote address", "Protocol", "State", "Connected (UTC)", "Sessions#", "Consumers#", "Consuming from", ""], rows, "No client connections."));
    }
    async function closeConn(c) {
      if (!confirm("Close connection " + c.id + (c.clientId ? " (" + c.clientId + ")" : "") + "?")) return;
      try { await api("DELETE", "/api/connections/" + c.id); toast("Closed connection " + c.id); refresh(); }
      catch (e) { toast(e.message, true); }
    }
    every(3000, refresh);
  }

  // ---------------------------------------------------------------- node

  function nodePage() {
    const cards = h("div", { class: "cards", id: "node-cards" });
    const disk = h("div", { class: "card", id: "node-disk" });
    const meta = h("p", { class: "muted", id: "node-meta" });
    main.append(h("h1", null, "Node"), cards, disk, meta);
    every(5000, async () => {
      let n;
      try { n = await api("GET", "/api/node"); } catch (e) { quiet(e); return; }
      const opt = (v, f) => (v === null || v === undefined ? "–" : f(v));
      const d = n.data;
      cards.replaceChildren(
        stat("Uptime", fmtDuration(n.uptimeSeconds), "node-uptime", "Since " + n.started),
        stat("Memory (RSS)", opt(n.memory.rssBytes, fmtBytes), "node-rss", "Resident set size of the process"),
        stat("Go heap in use", fmtBytes(n.memory.heapAllocBytes), "node-heap", fmtBytes(n.memory.heapSysBytes) + " reserved; " + n.memory.gcCycles + " GC cycles"),
        stat("Goroutines", fmtNum(n.goroutines), "node-goroutines"),
        stat("Open files", opt(n.openFiles, fmtNum) + (n.maxOpenFiles ? " / " + fmtNum(n.maxOpenFiles) : ""), "node-files", "File descriptors and their limit"),
        stat("Store size", d ? fmtBytes(d.bytes) : "in memory", "node-store", d ? plural(d.files, "file") + " in the data directory" : null),
        stat("Disk free", d ? opt(d.freeBytes, fmtBytes) : "–", "node-free", d && d.totalBytes ? "of " + fmtBytes(d.totalBytes) : null),
        stat("Store commits", n.store ? fmtNum(n.store.commits) : "–", "node-commits", n.store ? fmtBytes(n.store.journalBytes) + " written to the journal" : null));
      if (d) {
        const used = d.totalBytes && d.freeBytes !== null ? 1 - d.freeBytes / d.totalBytes : null;
        const bar = h("div", { class: "meter" }, h("div", { class: "meter-fill" + (used > 0.9 ? " high" : "") }));
        if (used !== null) bar.firstChild.style.width = (100 * used).toFixed(1) + "%";
        disk.replaceChildren(h("h2", null, "Data directory"),
          h("p", null, h("code", { id: "node-data-path" }, d.path)),
          bar,
          h("p", { class: "muted" }, used === null ? "The file system's size is not known here."
            : fmtBytes(d.totalBytes - d.freeBytes) + " used of " + fmtBytes(d.totalBytes) + " (" + (100 * used).toFixed(0) + "%); the store takes " + fmtBytes(d.bytes) + "."));
      } else {
        disk.replaceChildren(h("p", { class: "muted" }, "This broker keeps nothing on disk."));
      }
      meta.textContent = "Sluice " + n.version + " · " + n.goVersion + " · " + n.os + "/" + n.arch + " · " + plural(n.cpus, "CPU") + " · pid " + n.pid;
    });
  }

  // ---------------------------------------------------------------- cluster

  // A cluster's follower has no engine: it serves the console, the
  // session, the cluster view and the node page; its other pages point to
  // the leader's console. followerShown is true while such a page is up.
  let followerShown = false;

  // loadCluster reads the node's view of the cluster, on a cluster node.
  async function loadCluster() {
    if (!state.clustered) { state.cluster = null; return; }
    try { state.cluster = await api("GET", "/api/cluster"); } catch (e) { quiet(e); }
  }

  // followerSeen is told that this node answered as a follower: the page
  // becomes the pointer to the leader, unless it is already that or the
  // cluster page.
  function followerSeen() {
    state.clustered = true;
    document.getElementById("nav-cluster").hidden = false;
    state.cluster = Object.assign({}, state.cluster || { members: [] }, { serving: false });
    const page = location.hash.replace(/^#\/?/, "").split("/")[0];
    if (!followerShown && page !== "cluster" && page !== "node") setTimeout(route, 0);
  }

  // consoleURL is the console of a member at its admin address; an
  // address without a host (or a wildcard one) is taken on this host.
  function consoleURL(addr) {
    const i = addr.lastIndexOf(":");
    let host = addr.slice(0, i);
    if (host === "" || host === "0.0.0.0" || host === "[::]" || host === "::") host = location.hostname;
    return location.protocol + "//" + host + ":" + addr.slice(i + 1) + "/";
  }

  function leaderOf(st) {
    return (st.members || []).find((m) => m.id === st.leader && st.leader);
  }

  // leaderPointer says where the leader's console is (the same page of
  // it when hash is given), or that none is known.
  function leaderPointer(st, hash) {
    const l = leaderOf(st);
    if (!st.leader) return h("p", { id: "leader-pointer" }, "No leader is known yet: an election is under way, or this node cannot reach a majority of the members.");
    if (!l || !l.admin) return h("p", { id: "leader-pointer" }, "The leader is ", h("strong", null, st.leader), "; its admin address is not in this node's configuration.");
    return h("p", { id: "leader-pointer" }, "The leader is ", h("strong", null, st.leader), ": its console is at ",
      h("a", { href: consoleURL(l.admin) + (hash || ""), id: "leader-link" }, l.admin), ".");
  }

  const PAGE_TITLES = { overview: "Overview", destinations: "Destinations", subscriptions: "Durable subscriptions", subscription: "Durable subscription",
    connections: "Connections", node: "Node", queue: "Queue", topic: "Topic", "temp-queue": "Temporary queue", "temp-topic": "Temporary topic" };

  // followerPage stands for page on a follower: where the leader is, and
  // the cluster page; it becomes page itself once this node leads.
  function followerPage(page) {
    followerShown = true;
    const box = h("div", { class: "card follower-note", id: "follower-note" });
    main.append(h("h1", null, PAGE_TITLES[page] || "Sluice"), box);
    const self = (st) => "This node" + (st.nodeId ? ", " + st.nodeId + "," : "");
    const show = (st) => box.replaceChildren(...(st.role === "leader"
      ? [h("p", null, self(st) + " has just become the leader: this page comes once its engine has opened.")]
      : [h("p", null, self(st) + " is a " + (st.role || "follower") +
        " of a cluster: only the leader has an engine, so the broker's destinations, connections and counters are on the leader's console."),
      leaderPointer(st, location.hash)]),
      h("p", null, h("a", { href: "#/cluster", id: "follower-cluster-link" }, "See the cluster from this node"), "."));
    show(state.cluster || {});
    every(2000, async () => {
      let st;
      try { st = await api("GET", "/api/cluster"); } catch (e) { quiet(e); return; }
      state.cluster = st;
      if (st.serving) { route(); return; }
      show(st);
    });
  }

  const ROLE_BADGES = { leader: "green", follower: "blue", candidate: "orange", shutdown: "red", unreachable: "red", unknown: "gray" };
  function roleBadge(role) { return h("span", { class: "badge " + (ROLE_BADGES[role] || "gray") }, role); }
  function fmtAge(sec) { return (sec < 10 ? sec.toFixed(1) + " s" : fmtDuration(sec)) + " ago"; }

  // clusterPage shows the node's view of the cluster: its role, term and
  // raft indexes, and every member with its addresses.
  function clusterPage() {
    if (!state.clustered) {
      main.append(h("h1", null, "Cluster"), h("p", { class: "muted", id: "cluster-single" },
        "This broker is a single node: its configuration has no [cluster] section."));
      return;
    }
    const banner = h("div", { id: "cluster-banner" });
    const cards = h("div", { class: "cards", id: "cluster-cards" });
    const members = h("div", { id: "cluster-members" });
    const note = h("p", { class: "muted", id: "cluster-note" });
    main.append(h("h1", null, "Cluster"), banner, cards, members, note);
    every(2000, async () => {
      let st;
      try { st = await api("GET", "/api/cluster"); } catch (e) { quiet(e); return; }
      state.cluster = st;
      const leading = st.role === "leader";
      banner.replaceChildren(st.serving ? "" : h("div", { class: "card follower-note", id: "cluster-follower-note" },
        h("p", null, "This node is a " + st.role + ": it serves no clients, and the other pages of this console point to the leader's."),
        leaderPointer(st, "#/cluster")));
      cards.replaceChildren(
        stat("This node", st.nodeId, "cluster-node"),
        stat("Role", st.role, "cluster-role", "This node's raft state"),
        stat("Leader", st.leader || "none known", "cluster-leader"),
        stat("Term", fmtNum(st.term), "cluster-term", st.serving ? "Serving clients since term " + st.epoch : "The raft term this node knows"),
        stat("Serving clients", st.serving ? "yes" : "no", "cluster-serving", "Only the leader's engine serves clients"),
        stat("Commit index", fmtNum(st.commitIndex), "cluster-commit", "The last raft log entry this node knows committed"),
        stat("Applied index", fmtNum(st.appliedIndex), "cluster-applied", "The last entry applied to this node's state"),
        stat("Last index", fmtNum(st.lastIndex), "cluster-last", "The last entry in this node's raft log"),
        stat("Last contact", leading ? "leading" : (st.lastContactAgeSeconds != null ? fmtAge(st.lastContactAgeSeconds) : "never"), "cluster-contact",
          "When this node last heard from the leader"));
      const dash = (v) => v || h("span", { class: "muted" }, "–");
      const rows = (st.members || []).map((m) => h("tr", { dataset: { member: m.id }, class: m.self ? "self" : null },
        h("td", null, h("strong", null, m.id), m.self ? [" ", h("span", { class: "badge gray" }, "this node")] : null),
        h("td", { class: "member-role" }, roleBadge(m.role)),
        h("td", null, m.voter ? "voter" : "non-voter"),
        h("td", { class: "mono" }, m.raft),
        h("td", { class: "mono" }, dash(m.stomp)),
        h("td", { class: "mono" }, dash(m.amqp)),
        h("td", { class: "mono" }, m.admin && !m.self ? h("a", { href: consoleURL(m.admin) + "#/cluster", class: "member-console" }, m.admin) : dash(m.admin)),
        h("td", { class: "member-contact" }, m.lastContactAgeSeconds != null ? fmtAge(m.lastContactAgeSeconds)
          : h("span", { class: "muted" }, m.self && leading ? "this node leads" : "–")),
        m.self ? [num(st.commitIndex), num(st.appliedIndex), num(st.lastIndex)]
          : [1, 2, 3].map(() => h("td", { class: "num muted" }, "–"))));
      members.replaceChildren(table(["Member", "Role", "Suffrage", "Raft", "STOMP", "AMQP", "Admin", "Last contact", "Commit#", "Applied#", "Last#"],
        rows, "No members: this node has not read the raft configuration.", { id: "members-table" }));
      note.textContent = "Roles, last contact and indexes are this node's view (" + st.nodeId + "). Raft does not tell a node the others' state: " +
        (leading ? "this leader shows a member as follower while it answers the heartbeats and as unreachable, with when it last answered, " +
            "once they fail (a partitioned member only after a heartbeat times out); it cannot see the followers' indexes. "
          : "a member other than this node and its leader shows as unknown. Last contact is when this node last heard from the leader. ") +
        "Open a member's console, at its admin address, for its own view. Refreshed every 2 s.";
    });
  }

  // ---------------------------------------------------------------- start

  (async function start() {
    try {
      const r = await api("GET", "/api/whoami");
      setUser(r);
      await loadCluster();
      route();
    } catch (e) {
      if (e.status !== 401) main.append(h("p", { class: "error" }, e.message));
    }
  })();
})();
