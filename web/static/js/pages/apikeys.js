// Scoped API keys: create with scopes grouped by resource (or the read/full presets), an
// app restriction and an expiry; the key shown once; last use and address; revoke.

import { h, fmtDate, toast, modal, secretBox, clear, badge } from '../dom.js';
import { get, post, del } from '../api.js';
import { section, form } from '../forms.js';

// scopesOf reads the grantable scopes from the API's own description, so the page never
// offers one the server refuses.
async function scopesOf() {
  const d = await fetch('/api/openapi.json', { credentials: 'omit' }).then((r) => r.json());
  return d.components.schemas.APIKeyInput.properties.scopes.items.enum;
}

export async function page(ctx) {
  const [keys, apps, scopes] = await Promise.all([get('/api/auth/api-keys'), get('/api/apps'), scopesOf()]);
  const shown = h('div#new-key');
  const listBox = h('div#api-keys');
  const appName = (id) => apps.find((a) => a.id === id)?.name || id;
  function renderList(list) {
    clear(listBox).append(h('div.table-wrap', h('table', h('thead', h('tr', ['Name', 'Key', 'Scopes', 'Apps', 'Expires', 'Last use', ''].map((t) => h('th', t ? { text: t } : {}, t ? null : h('span.sr-only', { text: 'Actions' }))))),
      h('tbody', list.length ? list.map((k) => h('tr', { 'data-id': k.id },
        h('td', { 'data-label': 'Name', text: k.name }), h('td', { 'data-label': 'Key' }, h('code', { text: k.maskedKey })),
        h('td', { 'data-label': 'Scopes', text: k.scopes.join(', ') }),
        h('td', { 'data-label': 'Apps', text: k.apps.length ? k.apps.map(appName).join(', ') : 'all' }),
        h('td', { 'data-label': 'Expires' }, k.expiresAt ? (new Date(k.expiresAt) < new Date() ? badge('expired', 'bad') : fmtDate(k.expiresAt)) : 'never'),
        h('td', { 'data-label': 'Last use', text: k.lastUsedAt ? `${fmtDate(k.lastUsedAt)} from ${k.lastUsedIp || '?'}` : 'never' }),
        h('td.row-actions', h('button.danger', { type: 'button', text: 'Revoke', on: { click: async () => {
          if (!await modal(`Revoke ${k.name}?`, h('p', { text: 'Programs using this key are refused from now on.' }), { ok: 'Revoke', danger: true })) return;
          try { await del(`/api/auth/api-keys/${k.id}`); toast('Key revoked'); renderList(await get('/api/auth/api-keys')); } catch (x) { toast(x.message, 'error'); }
        } } })))) : h('tr', h('td.muted', { colspan: 7, text: 'No API keys yet.' }))))));
  }
  renderList(keys);

  // The scope picker: presets, then one group per resource.
  const groups = new Map();
  for (const s of scopes) {
    if (!s.includes(':')) continue;
    const [res] = s.split(':');
    if (!groups.has(res)) groups.set(res, []);
    groups.get(res).push(s);
  }
  let n = 0;
  const box = (value, label) => { const id = 'scope' + (++n); return h('span', h('input', { type: 'checkbox', id, name: 'scope', value }), ' ', h('label', { for: id, text: label })); };
  const preset = h('fieldset', h('legend', { text: 'Preset' }), h('div.checks',
    box('read', 'read: every read scope'), box('full', 'full: everything a key may hold')));
  const picker = h('div.scopes', preset, [...groups].map(([res, list]) => h('fieldset', h('legend', { text: res }),
    h('div.checks', list.map((s) => box(s, s.split(':')[1]))))));
  const appBox = h('fieldset', h('legend', { text: 'Applications (none checked: every application)' }), h('div.checks', apps.map((a) => {
    const id = 'keyapp' + (++n);
    return h('span', h('input', { type: 'checkbox', id, name: 'app', value: a.id }), ' ', h('label', { for: id, text: a.name }));
  })));
  const create = form({
    fields: [{ name: 'name', label: 'Name', required: true, maxlength: 64 }, { name: 'expiresAt', label: 'Expires (blank: never)', type: 'datetime' }],
    extra: [h('h3', { text: 'Scopes' }), picker, appBox],
    submit: 'Create key',
    onSubmit: async (v, el) => {
      const chosen = [...el.querySelectorAll('input[name=scope]:checked')].map((i) => i.value);
      if (!chosen.length) throw new Error('Choose at least one scope or a preset.');
      const body = { ...v, scopes: chosen, apps: [...el.querySelectorAll('input[name=app]:checked')].map((i) => i.value) };
      const k = await post('/api/auth/api-keys', body);
      el.reset();
      clear(shown).append(h('div.shown-once', h('p.warn', { text: `Key “${k.name}” created. Copy it now: it is shown only this once.` }), secretBox(k.key, 'API key')));
      renderList(await get('/api/auth/api-keys'));
    },
  });
  return h('div', h('h1', { text: 'API keys' }),
    h('p.muted', { text: 'A scoped key lets a program call the Dashboard API with only the rights you give it. Send it as Authorization: Bearer KEY.' }),
    listBox, section('New API key', shown, create));
}
