// DiffStream: the page's connection (docs/client-js.md). It follows feeds over the transport
// (diffstream-streams.js: one multi-feed event stream shared by the tabs of an origin), keeps each
// feed's state with the protocol's state machine (diffstream-protocol.js: apply a snapshot or a batch,
// resync on a gap), and hands changes to subscriptions and regions (diffstream-patch.js). Writes: the
// actions of hosted view models, their catalog (GET /feeds), and the page's `data-action` controls
// (diffstream-actions.js).
import { FeedState } from './diffstream-protocol.js';
import { openStreams } from './diffstream-streams.js';
import { Region } from './diffstream-patch.js';
import { targetField, listenForActions, runAction, reportActionError } from './diffstream-actions.js';

/// An error of a write: `status` is the HTTP status (0 when the server did not answer).
export class ActionError extends Error {
  constructor(message, status, body) {
    super(message);
    this.name = 'ActionError';
    this.status = status;
    this.body = body;
  }
}

// ---- The connection ---------------------------------------------------------------------------------

/// One shared connection: every subscribed feed on one event stream (see docs/client-js.md).
export class Connection {
  constructor(options = {}) {
    const here = globalThis.location ? location.href : 'http://localhost/';
    const base = new URL(options.baseURL || '/', here);
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    this.baseURL = base.href;
    this.explicitBase = Boolean(options.baseURL);
    this.crossOrigin = globalThis.location ? base.origin !== location.origin : false;
    this.token = options.token || null;
    this.mode = options.mode || (this.crossOrigin ? 'own' : undefined);
    this.onError = options.onError || null;
    this.poll = options.poll || null;
    this.maxPolls = options.maxPolls;
    this.feeds = new Map(); // feed -> { state: FeedState, status, connection, error, listeners: Set, stream }
    this.regions = new Set();
    this.catalogPromise = null;
    this.catalogEntries = new Map();
    this.closed = false;
    this.streams = this.open();
    this.listening = false;
    this.listen();
  }

  open() {
    const options = {};
    if (this.explicitBase) options.baseURL = this.baseURL;
    if (this.token) options.token = this.token;
    if (this.mode) options.mode = this.mode;
    if (this.poll) options.poll = this.poll;
    if (this.maxPolls !== undefined) options.maxPolls = this.maxPolls;
    return openStreams(options);
  }

  /// A URL of the server (`feeds/x/actions/y`).
  url(path) { return new URL(path.replace(/^\//, ''), this.baseURL).href; }

  headers(json) {
    const headers = json ? { 'Content-Type': 'application/json' } : {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    return headers;
  }

  /// Uses another token from now on: writes send it as `Authorization: Bearer`, and the streams are
  /// opened again with it (every feed resubscribes; a snapshot of each follows). `null` removes it.
  setToken(token) {
    const value = token || null;
    if (value === this.token) return;
    this.token = value;
    this.catalogPromise = null;
    if (typeof this.streams.setToken === 'function') { // the transport keeps the stream and asks refused feeds again
      this.streams.setToken(value || '');
      return;
    }
    this.streams.close();
    this.streams = this.open();
    for (const entry of this.feeds.values()) {
      entry.state = new FeedState(entry.feed);
      entry.status = 'connecting';
      entry.error = null;
      entry.stream = this.streams.subscribe(entry.feed, (event) => this.receive(entry, event));
    }
  }

  /// Asks again now for the feeds the server refused (say, after the user signed in some other way).
  retry() { if (typeof this.streams.retry === 'function') this.streams.retry(); }

  // Feeds

  entry(feed) {
    let entry = this.feeds.get(feed);
    if (!entry) {
      entry = { feed, state: new FeedState(feed), status: 'connecting', connection: 'connecting', error: null, listeners: new Set(), stream: null };
      this.feeds.set(feed, entry);
      entry.stream = this.streams.subscribe(feed, (event) => this.receive(entry, event));
    }
    return entry;
  }

  release(entry, listener) {
    entry.listeners.delete(listener);
    if (entry.listeners.size || this.feeds.get(entry.feed) !== entry) return;
    this.feeds.delete(entry.feed);
    entry.stream.close();
  }

  /// One event of the transport for a feed: applied with the protocol's state machine, then passed on.
  receive(entry, event) {
    if (this.feeds.get(entry.feed) !== entry) return;
    let change;
    switch (event.type) {
      case 'snapshot':
      case 'batch': {
        let outcome;
        try {
          outcome = entry.state.apply(event.type, event.data, event.id);
        } catch (error) {
          outcome = { result: 'resync', reason: error.message };
        }
        if (outcome.result === 'duplicate') return;
        if (outcome.result === 'resync') {
          entry.status = 'resyncing';
          entry.stream.resync();
          change = { type: 'resync', reason: outcome.reason };
          break;
        }
        entry.error = null;
        const resynced = entry.status === 'resyncing' || entry.status === 'reconnecting';
        entry.status = 'live';
        change = outcome.result === 'snapshot'
          ? { type: 'snapshot', data: event.data, resynced }
          : { type: 'batch', ops: outcome.ops || event.data.ops, data: event.data };
        break;
      }
      case 'unavailable':
      case 'available': {
        // The server cannot reach its store (Redis), then can again: what is shown stays, marked stale.
        const outcome = entry.state.apply(event.type, event.data);
        if (outcome.result === 'duplicate') return;
        change = outcome.result === 'unavailable' ? { type: 'unavailable', detail: outcome.detail, data: event.data } : { type: 'available', data: event.data };
        break;
      }
      case 'deleted':
      case 'notfound':
      case 'forbidden':
      case 'unauthorized':
        entry.state.stale = null; // the feed's part of the stream ended; that event says more
        entry.status = event.type === 'unauthorized' && event.data && /expired/i.test(event.data.error || '') ? 'expired' : event.type;
        entry.error = event.data || null;
        if (event.type === 'deleted') {
          // The transport ended this subscription: the entry is dropped, so a later subscribe or render of
          // the name subscribes afresh (and gets the feed once it is created again).
          entry.state = new FeedState(entry.feed);
          this.feeds.delete(entry.feed);
        }
        change = { type: event.type, data: event.data };
        break;
      case 'state':
        // The transport's states: connecting, open, retrying, unreachable, closed (docs/client-js-protocol.md).
        entry.connection = event.state;
        // Closed with a status: the request was refused as invalid (an invalid feed name, which never
        // reaches the stream; or another 4xx answer to the stream that the transport cannot fix).
        if (event.state === 'closed' && event.status !== undefined) {
          entry.status = 'invalid';
          entry.error = { feed: entry.feed, status: event.status, detail: event.detail || '' };
        } else if (event.state === 'retrying' && entry.status === 'live') entry.status = 'reconnecting';
        else if (event.state === 'unreachable') {
          // Several tries got no answer (the server is down, or refuses this page's origin: CORS); the
          // transport goes on trying. `error.detail` says so in words.
          entry.status = 'unreachable';
          entry.error = { feed: entry.feed, error: 'unreachable', detail: event.detail || '' };
        } else if ((event.state === 'retrying' || event.state === 'open') && entry.status === 'unreachable') {
          // The server answered again: live once open with a version held, else on the way.
          const held = entry.state.version !== null && entry.state.version !== undefined;
          entry.status = !held ? 'connecting' : event.state === 'open' ? 'live' : 'reconnecting';
          entry.error = null;
        } else if (event.state === 'open' && (entry.status === 'reconnecting' || entry.status === 'invalid') && entry.state.version !== null && entry.state.version !== undefined) {
          entry.status = 'live';
          entry.error = null;
        }
        change = { type: 'state', state: event.state };
        if (event.status !== undefined) Object.assign(change, { status: event.status, detail: event.detail || '' });
        else if (event.detail !== undefined) change.detail = event.detail;
        break;
      default:
        return;
    }
    for (const listener of [...entry.listeners]) {
      try { listener(change, entry); } catch (error) { console.error(error); }
    }
  }

  /// Follows one feed; see `subscribe` below.
  subscribe(feed, handlers = {}) {
    if (this.closed) throw new Error('diffstream: the connection is closed');
    const entry = this.entry(feed);
    const h = typeof handlers === 'function' ? { change: handlers } : handlers;
    let open = true;
    const subscription = {
      feed,
      get version() { return entry.state.version ?? null; },
      get history() { return entry.state.history ?? null; },
      get sections() { return entry.state.sections ?? null; },
      get lastEventId() { return entry.state.lastEventId ?? null; },
      get status() { return entry.status; },
      get connection() { return entry.connection; },
      get error() { return entry.error; },
      /// `{detail}` while the server says the feed is unavailable (its store, Redis, is out of reach):
      /// `sections` is then the last state received, kept but maybe out of date. Null otherwise.
      get stale() { return entry.state.stale ?? null; },
      get state() {
        return { feed, version: this.version, history: this.history, status: entry.status, connection: entry.connection, error: entry.error, stale: this.stale, sections: this.sections };
      },
      resync: () => { if (open) { entry.status = 'resyncing'; entry.stream.resync(); } },
      close: () => { if (open) { open = false; this.release(entry, listener); } },
    };
    const listener = (change) => {
      if (!open) return;
      if (h.change) h.change(change, subscription);
      if (change.type === 'snapshot' && h.snapshot) h.snapshot(subscription, change.data);
      else if (change.type === 'batch' && h.batch) h.batch(subscription, change.ops, change.data);
      else if (change.type === 'state' && h.state) h.state(subscription, change.state);
      else if (change.type === 'deleted' && h.deleted) h.deleted(subscription);
      else if (change.type === 'unavailable' && h.unavailable) h.unavailable(subscription, change.detail);
      else if (change.type === 'available' && h.available) h.available(subscription);
      else if (['notfound', 'forbidden', 'unauthorized'].includes(change.type) && h.refused) h.refused(subscription, change.type, change.data);
      if (change.type === 'state' && change.state === 'unreachable' && h.unreachable) h.unreachable(subscription, change.detail);
    };
    entry.listeners.add(listener);
    // A feed already live: the new subscriber starts from what is known.
    if (entry.state.sections && entry.state.version !== null && entry.state.version !== undefined) {
      queueMicrotask(() => listener({ type: 'snapshot', data: { feed, history: entry.state.history, version: entry.state.version, sections: entry.state.sections }, resynced: false }));
    }
    // A feed unavailable already: the new subscriber is told too (after that snapshot).
    if (entry.state.stale) {
      queueMicrotask(() => { if (entry.state.stale) listener({ type: 'unavailable', detail: entry.state.stale.detail, data: { feed, detail: entry.state.stale.detail } }); });
    }
    return subscription;
  }

  /// Keeps `container` equal to the feed; see `render` below.
  render(container, feed, options = {}) {
    if (container.diffstreamRegion) container.diffstreamRegion.handle.close();
    const region = new Region(this, container, feed, options);
    this.regions.add(region);
    const show = () => region.show(region.subscription.sections || []);
    region.subscription = this.subscribe(feed, (change, subscription) => {
      if (change.type === 'snapshot' || change.type === 'batch') show();
      else if (change.type === 'deleted') region.show([]);
      region.markStale(subscription.stale);
      if (options.onChange) options.onChange(change, subscription);
    });
    if (region.subscription.sections) show();
    region.handle = {
      feed,
      container,
      subscription: region.subscription,
      get state() { return region.subscription.state; },
      close: () => { region.subscription.close(); region.close(); this.regions.delete(region); },
    };
    return region.handle;
  }

  // Writes

  /// Posts an action of a hosted view model: resolves to the server's answer ({feed, version, ops}),
  /// rejects with an ActionError saying why.
  async action(feed, name, input = {}) {
    const url = this.url(`feeds/${encodeURIComponent(feed)}/actions/${encodeURIComponent(name)}`);
    let response;
    try {
      response = await fetch(url, { method: 'POST', headers: this.headers(true), body: JSON.stringify(input), credentials: this.crossOrigin ? 'omit' : 'same-origin' });
    } catch (error) {
      throw new ActionError(`the server did not answer (${error.message})`, 0, null);
    }
    let body = null;
    try { body = await response.json(); } catch (_) { /* not JSON */ }
    if (response.ok) return body;
    let message = body && body.error ? (body.detail ? `${body.error} — ${body.detail}` : body.error)
      : `the server answered ${response.status} ${response.statusText}`.trim();
    if (response.status === 403) message += ' (your token does not allow this)';
    if (response.status === 401) message += this.token ? ' (check the token)' : ' (set a token)';
    throw new ActionError(message, response.status, body);
  }

  /// GET /feeds, once (again after setToken or refreshCatalog): resolves to the list, each feed with its
  /// kind and actions, or to null when it could not be had (no answer, an error status, not a list). A
  /// failure keeps the actions known from before and is asked again by the next call.
  catalog() {
    if (!this.catalogPromise) {
      const promise = fetch(this.url('feeds'), { headers: this.headers(false), cache: 'no-store', credentials: this.crossOrigin ? 'omit' : 'same-origin' })
        .then((response) => (response.ok ? response.json() : null))
        .then((list) => (Array.isArray(list) ? list : null), () => null)
        .then((list) => {
          if (list) this.catalogEntries = new Map(list.map((entry) => [entry.feed, entry]));
          else if (this.catalogPromise === promise) this.catalogPromise = null;
          return list;
        });
      this.catalogPromise = promise;
    }
    return this.catalogPromise;
  }

  refreshCatalog() { this.catalogPromise = null; return this.catalog(); }

  /// The catalog's entry of `feed`: its own, or its family's (`{"kind":"family","family":"home"}` lists
  /// every member `home.KEY` once), or undefined.
  entryOf(feed) {
    const own = this.catalogEntries.get(feed);
    if (own) return own;
    let found;
    for (const entry of this.catalogEntries.values()) {
      if (entry.kind === 'family' && feed.startsWith(`${entry.family}.`) && (!found || entry.family.length > found.family.length)) found = entry;
    }
    return found;
  }

  /// The actions a feed declares (known once `catalog()` has resolved), a family member's its family's.
  actionsOf(feed) { return (this.entryOf(feed) || {}).actions || []; }

  /// The field that carries the item's id in action `name` of `feed`: the action's required item field
  /// for this kind, as the server declares it in GET /feeds, or `item`.
  async itemField(feed, name, kind) {
    await this.catalog();
    const action = this.actionsOf(feed).find((a) => a.name === name);
    const field = action && (targetField(action, kind) || targetField(action));
    return field ? field.name : 'item';
  }

  // data-action: clicks, changes and submits anywhere in the document, delegated (diffstream-actions.js)

  /// Listens for the `data-action` controls of the document (clicks, changes and submits, delegated).
  listen() {
    if (this.listening || typeof document === 'undefined') return;
    this.listening = true;
    this.stopListening = listenForActions(this);
  }

  /// Runs the action of a control: the feed is the nearest `data-feed` (a rendered region has it), the
  /// item the nearest `data-item-id`.
  run(control, fields) { return runAction(this, control, fields); }

  /// Shows a failed action: the region's onError, else the connection's, else an element with
  /// `data-error` in the item or region (or next to it, made once); a `diffstream:error` event bubbles too.
  report(error, context) { reportActionError(this, error, context); }

  /// Ends every subscription and the streams.
  close() {
    this.closed = true;
    for (const region of [...this.regions]) region.handle.close();
    for (const entry of this.feeds.values()) entry.stream.close();
    this.feeds.clear();
    this.streams.close();
    if (this.listening) {
      this.stopListening();
      this.listening = false;
    }
  }
}
