// Node tests of keyed order with few moves (Public/diffstream-keyed.js), with plain objects for the DOM:
// a parent with `children` and `insertBefore`, nodes with `parentNode` and `nextSibling`. Checked: the
// order is the one asked for, and only the nodes outside a longest run already in order move.
// Run: node --test checks/browser/ (scripts/test.sh; test_stream_hub.py under pytest).
import test from 'node:test';
import assert from 'node:assert/strict';
import { importPublic } from './public_modules.mjs';

const { longestIncreasing, reorder } = await importPublic('diffstream-keyed.js');

/// A parent element as reorder uses it, counting the moves.
class FakeParent {
  constructor() { this.list = []; this.moves = 0; }
  get children() { return [...this.list]; }
  insertBefore(node, next) {
    if (node.parent) node.parent.list.splice(node.parent.list.indexOf(node), 1);
    const at = next === null ? this.list.length : this.list.indexOf(next);
    assert.ok(at >= 0, 'insertBefore a node that is not a child');
    this.list.splice(at, 0, node);
    node.parent = this;
    this.moves++;
  }
}

class FakeNode {
  constructor(id) { this.id = id; this.parent = null; }
  get parentNode() { return this.parent; }
  get nextSibling() {
    if (!this.parent) return null;
    return this.parent.list[this.parent.list.indexOf(this) + 1] ?? null;
  }
}

function parentWith(ids) {
  const parent = new FakeParent();
  const nodes = new Map(ids.map((id) => [id, new FakeNode(id)]));
  for (const node of nodes.values()) { parent.list.push(node); node.parent = parent; }
  return { parent, nodes };
}

const order = (parent) => parent.list.map((node) => node.id);

/// Reorders a parent holding `before` into `after` (new ids are new nodes): the moves it took.
function run(before, after) {
  const { parent, nodes } = parentWith(before);
  const wanted = after.map((id) => nodes.get(id) || new FakeNode(id));
  reorder(parent, wanted);
  assert.deepEqual(order(parent), after);
  return parent.moves;
}

/// The length of a longest increasing subsequence, the slow way, for checking.
function lisLength(sequence) {
  const values = sequence.filter((v) => v >= 0);
  const best = values.map(() => 1);
  for (let i = 0; i < values.length; i++) for (let j = 0; j < i; j++) if (values[j] < values[i]) best[i] = Math.max(best[i], best[j] + 1);
  return Math.max(0, ...best);
}

test('longestIncreasing: indices of a longest increasing run, negative values skipped', () => {
  assert.deepEqual([...longestIncreasing([])], []);
  assert.deepEqual([...longestIncreasing([-1, -1])], []);
  assert.deepEqual([...longestIncreasing([0, 1, 2])].sort(), [0, 1, 2]);
  const kept = [...longestIncreasing([3, 0, -1, 1, 4, 2])].sort();
  assert.equal(kept.length, 3);
  const values = kept.map((i) => [3, 0, -1, 1, 4, 2][i]);
  assert.deepEqual(values, [...values].sort((a, b) => a - b));
});

test('longestIncreasing: as long as the slow answer, and increasing, on random sequences', () => {
  let seed = 7;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  for (let round = 0; round < 300; round++) {
    const sequence = Array.from({ length: Math.floor(random() * 20) }, () => Math.floor(random() * 30) - 5);
    const kept = [...longestIncreasing(sequence)].sort((a, b) => a - b);
    assert.equal(kept.length, lisLength(sequence), JSON.stringify(sequence));
    for (let i = 1; i < kept.length; i++) assert.ok(sequence[kept[i - 1]] < sequence[kept[i]], JSON.stringify(sequence));
    for (const i of kept) assert.ok(sequence[i] >= 0);
  }
});

test('reorder: the same order moves nothing', () => {
  assert.equal(run(['a', 'b', 'c'], ['a', 'b', 'c']), 0);
});

test('reorder: one node moved is one move', () => {
  assert.equal(run(['a', 'b', 'c', 'd', 'e'], ['b', 'c', 'd', 'e', 'a']), 1);
  assert.equal(run(['a', 'b', 'c', 'd', 'e'], ['e', 'a', 'b', 'c', 'd']), 1);
  assert.equal(run(['a', 'b', 'c', 'd', 'e'], ['a', 'b', 'd', 'c', 'e']), 1);
});

test('reorder: a reversal keeps one node in place', () => {
  assert.equal(run(['a', 'b', 'c', 'd'], ['d', 'c', 'b', 'a']), 3);
});

test('reorder: new nodes are inserted where they belong, the others stay', () => {
  assert.equal(run(['a', 'b'], ['x', 'a', 'y', 'b', 'z']), 3);
  assert.equal(run([], ['x', 'y']), 2);
});

test('reorder: nodes left out of the list stay in the parent, after the ones listed', () => {
  // Removing is the caller's job (Region removes deleted items first): reorder only orders.
  const { parent, nodes } = parentWith(['a', 'b', 'c']);
  reorder(parent, [nodes.get('c'), nodes.get('a')]);
  assert.deepEqual(order(parent), ['c', 'a', 'b']);
  assert.equal(parent.moves, 1);
});

test('reorder: random permutations end in order with only the nodes outside a longest run moved', () => {
  let seed = 11;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  for (let round = 0; round < 200; round++) {
    const before = Array.from({ length: Math.floor(random() * 12) }, (_, i) => `n${i}`);
    const after = before.filter(() => random() < 0.8);
    for (let i = after.length - 1; i > 0; i--) { const j = Math.floor(random() * (i + 1)); [after[i], after[j]] = [after[j], after[i]]; }
    const extra = Math.floor(random() * 3);
    for (let i = 0; i < extra; i++) after.splice(Math.floor(random() * (after.length + 1)), 0, `new${i}`);
    // Nodes not listed are removed first, as Region does.
    const kept = before.filter((id) => after.includes(id));
    const positions = after.map((id) => kept.indexOf(id));
    const moves = run(kept, after);
    assert.equal(moves, after.length - lisLength(positions), `${kept} -> ${after}`);
  }
});
