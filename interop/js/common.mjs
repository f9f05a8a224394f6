// Helpers shared by the Node interop clients (stompjs.mjs, rhea.mjs): a
// failure type, checks that print what passed, bounded waits, and a mailbox
// of received events.

export const WAIT = 10000; // ms for any one expected event
export const QUIET = 500; // ms of silence taken as "nothing more arrives"

export class Fail extends Error {}

export function check(cond, what, ...detail) {
  if (!cond) {
    throw new Fail(what + (detail.length ? ': ' + detail.map(d => JSON.stringify(d)).join(' ') : ''));
  }
  console.log('ok   ' + what);
}

// withTimeout rejects with a Fail naming what did not happen in time.
export function withTimeout(promise, what, ms = WAIT) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Fail(`${what}: nothing within ${ms}ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// Mailbox is a queue of events (frames, messages) with a bounded wait for
// the next one.
export class Mailbox {
  constructor(name) {
    this.name = name;
    this.items = [];
    this.waiters = [];
  }

  put(x) {
    const w = this.waiters.shift();
    if (w) w(x);
    else this.items.push(x);
  }

  next(what, ms = WAIT) {
    if (this.items.length) return Promise.resolve(this.items.shift());
    let waiter;
    const p = new Promise(resolve => {
      waiter = resolve;
      this.waiters.push(waiter);
    });
    return withTimeout(p, `${this.name}: ${what}`, ms).catch(e => {
      this.waiters = this.waiters.filter(w => w !== waiter);
      throw e;
    });
  }

  // none checks that nothing arrives for QUIET ms.
  async none(what) {
    await sleep(QUIET);
    check(this.items.length === 0, what, this.items.map(x => (x.message ? x.message.body : x.body)));
  }
}

