// Property-based test of the page's StreamHub: seeded random schedules of writes, tabs joining and
// leaving, the hub going away (a new worker or elected tab takes over), server restarts, and every
// message delayed in its own FIFO queue. Oracle: a simulated server (replay window, histories) and tabs
// that apply batches like app.js. Properties: no tab ever sees a gap (no batch lost), applies a version
// twice, or needs a resync; after the queues drain every tab shows the server's version; one stream per
// feed. The seed is in every failure message. Run: node --test tests/browser/
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { StreamHub, historyOf } = require('../../Public/stream-hub.js');

/// SplitMix32-like generator: the same seed gives the same schedule.
function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
  };
}

function simulate(seed, steps) {
  const rand = random(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const server = { history: 'ds1.h0', version: 0, restarts: 0, sources: new Set(), replay: 1024 };
  const tabs = [];      // { id, version, history, alive, inbox: [], applied: [] }
  const outbox = [];    // tab -> hub messages: { tab, message }
  let hub = null;
  let hubNumber = 0;
  let nextTab = 0;
  let skipped = 0;    // batches a tab already held (in flight from a hub that went away): streams.js drops them

  class SimEventSource {
    constructor(url) {
      this.listeners = {};
      this.queue = [];
      this.readyState = 0;
      this.closed = false;
      this.lastEventId = new URL(url, 'http://x').searchParams.get('lastEventId') || '';
      this.feed = url.split('/')[2];
      server.sources.add(this);
      this.connect();
    }
    addEventListener(type, listener) { (this.listeners[type] ||= []).push(listener); }
    close() { this.closed = true; this.readyState = 2; server.sources.delete(this); }
    /// What the server answers on (re)connecting, queued like bytes on the socket.
    connect() {
      const id = this.lastEventId;
      const version = Number(id.slice(id.lastIndexOf('.') + 1));
      if (historyOf(id) === server.history && version <= server.version && server.version - version <= server.replay) {
        for (let v = version + 1; v <= server.version; v++) this.push('batch', { from: v - 1, version: v });
      } else {
        this.push('snapshot', { version: server.version });
      }
    }
    push(type, data) { this.queue.push({ type, data, id: `${server.history}.${data.version}` }); }
    deliver() {
      const { type, data, id } = this.queue.shift();
      this.lastEventId = id;
      for (const l of this.listeners[type] || []) l({ data: JSON.stringify(data), lastEventId: id });
    }
  }

  const fail = (message) => { throw new Error(`seed ${seed}: ${message}`); };

  function startHub() {
    hub = { n: ++hubNumber, hub: new StreamHub({ EventSource: SimEventSource, fetch: async () => ({ status: 200 }), setTimeout: () => 0, clearTimeout: () => {} }) };
    for (const tab of tabs) if (tab.alive) outbox.push({ tab, message: subscribe(tab), to: hub }); // every tab subscribes again
  }
  const subscribe = (tab) => ({ type: 'subscribe', sub: 1, feed: 'home', version: tab.version, id: tab.id });

  function receive(tab, message) {
    if (!tab.alive || message.type !== 'event') return;
    const { event, data, id } = message;
    if (event === 'snapshot') { Object.assign(tab, { version: data.version, id }); tab.applied.push(`s${data.version}`); return; }
    if (tab.version !== null && historyOf(id) === historyOf(tab.id) && data.version <= tab.version) { skipped++; return; } // streams.js skips it
    if (tab.version === null || historyOf(id) !== historyOf(tab.id) || data.from !== tab.version) {
      fail(`tab ${tab.n} at ${tab.id} got ${id} from ${data.from}: a gap (applied ${tab.applied.slice(-6)})`);
    }
    Object.assign(tab, { version: data.version, id });
    tab.applied.push(data.version);
  }

  const actions = {
    write() {
      server.version++;
      for (const source of server.sources) source.push('batch', { from: server.version - 1, version: server.version });
    },
    restart() { // a new process: a new history; every stream drops and EventSource reconnects with Last-Event-ID
      server.history = `ds1.r${++server.restarts}`;
      server.version = Math.floor(rand() * 5);
      for (const source of [...server.sources]) {
        source.queue = [];
        source.readyState = 0;
        for (const l of source.listeners.error || []) l({});
        source.connect();
      }
    },
    join() {
      const tab = { n: nextTab++, id: null, version: null, alive: true, inbox: [], applied: [] };
      tab.client = `tab${tab.n}`;
      tabs.push(tab);
      if (hub) outbox.push({ tab, message: subscribe(tab), to: hub });
    },
    leave() {
      const tab = pick(tabs.filter((t) => t.alive));
      if (!tab) return;
      tab.alive = false;
      if (hub) hub.hub.detach(tab.client);
    },
    takeover() { // the worker or the elected tab goes away: its streams with it; messages to it are lost
      if (hub) hub.hub.closeAll();
      for (const source of [...server.sources]) source.close();
      startHub();
    },
    serverEvent() {
      const source = pick([...server.sources].filter((s) => s.queue.length));
      if (source) source.deliver();
    },
    toHub() {
      const i = outbox.findIndex(() => rand() < 0.5);
      if (i < 0) return;
      const { tab, message, to } = outbox.splice(i, 1)[0];
      // one FIFO per tab: deliver this tab's oldest message instead, if it has an older one
      const first = outbox.findIndex((m) => m.tab === tab);
      const item = first >= 0 && first < i ? outbox.splice(first, 1, { tab, message, to })[0] : { tab, message, to };
      if (item.to === hub && item.tab.alive) hub.hub.handle(item.tab.client, item.message, (answer) => item.tab.inbox.push(answer));
    },
    toTab() {
      const tab = pick(tabs.filter((t) => t.inbox.length));
      if (tab) receive(tab, tab.inbox.shift());
    },
  };
  const weights = [['write', 8], ['restart', 0.3], ['join', 1.5], ['leave', 1], ['takeover', 0.7], ['serverEvent', 14], ['toHub', 6], ['toTab', 14]];
  const total = weights.reduce((sum, [, w]) => sum + w, 0);
  startHub();
  for (let i = 0; i < 3; i++) actions.join();
  for (let step = 0; step < steps; step++) {
    let r = rand() * total;
    const [name] = weights.find(([, w]) => (r -= w) < 0) || weights[0];
    actions[name]();
    if (server.sources.size > 1) fail(`step ${step}: ${server.sources.size} streams for one feed`);
  }
  // Drain: deliver everything, in any order that keeps each queue FIFO.
  for (let guard = 0; guard < 100000; guard++) {
    if (outbox.length) { const { tab, message, to } = outbox.shift(); if (to === hub && tab.alive) hub.hub.handle(tab.client, message, (a) => tab.inbox.push(a)); continue; }
    const source = [...server.sources].find((s) => s.queue.length);
    if (source) { source.deliver(); continue; }
    const tab = tabs.find((t) => t.inbox.length);
    if (tab) { receive(tab, tab.inbox.shift()); continue; }
    break;
  }
  for (const tab of tabs.filter((t) => t.alive)) {
    if (tab.version !== server.version || historyOf(tab.id) !== server.history) {
      fail(`tab ${tab.n} ends at ${tab.id}, the server at ${server.history}.${server.version}`);
    }
  }
  return { tabs: tabs.length, hubs: hubNumber, version: server.version, skipped };
}

test('random schedules: no batch lost or applied twice, every tab converges, one stream per feed', () => {
  const base = Number(process.env.STREAM_HUB_SEED || 20261123);
  let hubs = 0;
  let skipped = 0;
  for (let i = 0; i < 300; i++) {
    const run = simulate(base + i, 400);
    hubs += run.hubs;
    skipped += run.skipped;
  }
  assert.ok(hubs > 300, 'the schedules included takeovers');
  assert.ok(skipped > 0, 'the schedules delivered some batches twice, which the tabs skipped');
});
