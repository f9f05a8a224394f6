// Sluice console: a small single-page app over the admin JSON API
// (docs/admin-api.md). No framework, no external assets.
"use strict";

(function () {
  const main = document.getElementById("main");
  let timers = [];
  let state = { authRequired: false, user: "", role: "" };

  // canChange: the caller may change things (the admin role). A monitor
  // reads only: the console leaves out what the server would refuse.
  const canChange = () => state.role === "admin";

  // ---------------------------------------------------------------- helpers

  // h builds an element: h("td", {class: "num"}, "text", childNode, ...).
  // Text always goes in as text, never as HTML.
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
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
    if (!res.ok) throw new APIError(res.status, data);
    return data;
  }

  function every(ms, fn) {
    fn();
    timers.push(setInterval(fn, ms));
  }

  function fmtNum(n) { return Number(n).toLocaleString("en-US"); }
  function plural(n, word) { return fmtNum(n) + " " + word + (n === 1 ? "" : "s"); }
  function fmtBytes(n) {
    if (n < 1024) return n + " B";
    if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
    return (n / 1048576).toFixed(1) + " MiB";
  }
  function fmtTime(ms) {
    if (!ms) return "";
    const d = new Date(ms);
    return d.toISOString().replace("T", " ").replace("Z", "");
  }
  function destPath(kind, name) {
    return "/api/destinations/" + encodeURIComponent(kind) + "/" + encodeURIComponent(name);
  }
  function subPath(clientId, name) {
    return "/api/subscriptions/" + encodeURIComponent(clientId || "-") + "/" + encodeURIComponent(name);
  }
  function table(headers, rows, emptyText) {
    const head = h("tr", null, headers.map((c) => h("th", { class: c.endsWith("#") ? "num" : "" }, c.replace(/#$/, ""))));
    const body = h("tbody", null, rows);
    if (rows.length === 0) body.append(h("tr", null, h("td", { colspan: headers.length, class: "empty" }, emptyText || "Nothing here yet.")));
    return h("div", { class: "table-wrap" }, h("table", null, h("thead", null, head), body));
  }
  const num = (v) => h("td", { class: "num" }, fmtNum(v));

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

  function route() {
    clearTimers();
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    const page = parts[0] || "overview";
    for (const a of document.querySelectorAll("#nav a")) {
      const p = a.dataset.page;
      a.classList.toggle("active", p === page || (p === "destinations" && page === "queue") || (p === "subscriptions" && page === "subscription"));
    }
    main.replaceChildren();
    switch (page) {
      case "overview": return overviewPage();
      case "destinations": return destinationsPage();
      case "queue": return messagesPage({ kind: "queue", name: parts.slice(1).join("/") });
      case "subscription": return messagesPage({ clientId: parts[1], sub: parts.slice(2).join("/") });
      case "subscriptions": return subscriptionsPage();
      case "connections": return connectionsPage();
      default: main.append(h("p", null, "No such page."));
    }
  }
  window.addEventListener("hashchange", route);

  // ---------------------------------------------------------------- overview

  const history = [];
  let last = null;

  function overviewPage() {
    const cards = h("div", { class: "cards", id: "overview-cards" });
    const canvas = h("canvas", { id: "throughput", width: 1200, height: 180 });
    main.append(
      h("h1", null, "Overview"),
      cards,
      h("div", { class: "card" },
        h("div", { class: "toolbar" }, h("h2", { class: "grow" }, "Throughput (messages per second)"),
          h("div", { class: "legend" }, h("span", { class: "l-enq" }, "enqueued"), h("span", { class: "l-deq" }, "dequeued"))),
        canvas),
      h("p", { class: "muted", id: "overview-meta" }));
    every(2000, async () => {
      let o;
      try { o = await api("GET", "/api/overview"); } catch (e) { if (e.status !== 401) toast(e.message, true); return; }
      if (last && o.time > last.time) {
        const dt = (o.time - last.time) / 1000;
        history.push({ enq: Math.max(0, (o.enqueued - last.enqueued) / dt), deq: Math.max(0, (o.dequeued - last.dequeued) / dt) });
        while (history.length > 90) history.shift();
      }
      last = o;
      const stat = (k, v, id) => h("div", { class: "stat", id }, h("div", { class: "v" }, v), h("div", { class: "k" }, k));
      const rate = history.length ? history[history.length - 1] : { enq: 0, deq: 0 };
      cards.replaceChildren(
        stat("Messages", fmtNum(o.messages), "stat-messages"),
        stat("In flight", fmtNum(o.inFlight)),
        stat("Scheduled", fmtNum(o.scheduled)),
        stat("Enqueued / s", rate.enq.toFixed(1)),
        stat("Dequeued / s", rate.deq.toFixed(1)),
        stat("Queues", fmtNum(o.queues), "stat-queues"),
        stat("Topics", fmtNum(o.topics)),
        stat("Durable subscriptions", fmtNum(o.durableSubscriptions)),
        stat("Connections", fmtNum(o.connections), "stat-connections"),
        stat("Consumers", fmtNum(o.consumers)),
        stat("Stored bytes", fmtBytes(o.bytes)),
        stat("Enqueued total", fmtNum(o.enqueued)));
      document.getElementById("overview-meta").textContent =
        "Sluice " + o.version + " · up " + Math.round(o.uptimeSeconds) + " s · " + (o.ready ? "ready" : "starting");
      drawChart(canvas);
    });
  }

  function drawChart(canvas) {
    const ctx = canvas.getContext("2d");
    const W = canvas.width, H = canvas.height, padL = 50, padB = 20, padT = 10;
    ctx.clearRect(0, 0, W, H);
    let max = 1;
    for (const p of history) max = Math.max(max, p.enq, p.deq);
    max = niceCeil(max);
    ctx.font = "12px sans-serif";
    ctx.fillStyle = "#5d6b7a";
    ctx.strokeStyle = "#dfe4ea";
    ctx.lineWidth = 1;
    for (let i = 0; i <= 4; i++) {
      const y = padT + ((H - padT - padB) * i) / 4;
      ctx.beginPath(); ctx.moveTo(padL, y); ctx.lineTo(W, y); ctx.stroke();
      const v = max - (max * i) / 4;
      ctx.fillText(Number.isInteger(v) ? String(v) : v.toFixed(1), 4, y + 4);
    }
    ctx.fillText("last 3 minutes, sampled every 2 s", padL, H - 4);
    const line = (key, color) => {
      if (history.length < 2) return;
      ctx.strokeStyle = color;
      ctx.lineWidth = 2;
      ctx.beginPath();
      const step = (W - padL - 4) / 89; // 90 samples, the newest at the right edge
      history.forEach((p, i) => {
        const x = W - 4 - (history.length - 1 - i) * step;
        const y = padT + (H - padT - padB) * (1 - p[key] / max);
        if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
      });
      ctx.stroke();
    };
    line("enq", "#1f77b4");
    line("deq", "#2e8b57");
  }

  function niceCeil(v) {
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  // ---------------------------------------------------------------- destinations

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
    main.append(h("h1", null, "Destinations"),
      canChange() ? h("div", { class: "card" }, form) : readOnlyNote("create, purge or delete destinations"), body);
    async function refresh() {
      let ds;
      try { ds = await api("GET", "/api/destinations"); } catch (e) { if (e.status !== 401) toast(e.message, true); return; }
      const rows = ds.map((d) => {
        const isQueue = d.kind === "queue" || d.kind === "temp-queue";
        return h("tr", { dataset: { dest: d.destination } },
          h("td", null, h("span", { class: "badge" + (d.kind === "topic" ? " orange" : "") }, d.kind)),
          h("td", null, isQueue ? h("a", { href: "#/queue/" + encodeURIComponent(d.name), class: "dest-link" }, d.name) : d.name),
          num(d.messages), num(d.ready), num(d.inFlight), num(d.scheduled), num(d.consumers),
          num(d.enqueued), num(d.dequeued), num(d.expired), num(d.redelivered),
          h("td", { class: "num" }, fmtBytes(d.bytes)),
          h("td", null,
            isQueue ? h("button", { class: "small", onclick: () => { location.hash = "#/queue/" + encodeURIComponent(d.name); } }, "Browse") : null,
            d.kind === "topic" ? h("button", { class: "small", onclick: () => { location.hash = "#/subscriptions"; } }, "Subscriptions") : null, " ",
            isQueue && canChange() ? h("button", { class: "small", onclick: () => purge(d) }, "Purge") : null, " ",
            d.temporary || !canChange() ? null : h("button", { class: "small danger", onclick: () => del(d) }, "Delete")));
      });
      body.replaceChildren(table(["Kind", "Name", "Messages#", "Ready#", "In flight#", "Scheduled#", "Consumers#",
        "Enqueued#", "Dequeued#", "Expired#", "Redelivered#", "Size#", ""], rows, "No destinations: create one above."));
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

  // ---------------------------------------------------------------- messages

  function messagesPage(target) {
    const isSub = target.sub !== undefined;
    const base = isSub ? subPath(target.clientId === "-" ? "" : target.clientId, target.sub) : destPath(target.kind, target.name);
    const title = isSub ? "Durable subscription " + target.sub + " (client ID " + (target.clientId === "-" ? "none" : target.clientId) + ")" : "Queue " + target.name;
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

    main.append(
      h("div", { class: "crumbs" }, h("a", { href: isSub ? "#/subscriptions" : "#/destinations" }, isSub ? "Durable subscriptions" : "Destinations"), " › ", isSub ? target.sub : target.name),
      h("h1", { id: "messages-title" }, title),
      h("div", { class: "card" },
        h("form", { class: "toolbar", onsubmit: (ev) => { ev.preventDefault(); offset = 0; selected.clear(); load(); } },
          selector, sort, h("button", { type: "submit", class: "primary", id: "apply" }, "Apply")),
        canChange() ? h("div", { class: "toolbar" },
          h("strong", null, "Selected:"),
          moveTo, h("button", { id: "move-selected", onclick: () => act("move", true) }, "Move selected"),
          h("button", { id: "delete-selected", class: "danger", onclick: () => act("delete", true) }, "Delete selected"),
          h("span", { class: "muted" }, "│"),
          h("button", { id: "move-matching", onclick: () => act("move", false) }, "Move all matching"),
          h("button", { id: "delete-matching", class: "danger", onclick: () => act("delete", false) }, "Delete all matching")) : null,
        h("div", { class: "toolbar" },
          h("button", { id: "export", onclick: exportMessages }, "Export matching (.ndjson)"),
          canChange() ? [h("span", { class: "muted" }, "│"), fileInput, h("button", { id: "import", onclick: importMessages }, "Import file")] : null),
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
          h("td", { class: "mono" }, fmtTime(m.timestamp)),
          h("td", { class: "num" }, m.deliveryCount),
          h("td", null, m.scheduled ? h("span", { class: "badge orange", title: "deliverable at " + fmtTime(m.deliverAt) }, "scheduled") : h("span", { class: "badge green" }, "ready"),
            m.deliveryMode === "PERSISTENT" ? null : h("span", { class: "badge gray" }, "non-persistent")),
          h("td", null, m.type || "", m.correlationId ? h("div", { class: "muted mono" }, m.correlationId) : null),
          h("td", null, m.properties.map((p) => h("span", { class: "prop" }, p.name, "=", p.value === undefined ? "null" : String(p.value), h("i", null, ":" + p.type)))),
          h("td", { class: "body-preview mono" }, h("span", { class: "badge gray" }, m.bodyKind), " ", m.body, m.bodyTruncated ? "…" : ""));
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
        detail.replaceChildren(h("div", { class: "card" },
          h("h2", null, "Message " + id),
          m ? h("pre", { class: "detail", id: "detail-json" }, JSON.stringify(m.message, null, 2)) : h("p", null, "The message is no longer waiting.")));
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
    every(5000, () => { if (selected.size === 0 && document.activeElement !== selector) load(); });
  }

  // ---------------------------------------------------------------- subscriptions

  function subscriptionsPage() {
    const body = h("div", { id: "subscriptions-table" });
    main.append(h("h1", null, "Durable subscriptions"), canChange() ? "" : readOnlyNote("purge or delete subscriptions"), body);
    async function refresh() {
      let subs;
      try { subs = await api("GET", "/api/subscriptions?durable=true"); } catch (e) { if (e.status !== 401) toast(e.message, true); return; }
      const rows = subs.map((s) => h("tr", null,
        h("td", null, s.clientId || h("span", { class: "muted" }, "(none)")),
        h("td", null, h("a", { href: "#/subscription/" + encodeURIComponent(s.clientId || "-") + "/" + encodeURIComponent(s.name) }, s.name)),
        h("td", null, s.topic),
        h("td", { class: "mono" }, s.selector),
        h("td", null, s.noLocal ? "yes" : ""),
        h("td", null, s.shared ? "yes" : ""),
        h("td", null, s.active ? h("span", { class: "badge green" }, "active (" + s.consumers + ")") : h("span", { class: "badge gray" }, "inactive")),
        num(s.pending), num(s.inFlight), num(s.enqueued), num(s.dequeued),
        h("td", null,
          h("button", { class: "small", onclick: () => { location.hash = "#/subscription/" + encodeURIComponent(s.clientId || "-") + "/" + encodeURIComponent(s.name); } }, "Browse"), " ",
          canChange() ? [h("button", { class: "small", onclick: () => purge(s) }, "Purge"), " ",
            h("button", { class: "small danger", disabled: s.active, onclick: () => del(s) }, "Delete")] : null)));
      body.replaceChildren(table(["Client ID", "Name", "Topic", "Selector", "No local", "Shared", "State", "Pending#", "In flight#", "Enqueued#", "Dequeued#", ""], rows, "No durable subscriptions."));
    }
    async function purge(s) {
      if (!confirm("Delete every waiting message of subscription " + s.name + "?")) return;
      try { const r = await api("POST", subPath(s.clientId, s.name) + "/purge"); toast("Purged " + plural(r.purged, "message")); refresh(); }
      catch (e) { toast(e.message, true); }
    }
    async function del(s) {
      if (!confirm("Delete durable subscription " + s.name + " and its messages?")) return;
      try { await api("DELETE", subPath(s.clientId, s.name)); toast("Deleted subscription " + s.name); refresh(); }
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
      try { cs = await api("GET", "/api/connections"); } catch (e) { if (e.status !== 401) toast(e.message, true); return; }
      const rows = cs.map((c) => h("tr", { dataset: { conn: c.id } },
        num(c.id),
        h("td", null, c.clientId),
        h("td", { class: "conn-user" }, c.user || h("span", { class: "muted" }, "anonymous")),
        h("td", { class: "mono" }, c.remoteAddr),
        h("td", null, c.protocol),
        h("td", null, c.started ? h("span", { class: "badge green" }, "started") : h("span", { class: "badge gray" }, "stopped")),
        h("td", { class: "mono" }, c.created.replace("T", " ").replace(/\.\d+Z$/, "")),
        num(c.sessions.length), num(c.consumers),
        h("td", null, c.sessions.flatMap((s) => s.consumers.map((x) => h("div", { class: "mono" }, x.destination + (x.subscription ? " [" + x.subscription + "]" : "") + (x.selector ? " where " + x.selector : ""))))),
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

  // ---------------------------------------------------------------- start

  (async function start() {
    try {
      const r = await api("GET", "/api/whoami");
      setUser(r);
      route();
    } catch (e) {
      if (e.status !== 401) main.append(h("p", { class: "error" }, e.message));
    }
  })();
})();
