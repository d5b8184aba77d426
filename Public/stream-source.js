// DiffStream: one event stream of the StreamHub (stream-hub.js), `GET /events?feed=…` for the feeds
// assigned to it: the EventSource, its failures, backoff and reconnects, and the probe that asks the
// server why a stream was refused. Each event goes to its feed (a FeedSlot, stream-feed.js).
import { eventsURL } from './diffstream-protocol.js';
import { backoff, UNREACHABLE_AFTER } from './stream-limits.js';

/// One event stream of the hub: the feeds assigned to it (at most the hub's `maxStreamFeeds`), the
/// EventSource that carries them, and its own failures, backoff and probe. A feed keeps its stream while
/// it is subscribed to, so adding or dropping a feed reconnects only the stream it is in, and one stream
/// failing leaves the feeds of the others as they are.
export class Stream {
  constructor(hub) {
    this.hub = hub;
    this.members = new Set(); // the slots assigned to this stream, in the order they joined
    this.source = null;
    this.listed = [];         // the slots the open EventSource carries, in the order listed
    this.url = null;
    this.generation = 0;      // events of an EventSource we closed are ignored
    this.failures = 0;        // failed connections in a row, for the backoff
    this.unanswered = 0;      // tries in a row that got no answer at all (never opened, no status)
    this.retryTimer = 0;      // the reconnect after a failure
    this.forced = false;      // reconnect even if the feeds are the same (a feed asked afresh)
  }

  add(slot) {
    this.members.add(slot);
    slot.stream = this;
  }

  /// The feed leaves this stream (unsubscribed, or moved when the limit was lowered): the next sync reconnects without it.
  remove(slot) {
    this.members.delete(slot);
    if (slot.stream === this) slot.stream = null;
  }

  /// The server ended the feed's part of this stream (refused, deleted): the EventSource no longer
  /// carries it, so it leaves without a reconnect.
  left(slot) {
    this.remove(slot);
    this.listed = this.listed.filter((s) => s !== slot);
  }

  /// True if the open EventSource does not carry exactly the members (or must reconnect anyway), and no
  /// reconnect after a failure is pending (it will carry them).
  changed() {
    const members = [...this.members];
    const same = this.source && !this.forced && members.length === this.listed.length && members.every((slot, i) => slot === this.listed[i]);
    return !same && !this.retryTimer;
  }

  closeSource() {
    this.generation++;
    if (this.source) { this.source.close(); this.source = null; }
    this.listed = [];
  }

  /// No feed is left in it: the stream ends for good.
  close() {
    this.closeSource();
    this.hub.clearTimeout(this.retryTimer);
    this.retryTimer = 0;
  }

  connect(slots) {
    const hub = this.hub;
    const g = this.generation;
    const epochs = new Map(slots.map((slot) => [slot, slot.epoch]));
    const url = eventsURL(hub.baseURL, slots.map((slot) => ({ feed: slot.feed, lastEventId: slot.lastEventId })), hub.token, hub.presenceID);
    const source = new hub.EventSource(url);
    let opened = false;
    this.source = source;
    this.listed = slots;
    this.url = url;
    hub.onOpen(url);
    const on = (type, handler) => source.addEventListener(type, (event) => {
      if (g !== this.generation) return;
      let data;
      try {
        data = JSON.parse(event.data || '{}');
      } catch (error) { // not ours to guess at: reconnect this stream, every feed from the position it holds
        console.warn(`could not read a ${type} event (${error.message}); reconnecting`);
        this.closeSource();
        this.forced = true;
        hub.schedule();
        return;
      }
      const slot = hub.feeds.get(data.feed);
      // A feed we left, that was refused, that another stream carries now, or whose position was
      // forgotten since (a reconnect is due).
      if (!slot || slot.stream !== this || epochs.get(slot) !== slot.epoch || slot.ended) return;
      handler(slot, data, event.lastEventId || null, (event.data || '').length);
    });
    source.addEventListener('open', () => {
      if (g !== this.generation) return;
      opened = true;
      this.failures = 0;
      this.unanswered = 0;
      for (const slot of slots) if (this.carries(slot)) { slot.setState('open'); slot.expectOutage(); }
    });
    on('snapshot', (slot, data, id) => slot.onSnapshot(data, id));
    on('batch', (slot, data, id, size) => slot.onBatch(data, id, size));
    on('deleted', (slot, data) => hub.onDeleted(slot, data));
    on('unavailable', (slot, data) => slot.onUnavailable(data));
    on('available', (slot) => slot.onAvailable());
    for (const refusal of ['notfound', 'forbidden', 'unauthorized']) on(refusal, (slot, data) => slot.onRefused(refusal, data));
    // The browser's own reconnect would send one Last-Event-ID, which cannot hold every feed's
    // position: the stream is closed on any error and reconnected with all of them in the URL.
    source.addEventListener('error', () => {
      if (g !== this.generation) return;
      const refused = source.readyState === 2; // CLOSED: the answer was not a stream (a status, a CORS refusal, or no server)
      this.closeSource();
      if (!refused && !opened) this.unanswered++; // a network error before any answer (the probe tells the refused ones apart)
      this.tellDown(slots);
      if (refused) this.probe(url, this.generation, slots);
      else this.retryLater();
    });
  }

  /// The stream is down and will be tried again: its feeds are `retrying`, or `unreachable` once
  /// UNREACHABLE_AFTER tries in a row got no answer at all (the server is down, or refuses the page's
  /// origin: a CORS refusal reaches a page as a plain network error). Either way it goes on trying.
  tellDown(slots) {
    const state = this.unanswered >= UNREACHABLE_AFTER ? 'unreachable' : 'retrying';
    for (const slot of slots) if (this.carries(slot)) slot.setState(state);
  }

  /// The slot is still this stream's to report on (not refused, not moved to another stream).
  carries(slot) {
    return this.members.has(slot) && !slot.ended;
  }

  retryLater() {
    if (this.members.size === 0) { this.hub.schedule(); return; } // nothing left to carry: the hub ends it
    this.hub.clearTimeout(this.retryTimer);
    this.retryTimer = this.hub.setTimeout(() => { this.retryTimer = 0; this.hub.sync(); }, backoff(this.failures++));
  }

  /// Reconnects now if a reconnect after a failure is pending (a new token, a tab's retry); true if one was.
  retryNow() {
    if (!this.retryTimer) return false;
    this.hub.clearTimeout(this.retryTimer);
    this.retryTimer = 0;
    this.failures = 0;
    return true;
  }

  /// The stream was refused: asks the same URL for its status (and drops the answer), to tell its feeds why.
  /// A body that lists each feed's refusal (`feeds`) tells each feed its own; without one,
  /// 401 and 403 end every feed until a retry; 404 (none of them exists) retries each with backoff;
  /// 400 `too many feeds` (a server configured for fewer than `maxStreamFeeds`) lowers the hub's limit to
  /// the server's and splits the feeds again; any other answer, or none, retries the stream with backoff.
  async probe(url, g, slots) {
    let status = 0;
    let body = {};
    try {
      const abort = typeof AbortController === 'function' ? new AbortController() : null;
      const response = await this.hub.fetch(url, { cache: 'no-store', signal: abort && abort.signal });
      status = response.status;
      if (status >= 400 && status < 500) body = await response.json().catch(() => ({}));
      if (abort) abort.abort();
    } catch (_) { /* the server is away: keep trying */ }
    if (g !== this.generation || this.retryTimer) return;
    const ours = slots.filter((slot) => this.carries(slot) && slot.subs.size > 0);
    // No status: no answer (the server is away, or the browser hid a CORS refusal). Any status is an answer.
    this.unanswered = status === 0 ? this.unanswered + 1 : 0;
    this.tellDown(ours);
    const event = { 401: 'unauthorized', 403: 'forbidden', 404: 'notfound' }[status];
    const each = Array.isArray(body.feeds) ? new Map(body.feeds.filter((f) => f && typeof f.feed === 'string').map((f) => [f.feed, f])) : null;
    if (each && event) {
      // Every feed refused, each for its own reason (docs/protocol.md): each is told what the stream
      // would have told it, so a missing feed is retried while a forbidden one waits for a token.
      let retry = false;
      for (const slot of ours) {
        const refusal = each.get(slot.feed);
        if (refusal && ['unauthorized', 'forbidden', 'notfound'].includes(refusal.event)) {
          slot.onRefused(refusal.event, { feed: slot.feed, error: refusal.error || String(status), detail: refusal.detail || '', status });
        } else {
          retry = true; // unavailable (Redis) or not named: the stream is tried again
        }
      }
      if (retry) this.retryLater(); else this.hub.schedule();
    } else if (event) {
      for (const slot of ours) slot.onRefused(event, { feed: slot.feed, error: body.error || String(status), detail: body.detail || '', status });
      this.hub.schedule(); // feeds subscribed to since, if any
    } else if (status === 400 && body.error === 'too many feeds' && this.hub.lowerLimit(body.value, slots.length)) {
      this.hub.schedule(); // split again with the server's limit: this stream reconnects now, with fewer feeds
    } else if (status >= 400 && status < 500) { // the request itself is wrong (a bad feed name, too many feeds)
      for (const slot of ours) slot.setState('closed', { status, detail: body.detail || body.error || String(status) });
      console.warn(`the event stream was refused (${status}): ${body.detail || body.error || ''}`);
    } else {
      this.retryLater();
    }
  }
}
