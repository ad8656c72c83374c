// Devices, access tokens and allow/deny rules.

import { h, fmtDate, toast, modal, badge, secretBox, clear, saveFile } from '../dom.js';
import { get, post, patch, del } from '../api.js';
import { form, listView, section, field, values } from '../forms.js';

export async function devices(ctx) {
  const base = `/api/apps/${ctx.appId}/devices`;
  return listView({
    load: async (p) => { const d = await get(base, p); return { items: d.devices, total: d.total }; },
    filters: [{ name: 'search', label: 'Search', placeholder: 'hardware id or username', type: 'search' }],
    columns: [
      { label: 'User', get: (d) => h('a', { href: `#/apps/${ctx.appId}/users/${d.userId}`, text: d.username || d.userId }) },
      { label: 'Hardware id', get: (d) => h('code', { text: d.hwid }) },
      { label: 'Computer', get: (d) => d.pcName || '—' }, { label: 'IP', get: (d) => d.ip || '—' },
      { label: 'First seen', get: (d) => fmtDate(d.createdAt) }, { label: 'Last seen', get: (d) => fmtDate(d.lastSeenAt) },
    ],
    actions: (d, reload) => [h('button.danger', { type: 'button', text: 'Remove', on: { click: async () => {
      if (!await modal('Remove this device?', h('p', { text: 'The user can then sign in from a new device.' }), { ok: 'Remove', danger: true })) return;
      try { await del(`${base}/${d.id}`); reload(); } catch (x) { toast(x.message, 'error'); }
    } } })],
    empty: 'No devices recorded yet. Devices are recorded only when the application locks users to a hardware id (Settings: Lock to hardware id) and clients send one.',
  });
}

export async function tokens(ctx) {
  const base = `/api/apps/${ctx.appId}/tokens`;
  const made = h('div');
  const lv = listView({
    load: async (p) => { const d = await get(base, p); return { items: d.tokens, total: d.total }; },
    columns: [
      { label: 'Token', get: (t) => h('code', { text: t.token }) }, { label: 'Level', get: (t) => String(t.level) },
      { label: 'Uses', get: (t) => `${t.usedCount} / ${t.maxUses || '∞'}` },
      { label: 'Status', get: (t) => t.enabled === false ? badge('disabled', 'bad') : badge('enabled', 'ok') },
      { label: 'Expires', get: (t) => fmtDate(t.expiresAt) }, { label: 'Note', get: (t) => t.note || '' },
    ],
    actions: (t, reload) => [
      h('button', { type: 'button', text: t.enabled === false ? 'Enable' : 'Disable', on: { click: () => patch(`${base}/${t.id}`, { enabled: t.enabled === false }).then(reload, (x) => toast(x.message, 'error')) } }),
      h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => {
        if (!await modal('Delete this token?', h('code', { text: t.token }), { ok: 'Delete', danger: true })) return;
        del(`${base}/${t.id}`).then(reload, (x) => toast(x.message, 'error'));
      } } }),
    ],
  });
  return h('div', section('New tokens', form({
    cls: 'inline',
    fields: [{ name: 'count', label: 'How many (1–500)', type: 'number', value: 1, min: 1, max: 500 }, { name: 'level', label: 'Level', type: 'number', value: 1 },
      { name: 'maxUses', label: 'Uses (0 = unlimited)', type: 'number', value: 0, min: 0 }, { name: 'expiresAt', label: 'Expires', type: 'datetime' }, { name: 'note', label: 'Note' }],
    submit: 'Create tokens',
    onSubmit: async (v) => {
      if (!(v.count >= 1 && v.count <= 500)) throw Object.assign(new Error('Create between 1 and 500 tokens at once.'), { field: 'count' });
      const d = await post(base, v);
      const text = d.tokens.map((t) => t.token).join('\n') + '\n';
      clear(made).append(h('p.ok', { text: `${d.count} tokens created.` }), h('button', { type: 'button', text: 'Download .txt', on: { click: () => saveFile('tokens.txt', text) } }));
      lv.reload();
    },
  }), made), lv);
}

// The words of the form and of the table are the same: deny, allow only.
const ACTION_WORDS = { blacklist: 'deny', whitelist: 'allow only' };

export async function rules(ctx) {
  const base = `/api/apps/${ctx.appId}/rules`;
  const box = h('div');
  const filters = { type: '', action: '' };
  async function load() {
    clear(box);
    let list;
    try { list = await get(base, filters); } catch (x) { box.append(h('p.error', { text: x.message })); return; }
    box.append(h('div.table-wrap', h('table', h('thead', h('tr', ['Type', 'Action', 'Value', 'Note', 'State', ''].map((t) => h('th', { text: t })))),
      h('tbody', list.length ? list.map((r) => h('tr',
        h('td', { 'data-label': 'Type', text: r.type }), h('td', { 'data-label': 'Action' }, badge(ACTION_WORDS[r.action] || r.action, r.action === 'blacklist' ? 'bad' : 'ok')),
        h('td', { 'data-label': 'Value' }, h('code', { text: r.value })), h('td', { 'data-label': 'Note', text: r.note || '' }),
        h('td', { 'data-label': 'State' }, r.enabled === false ? badge('disabled') : r.active === false
          ? [badge('inactive', 'warn'), h('small.muted.rule-why', { text: r.type === 'country' ? ' no GeoIP database is set (KEYWARD_GEOIP_DB), so countries are unknown' : ' not applied' })]
          : badge('active', 'ok')),
        h('td.row-actions',
          h('button', { type: 'button', text: r.enabled === false ? 'Enable' : 'Disable', on: { click: () => patch(`${base}/${r.id}`, { enabled: r.enabled === false }).then(load, (x) => toast(x.message, 'error')) } }),
          h('button', { type: 'button', text: 'Edit', on: { click: async () => {
            const fields = [{ name: 'value', label: 'Value', value: r.value, required: true }, { name: 'note', label: 'Note', value: r.note, omitEmpty: false }];
            const holder = h('div', fields.map(field));
            if (await modal('Edit rule', holder, { ok: 'Save', onOk: () => patch(`${base}/${r.id}`, values(holder, fields)).then(() => true) })) load();
          } } }),
          h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => {
            if (!await modal('Delete this rule?', h('code', { text: `${r.type} ${r.value}` }), { ok: 'Delete', danger: true })) return;
            del(`${base}/${r.id}`).then(load, (x) => toast(x.message, 'error'));
          } } })))) : h('tr', h('td.muted', { colspan: 6, text: 'No rules: every address, device and country may sign in.' }))))));
  }
  const filterForm = h('form.filters', ...[['type', ['', 'ip', 'hwid', 'country']], ['action', ['', 'blacklist', 'whitelist']]].map(([name, opts]) =>
    field({ name, label: name[0].toUpperCase() + name.slice(1), type: 'select', options: opts.map((o) => [o, o ? (ACTION_WORDS[o] || o) : 'any']) })));
  filterForm.addEventListener('change', () => { filters.type = filterForm.querySelector('[name=type]').value; filters.action = filterForm.querySelector('[name=action]').value; load(); });
  load();
  return h('div', section('New rule', form({
    cls: 'inline',
    fields: [{ name: 'type', label: 'Type', type: 'select', options: [['ip', 'IP or CIDR'], ['hwid', 'Hardware id'], ['country', 'Country (ISO code)']] },
      { name: 'action', label: 'Action', type: 'select', options: [['blacklist', 'deny'], ['whitelist', 'allow only']] },
      { name: 'value', label: 'Value', required: true }, { name: 'note', label: 'Note' }],
    submit: 'Add rule', onSubmit: async (v, el) => { await post(base, v); el.querySelector('[name=value]').value = ''; load(); },
  })), filterForm, box);
}
