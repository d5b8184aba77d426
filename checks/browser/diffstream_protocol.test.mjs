// Node tests of the protocol module (Public/diffstream-protocol.js):
// - every case of checks/fixtures/diff-cases.jsonl (DIFFSTREAM_VECTORS overrides the path): the
//   Swift engine's batch for it (checks/fixtures/vector-batches.jsonl, see checks/fixtures/README.md),
//   applied to the old snapshot, gives the new one, with the vectors' minimal count of each op;
// - FeedState's rule for snapshots, batches, duplicates, gaps and other histories;
// - applyOps' errors, and eventsURL.
// Run: node --test checks/browser/ (scripts/test.sh; test_stream_hub.py under pytest).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { importPublic } from './public_modules.mjs';

const { applyOps, FeedState, ProtocolError, eventsURL, streamPosition, isFeedName, invalidFeedDetail } = await importPublic('diffstream-protocol.js');

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const lines = (path) => readFileSync(path, 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));
const vectors = lines(process.env.DIFFSTREAM_VECTORS || here('../fixtures/diff-cases.jsonl'));
const batches = lines(here('../fixtures/vector-batches.jsonl'));

/// JSON values compared as the protocol does: object key order does not matter.
function canonical(value) {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical(value[k])]));
  return value;
}
const full = (sections) => sections.map((s) => ({ id: s.id, model: canonical(s.model ?? null), items: (s.items || []).map((i) => ({ id: i.id, kind: i.kind, model: canonical(i.model ?? null) })) }));
const KINDS = ['deleteSection', 'insertSection', 'moveSection', 'updateSection', 'delete', 'insert', 'move', 'update'];
const counts = (ops) => Object.fromEntries(KINDS.map((kind) => [kind, ops.filter((op) => op.op === kind).length]));

test('the fixture holds one batch per vector, in order', () => {
  assert.ok(vectors.length >= 300, `expected the diff cases (${vectors.length} found)`);
  assert.equal(batches.length, vectors.length, 'regenerate checks/fixtures/vector-batches.jsonl (see its README)');
  assert.deepEqual(batches.map((b) => b.name), vectors.map((v) => v.name));
});

test('every vector: the engine\'s batch turns the old snapshot into the new one, with the minimal counts', () => {
  let ops = 0;
  vectors.forEach((vector, i) => {
    const { ops: batch } = batches[i];
    const applied = applyOps(vector.old.sections, batch);
    assert.deepEqual(full(applied), full(vector.new.sections), `case ${i} (${vector.name})`);
    assert.deepEqual(counts(batch), vector.minimal, `case ${i} (${vector.name}): op counts`);
    ops += batch.length;
  });
  assert.ok(ops > 1000, 'the vectors exercise many operations');
});

test('every vector through FeedState: snapshot, the batch applied, then the same batch a duplicate', () => {
  vectors.forEach((vector, i) => {
    const state = new FeedState('f');
    assert.deepEqual(state.apply('snapshot', { feed: 'f', history: 'h', version: 4, sections: vector.old.sections }, 'f@ds1.h.4'), { result: 'snapshot' });
    const data = { feed: 'f', history: 'h', from: 4, version: 5, ops: batches[i].ops };
    assert.equal(state.apply('batch', data, 'f@ds1.h.5').result, 'applied', vector.name);
    assert.deepEqual(full(state.sections), full(vector.new.sections), vector.name);
    assert.equal(state.lastEventId, 'f@ds1.h.5');
    assert.deepEqual(state.apply('batch', data, 'f@ds1.h.5'), { result: 'duplicate' });
  });
});

test('applyOps leaves its input as it was', () => {
  const vector = vectors.find((v) => batches[vectors.indexOf(v)].ops.length > 3);
  const before = JSON.stringify(vector.old);
  applyOps(vector.old.sections, batches[vectors.indexOf(vector)].ops);
  assert.equal(JSON.stringify(vector.old), before);
});

const sections = () => [
  { id: 's1', model: { t: 1 }, items: [{ id: 'a', kind: 'k', model: 1 }, { id: 'b', kind: 'k', model: 2 }] },
  { id: 's2', model: null, items: [{ id: 'c', kind: 'k', model: 3 }] },
];

for (const [name, op, message] of [
  ['an item to delete that is not there', { op: 'delete', item: 'x' }, /delete of item "x": no item "x"/],
  ['an item to move that is not there', { op: 'move', item: 'x', section: 's1', before: null }, /no item "x"/],
  ['an item to update that is not there', { op: 'update', item: 'x', kind: 'k', model: null }, /no item "x"/],
  ['an anchor that is not in the section', { op: 'insert', item: { id: 'n', kind: 'k', model: null }, section: 's1', before: 'c' }, /no item "c" in section "s1" to place it before/],
  ['a target section that is not there', { op: 'move', item: 'a', section: 'nope', before: null }, /no section "nope" to place it in/],
  ['an inserted item id that exists in another section', { op: 'insert', item: { id: 'c', kind: 'k', model: null }, section: 's1', before: null }, /an item "c" exists already \(in section "s2"\)/],
  ['an inserted section id that exists', { op: 'insertSection', section: { id: 's2', model: null }, before: null }, /a section "s2" exists already/],
  ['a section anchor that is not there', { op: 'moveSection', section: 's2', before: 'zz' }, /no section "zz" to place it before/],
  ['a section to delete that is not there', { op: 'deleteSection', section: 'zz' }, /deleteSection of section "zz": no section "zz"/],
  ['an unknown operation', { op: 'explode', item: 'a' }, /unknown operation "explode"/],
]) {
  test(`applyOps refuses ${name} with a ProtocolError`, () => {
    assert.throws(() => applyOps(sections(), [op]), (error) => error instanceof ProtocolError && message.test(error.message));
  });
}

test('applyOps: each operation on a small snapshot', () => {
  const result = applyOps(sections(), [
    { op: 'delete', item: 'b' },
    { op: 'insertSection', section: { id: 's0', model: 'new' }, before: 's1' },
    { op: 'move', item: 'c', section: 's0', before: null },
    { op: 'insert', item: { id: 'd', kind: 'k2', model: { x: 1 } }, section: 's0', before: 'c' },
    { op: 'moveSection', section: 's2', before: 's0' },
    { op: 'deleteSection', section: 's1' },
    { op: 'updateSection', section: 's2', model: 'two' },
    { op: 'update', item: 'd', kind: 'k3', model: null },
  ]);
  assert.deepEqual(result, [
    { id: 's2', model: 'two', items: [] },
    { id: 's0', model: 'new', items: [{ id: 'd', kind: 'k3', model: null }, { id: 'c', kind: 'k', model: 3 }] },
  ]);
  // The items of a deleted section are gone with it: their ids may be inserted again.
  assert.doesNotThrow(() => applyOps(result, [{ op: 'insert', item: { id: 'a', kind: 'k', model: null }, section: 's2', before: null }]));
});

const snap = (version, history = 'h1', secs = sections()) => ({ feed: 'f', history, version, sections: secs });
const batch = (from, version, ops = [], history = 'h1') => ({ feed: 'f', history, from, version, ops });

test('FeedState: apply, duplicate, gap, another history, a batch before any snapshot', () => {
  const state = new FeedState('f');
  assert.deepEqual(state.apply('batch', batch(1, 2), 'x'), { result: 'resync', reason: 'a batch before any snapshot' });
  state.apply('snapshot', snap(3), 'f@ds1.h1.3');
  assert.equal(state.version, 3);
  assert.equal(state.history, 'h1');
  const move = [{ op: 'move', item: 'a', section: 's2', before: null }];
  assert.deepEqual(state.apply('batch', batch(3, 4, move), 'f@ds1.h1.4'), { result: 'applied', ops: move });
  assert.deepEqual(state.sections[1].items.map((i) => i.id), ['c', 'a']);
  assert.deepEqual(state.apply('batch', batch(3, 4, move), 'f@ds1.h1.4'), { result: 'duplicate' });
  assert.deepEqual(state.apply('batch', batch(1, 2), 'f@ds1.h1.2'), { result: 'duplicate' });
  const gap = state.apply('batch', batch(5, 6), 'f@ds1.h1.6');
  assert.equal(gap.result, 'resync');
  assert.match(gap.reason, /gap/);
  assert.equal(state.version, null, 'a resync clears what is held');
  assert.equal(state.apply('batch', batch(4, 5), 'f@ds1.h1.5').result, 'resync', 'until the snapshot arrives');
  state.apply('snapshot', snap(7), 'f@ds1.h1.7');
  const foreign = state.apply('batch', batch(7, 8, [], 'h2'), 'f@ds1.h2.8');
  assert.equal(foreign.result, 'resync');
  assert.match(foreign.reason, /another history/);
  state.apply('snapshot', snap(7), 'f@ds1.h1.7');
  assert.equal(state.apply('batch', batch(6, 8), 'f@ds1.h1.8').result, 'resync', 'from < held < version is a gap');
  state.apply('snapshot', snap(7), 'f@ds1.h1.7');
  assert.equal(state.apply('batch', batch(2, 3, [], 'h2'), 'f@ds1.h2.3').result, 'resync', 'an older version of another history is no duplicate');
});

test('FeedState: a batch that does not apply is a resync, and what is held is unchanged until then', () => {
  const state = new FeedState('f');
  state.apply('snapshot', snap(1), 'f@ds1.h1.1');
  const result = state.apply('batch', batch(1, 2, [{ op: 'delete', item: 'a' }, { op: 'delete', item: 'zz' }]), 'f@ds1.h1.2');
  assert.equal(result.result, 'resync');
  assert.match(result.reason, /does not apply: delete of item "zz"/);
  assert.throws(() => state.apply('deleted', {}), TypeError);
});

test('FeedState fills in what the wire may omit', () => {
  const state = new FeedState('f');
  state.apply('snapshot', { feed: 'f', history: 'h', version: 1, sections: [{ id: 's' }] }, null);
  assert.deepEqual(state.snapshot, { feed: 'f', history: 'h', version: 1, sections: [{ id: 's', model: null, items: [] }] });
});

test('eventsURL lists every feed with its position, in order', () => {
  assert.equal(eventsURL('', [{ feed: 'home' }]), '/events?feed=home');
  assert.equal(eventsURL('https://feeds.example/', [{ feed: 'a', lastEventId: 'a@ds1.0123456789abcdef.7' }, { feed: 'b', lastEventId: null }, { feed: 'c', lastEventId: 'ds1.00000000000000ff.2' }], 'tok+en'),
    'https://feeds.example/events?feed=a@ds1.0123456789abcdef.7&feed=b&feed=c@ds1.00000000000000ff.2&authorization=tok%2Ben');
  assert.equal(streamPosition('a', 'ds1.x.1'), 'a@ds1.x.1');
  assert.equal(streamPosition('a', 'a@ds1.x.1'), 'a@ds1.x.1');
  assert.equal(streamPosition('a', null), null);
});

test('eventsURL carries the presence id that keeps a visitor one present user across reopens', () => {
  assert.equal(eventsURL('', [{ feed: 'board' }], null, '0123456789abcdef0123456789abcdef'), '/events?feed=board&presence-id=0123456789abcdef0123456789abcdef');
  assert.equal(eventsURL('', [{ feed: 'board' }], 'tok', 'id-0123456789abcdef'), '/events?feed=board&authorization=tok&presence-id=id-0123456789abcdef');
});

test('isFeedName takes the protocol\'s names only: 1 to 64 of A-Z a-z 0-9 . _ -, not starting with a dot', () => {
  for (const name of ['a', 'Z', '0', '_x', '-x', 'a.b', 'home-2_v.1', 'x'.repeat(64), 'a.', 'A-Za-z0-9._-']) assert.equal(isFeedName(name), true, name);
  for (const name of ['', '.', '.hidden', 'x'.repeat(65), 'a b', 'a/b', 'a@b', 'a&feed=b', 'a%40', 'é', 'a\n', 'ａ', '*', null, undefined, 7, ['a']]) {
    assert.equal(isFeedName(name), false, JSON.stringify(name));
  }
  assert.match(invalidFeedDetail('a b'), /'a b' is not a feed id/);
});

test('FeedState: unavailable and available mark the feed stale, once each way, and leave the position', () => {
  const state = new FeedState('f');
  state.apply('snapshot', snap(3), 'f@ds1.h1.3');
  const held = JSON.stringify(state.snapshot);
  assert.equal(state.stale, null);
  assert.deepEqual(state.apply('unavailable', { feed: 'f', detail: 'redis: connection refused' }), { result: 'unavailable', detail: 'redis: connection refused' });
  assert.deepEqual(state.stale, { detail: 'redis: connection refused' });
  assert.deepEqual(state.apply('unavailable', { feed: 'f', detail: 'again' }), { result: 'duplicate' });
  assert.equal(state.version, 3);
  assert.equal(state.lastEventId, 'f@ds1.h1.3', 'an event without an id does not move the position');
  assert.equal(JSON.stringify(state.snapshot), held, 'what is held stays');
  state.reset();
  assert.ok(state.stale, 'a resync does not end the outage');
  state.apply('snapshot', snap(3), 'f@ds1.h1.3');
  assert.deepEqual(state.apply('available', { feed: 'f' }), { result: 'available' });
  assert.equal(state.stale, null);
  assert.deepEqual(state.apply('available', { feed: 'f' }), { result: 'duplicate' });
  assert.equal(state.apply('batch', batch(3, 4), 'f@ds1.h1.4').result, 'applied', 'what the feed missed follows as usual');
  const fresh = new FeedState('g');
  assert.deepEqual(fresh.apply('unavailable', { feed: 'g' }), { result: 'unavailable', detail: '' }, 'a feed the server does not hold: nothing held yet');
  assert.equal(fresh.version, null);
});
