// DiffStream: keyed order with few moves. A region's sections and each section's items are elements
// kept by id; an update puts them in the feed's order by moving only those outside a longest run that
// is already in order, so the focus, a selection and the animations of the others are untouched.
// No globals: `reorder` uses only `children`, `parentNode`, `nextSibling` and `insertBefore`, so it is
// tested under Node with plain objects (checks/browser/diffstream_keyed.test.mjs).

/// Indices (into `sequence`) of a longest increasing subsequence of its non-negative values.
/// - Complexity: O(n log n).
export function longestIncreasing(sequence) {
  const tails = [];      // tails[k]: index of the smallest tail of an increasing run of length k + 1
  const previous = new Array(sequence.length);
  for (let i = 0; i < sequence.length; i++) {
    const value = sequence[i];
    if (value < 0) continue;
    let lo = 0; let hi = tails.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (sequence[tails[mid]] < value) lo = mid + 1; else hi = mid; }
    previous[i] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = i;
  }
  const kept = new Set();
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = previous[i]) kept.add(i);
  return kept;
}

/// Puts `nodes` into `parent` in this order, moving as few as possible (only the ones outside a longest
/// run already in order), so focus, selection and animations of the others are untouched. A moved last
/// node goes to the end of `parent`.
/// - Complexity: O(n log n) for n nodes.
export function reorder(parent, nodes) {
  const position = new Map();
  let index = 0;
  for (const child of parent.children) position.set(child, index++);
  const kept = longestIncreasing(nodes.map((node) => (position.has(node) ? position.get(node) : -1)));
  let next = null;
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i];
    if (!kept.has(i) && (node.parentNode !== parent || node.nextSibling !== next)) parent.insertBefore(node, next);
    next = node;
  }
}
