// Interop scenarios for Sluice's STOMP server with @stomp/stompjs on Node.
//
// Usage: node js/stompjs.mjs PORT SCENARIO   (PORT "-" reads SLUICE_STOMP_PORT)
//
// stompjs speaks to a WebSocket-like object. Over raw TCP it uses the
// adapter its authors publish for that, @stomp/tcp-wrapper: the client's
// webSocketFactory returns a TCPWrapper around a net.Socket to 127.0.0.1:PORT.
//
// Each scenario prints what it checks and ends with "PASS SCENARIO"; a failed
// check prints "FAIL SCENARIO: reason" and exits 1. Every wait is bounded.
// interop/stomp_test.go (build tag interop) starts the broker and runs these.

import { WAIT, QUIET, Fail, check, withTimeout, sleep, Mailbox } from './common.mjs';
import { Client } from '@stomp/stompjs';
import { TCPWrapper } from '@stomp/tcp-wrapper';

const HOST = '127.0.0.1';
const DEBUG = process.env.SLUICE_INTEROP_DEBUG === '1';

let seq = 0;

// Conn is one stompjs Client over TCP, with the frames it got.
class Conn {
  constructor(port, name, connectHeaders = {}) {
    this.name = name;
    this.errors = new Mailbox(`${name} ERROR`);
    this.closed = new Mailbox(`${name} close`);
    this.subs = {};
    this.firstError = new Promise(res => (this._gotError = res));
    let resolve, reject;
    this.connected = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.client = new Client({
      webSocketFactory: () => new TCPWrapper(HOST, port),
      connectHeaders,
      reconnectDelay: 0, // never reconnect: a lost connection is a failure here
      connectionTimeout: WAIT,
      heartbeatIncoming: 10000,
      heartbeatOutgoing: 10000,
      debug: DEBUG ? s => console.error(`[${name}] ${s}`) : () => {},
      onConnect: frame => resolve(frame),
      onStompError: frame => {
        this.errors.put(frame);
        this._gotError(frame);
        reject(new Fail(`${name}: ERROR ${frame.headers.message}`));
      },
      onWebSocketClose: ev => this.closed.put(ev),
      onWebSocketError: ev => console.error(`[${name}] socket error`, ev && ev.message),
    });
  }

  static async open(port, name, connectHeaders) {
    const c = new Conn(port, name, connectHeaders);
    c.client.activate();
    c.frame = await withTimeout(c.connected, `${name}: CONNECTED`);
    return c;
  }

  rid(what) {
    seq++;
    return `${this.name}-${what}-${seq}`;
  }

  // receipt registers a watcher for a new receipt id and returns the id
  // and a promise of its RECEIPT frame.
  receipt(what) {
    const id = this.rid(what);
    const p = new Promise(resolve => this.client.watchForReceipt(id, resolve));
    return [id, withTimeout(this.failOnError(p), `${this.name}: RECEIPT ${id}`)];
  }

  // failOnError makes p fail as soon as the server sends an ERROR.
  failOnError(p) {
    const err = this.firstError.then(f => {
      throw new Fail(`${this.name}: ERROR ${f.headers.message}: ${f.body}`);
    });
    return Promise.race([p, err]);
  }

  async publish(destination, body, headers = {}, binaryBody) {
    const [id, got] = this.receipt('send');
    const params = { destination, headers: { ...headers, receipt: id } };
    if (binaryBody) params.binaryBody = binaryBody;
    else params.body = body;
    this.client.publish(params);
    return got;
  }

  async subscribe(destination, subId, headers = {}) {
    const box = new Mailbox(`${this.name} sub ${subId}`);
    this.subs[subId] = box;
    const [id, got] = this.receipt('sub');
    const sub = this.client.subscribe(destination, m => box.put(m), { ...headers, id: subId, receipt: id });
    await got;
    return { sub, box };
  }

  async ack(m, headers = {}) {
    const [id, got] = this.receipt('ack');
    m.ack({ ...headers, receipt: id });
    return got;
  }

  async nack(m, headers = {}) {
    const [id, got] = this.receipt('nack');
    m.nack({ ...headers, receipt: id });
    return got;
  }

  async close() {
    // deactivate sends DISCONNECT with a receipt and waits for it and the close.
    await withTimeout(this.client.deactivate(), `${this.name}: deactivate`);
  }
}

// --- scenarios ----------------------------------------------------------

const scenarios = {
  // SEND/MESSAGE with JMS and custom headers, text and binary bodies.
  async headers(port) {
    const c = await Conn.open(port, 'js-headers');
    check(c.frame.headers.version === '1.2', 'negotiated STOMP 1.2', c.frame.headers.version);
    check((c.frame.headers.server || '').startsWith('Sluice/'), 'CONNECTED server header', c.frame.headers.server);
    check(c.frame.headers['heart-beat'] === '10000,10000', 'CONNECTED heart-beat', c.frame.headers['heart-beat']);
    const dest = '/queue/js.orders';
    await c.publish(dest, 'h\u00e9llo from stompjs \u2713', {
      'content-type': 'text/plain',
      persistent: 'true',
      priority: '6',
      'correlation-id': 'js-corr',
      type: 'order',
      'reply-to': '/queue/js.replies',
      'x-app': 'stompjs',
      'x-escaped': 'a:b',
    });
    const bytes = Uint8Array.from([0, 1, 2, 0xfe, 0xff, 0]);
    await c.publish(dest, undefined, { 'content-type': 'application/octet-stream' }, bytes);
    const { box } = await c.subscribe(dest, 'orders');
    const m = await box.next('text message');
    const want = {
      destination: dest, subscription: 'orders', persistent: 'true', priority: '6',
      'correlation-id': 'js-corr', type: 'order', 'reply-to': '/queue/js.replies', 'x-app': 'stompjs',
      'x-escaped': 'a:b', JMSXDeliveryCount: '1', 'content-type': 'text/plain',
    };
    for (const [k, v] of Object.entries(want)) {
      check(m.headers[k] === v, `MESSAGE header ${k} = ${JSON.stringify(v)}`, m.headers[k]);
    }
    check(m.body === 'h\u00e9llo from stompjs \u2713', 'UTF-8 text body round trip', m.body);
    check((m.headers['message-id'] || '').startsWith('ID:'), 'message-id is a JMS ID', m.headers['message-id']);
    check(m.headers.redelivered === undefined, 'first delivery not redelivered', m.headers.redelivered);
    const b = await box.next('binary message');
    check(Buffer.from(b.binaryBody).equals(Buffer.from(bytes)), 'binary body with NULs round trip',
      Array.from(b.binaryBody));
    check(b.headers['content-length'] === String(bytes.length), 'binary body has content-length',
      b.headers['content-length']);
    check(b.headers['content-type'] === 'application/octet-stream', 'content-type kept', b.headers['content-type']);
    check(b.headers.persistent === 'false', 'STOMP default is non-persistent', b.headers.persistent);
    await c.close();
  },

  // ack: client with message.ack(), client-individual with message.nack(),
  // and unacknowledged messages redelivered to the next subscriber.
  async ack(port) {
    const dest = '/queue/js.work';
    const c = await Conn.open(port, 'js-ack');
    const { box } = await c.subscribe(dest, 'w', { ack: 'client' });
    await c.publish(dest, 'one', { 'content-type': 'text/plain' });
    const m1 = await box.next('one');
    check(m1.body === 'one' && m1.headers.ack !== undefined, 'ack:client MESSAGE with an ack header', m1.body,
      m1.headers.ack);
    await c.ack(m1);
    await c.publish(dest, 'two', { 'content-type': 'text/plain' });
    const m2 = await box.next('two');
    check(m2.body === 'two', 'second message delivered after the first was acked', m2.body);
    await c.close(); // 'two' is not acknowledged
    const c2 = await Conn.open(port, 'js-ack2');
    const s2 = await c2.subscribe(dest, 'w2', { ack: 'client-individual' });
    const r = await s2.box.next('redelivered two');
    check(r.body === 'two' && r.headers.redelivered === 'true' && r.headers.JMSXDeliveryCount === '2',
      'the unacknowledged message (only) is redelivered', r.body, r.headers.redelivered, r.headers.JMSXDeliveryCount);
    await c2.nack(r);
    const r2 = await s2.box.next('after nack');
    check(r2.body === 'two' && r2.headers.JMSXDeliveryCount === '3' && r2.headers['message-id'] === r.headers['message-id'],
      'NACK redelivers with the count raised', r2.body, r2.headers.JMSXDeliveryCount);
    await c2.ack(r2);
    await c2.publish(dest, 'marker', { 'content-type': 'text/plain' });
    const mk = await s2.box.next('marker');
    check(mk.body === 'marker', 'acknowledged messages are gone', mk.body);
    await c2.ack(mk);
    await c2.close();
  },

  // Receipts on every frame that may carry one, in order; DISCONNECT's by
  // deactivate; an ERROR carries the receipt-id of the frame it refuses.
  async receipts(port) {
    const dest = '/queue/js.receipts';
    const c = await Conn.open(port, 'js-rcpt');
    const order = [];
    const note = (id, p) => p.then(() => order.push(id));
    const box = new Mailbox('receipts sub');
    const [subID, subGot] = c.receipt('sub');
    c.client.subscribe(dest, m => box.put(m), { id: 's', ack: 'client-individual', receipt: subID });
    const [s1, s1Got] = c.receipt('send');
    c.client.publish({ destination: dest, body: 'r1', headers: { receipt: s1 } });
    const tx = c.client.begin('jtx');
    const [s2, s2Got] = c.receipt('txsend');
    c.client.publish({ destination: dest, body: 'r2', headers: { receipt: s2, transaction: tx.id } });
    await Promise.all([note(subID, subGot), note(s1, s1Got), note(s2, s2Got)]);
    check(JSON.stringify(order) === JSON.stringify([subID, s1, s2]),
      'RECEIPTs for SUBSCRIBE, SEND and a transactional SEND arrive in order', order);
    const m1 = await box.next('r1');
    check(m1.body === 'r1', 'the plain SEND is delivered', m1.body);
    // stompjs' begin()/commit() take no receipt: the receipt of the next
    // frame confirms the COMMIT, since frames are processed in order.
    tx.commit();
    await c.publish(dest, 'r3');
    const m2 = await box.next('r2');
    const m3 = await box.next('r3');
    check(m2.body === 'r2' && m3.body === 'r3', 'the committed SEND is delivered before the next one', m2.body, m3.body);
    await c.ack(m1);
    await c.nack(m2, { requeue: 'false' });
    await c.ack(m3);
    check(true, 'RECEIPTs for ACK and NACK');
    const [u1, u1Got] = c.receipt('unsub');
    c.client.unsubscribe('s', { receipt: u1 });
    await u1Got;
    check(true, 'RECEIPT for UNSUBSCRIBE');
    await c.close();
    check(true, 'DISCONNECT receipt (deactivate waits for it)');

    // A refused frame: ERROR with its receipt-id, then the close.
    const e = await Conn.open(port, 'js-err');
    e.client.publish({ destination: dest, body: 'bad', headers: { priority: '12', receipt: 'bad-rcpt' } });
    const ef = await e.errors.next('ERROR for priority:12');
    check((ef.headers.message || '').includes('priority'), 'ERROR message names the bad header', ef.headers.message);
    check(ef.headers['receipt-id'] === 'bad-rcpt', 'ERROR carries the receipt-id', ef.headers['receipt-id']);
    await e.closed.next('close after ERROR');
    check(true, 'server closes the connection after ERROR');
    await withTimeout(e.client.deactivate(), 'deactivate after close');
  },
};

async function main() {
  const [portArg, name] = process.argv.slice(2);
  if (!portArg || !scenarios[name]) {
    console.error(`usage: stompjs.mjs PORT SCENARIO\nscenarios: ${Object.keys(scenarios).join(' ')}`);
    return 2;
  }
  const port = Number(portArg === '-' ? process.env.SLUICE_STOMP_PORT : portArg);
  console.log(`@stomp/stompjs over @stomp/tcp-wrapper, node ${process.version}, scenario ${name}, port ${port}`);
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
// Nothing should be left running, but never let a stray timer hold the exit.
setTimeout(() => process.exit(process.exitCode), 200).unref();
