// DiffStream: the limits and delays of the StreamHub (stream-hub.js), shared by its parts: how much of a
// feed's history it keeps, how long it waits before it reconnects, and how long an outage may go unsaid.

/// Batches kept per feed after the last snapshot, to catch up a tab that joins or takes over: at most
/// this many, and at most this many characters of JSON in all.
export const HUB_LOG_LIMIT = 256;
export const HUB_LOG_CHARS = 4 * 1024 * 1024;
/// Reconnect and retry delays: the first (the server's `retry: 2000`), doubled on each failure, at most the last.
export const RETRY_FIRST_MS = 2000;
export const RETRY_MAX_MS = 30000;
/// A feed that was unavailable (`event: unavailable`: the server cannot reach its store, Redis) when its
/// stream ended: how long a new stream has to say so again before the outage is taken as over
/// (`available`). The server says it right after the feed's first events.
export const OUTAGE_GRACE_MS = 2000;
/// The delay before the next try after `failures` failures in a row (0 for the first).
export const backoff = (failures) => Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** failures);
