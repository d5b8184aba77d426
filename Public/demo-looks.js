// The demo's looks beyond its templates (index.html): the hooks that the page (app.js) and the dashboard
// share, for what the templates' attributes cannot say: a poster's colour, a playing card's colour, the
// selected day, a done to-do, a section's title and a game's chips; and who is watching (presenceHooks).

/// A stable hue for an id, so a poster always gets the same colours.
function hue(id) {
  let h = 2166136261;
  for (const c of String(id)) h = Math.imul(h ^ c.codePointAt(0), 16777619);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  return ((h ^ (h >>> 12)) >>> 0) % 360;
}

function media(li, item) {
  const m = item.model || {};
  const poster = li.querySelector('.poster');
  if (!poster) return;  // an item of another look under the same kind
  poster.style.setProperty('--hue', hue(m.id ?? item.id)); // the url is never fetched
  poster.setAttribute('aria-label', `${item.kind === 'video' ? 'Video' : 'Image'}: ${m.title ?? ''}`);
  li.querySelector('.play').hidden = item.kind !== 'video';
}

/// The hooks for `feed`: a playing card's only on blackjack, whose template it completes; a "card" of any
/// other feed (the README's first example) has neither template nor hook, so it shows as a titled item.
export function hooksFor(feed) {
  if (feed === 'blackjack') return hooks;
  const { card, ...others } = hooks;  // eslint-disable-line no-unused-vars
  return others;
}

const hooks = {
  image: media,
  video: media,
  card(li, { model: m = {} }) {
    const face = li.querySelector('.face');
    if (!face) return;  // a "card" of another feed than blackjack: no playing-card template there
    face.classList.toggle('red', m.suit === '♥' || m.suit === '♦');
    face.setAttribute('aria-label', `${m.rank ?? ''} ${m.suit ?? ''}`.trim());
  },
  day(li, { model: m = {} }, { created }) {
    li.classList.toggle('selected', m.selected === true);
    const body = li.querySelector('.body');
    if (body.tagName === 'BUTTON') {
      body.setAttribute('aria-pressed', String(m.selected === true));
      if (created) li.addEventListener('click', (event) => { if (event.target === li) body.click(); });
    }
  },
  todo(li, { model: m = {} }, { created }) {
    li.classList.toggle('done', m.done === true);
    if (created) li.draggable = true;
  },
};

/// A section without a title keeps its id, for screen readers only.
export function sectionHook(section, { id, model }) {
  const title = model && typeof model.title === 'string' ? model.title : '';
  section.querySelector('h2')?.classList.toggle('untitled', !title);
  const text = section.querySelector('.section-title');
  if (text && text.textContent !== (title || id)) text.textContent = title || id;
  // A game's chips show when the model has the key, even when its value is 0.
  for (const chip of section.querySelectorAll('[data-chip]')) {
    const hidden = !(model && typeof model === 'object' && Object.hasOwn(model, chip.dataset.chip));
    if (chip.hidden !== hidden) chip.hidden = hidden;
  }
}

// ---- Who is watching: the presence feed of the feed shown (docs/protocol.md "Who is here") --------

/// The letters of a present user's avatar: the initials of the first two words of their name (`Alice
/// Liddell`: AL; `bob`: B), `?` for a user without a name (anonymous presence, or a token without one).
export function initials(name) {
  const words = typeof name === 'string' ? name.trim().split(/\s+/).filter(Boolean) : [];
  if (words.length === 0) return '?';
  return words.slice(0, 2).map((word) => [...word][0].toLocaleUpperCase()).join('');
}

/// What an avatar's tooltip says of a present user's model: the name and subject it shows, and the
/// streams past the first (`Alice (alice@example.com), 2 streams`; `Someone (no name given)`).
export function presenceTitle(model) {
  const m = model && typeof model === 'object' ? model : {};
  const name = typeof m.name === 'string' && m.name ? m.name : 'Someone';
  const sub = typeof m.sub === 'string' && m.sub ? ` (${m.sub})` : (m.name ? '' : ' (no name given)');
  const streams = Number.isInteger(m.connections) && m.connections > 1 ? `, ${m.connections} streams` : '';
  return `${name}${sub}${streams}`;
}

/// The text after the avatars when the presence feed lists fewer users than are present (it lists the
/// first 100): `+30`; empty when it lists them all.
export function presenceMore(model) {
  const count = model && Number.isInteger(model.count) ? model.count : 0;
  const listed = model && Number.isInteger(model.listed) ? model.listed : count;
  return count > listed ? `+${count - listed}` : '';
}

/// The presence region's hooks (app.js): the avatar's letters and tooltip, and the "+N" of the unlisted.
export const presenceHooks = {
  hooks: {
    presence(li, { model }) {
      const avatar = li.querySelector('.avatar');
      if (avatar) avatar.textContent = initials(model && model.name);
      li.title = presenceTitle(model);
    },
  },
  sectionHook(section, { model }) {
    const more = section.querySelector('.presence-more');
    if (more) more.textContent = presenceMore(model);
  },
};
