// DiffStream: the animation of a region's changes, FLIP moves and fading inserts and removals
// (https://aerotwist.com/blog/flip-your-animations/): the positions are read before the DOM changes
// (`measure`), the elements that moved are animated from there to where they are now (`playFlip`), and
// a removed element fades out as a copy laid over where it was (`fadeOut`). None when the user prefers
// reduced motion, the browser cannot animate, or the region is large.

/// With more sections and items than this in a region, changes are not animated.
export const MAX_ANIMATED = 600;

const reducedMotion = globalThis.matchMedia ? matchMedia('(prefers-reduced-motion: reduce)') : { matches: true };

/// Whether a region of `count` sections and items animates its changes: its `animate` option (true,
/// false, or a function asked each time; animated unless false) and what the browser and user allow.
export function animationWanted(option, count) {
  const wanted = typeof option === 'function' ? option() : option !== false;
  return wanted && !reducedMotion.matches && typeof Element.prototype.animate === 'function' && count <= MAX_ANIMATED;
}

/// Where each of `elements` is now, for `playFlip` after the DOM changed.
export function measure(elements) {
  const rects = new Map();
  for (const element of elements) rects.set(element, element.getBoundingClientRect());
  return rects;
}

/// A removed element fades out: a copy of it (without ids or names, inert, hidden from assistive
/// technology) is laid over where it was and fades away.
export function fadeOut(node) {
  const rect = node.getBoundingClientRect();
  if (!rect.width && !rect.height) return;
  const copy = node.cloneNode(true);
  for (const n of [copy, ...copy.querySelectorAll('[data-item-id], [data-section-id], [id], [name]')]) {
    n.removeAttribute('data-item-id'); n.removeAttribute('data-section-id'); n.removeAttribute('id'); n.removeAttribute('name');
  }
  copy.classList.add('ds-ghost');
  copy.setAttribute('aria-hidden', 'true');
  copy.inert = true;
  Object.assign(copy.style, {
    position: 'absolute', zIndex: '5', margin: '0', pointerEvents: 'none', boxSizing: 'border-box',
    left: `${rect.left + scrollX}px`, top: `${rect.top + scrollY}px`, width: `${rect.width}px`, height: `${rect.height}px`,
  });
  document.body.append(copy);
  const fade = copy.animate([{ opacity: 1 }, { opacity: 0, transform: 'scale(.92)' }], { duration: 260, easing: 'ease-in' });
  fade.onfinish = fade.oncancel = () => copy.remove();
}

/// Animates the elements measured in `rects` that moved from there to where they are now (sections
/// first, then the items within them), and fades in the `inserted` ones.
export function playFlip(rects, inserted) {
  const moved = [...rects].filter(([node]) => node.isConnected && !inserted.has(node));
  for (const [node] of moved) for (const a of node.getAnimations()) if (a.id === 'ds-flip') a.cancel();
  // Sections first: an item in a moving section is animated only by how far it moves within it.
  moved.sort(([a], [b]) => (b.dataset.sectionId !== undefined) - (a.dataset.sectionId !== undefined));
  const now = new Map(moved.map(([node]) => [node, node.getBoundingClientRect()]));
  const deltas = new Map();
  for (const [node, old] of moved) {
    const outer = node.dataset.itemId !== undefined && deltas.get(node.closest('[data-section-id]'));
    const dx = old.left - now.get(node).left - (outer ? outer[0] : 0);
    const dy = old.top - now.get(node).top - (outer ? outer[1] : 0);
    if (Math.abs(dx) < 0.5 && Math.abs(dy) < 0.5) continue;
    deltas.set(node, [dx, dy]);
    node.animate([{ transform: `translate(${dx}px, ${dy}px)` }, { transform: 'none' }],
      { id: 'ds-flip', duration: 320, easing: 'cubic-bezier(.2, .8, .2, 1)' });
  }
  for (const node of inserted) {
    if (!node.isConnected) continue;
    const scale = node.dataset.itemId !== undefined ? 'scale(.94)' : 'none';
    node.animate([{ opacity: 0, transform: scale }, { opacity: 1, transform: 'none' }], { duration: 260, easing: 'ease-out' });
  }
}
