// Node tests of the StreamHub's limits and delays (Public/stream-limits.js): the backoff, and that the hub
// exports the same values. Run: node --test checks/browser/ (scripts/test.sh; test_stream_hub.py under pytest).
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';

const limits = await importPublic('stream-limits.js');
const hub = await importPublic('stream-hub.js');

test('backoff: the first delay, doubled on each failure, at most the last', () => {
  const { backoff, RETRY_FIRST_MS, RETRY_MAX_MS } = limits;
  assert.deepEqual([0, 1, 2, 3, 4, 5, 10, 100].map(backoff), [2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]);
  assert.equal(backoff(0), RETRY_FIRST_MS);
  assert.equal(backoff(1000), RETRY_MAX_MS);
});

test('stream-hub.js exports the limits it uses', () => {
  for (const name of ['HUB_LOG_LIMIT', 'HUB_LOG_CHARS', 'RETRY_FIRST_MS', 'RETRY_MAX_MS', 'OUTAGE_GRACE_MS']) {
    assert.equal(hub[name], limits[name], name);
    assert.ok(Number.isInteger(hub[name]) && hub[name] > 0, name);
  }
});
