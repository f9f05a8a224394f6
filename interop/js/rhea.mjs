// Interop scenarios for Sluice's AMQP 1.0 server with rhea on Node.
//
// Usage: node js/rhea.mjs PORT SCENARIO   (PORT "-" reads SLUICE_AMQP_PORT)
//
// Each scenario prints what it checks and ends with "PASS SCENARIO"; a failed
// check prints "FAIL SCENARIO: reason" and exits 1. Every wait is bounded.
// Destination names are per scenario (js.*). With SLUICE_INTEROP_DEBUG=1
// rhea's frame trace (DEBUG=rhea:frames) goes to stderr. The security scenario
// logs in with SASL PLAIN as SLUICE_AMQP_USER / SLUICE_AMQP_PASSWORD against a
// broker whose realm lets that user send to and consume from js.sec.ok.* only.
// interop/amqp_test.go (build tag interop) starts the broker and runs these.

import { WAIT, QUIET, Fail, check, withTimeout, sleep, Mailbox } from './common.mjs';
const DEBUG = process.env.SLUICE_INTEROP_DEBUG === '1';
if (DEBUG && !process.env.DEBUG) process.env.DEBUG = 'rhea:frames';
const { default: rhea } = await import('rhea');

const HOST = '127.0.0.1';

// once resolves with the context of the next event name on emitter, and
// rejects when one of the failure events comes first.
function once(emitter, name, what, failures = []) {
  return withTimeout(new Promise((resolve, reject) => {
    const off = () => {
      emitter.removeListener(name, ok);
      for (const f of failures) emitter.removeListener(f, bad);
    };
    const ok = ctx => {
      off();
      resolve(ctx);
    };
    const bad = ctx => {
      off();
      const e = (ctx.receiver || ctx.sender || ctx.connection || {}).error;
      reject(new Fail(`${what}: closed${e ? ` with ${e.condition}: ${e.description}` : ''}`));
    };
    emitter.on(name, ok);
    for (const f of failures) emitter.on(f, bad);
  }), what);
}

// Conn is one rhea connection.
class Conn {
  // open connects; extra holds more connect options (username, password).
  static async open(port, name, containerId, extra = {}) {
    const c = new Conn();
    c.name = name;
    const container = rhea.create_container({ id: containerId || `js-${name}-${process.pid}` });
    c.conn = container.connect({ host: HOST, port, reconnect: false, ...extra });
    c.conn.on('disconnected', ctx => {
      if (!c.closing) console.log(`[${name}] disconnected: ${ctx.error || ''}`);
    });
    c.conn.on('connection_error', ctx => console.log(`[${name}] connection error: ${JSON.stringify(ctx.connection.error)}`));
    c.opened = await once(c.conn, 'connection_open', `${name}: open`, ['connection_error', 'disconnected']);
    return c;
  }

  // receiver attaches a receiving link; its messages go to r.box.
  async receiver(opts, what) {
    const r = this.conn.open_receiver(opts);
    r.box = new Mailbox(`${this.name} ${what}`);
    r.on('message', ctx => r.box.put(ctx));
    r.on('receiver_error', ctx => console.log(`[${this.name}] ${what}: receiver error ${JSON.stringify(ctx.receiver.error)}`));
    await once(r, 'receiver_open', `${this.name}: attach ${what}`, ['receiver_close']);
    return r;
  }

  // sender attaches a sending link; send(msg) resolves with the outcome.
  async sender(opts, what) {
    const s = this.conn.open_sender(opts);
    const pending = new Map();
    for (const outcome of ['accepted', 'rejected', 'released', 'modified']) {
      s.on(outcome, ctx => {
        const done = pending.get(ctx.delivery);
        if (done) {
          pending.delete(ctx.delivery);
          done(outcome);
        }
      });
    }
    s.on('sender_error', ctx => console.log(`[${this.name}] ${what}: sender error ${JSON.stringify(ctx.sender.error)}`));
    await once(s, 'sendable', `${this.name}: credit on ${what}`, ['sender_close']);
    s.put = async (msg, want = 'accepted') => {
      const d = s.send(msg);
      const got = await withTimeout(new Promise(resolve => pending.set(d, resolve)), `${this.name}: outcome of a send on ${what}`);
      check(got === want, `send on ${what}: ${want}`, got);
    };
    return s;
  }

  async close() {
    this.closing = true;
    const closed = once(this.conn, 'connection_close', `${this.name}: close`);
    this.conn.close();
    await closed;
  }
}

async function detach(link, what) {
  const ev = link.is_receiver() ? 'receiver_close' : 'sender_close';
  const p = once(link, ev, `detach ${what}`);
  link.close();
  await p;
}

const queue = address => ({ address, capabilities: ['queue'] });
const topic = address => ({ address, capabilities: ['topic'] });
const ann = (m, k) => (m.message_annotations || {})[k];

// --- scenarios ----------------------------------------------------------

const scenarios = {
  // Send/receive with application properties, header and properties fields,
  // text and data bodies.
  async properties(port) {
    const c = await Conn.open(port, 'js-props');
    const offered = [].concat(c.conn.remote.open.offered_capabilities || []);
    check(['DELAYED_DELIVERY', 'SHARED-SUBS', 'ANONYMOUS-RELAY'].every(x => (offered || []).includes(x)),
      'open offers DELAYED_DELIVERY, SHARED-SUBS, ANONYMOUS-RELAY', offered);
    check((c.conn.remote.open.properties || {}).product === 'Sluice', 'open property product = Sluice',
      c.conn.remote.open.properties);
    const s = await c.sender({ target: queue('js.props') }, 'js.props');
    const t = rhea.types;
    await s.put({
      body: 'h\u00e9llo from rhea \u2713',
      durable: true,
      priority: 6,
      ttl: 60000,
      message_id: 'js-msg-1',
      correlation_id: 'js-corr',
      subject: 'order',
      reply_to: 'js.replies',
      application_properties: {
        an_int: t.wrap_int(-42),
        a_long: t.wrap_long(1099511627776),
        a_float: t.wrap_float(1.5),
        a_double: 2.25,
        a_bool: true,
        a_string: 'rhea',
        a_number: 7, // rhea sends a positive integer as uint: a long to JMS
      },
    });
    await s.put({ body: rhea.message.data_section(Buffer.from([0, 1, 0xfe, 0xff])), application_properties: { kind: 'bytes' } });
    const r = await c.receiver({ source: queue('js.props'), credit_window: 10 }, 'js.props');
    const { message: m } = await r.box.next('text message');
    check(m.body === 'h\u00e9llo from rhea \u2713', 'text body round trip', m.body);
    const p = m.application_properties || {};
    const want = { an_int: -42, a_long: 1099511627776, a_float: 1.5, a_double: 2.25, a_bool: true, a_string: 'rhea', a_number: 7 };
    for (const [k, v] of Object.entries(want)) check(p[k] === v, `property ${k} = ${v}`, p[k]);
    check(Object.keys(p).length === Object.keys(want).length, 'no property added or lost', Object.keys(p));
    check(m.durable === true && m.priority === 6, 'durable and priority kept', m.durable, m.priority);
    check(m.ttl > 0 && m.ttl <= 60000, 'ttl is the time left', m.ttl);
    check(m.message_id === 'js-msg-1', "the producer's message-id kept", m.message_id);
    check(m.correlation_id === 'js-corr' && m.subject === 'order' && m.reply_to === 'js.replies',
      'correlation-id, subject, reply-to kept', m.correlation_id, m.subject, m.reply_to);
    check(m.creation_time instanceof Date && Math.abs(m.creation_time - Date.now()) < 60000,
      'creation-time set', m.creation_time);
    check(ann(m, 'x-opt-jms-dest') === 0 && ann(m, 'x-opt-jms-msg-type') === 5,
      'x-opt-jms-dest 0, x-opt-jms-msg-type 5', m.message_annotations);
    const { message: b } = await r.box.next('bytes message');
    check(Buffer.isBuffer(b.body.content) && b.body.content.equals(Buffer.from([0, 1, 0xfe, 0xff])),
      'data section body round trip', b.body);
    check(b.content_type === 'application/octet-stream' && ann(b, 'x-opt-jms-msg-type') === 3,
      'bytes message: content-type and type 3', b.content_type, ann(b, 'x-opt-jms-msg-type'));
    await c.close();
  },

  // A receiver with credit window 0 and manual settlement, then an
  // auto-accepting one with a window; pre-settled (snd-settle-mode settled)
  // and rcv-settle-mode second links.
  async credit(port) {
    const c = await Conn.open(port, 'js-credit');
    const s = await c.sender({ target: queue('js.credit') }, 'js.credit');
    for (let i = 1; i <= 5; i++) await s.put({ body: `m${i}`, durable: true });
    const r = await c.receiver({ source: queue('js.credit'), credit_window: 0, autoaccept: false }, 'manual');
    await r.box.none('credit window 0: nothing before credit is given');
    r.add_credit(2);
    const a = await r.box.next('m1');
    const b = await r.box.next('m2');
    check(a.message.body === 'm1' && b.message.body === 'm2', 'flow(2): the first two messages', a.message.body, b.message.body);
    await r.box.none('and no more than the credit');
    check(!a.delivery.remote_settled, 'transfers are unsettled (snd-settle-mode unsettled)');
    a.delivery.accept();
    // rhea 3.0.5 writes the dispositions of one tick as ranges, and merges a
    // delivery into a one-delivery range whatever its outcome
    // (write_dispositions in lib/session.js checks outcomes only for longer
    // ranges): an accept and a release in the same tick would both go out
    // as accepted. So the release waits for the next turn.
    await sleep(20);
    b.delivery.release();
    r.add_credit(1);
    const b2 = await r.box.next('m2 after release');
    check(b2.message.body === 'm2' && !b2.message.delivery_count,
      'released: redelivered, delivery-count not raised', b2.message.body, b2.message.delivery_count);
    b2.delivery.release({ delivery_failed: true });
    r.add_credit(1);
    const b3 = await r.box.next('m2 after modified');
    check(b3.message.body === 'm2' && b3.message.delivery_count === 1,
      'release({delivery_failed}) = modified: delivery-count 1', b3.message.body, b3.message.delivery_count);
    b3.delivery.accept();
    await detach(r, 'manual receiver');

    // An auto-accepting receiver with a window takes the rest.
    const auto = await c.receiver({ source: queue('js.credit'), credit_window: 2 }, 'auto');
    const got = [];
    for (let i = 0; i < 3; i++) got.push((await auto.box.next(`auto ${i + 1}`)).message.body);
    check(JSON.stringify(got) === JSON.stringify(['m3', 'm4', 'm5']), 'credit window 2 refills: m3, m4, m5', got);
    await sleep(100); // let the auto-accepts go out before the detach
    await detach(auto, 'auto receiver');

    // Pre-settled deliveries: the server settles on send (at-most-once).
    await s.put({ body: 'pre' });
    const pre = await c.receiver({ source: queue('js.credit'), credit_window: 5, snd_settle_mode: 1 }, 'presettled');
    const pm = await pre.box.next('pre-settled message');
    check(pm.message.body === 'pre' && pm.delivery.remote_settled === true,
      'snd-settle-mode settled: the transfer arrives settled', pm.message.body, pm.delivery.remote_settled);
    await detach(pre, 'presettled receiver');

    // rcv-settle-mode second: the server settles after our outcome.
    await s.put({ body: 'second' });
    const sec = await c.receiver({ source: queue('js.credit'), credit_window: 5, autoaccept: false, rcv_settle_mode: 1 }, 'second');
    const sm = await sec.box.next('message on a rcv-settle-mode second link');
    const settled = once(sec, 'settled', 'server settlement of the accepted delivery');
    sm.delivery.accept();
    await settled;
    check(sm.delivery.remote_settled === true, 'rcv-settle-mode second: the server settles after our accept',
      sm.delivery.remote_settled);
    await detach(sec, 'second receiver');

    // Nothing is left.
    await s.put({ body: 'marker' });
    const last = await c.receiver({ source: queue('js.credit'), credit_window: 5 }, 'marker');
    const mk = await last.box.next('marker');
    check(mk.message.body === 'marker', 'accepted and pre-settled messages are gone', mk.message.body);
    await c.close();
  },

  // A JMS selector through rhea.filter.selector on a topic; an invalid one
  // refuses the attach with amqp:invalid-field.
  async selector(port) {
    const c = await Conn.open(port, 'js-sel');
    const all = await c.receiver({ source: topic('js.prices'), credit_window: 20 }, 'all');
    const red = await c.receiver({ source: { ...topic('js.prices'), filter: rhea.filter.selector("color = 'red' AND qty > 10") }, credit_window: 20 }, 'red');
    const rf = (red.remote.attach.source || {}).filter || {};
    check(rf['jms-selector'] !== undefined, 'attach answer carries the jms-selector filter', Object.keys(rf));
    const s = await c.sender({ target: topic('js.prices') }, 'js.prices');
    const sent = [['r-5', 'red', 5], ['b-20', 'blue', 20], ['r-20', 'red', 20], ['r-11', 'red', 11]];
    for (const [body, color, qty] of sent) {
      await s.put({ body, application_properties: { color, qty: rhea.types.wrap_int(qty) } });
    }
    const gotAll = [];
    for (let i = 0; i < 4; i++) gotAll.push((await all.box.next(`all ${i + 1}`)).message.body);
    const gotRed = [];
    for (let i = 0; i < 2; i++) gotRed.push((await red.box.next(`red ${i + 1}`)).message.body);
    check(JSON.stringify(gotAll) === JSON.stringify(['r-5', 'b-20', 'r-20', 'r-11']), 'unfiltered receiver gets all', gotAll);
    check(JSON.stringify(gotRed) === JSON.stringify(['r-20', 'r-11']), "selector color = 'red' AND qty > 10", gotRed);
    await red.box.none('nothing else passes the selector');

    // Invalid selector.
    const bad = c.conn.open_receiver({ source: { ...topic('js.prices'), filter: rhea.filter.selector('color = ') } });
    const closed = await once(bad, 'receiver_close', 'detach of the invalid selector link');
    const err = bad.error || (closed.receiver && closed.receiver.error) || {};
    check(err.condition === 'amqp:invalid-field', 'invalid selector refused with amqp:invalid-field', err);
    check((err.description || '').length > 0, 'with the parse error', err.description);
    console.log(`     refused: ${err.description}`);
    await s.put({ body: 'after', application_properties: { color: 'red', qty: rhea.types.wrap_int(99) } });
    const after = await red.box.next('after the refused attach');
    check(after.message.body === 'after', 'the connection and its links carry on', after.message.body);
    await c.close();
  },

  // Drain: receiver.drain = true with credit, answered by a flow with
  // drain set and the credit used up ('receiver_drained'), as Qpid JMS's
  // receiveNoWait and QueueBrowser depend on.
  async drain(port) {
    const c = await Conn.open(port, 'js-drain');
    const s = await c.sender({ target: queue('js.drain') }, 'js.drain');
    await s.put({ body: 'd1' });
    await s.put({ body: 'd2' });
    const r = await c.receiver({ source: queue('js.drain'), credit_window: 0 }, 'drainer');
    const events = [];
    r.on('receiver_drained', () => events.push('drained'));
    r.box.put = (orig => ctx => {
      events.push(ctx.message.body);
      orig(ctx);
    })(r.box.put.bind(r.box));
    let drained = once(r, 'receiver_drained', 'receiver_drained with 2 messages for 5 credits');
    r.drain = true;
    r.add_credit(5);
    await drained;
    check(JSON.stringify(events) === JSON.stringify(['d1', 'd2', 'drained']),
      'drain: the available messages, then the drained flow', events);
    check(r.credit === 0, 'credit 0 after the drain', r.credit);
    check(r.delivery_count === 5, 'delivery-count advanced by the unused credit (2 sent + 3)', r.delivery_count);

    // Drain on an empty queue is answered at once.
    events.length = 0;
    drained = once(r, 'receiver_drained', 'receiver_drained on an empty queue');
    const t0 = Date.now();
    r.add_credit(3);
    await drained;
    check(JSON.stringify(events) === JSON.stringify(['drained']), 'empty queue: drained without messages', events);
    check(Date.now() - t0 < 2000, 'answered promptly', Date.now() - t0);
    check(r.credit === 0 && r.delivery_count === 8, 'credit 0, delivery-count 8', r.credit, r.delivery_count);

    // The link goes on working after drains.
    r.box.items.length = 0; // d1 and d2, checked above
    r.drain = false;
    r.add_credit(1);
    await s.put({ body: 'd3' });
    const m = await r.box.next('after the drains');
    check(m.message.body === 'd3', 'a normal flow after the drains delivers', m.message.body);
    await c.close();
  },

  // SASL PLAIN against a realm: the right password is let in, a wrong one
  // refused; a send to a denied queue is refused with amqp:unauthorized-access
  // (at attach, and on the anonymous relay as a rejected outcome) while the
  // connection and its other links carry on.
  async security(port) {
    const username = process.env.SLUICE_AMQP_USER;
    const password = process.env.SLUICE_AMQP_PASSWORD;
    // refusal connects with extra options and resolves with the error of
    // the connection_error (or disconnected) event that ends it.
    const refusal = (name, extra) => {
      const conn = rhea.create_container({ id: `${name}-${process.pid}` }).connect({ host: HOST, port, reconnect: false, ...extra });
      return withTimeout(new Promise(resolve => {
        const done = ctx => resolve(ctx.error || ctx.connection.get_error() || { condition: 'none' });
        conn.on('connection_error', done);
        conn.on('disconnected', done);
      }), `${name}: the refusal`);
    };
    // rhea reports the sasl-outcome auth as a connection_error whose error
    // has the condition amqp:unauthorized-access.
    const bad = await refusal('js-sec-bad', { username, password: `wrong-${password}` });
    console.log(`     ${bad.condition}: ${bad.description || bad.message}`);
    check(bad.condition === 'amqp:unauthorized-access', 'a wrong password is refused (connection_error amqp:unauthorized-access)', bad.condition);
    // Without credentials rhea skips SASL: the server answers the open and
    // closes with amqp:unauthorized-access.
    const anon = await refusal('js-sec-anon', {});
    console.log(`     ${anon.condition}: ${anon.description || anon.message}`);
    check(anon.condition === 'amqp:unauthorized-access', 'no credentials (no SASL): closed with amqp:unauthorized-access', anon.condition);

    const c = await Conn.open(port, 'js-sec', undefined, { username, password });
    check(true, 'PLAIN login with the right password');
    const ok = await c.sender({ target: queue('js.sec.ok.orders') }, 'js.sec.ok.orders');
    await ok.put({ body: 'allowed 1' });

    const denied = c.conn.open_sender({ target: queue('js.sec.denied') });
    const closed = await once(denied, 'sender_close', 'detach of the sender on a denied queue');
    const err = denied.error || (closed.sender && closed.sender.error) || {};
    check(err.condition === 'amqp:unauthorized-access', 'sender on a denied queue refused with amqp:unauthorized-access', err);
    check(String(err.description || '').includes(username), 'the refusal names the user', err.description);

    const relay = c.conn.open_sender({ target: {} });
    await once(relay, 'sendable', 'credit on the anonymous relay', ['sender_close']);
    const rejected = once(relay, 'rejected', 'outcome of a relay send to a denied queue', ['accepted', 'sender_close']);
    relay.send({ to: 'js.sec.denied', body: 'denied' });
    const rctx = await rejected;
    const rerr = (rctx.delivery.remote_state && rctx.delivery.remote_state.error) || {};
    check(rerr.condition === 'amqp:unauthorized-access', 'anonymous relay to a denied queue: rejected with amqp:unauthorized-access', rerr);
    const acc = once(relay, 'accepted', 'outcome of a relay send to an allowed queue', ['rejected', 'sender_close']);
    relay.send({ to: 'js.sec.ok.orders', body: 'allowed 2' });
    await acc;
    check(true, 'the relay link carries on: a send to an allowed queue accepted');
    await ok.put({ body: 'allowed 3' });
    check(true, 'the named link carries on');

    const r = await c.receiver({ source: queue('js.sec.ok.orders'), credit_window: 10 }, 'js.sec.ok.orders');
    const got = [];
    for (let i = 0; i < 3; i++) got.push((await r.box.next(`allowed message ${i + 1}`)).message.body);
    check(JSON.stringify(got) === JSON.stringify(['allowed 1', 'allowed 2', 'allowed 3']), 'every allowed message arrives', got);
    await r.box.none('nothing more arrives');
    await c.close();
  },
};

async function main() {
  const [portArg, name] = process.argv.slice(2);
  if (!portArg || !scenarios[name]) {
    console.error(`usage: rhea.mjs PORT SCENARIO\nscenarios: ${Object.keys(scenarios).join(' ')}`);
    return 2;
  }
  const port = Number(portArg === '-' ? process.env.SLUICE_AMQP_PORT : portArg);
  const { createRequire } = await import('node:module');
  const version = createRequire(import.meta.url)('rhea/package.json').version;
  console.log(`rhea ${version}, node ${process.version}, scenario ${name}, port ${port}`);
  const start = Date.now();
  try {
    await scenarios[name](port);
  } catch (e) {
    if (e instanceof Fail) console.log(`FAIL ${name}: ${e.message}`);
    else {
      console.log(e && e.stack ? e.stack : String(e));
      console.log(`FAIL ${name}: unexpected exception`);
    }
    return 1;
  }
  console.log(`PASS ${name} (${((Date.now() - start) / 1000).toFixed(1)}s)`);
  return 0;
}

process.exitCode = await main();
// Nothing should be left running, but never let a stray timer or socket hold the exit.
setTimeout(() => process.exit(process.exitCode), 200).unref();
