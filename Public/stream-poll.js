// DiffStream: one feed of the StreamHub (stream-hub.js) followed through its cacheable log
// (`GET /feeds/{feed}/log`) instead of an event stream: the reads, their failures and backoff. What to
// ask and what an answer means is diffstream-poll.js's `LogFollower`; each event goes to the feed's
// FeedSlot (stream-feed.js), as a stream's would, so the tabs see no difference.
import { LogFollower } from './diffstream-poll.js';
import { backoff, UNREACHABLE_AFTER, LIVE_READ_TIMEOUT_MS } from './stream-limits.js';

/// The reads of one polled feed. It starts from where the slot stands, and stops when closed (the feed
/// left the hub, was refused or deleted). Each read is one `fetch`: a live one waits at the server (or a
/// cache in front of it) for the next batch, and is given up after LIVE_READ_TIMEOUT_MS.
export class Poller {
  constructor(hub, slot) {
    this.hub = hub;
    this.slot = slot;
    this.generation = 0;  // answers to reads of an earlier run are dropped
    this.failures = 0;    // failed reads in a row, for the backoff
    this.unanswered = 0;  // reads in a row with no answer at all
    this.restarts = 0;    // starts over in a row (a cache may hold the old snapshot for a few seconds)
    this.retryTimer = 0;
    this.abort = null;
    this.follower = null;
    this.start();
  }

  /// Starts (again) from where the slot stands: its position, or its snapshot when it has none.
  start() {
    this.stop();
    const slot = this.slot;
    this.follower = new LogFollower(slot.feed, slot.lastEventId ? { history: slot.history, version: slot.version, id: slot.lastEventId } : null);
    this.read(this.generation);
  }

  stop() {
    this.generation++;
    this.hub.clearTimeout(this.retryTimer);
    this.retryTimer = 0;
    if (this.abort) { this.abort.abort(); this.abort = null; }
  }

  close() {
    this.stop();
    if (this.slot.poller === this) this.slot.poller = null;
  }

  /// Reads now if a read after a failure is pending (a new token, a tab's retry); true if one was.
  retryNow() {
    if (!this.retryTimer) return false;
    this.failures = 0;
    this.start();
    return true;
  }

  later(g, ms) {
    this.hub.clearTimeout(this.retryTimer);
    this.retryTimer = this.hub.setTimeout(() => { this.retryTimer = 0; if (g === this.generation) this.read(g); }, ms);
  }

  async read(g) {
    const { hub, slot, follower } = this;
    const url = follower.url(hub.baseURL);
    const abort = typeof AbortController === 'function' ? new AbortController() : null;
    this.abort = abort;
    const timer = abort ? hub.setTimeout(() => abort.abort(), LIVE_READ_TIMEOUT_MS) : 0;
    const headers = hub.token ? { Authorization: `Bearer ${hub.token}` } : {};
    let status = 0;
    let body = null;
    try {
      const response = await hub.fetch(url, { headers, signal: abort && abort.signal });
      status = response.status;
      body = await response.json().catch(() => null);
    } catch (_) { /* no answer: the server or the network is away, or the read was given up */ }
    if (timer) hub.clearTimeout(timer);
    if (g !== this.generation) return;
    this.abort = null;
    const outcome = follower.receive(status, body);
    for (const { event, data, id } of outcome.events) {
      if (event === 'snapshot') slot.onSnapshot(data, id);
      else slot.onBatch(data, id, JSON.stringify(data).length);
    }
    switch (outcome.then) {
      case 'next':
        this.failures = 0;
        this.unanswered = 0;
        this.restarts = 0;
        slot.setState('open');
        this.read(g);
        return;
      case 'restart': // the tabs get a snapshot; a cache may still hold the old one for its max-age: back off
        slot.reposition(null);
        if (this.restarts++ === 0) this.read(g); else this.later(g, backoff(this.restarts - 2));
        return;
      case 'retry':
        this.unanswered = status === 0 ? this.unanswered + 1 : 0;
        slot.setState(this.unanswered >= UNREACHABLE_AFTER ? 'unreachable' : 'retrying');
        this.later(g, backoff(this.failures++));
        return;
      case 'deleted':
        hub.onDeleted(slot, { feed: slot.feed });
        return;
      case 'closed':
        this.close();
        slot.setState('closed', { status: outcome.status, detail: outcome.detail });
        return;
      default: // notfound, unauthorized, forbidden: the slot is refused (a missing feed is asked for again with backoff)
        slot.onRefused(outcome.then, { feed: slot.feed, error: outcome.error || String(status), detail: outcome.detail || '', status });
    }
  }
}
