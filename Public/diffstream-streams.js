// DiffStream: the tab side of the connection. Every tab of an origin shares ONE event stream for all
// the feeds they show (`GET /events?feed=…`), held by a StreamHub (stream-hub.js) that runs in
//   'worker' a SharedWorker (stream-worker.js), where the browser has one;
//   'tab'    one elected tab, chosen with Web Locks, relaying over a BroadcastChannel;
//   'own'    this tab alone (no SharedWorker, no Web Locks outside a secure context, or a server on
//            another origin: a page cannot use another origin's shared worker).
//
//   import { openStreams } from '/diffstream-streams.js';
//   const streams = openStreams({ baseURL, token, mode });
//   const subscription = streams.subscribe('home', (event) => { … });
//   subscription.resync();  // the feed could not be applied: a fresh snapshot follows
//   subscription.close();   // the feed leaves the stream (the others go on, without a resync)
//
// Documented in docs/client-js-protocol.md.
import { StreamHub } from './stream-hub.js';
import { isFeedName, invalidFeedDetail } from './diffstream-protocol.js';
import { randomId } from './diffstream-util.js';

const MODES = ['worker', 'tab', 'own'];
/// The messages between tabs, worker and hub are versioned by name: a page of another version never
/// talks to a worker or an elected tab of this one.
const NAME = 'diffstream-streams-2';
const WELCOME_MS = 4000; // a shared worker that has not answered by then is taken as one that did not load

/// Opens the tab's side of the shared connection.
///
/// Options: `baseURL` (the server's origin; the page's own by default), `token` (a JWT for private
/// feeds; on the page's origin it is stored in the `diffstreamAuthorization` cookie that every tab and
/// the worker share, on another origin it goes in the stream's URL), `mode` ('worker', 'tab' or 'own';
/// the first the browser supports by default; another origin always gets 'own').
///
/// Returns `{ subscribe(feed, listener) → {close(), resync(), state, version, history, stale}, setToken(token),
/// retry(), close(), state, mode, leading, delivered }`. The listener gets
/// `{type: 'snapshot'|'batch'|'deleted'|'notfound'|'forbidden'|'unauthorized', feed, id, data}`,
/// `{type: 'unavailable', feed, id: null, data: {feed, detail}}` and `{type: 'available', feed, id: null,
/// data: {feed}}` (the server cannot reach its store, Redis, and then can again: once each way, the
/// position untouched; `stale` holds the unavailable event's data until then), and
/// `{type: 'state', feed, state: 'connecting'|'open'|'retrying'|'closed', status?, detail?}` (an invalid
/// feed name gets only `state: 'closed'`, `status: 400` and why, and is never put in the stream). Each
/// feed arrives as a snapshot and the batches that follow it: a batch the tab already got (around a
/// change of hub) is skipped here, so the listener sees none twice; after `resync()`, batches are
/// dropped until the fresh snapshot.
export function openStreams(options = {}) {
  const base = options.baseURL ? new URL(options.baseURL, location.href) : null;
  const foreign = base !== null && base.origin !== location.origin;
  const baseURL = foreign ? base.origin : '';
  const locks = globalThis.navigator && navigator.locks; // only in a secure context
  const available = {
    worker: !foreign && typeof SharedWorker === 'function',
    tab: !foreign && typeof BroadcastChannel === 'function' && Boolean(locks),
    own: true,
  };
  let mode = available[options.mode] ? options.mode : MODES.find((m) => available[m]);
  const tabId = randomId();
  let token = options.token || null;
  const pageEnv = () => ({
    EventSource: globalThis.EventSource, fetch: globalThis.fetch.bind(globalThis),
    setTimeout: globalThis.setTimeout.bind(globalThis), clearTimeout: globalThis.clearTimeout.bind(globalThis),
    baseURL, token: mode === 'own' ? token : null,
  });

  // ---- Subscriptions of this tab -------------------------------------------------------------------
  const subs = new Map(); // sub -> { feed, listener, history, version, id, state, stale }
  let nextSub = 1;
  let ready = false;      // the transport is up (our tab lock is held)
  let closed = false;
  let transport = null;
  const delivered = [];   // the last events handed to listeners: [{feed, event, from, version}], for tests and debugging

  // The messages of one task go to the hub as one, so that a page subscribing to many feeds at once
  // opens one stream, not one per feed.
  let outgoing = [];
  const post = (message) => {
    if (!ready || closed) return;
    outgoing.push(message);
    if (outgoing.length === 1) queueMicrotask(flush);
  };
  function flush() {
    const messages = outgoing;
    outgoing = [];
    if (!ready || closed || messages.length === 0) return;
    transport.post(messages.length === 1 ? messages[0] : { type: 'many', messages });
  }
  const subscribeMessage = (sub, entry) => ({ type: 'subscribe', sub, feed: entry.feed, history: entry.history, version: entry.version, id: entry.id, stale: Boolean(entry.stale) });

  /// The hub changed (a new worker or a new elected tab): subscribe again from where each feed stands,
  /// so the new hub resumes with every position and no batch is lost or applied twice.
  function resubscribeAll() {
    for (const [sub, entry] of subs) post(subscribeMessage(sub, entry));
  }

  function call(entry, event) {
    if (event.type !== 'state') {
      delivered.push({ feed: entry.feed, event: event.type, from: event.data && event.data.from, version: event.data && event.data.version });
      if (delivered.length > 1000) delivered.shift();
    }
    try {
      entry.listener(event);
    } catch (error) {
      console.warn(`the listener of ${entry.feed} failed on a ${event.type} (${error.message})`);
    }
  }

  function receive(message) {
    const entry = subs.get(message.sub);
    if (!entry) return; // a subscription we have left
    if (message.type === 'state') {
      entry.state = message.state;
      const event = { type: 'state', feed: entry.feed, state: message.state };
      if (message.status !== undefined) event.status = message.status;
      if (message.detail !== undefined) event.detail = message.detail;
      call(entry, event);
      return;
    }
    const { event: type, data, id } = message;
    if (type === 'batch') {
      // Asked afresh: what was on the way before the snapshot is of no use.
      if (entry.resyncing) return;
      // Already got (it reached us twice around a change of hub): skip. Versions compare within one history.
      if (entry.version !== null && (data.history ?? null) === entry.history && data.version <= entry.version) return;
    }
    // An outage is told once each way (a new hub may say again what the old one did).
    if (type === 'unavailable') { if (entry.stale) return; entry.stale = data || {}; }
    if (type === 'available') { if (!entry.stale) return; entry.stale = null; }
    if (type === 'deleted' || type === 'notfound' || type === 'forbidden' || type === 'unauthorized') entry.stale = null;
    if (type === 'snapshot') entry.resyncing = false;
    if (type === 'snapshot' || type === 'batch') Object.assign(entry, { history: data.history ?? null, version: data.version, id });
    if (type === 'deleted') subs.delete(message.sub);
    call(entry, { type, feed: entry.feed, id: id || null, data });
  }

  function subscribe(feed, listener) {
    if (closed) throw new Error('these streams are closed');
    const sub = nextSub++;
    const entry = { feed, listener, history: null, version: null, id: null, state: 'connecting', resyncing: false, stale: null };
    if (isFeedName(feed)) {
      subs.set(sub, entry);
      post(subscribeMessage(sub, entry));
    } else {
      // The server refuses a whole stream for one invalid name: this feed alone is refused, and never
      // reaches the hub (so never the shared stream). The listener hears it after subscribe returns.
      entry.state = 'closed';
      queueMicrotask(() => { if (!entry.left && !closed) call(entry, { type: 'state', feed, state: 'closed', status: 400, detail: invalidFeedDetail(feed) }); });
    }
    return {
      resync() {
        if (subs.get(sub) !== entry) return;
        Object.assign(entry, { history: null, version: null, id: null, resyncing: true });
        post({ type: 'resync', sub });
      },
      close() { entry.left = true; if (subs.delete(sub)) post({ type: 'unsubscribe', sub }); },
      get state() { return entry.state; },
      get version() { return entry.version; },
      get history() { return entry.history; },
      /// The `unavailable` event's data (`{feed, detail}`) while the feed is unavailable, else null.
      get stale() { return entry.stale; },
    };
  }

  // ---- Transports ----------------------------------------------------------------------------------
  // Each has post(message) towards the hub; answers go to receive(message). A hub in this page answers
  // in a microtask, like a port would, so no listener runs inside subscribe().

  function ownTransport() {
    const hub = new StreamHub(pageEnv());
    return {
      post: (message) => hub.handle(tabId, message, (answer) => queueMicrotask(() => receive(answer))),
      close: () => hub.closeAll(),
      hub,
    };
  }

  function workerTransport() {
    let port = null;
    function start() {
      const worker = new SharedWorker(new URL('./stream-worker.js', import.meta.url), { name: NAME, type: 'module' });
      let welcomed = false;
      let abandoned = false;
      // The script could not be loaded (a proxy that does not serve it, a policy, no module workers):
      // take the next path. Not every browser reports that with an 'error' event, so a worker that has
      // not said welcome within WELCOME_MS is given up too.
      const giveUp = () => {
        if (welcomed || abandoned) return;
        abandoned = true;
        port.onmessage = null;
        port.close();
        fallBack();
      };
      worker.addEventListener('error', giveUp);
      const timer = setTimeout(giveUp, WELCOME_MS);
      port = worker.port;
      port.onmessage = ({ data }) => {
        if (abandoned) return;
        if (data.type !== 'welcome') { receive(data); return; }
        welcomed = true;
        clearTimeout(timer);
        // The worker holds `diffstream-worker-<id>` while it lives; when we get it, it is gone: start another.
        if (data.worker && locks) locks.request(`diffstream-worker-${data.worker}`, () => { if (!closed) { start(); resubscribeAll(); } });
      };
      port.start();
      port.postMessage({ type: 'hello', client: tabId });
    }
    start();
    const bye = () => port.postMessage({ type: 'bye' });
    const show = (event) => { if (event.persisted) { port.postMessage({ type: 'hello', client: tabId }); resubscribeAll(); } };
    addEventListener('pagehide', bye);
    addEventListener('pageshow', show);
    return {
      post: (message) => port.postMessage(message),
      exit: () => port.postMessage({ type: 'exit' }),
      close: () => { bye(); removeEventListener('pagehide', bye); removeEventListener('pageshow', show); },
    };
  }

  function tabTransport() {
    const channel = new BroadcastChannel(NAME);
    let leader = null; // the id of the tab that holds the stream
    let hub = null;    // ours, while we are that tab
    let release = null;
    const watched = new Set();
    const watch = (client) => { // a follower holds `diffstream-tab-<id>` for its life: once we get it, it is gone
      if (watched.has(client)) return;
      watched.add(client);
      locks.request(`diffstream-tab-${client}`, () => { watched.delete(client); if (hub) hub.detach(client); });
    };
    channel.onmessage = ({ data }) => {
      if (data.type === 'leader') {
        if (data.leader !== leader && !hub) { leader = data.leader; resubscribeAll(); }
      } else if (data.type === 'who-leads') {
        if (hub) channel.postMessage({ type: 'leader', leader: tabId });
      } else if (data.type === 'bye') {
        if (hub) hub.detach(data.from);
      } else if (data.to === 'leader') {
        if (!hub || data.leader !== tabId) return; // meant for a tab that no longer leads; the sender subscribes again
        watch(data.from);
        hub.handle(data.from, data.message, (answer) => channel.postMessage({ to: data.from, message: answer }));
      } else if (data.to === tabId) {
        receive(data.message);
      }
    };
    // Whoever gets the lock leads until its tab closes; then the next waiting tab gets it and takes over.
    locks.request(`${NAME}-leader`, () => {
      if (closed) return undefined;
      hub = new StreamHub(pageEnv());
      leader = tabId;
      channel.postMessage({ type: 'leader', leader: tabId });
      resubscribeAll();
      return new Promise((resolve) => { release = resolve; });
    });
    channel.postMessage({ type: 'who-leads' });
    return {
      post(message) {
        if (hub) hub.handle(tabId, message, (answer) => queueMicrotask(() => receive(answer)));
        else if (leader) channel.postMessage({ to: 'leader', leader, from: tabId, message });
        // no leader known yet: when one announces itself, every subscription is sent again
      },
      get leading() { return hub !== null; },
      close() {
        if (hub) { hub.closeAll(); hub = null; }
        else channel.postMessage({ type: 'bye', from: tabId });
        if (release) release();
        channel.close();
      },
    };
  }

  let releaseTabLock = null;
  function startTransport() {
    if (closed) return;
    transport = mode === 'worker' ? workerTransport() : mode === 'tab' ? tabTransport() : ownTransport();
    ready = true;
    resubscribeAll();
  }

  function fallBack() {
    if (mode !== 'worker' || closed) return; // already fell back
    console.warn(`the shared worker did not start; the ${available.tab ? 'elected tab' : 'tab'} holds the stream`);
    mode = available.tab ? 'tab' : 'own';
    startTransport();
  }

  // A hub (the worker, or the leading tab) watches our lock to learn when this tab is gone, so we hold
  // it before we talk to one.
  if (locks && mode !== 'own') {
    locks.request(`diffstream-tab-${tabId}`, () => {
      startTransport();
      return new Promise((resolve) => { releaseTabLock = resolve; });
    });
  } else {
    startTransport();
  }

  // ---- The token -----------------------------------------------------------------------------------

  /// A new token (an empty one removes it). On the page's origin `EventSource` cannot send headers, so
  /// the token travels in the cookie `diffstreamAuthorization`, which every tab and the worker share;
  /// on another origin it goes in the stream's URL. Refused feeds are asked for again.
  function setToken(value) {
    token = value || null;
    if (mode === 'own') post({ type: 'token', token }); // our own hub: the token goes in its stream's URL
    if (!foreign) {
      const secure = location.protocol === 'https:' ? '; Secure' : '';
      document.cookie = token
        ? `diffstreamAuthorization=${encodeURIComponent(token)}; path=/; SameSite=Strict${secure}`
        : `diffstreamAuthorization=; path=/; SameSite=Strict; Max-Age=0${secure}`;
    }
    retry();
  }
  if (token && !foreign) setToken(token);

  /// Asks again now for this tab's refused feeds, and reconnects a stream that is waiting to.
  function retry() {
    for (const sub of subs.keys()) post({ type: 'retry', sub });
  }

  function close() {
    if (closed) return;
    for (const sub of subs.keys()) post({ type: 'unsubscribe', sub });
    subs.clear();
    flush();
    closed = true;
    if (transport && transport.close) transport.close();
    if (releaseTabLock) releaseTabLock();
  }

  return {
    subscribe,
    setToken,
    retry,
    close,
    /// Where things stand: `{mode, leading, closed, feeds: {feed: {state, history, version, id, stale}}}`
    /// (one entry per feed this tab subscribes to; an invalid feed name, never subscribed, has none).
    get state() {
      const feeds = {};
      for (const entry of subs.values()) feeds[entry.feed] = { state: entry.state, history: entry.history, version: entry.version, id: entry.id, stale: entry.stale };
      return { mode, leading: this.leading, closed, feeds };
    },
    get mode() { return mode; },
    /// Whether this tab holds the stream (always in 'own' mode, never in 'worker' mode).
    get leading() { return mode === 'own' || Boolean(transport && transport.leading); },
    tabId,
    delivered,
    /// For tests: ends the shared worker as if it had crashed (the tabs start another).
    exitWorker() { if (transport && transport.exit) transport.exit(); },
  };
}
