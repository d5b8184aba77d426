// DiffStream: the tab side of the connection. Every tab of an origin shares ONE event stream for all
// the feeds they show (`GET /events?feed=…`), held by a StreamHub (stream-hub.js) that runs in
//   'worker' a SharedWorker (stream-worker.js), where the browser has one;
//   'tab'    one elected tab, chosen with Web Locks, relaying over a BroadcastChannel;
//   'own'    this tab alone (no SharedWorker, no Web Locks outside a secure context, or a server on
//            another origin: a page cannot use another origin's shared worker).
//
//   import { openStreams } from '/_diffstream/current/diffstream-streams.js';
//   const streams = openStreams({ baseURL, token, mode });
//   const subscription = streams.subscribe('home', (event) => { … });
//   subscription.resync();  // the feed could not be applied: a fresh snapshot follows
//   subscription.close();   // the feed leaves the stream (the others go on, without a resync)
//
// Documented in docs/client-js-protocol.md. This module keeps the tab's subscriptions and chooses the
// mode (`chooseMode`); how a tab reaches the hub in each mode is diffstream-transports.js.
import { isFeedName, invalidFeedDetail, unreachableDetail } from './diffstream-protocol.js';
import { randomId, warnOnce } from './diffstream-util.js';
import { ownTransport, workerTransport, tabTransport } from './diffstream-transports.js';

/// The modes, best first: the default is the first the browser supports.
export const MODES = ['worker', 'tab', 'own'];

/// Where the tab's hub runs. `requested` ('worker', 'tab' or 'own') if it is available here, else the
/// first of MODES that is: 'worker' needs `SharedWorker`, 'tab' needs `BroadcastChannel` and Web Locks
/// (`navigator.locks`, only in a secure context), 'own' always works; a server on another origin
/// (`foreign`) gets 'own', as neither a shared worker nor the tabs' election crosses origins. `failed`
/// lists modes that were tried and did not start (the shared worker whose script did not load).
/// `scope` is where the browser's classes are looked up: `globalThis` in a page.
///
/// Returns `{mode, available: {worker, tab, own}}`.
export function chooseMode(requested, { foreign = false, failed = [], scope = globalThis } = {}) {
  const locks = scope.navigator && scope.navigator.locks;
  const available = {
    worker: !foreign && typeof scope.SharedWorker === 'function' && !failed.includes('worker'),
    tab: !foreign && typeof scope.BroadcastChannel === 'function' && Boolean(locks) && !failed.includes('tab'),
    own: true,
  };
  const mode = MODES.includes(requested) && available[requested] ? requested : MODES.find((m) => available[m]);
  return { mode, available };
}

const subscribeMessage = (sub, entry) => ({
  type: 'subscribe', sub, feed: entry.feed, history: entry.history, version: entry.version, id: entry.id, stale: Boolean(entry.stale),
  ...(entry.poll ? { poll: true, maxPolls: entry.maxPolls } : {}),
});

/// Whether `feed` is one the page follows through its log (the `poll` option): a list of names, where
/// `prefix.*` takes every feed under the prefix, or a function of the name.
export function pollsFeed(poll, feed) {
  if (typeof poll === 'function') return Boolean(poll(feed));
  if (!Array.isArray(poll)) return false;
  return poll.some((p) => p === feed || (typeof p === 'string' && p.endsWith('.*') && feed.startsWith(p.slice(0, -1))));
}

/// The tab's side of the shared connection: its subscriptions, the position each feed holds, and the
/// transport to the hub (see `openStreams`, which gives pages its API).
export class TabStreams {
  constructor(options = {}) {
    const base = options.baseURL ? new URL(options.baseURL, location.href) : null;
    this.foreign = base !== null && base.origin !== location.origin;
    this.baseURL = this.foreign ? base.origin : '';
    this.locks = globalThis.navigator && navigator.locks; // only in a secure context
    this.mode = chooseMode(options.mode, { foreign: this.foreign }).mode;
    this.tabId = randomId();
    this.token = options.token || null;
    this.poll = options.poll || null; // the feeds followed through their cacheable log (pollsFeed)
    this.maxPolls = Number.isInteger(options.maxPolls) ? options.maxPolls : undefined;
    this.subs = new Map();  // sub -> { feed, listener, history, version, id, state, resyncing, stale, left }
    this.nextSub = 1;
    this.ready = false;     // the transport is up (our tab lock is held)
    this.closed = false;
    this.transport = null;
    this.releaseTabLock = null;
    this.delivered = [];    // the last events handed to listeners: [{feed, event, from, version}], for tests and debugging
    this.outgoing = [];     // messages of this task, not yet sent to the hub

    // A hub (the worker, or the leading tab) watches our lock to learn when this tab is gone, so we hold
    // it before we talk to one.
    if (this.locks && this.mode !== 'own') {
      this.locks.request(`diffstream-tab-${this.tabId}`, () => {
        this.startTransport();
        return new Promise((resolve) => { this.releaseTabLock = resolve; });
      });
    } else {
      this.startTransport();
    }
    if (this.token && !this.foreign) this.setToken(this.token);
  }

  /// What a hub in this page is given: the page's EventSource, fetch and timers, the server, and the
  /// token for the stream's URL in 'own' mode (else the cookie carries it).
  pageEnv() {
    return {
      EventSource: globalThis.EventSource, fetch: globalThis.fetch.bind(globalThis),
      setTimeout: globalThis.setTimeout.bind(globalThis), clearTimeout: globalThis.clearTimeout.bind(globalThis),
      baseURL: this.baseURL, token: this.mode === 'own' ? this.token : null,
    };
  }

  // ---- Messages to the hub -------------------------------------------------------------------------

  /// The messages of one task go to the hub as one, so that a page subscribing to many feeds at once
  /// opens one stream, not one per feed.
  post(message) {
    if (!this.ready || this.closed) return;
    this.outgoing.push(message);
    if (this.outgoing.length === 1) queueMicrotask(() => this.flush());
  }

  flush() {
    const messages = this.outgoing;
    this.outgoing = [];
    if (!this.ready || this.closed || messages.length === 0) return;
    this.transport.post(messages.length === 1 ? messages[0] : { type: 'many', messages });
  }

  /// The hub changed (a new worker or a new elected tab): subscribe again from where each feed stands,
  /// so the new hub resumes with every position and no batch is lost or applied twice.
  resubscribeAll() {
    for (const [sub, entry] of this.subs) this.post(subscribeMessage(sub, entry));
  }

  // ---- Messages from the hub -----------------------------------------------------------------------

  call(entry, event) {
    if (event.type !== 'state') {
      this.delivered.push({ feed: entry.feed, event: event.type, from: event.data && event.data.from, version: event.data && event.data.version });
      if (this.delivered.length > 1000) this.delivered.shift();
    }
    try {
      entry.listener(event);
    } catch (error) {
      console.warn(`the listener of ${entry.feed} failed on a ${event.type} (${error.message})`);
    }
  }

  receive(message) {
    const entry = this.subs.get(message.sub);
    if (!entry) return; // a subscription we have left
    if (message.type === 'state') {
      entry.state = message.state;
      const event = { type: 'state', feed: entry.feed, state: message.state };
      if (message.status !== undefined) event.status = message.status;
      if (message.detail !== undefined) event.detail = message.detail;
      if (message.state === 'unreachable') event.detail = this.unreachable();
      this.call(entry, event);
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
    if (type === 'deleted') this.subs.delete(message.sub);
    this.call(entry, { type, feed: entry.feed, id: id || null, data });
  }

  /// Why the hub calls the server unreachable, in words (`unreachableDetail`: `--allow-origin` when the
  /// server is on another origin), said once in the console too.
  unreachable() {
    const detail = unreachableDetail(this.foreign ? this.baseURL : location.origin, location.origin);
    warnOnce(detail);
    return detail;
  }

  // ---- Subscriptions -------------------------------------------------------------------------------

  subscribe(feed, listener) {
    if (this.closed) throw new Error('these streams are closed');
    const sub = this.nextSub++;
    const entry = { feed, listener, history: null, version: null, id: null, state: 'connecting', resyncing: false, stale: null, poll: pollsFeed(this.poll, feed), maxPolls: this.maxPolls };
    if (isFeedName(feed)) {
      this.subs.set(sub, entry);
      this.post(subscribeMessage(sub, entry));
    } else {
      // The server refuses a whole stream for one invalid name: this feed alone is refused, and never
      // reaches the hub (so never the shared stream). The listener hears it after subscribe returns.
      entry.state = 'closed';
      queueMicrotask(() => { if (!entry.left && !this.closed) this.call(entry, { type: 'state', feed, state: 'closed', status: 400, detail: invalidFeedDetail(feed) }); });
    }
    const streams = this;
    return {
      resync() {
        if (streams.subs.get(sub) !== entry) return;
        Object.assign(entry, { history: null, version: null, id: null, resyncing: true });
        streams.post({ type: 'resync', sub });
      },
      close() { entry.left = true; if (streams.subs.delete(sub)) streams.post({ type: 'unsubscribe', sub }); },
      get state() { return entry.state; },
      get version() { return entry.version; },
      get history() { return entry.history; },
      /// The `unavailable` event's data (`{feed, detail}`) while the feed is unavailable, else null.
      get stale() { return entry.stale; },
    };
  }

  // ---- The transport -------------------------------------------------------------------------------

  startTransport() {
    if (this.closed) return;
    this.transport = this.mode === 'worker' ? workerTransport(this) : this.mode === 'tab' ? tabTransport(this) : ownTransport(this);
    this.ready = true;
    this.resubscribeAll();
  }

  /// The shared worker did not start: the elected tab holds the stream, or this tab.
  fallBack() {
    if (this.mode !== 'worker' || this.closed) return; // already fell back
    this.mode = chooseMode(undefined, { foreign: this.foreign, failed: ['worker'] }).mode;
    console.warn(`the shared worker did not start; the ${this.mode === 'tab' ? 'elected tab' : 'tab'} holds the stream`);
    this.startTransport();
  }

  // ---- The token -----------------------------------------------------------------------------------

  /// A new token (an empty one removes it). On the page's origin `EventSource` cannot send headers, so
  /// the token travels in the cookie `diffstreamAuthorization`, which every tab and the worker share;
  /// on another origin it goes in the stream's URL. Refused feeds are asked for again.
  setToken(value) {
    this.token = value || null;
    if (this.mode === 'own') this.post({ type: 'token', token: this.token }); // our own hub: the token goes in its stream's URL
    if (!this.foreign) {
      const secure = location.protocol === 'https:' ? '; Secure' : '';
      document.cookie = this.token
        ? `diffstreamAuthorization=${encodeURIComponent(this.token)}; path=/; SameSite=Strict${secure}`
        : `diffstreamAuthorization=; path=/; SameSite=Strict; Max-Age=0${secure}`;
    }
    this.retry();
  }

  /// Asks again now for this tab's refused feeds, and reconnects a stream that is waiting to.
  retry() {
    for (const sub of this.subs.keys()) this.post({ type: 'retry', sub });
  }

  close() {
    if (this.closed) return;
    for (const sub of this.subs.keys()) this.post({ type: 'unsubscribe', sub });
    this.subs.clear();
    this.flush();
    this.closed = true;
    if (this.transport && this.transport.close) this.transport.close();
    if (this.releaseTabLock) this.releaseTabLock();
  }

  /// Where things stand: `{mode, leading, closed, feeds: {feed: {state, history, version, id, stale}}}`
  /// (one entry per feed this tab subscribes to; an invalid feed name, never subscribed, has none).
  get state() {
    const feeds = {};
    for (const entry of this.subs.values()) feeds[entry.feed] = { state: entry.state, history: entry.history, version: entry.version, id: entry.id, stale: entry.stale };
    return { mode: this.mode, leading: this.leading, closed: this.closed, feeds };
  }

  /// Whether this tab holds the stream (always in 'own' mode, never in 'worker' mode).
  get leading() { return this.mode === 'own' || Boolean(this.transport && this.transport.leading); }

  /// For tests: ends the shared worker as if it had crashed (the tabs start another).
  exitWorker() { if (this.transport && this.transport.exit) this.transport.exit(); }
}

/// Opens the tab's side of the shared connection.
///
/// Options: `baseURL` (the server's origin; the page's own by default), `token` (a JWT for private
/// feeds; on the page's origin it is stored in the `diffstreamAuthorization` cookie that every tab and
/// the worker share, on another origin it goes in the stream's URL), `mode` ('worker', 'tab' or 'own';
/// the first the browser supports by default; another origin always gets 'own'), `poll` (feeds to follow
/// through their cacheable log, `GET /feeds/{feed}/log`, for pages behind a CDN: a list of names, `prefix.*`
/// for a family, or a function of the name; docs/client-js.md, "Behind a CDN"), `maxPolls` (how many feeds
/// the hub polls at most, MAX_POLLS by default; the rest go in the event stream).
///
/// Returns `{ subscribe(feed, listener) → {close(), resync(), state, version, history, stale}, setToken(token),
/// retry(), close(), state, mode, leading, delivered }`. The listener gets
/// `{type: 'snapshot'|'batch'|'deleted'|'notfound'|'forbidden'|'unauthorized', feed, id, data}`,
/// `{type: 'unavailable', feed, id: null, data: {feed, detail}}` and `{type: 'available', feed, id: null,
/// data: {feed}}` (the server cannot reach its store, Redis, and then can again: once each way, the
/// position untouched; `stale` holds the unavailable event's data until then), and
/// `{type: 'state', feed, state: 'connecting'|'open'|'retrying'|'unreachable'|'closed', status?, detail?}` (an invalid
/// feed name gets only `state: 'closed'`, `status: 400` and why, and is never put in the stream;
/// `unreachable` is `retrying` after several tries with no answer at all, with why in `detail`, also said
/// once in the console: a server on another origin that does not allow the page's is one). Each
/// feed arrives as a snapshot and the batches that follow it: a batch the tab already got (around a
/// change of hub) is skipped here, so the listener sees none twice; after `resync()`, batches are
/// dropped until the fresh snapshot.
export function openStreams(options = {}) {
  const streams = new TabStreams(options);
  // Functions, not methods: the API's parts work taken apart (`const { subscribe } = openStreams()`).
  return {
    subscribe: (feed, listener) => streams.subscribe(feed, listener),
    setToken: (token) => streams.setToken(token),
    retry: () => streams.retry(),
    close: () => streams.close(),
    get state() { return streams.state; },
    get mode() { return streams.mode; },
    get leading() { return streams.leading; },
    tabId: streams.tabId,
    delivered: streams.delivered,
    exitWorker: () => streams.exitWorker(),
  };
}
