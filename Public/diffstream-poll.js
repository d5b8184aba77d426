// DiffStream: following a feed through its cacheable log (`GET /feeds/{feed}/log`, docs/protocol.md,
// "Reads through HTTP caches") instead of an event stream, as a pure state machine: it says which URL to
// ask next and turns each answer into the events an event stream would have carried (a snapshot, then
// batches), so the hub (stream-poll.js) and a page apply them with the same code. No fetch, no timers:
// tested in Node by checks/browser/diffstream_poll.test.mjs.
//
//   logURL(base, feed, {after, live, cursor}) → the URL, its query in the one order the server takes
//   new LogFollower(feed, position?)           → .url(), .receive(status, body) → {events, then, …}

/// The URL of a log read, its query in the one order the server takes (`after`, `live`, `cursor`: any
/// other order is refused, so that a cache's key is the URL). `base` is an origin or '' for the page's.
export function logURL(base, feed, { after = null, live = false, cursor = null } = {}) {
  let query = '';
  if (after !== null) {
    query = `?after=${encodeURIComponent(after)}`;
    if (live) query += `&live=1${cursor !== null ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
  }
  return `${(base || '').replace(/\/+$/, '')}/feeds/${encodeURIComponent(feed)}/log${query}`;
}

/// The id to read after: a position as an event stream gave it. A multi-feed stream's ids start with
/// the feed's name and `@` (`home@ds1.…`); the log takes the feed's own id.
export function logPosition(feed, id) {
  if (!id) return null;
  return id.startsWith(`${feed}@`) ? id.slice(feed.length + 1) : id;
}

/// Follows one feed's log: where it stands (`history`, `version`, `next`: the id to read after, null
/// to start from the snapshot), whether the last answer reached the head (`upToDate`: then the next
/// read is a live one, which waits at the server), and the server's `cursor` (passed back on live reads,
/// so that an answer a cache kept can never send a client back to the URL it came from).
///
/// `receive(status, body)` takes one answer (`status` 0: no answer at all) and returns
/// `{events: [{event: 'snapshot'|'batch', data, id}], then}`, the events to apply in order, and what
/// comes next:
/// - `'next'`: read `url()` now;
/// - `'restart'`: the position cannot be followed (`409`, another history, a gap): the follower has
///   forgotten it and reads the snapshot next; the events before the gap were applied;
/// - `'retry'`: no answer, or a server error: read the same `url()` again after a backoff;
/// - `'deleted'`: `404` for a feed that was followed (it was deleted); `'notfound'`: `404` before any answer;
/// - `'unauthorized'` (`401`), `'forbidden'` (`403`): refused, with `error` and `detail`;
/// - `'closed'`: the request itself was refused (`400`, another `4xx`), with `status` and `detail`.
export class LogFollower {
  /// `position` is `{history, version, id}` (a tab's or a stream's), or null to start from the snapshot.
  constructor(feed, position = null) {
    this.feed = feed;
    this.cursor = null;
    this.reset(position);
  }

  /// Forgets the position (or sets it): the next read is the snapshot's (or the log after `position`).
  reset(position = null) {
    const next = position ? logPosition(this.feed, position.id) : null;
    this.next = next;
    this.history = next ? position.history ?? null : null;
    this.version = next ? position.version ?? null : null;
    this.upToDate = false;
  }

  /// The URL to read next, relative to the server (`base` prepended).
  url(base = '') {
    if (this.next === null) return logURL(base, this.feed);
    return logURL(base, this.feed, { after: this.next, live: this.upToDate, cursor: this.cursor });
  }

  receive(status, body) {
    if (status === 200) return this.answer(body);
    const detail = (body && (body.detail || body.error)) || '';
    if (status === 409) { this.reset(); return { events: [], then: 'restart', detail }; }
    if (status === 404) return { events: [], then: this.version !== null ? 'deleted' : 'notfound', error: body && body.error, detail };
    if (status === 401) return { events: [], then: 'unauthorized', error: body && body.error, detail };
    if (status === 403) return { events: [], then: 'forbidden', error: body && body.error, detail };
    if (status >= 400 && status < 500 && status !== 408 && status !== 429) return { events: [], then: 'closed', status, detail };
    return { events: [], then: 'retry', status };
  }

  /// A `200`: the snapshot (the start) and the batches after the position, each checked as the event
  /// stream's are (same history and `from` the version held: apply; held already: skip; else a gap).
  answer(body) {
    const events = [];
    if (!body || body.feed !== this.feed || typeof body.next !== 'string' || !Array.isArray(body.batches)) {
      this.reset();
      return { events, then: 'retry', status: 200 }; // not an answer of the contract (a proxy's page?): ask again later
    }
    if (body.snapshot) {
      const snapshot = body.snapshot;
      this.history = snapshot.history ?? null;
      this.version = snapshot.version;
      events.push({ event: 'snapshot', data: snapshot, id: body.batches.length === 0 ? body.next : null });
    } else if (this.next === null) {
      return { events, then: 'restart' }; // a log read must start from a snapshot
    }
    const last = body.batches.length - 1;
    for (const [i, batch] of body.batches.entries()) {
      const history = batch.history ?? null;
      if (history === this.history && this.version !== null && batch.version <= this.version) continue; // held already
      if (history !== this.history || batch.from !== this.version) { this.reset(); return { events, then: 'restart' }; }
      this.version = batch.version;
      events.push({ event: 'batch', data: batch, id: i === last ? body.next : null });
    }
    this.next = body.next;
    this.upToDate = body.upToDate === true;
    if (body.cursor !== undefined && body.cursor !== null) this.cursor = String(body.cursor);
    return { events, then: 'next' };
  }
}
