// License keys: generation (1-1000, downloaded as text or CSV), filters, bulk delete, edit, verify.

import { h, clear, fmtDate, toast, modal, badge, saveFile, csv, readAll, plural, importDialog } from '../dom.js';
import { get, post, patch, del } from '../api.js';
import { form, listView, section, values, field } from '../forms.js';
import { typedEditor } from './variables.js';

export async function licenses(ctx) {
  const base = `/api/apps/${ctx.appId}/licenses`;
  const generated = h('div#generated');
  const bulkBtn = h('button.danger', { type: 'button', text: 'Delete selected', disabled: true });
  const filterDel = h('select', { 'aria-label': 'delete by filter' }, [['', 'Delete all…'], ['used', 'used'], ['expired', 'expired'], ['banned', 'banned']].map(([v, l]) => h('option', { value: v, text: l })));
  const lv = listView({
    sortBy: 'created_at',
    selectable: true,
    load: async (p) => { const d = await get(base, p); return { items: d.licenses, total: d.total }; },
    filters: [
      { name: 'search', label: 'Search', placeholder: 'key, user or note', type: 'search' },
      { name: 'used', label: 'Used', type: 'select', options: [['', 'any'], ['true', 'used'], ['false', 'unused']] },
      { name: 'banned', label: 'Banned', type: 'select', options: [['', 'any'], ['true', 'banned'], ['false', 'not banned']] },
      { name: 'expired', label: 'Expired', type: 'select', options: [['', 'any'], ['true', 'expired']] },
    ],
    columns: [
      { label: 'Key', sort: 'key', get: (l) => h('code', { text: l.key }) },
      { label: 'Level', get: (l) => String(l.level) },
      { label: 'Uses', sort: 'used_count', get: (l) => `${l.usedCount} / ${l.maxUses || '∞'}` },
      { label: 'Used by', get: (l) => l.usedBy || '—' },
      { label: 'Status', get: (l) => l.banned ? badge('banned', 'bad') : l.enabled === false ? badge('disabled', 'bad') : l.expiresAt && new Date(l.expiresAt) < new Date() ? badge('expired', 'warn') : badge('ok', 'ok') },
      { label: 'Duration', get: (l) => l.duration ? `${Math.round(l.duration / 86400)} d` : '—' },
      { label: 'Expires', sort: 'expires_at', get: (l) => fmtDate(l.expiresAt) },
      { label: 'Seats', get: (l) => l.maxSeats ? h('button.link', { type: 'button', text: `${l.maxSeats} seats`, on: { click: () => seats(base, l) } }) : '—' },
      { label: 'Note', get: (l) => l.note || '' },
    ],
    actions: (l, reload) => [
      h('button', { type: 'button', text: 'Edit', on: { click: () => edit(base, l).then((ok) => ok && reload()) } }),
      h('button', { type: 'button', text: 'Offline file', on: { click: async () => {
        try { const f = await post(`${base}/${l.id}/file`); saveFile(f.filename, f.file); toast(`License file saved (valid until ${fmtDate(f.payload?.expiresAt)})`); } catch (x) { toast(x.message, 'error'); }
      } } }),
      h('button', { type: 'button', text: 'Variables', on: { click: () => vars(base, l) } }),
      h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => {
        if (!await modal('Delete this key?', h('code', { text: l.key }), { ok: 'Delete', danger: true })) return;
        try { await del(`${base}/${l.id}`); reload(); } catch (x) { toast(x.message, 'error'); }
      } } }),
    ],
    toolbar: [bulkBtn, filterDel,
      h('button#add-time', { type: 'button', text: 'Add time to unused…', on: { click: async () => {
        const f = field({ name: 'days', label: 'Days to add to every unused key', type: 'number', value: 7, min: 1 });
        const d = await modal('Add time to every unused key?', h('div', f, h('p.muted', { text: 'Keys without a duration never run out and are left as they are.' })), { ok: 'Add time', onOk: async () => {
          const n = Number(f.querySelector('input').value);
          if (!(n > 0)) throw new Error('Give a number of days above 0.');
          return post(base + '/add-time', { seconds: Math.round(n * 86400) });
        } });
        if (d) { toast(`${plural(d.succeeded, 'key')} lengthened` + (d.skipped ? `, ${d.skipped} without a duration left as they are` : '')); lv.reload(); }
      } } }),
      h('button#import-licenses', { type: 'button', text: 'Import keys…', on: { click: async () => {
        const d = await importDialog('Import keys', 'One key a line, or CSV with a header line: key and optionally level,maxUses,duration (seconds),note. At most 1000 keys per request; more are sent in parts.', async (rows) => {
          let head = ['key'];
          if (rows.length && rows[0].map((x) => x.trim()).includes('key')) head = rows.shift().map((x) => x.trim());
          const list = rows.map((r) => {
            const l = {};
            head.forEach((k, i) => { const v = (r[i] ?? '').trim(); if (v === '') return; l[k] = ['level', 'maxUses', 'duration'].includes(k) ? Number(v) : v; });
            return l;
          });
          if (!list.length) throw new Error('Give at least one key.');
          const total = { succeeded: 0, failed: 0, first: null };
          for (let i = 0; i < list.length; i += 1000) {
            const a = await post(base + '/import', { licenses: list.slice(i, i + 1000) });
            total.succeeded += a.succeeded; total.failed += a.failed;
            total.first ||= a.results.find((x) => !x.ok);
          }
          return total;
        });
        if (d) { toast(`${plural(d.succeeded, 'key')} imported` + (d.failed ? `, ${d.failed} refused (${d.first.id}: ${d.first.error.message})` : ''), d.failed ? 'warn' : 'ok'); lv.reload(); }
      } } }),
      h('button#export-licenses', { type: 'button', text: 'Export all (CSV)', on: { click: async () => {
        try {
          const all = await readAll(async (p) => { const d = await get(base, { ...p, sortBy: 'created_at', sortOrder: 'asc' }); return { items: d.licenses, total: d.total }; });
          saveFile('licenses-all.csv', csv(['key', 'level', 'maxUses', 'usedCount', 'usedBy', 'duration', 'expiresAt', 'maxSeats', 'banned', 'enabled', 'note', 'createdAt'],
            all.map((l) => [l.key, l.level, l.maxUses, l.usedCount, l.usedBy, l.duration || 0, l.expiresAt, l.maxSeats, l.banned, l.enabled, l.note, l.createdAt])), 'text/csv');
          toast(`${plural(all.length, 'key')} exported`);
        } catch (x) { toast(x.message, 'error'); }
      } } })],
  });
  lv.addEventListener('selection', () => { bulkBtn.disabled = lv.state.selected.size === 0; bulkBtn.textContent = `Delete selected (${lv.state.selected.size})`; });
  bulkBtn.addEventListener('click', async () => {
    const ids = [...lv.state.selected];
    if (!await modal(`Delete ${ids.length} keys?`, h('p', { text: 'They stop working at once.' }), { ok: 'Delete', danger: true })) return;
    try { const d = await post(base + '/bulk-delete', { ids }); toast(`${plural(d.deleted, 'key')} deleted`); lv.clearSelection(); lv.reload(); } catch (x) { toast(x.message, 'error'); }
  });
  filterDel.addEventListener('change', async () => {
    const filter = filterDel.value;
    filterDel.value = '';
    if (!filter) return;
    if (!await modal(`Delete every ${filter} key?`, h('p', { text: 'This cannot be undone.' }), { ok: 'Delete', danger: true })) return;
    try { const d = await post(base + '/bulk-delete', { filter }); toast(`${d.deleted} keys deleted`); lv.reload(); } catch (x) { toast(x.message, 'error'); }
  });
  const genFields = [
    { name: 'count', label: 'How many (1–1000)', type: 'number', value: 1, min: 1, max: 1000, required: true },
    { name: 'prefix', label: 'Prefix', maxlength: 16, pattern: '[A-Za-z0-9]{1,16}', help: 'Up to 16 letters or digits' },
    { name: 'level', label: 'Level', type: 'number', value: 1 },
    { name: 'durationDays', label: 'Duration after activation (days, 0 = none)', type: 'number', value: 30, min: 0 },
    { name: 'maxUses', label: 'Uses (0 = unlimited)', type: 'number', value: 1, min: 0 },
    { name: 'maxSeats', label: 'Floating seats (0 = no limit)', type: 'number', value: 0, min: 0, help: 'Sessions using the key at once' },
    { name: 'expiresAt', label: 'Key expires', type: 'datetime' },
    { name: 'note', label: 'Note', maxlength: 500 },
  ];
  const gen = form({
    cls: 'inline', fields: genFields, submit: 'Generate',
    onSubmit: async (v) => {
      if (!(v.count >= 1 && v.count <= 1000)) throw Object.assign(new Error('Generate between 1 and 1000 keys at once.'), { field: 'count' });
      if (v.prefix && !/^[A-Za-z0-9]{1,16}$/.test(v.prefix)) throw Object.assign(new Error('The prefix is 1–16 letters or digits.'), { field: 'prefix' });
      const { durationDays, ...body } = v;
      if (durationDays) body.duration = Math.round(durationDays * 86400);
      const d = await post(base, body);
      showGenerated(generated, d.licenses);
      lv.reload();
    },
  });
  const verifyOut = h('div');
  const verify = form({ cls: 'inline', fields: [{ name: 'key', label: 'Key', required: true }], submit: 'Verify', onSubmit: async (v) => {
    clear(verifyOut);
    try {
      const l = await post(base + '/verify', v);
      verifyOut.append(h('p.ok', { text: `Valid: level ${l.level}, ${l.usedCount}/${l.maxUses || '∞'} uses, expires ${fmtDate(l.expiresAt)}` }));
    } catch (x) { verifyOut.append(h('p.error', { text: `${x.code}: ${x.message}` })); }
  } });
  return h('div', section('Generate keys', gen, generated), lv, section('Verify a key', verify, verifyOut));
}

function showGenerated(box, list) {
  const text = list.map((l) => l.key).join('\n') + '\n';
  const csv = 'key,level,maxUses,duration,expiresAt,note\n' +
    list.map((l) => [l.key, l.level, l.maxUses, l.duration || 0, l.expiresAt || '', l.note || ''].map(csvCell).join(',')).join('\n') + '\n';
  clear(box).append(h('p.ok', { text: `${list.length} keys generated.` }),
    h('textarea.mono#generated-keys', { readonly: true, rows: Math.min(10, list.length), 'aria-label': 'generated keys', value: text }),
    h('div.actions', h('button#download-txt', { type: 'button', text: 'Download .txt', on: { click: () => saveFile('licenses.txt', text) } }),
      h('button#download-csv', { type: 'button', text: 'Download .csv', on: { click: () => saveFile('licenses.csv', csv, 'text/csv') } })));
}

// csvCell quotes a cell, and defuses cells a spreadsheet would run as a formula.
function csvCell(v) {
  let s = String(v);
  if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;
  return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

async function edit(base, l) {
  const fields = [
    { name: 'level', label: 'Level', type: 'number', value: l.level },
    { name: 'maxUses', label: 'Uses (0 = unlimited)', type: 'number', value: l.maxUses, min: 0 },
    { name: 'duration', label: 'Duration (seconds)', type: 'number', value: l.duration || 0, min: 0 },
    { name: 'deviceLimit', label: 'Device limit', type: 'number', value: l.deviceLimit ?? 0, min: 0 },
    { name: 'maxSeats', label: 'Floating seats (0 = no limit)', type: 'number', value: l.maxSeats ?? 0, min: 0 },
    { name: 'displayName', label: 'Display name', value: l.displayName, omitEmpty: false },
    { name: 'note', label: 'Note', value: l.note, omitEmpty: false },
    { name: 'discordId', label: 'Discord id', value: l.discordId, omitEmpty: false },
    { name: 'enabled', label: 'Enabled', type: 'checkbox', value: l.enabled },
    { name: 'banned', label: 'Banned', type: 'checkbox', value: l.banned },
  ];
  const holder = h('div', fields.map(field));
  return modal('Edit ' + l.key, holder, { ok: 'Save', onOk: async () => { await patch(`${base}/${l.id}`, values(holder, fields)); toast('Saved'); return true; } });
}

async function vars(base, l) {
  const box = h('div');
  typedEditor(`${base}/${l.id}/variables`, box);
  await modal('Variables of ' + l.key, box, { ok: 'Close', cancel: null });
}

// seats lists a floating license's seats held now, each freeable.
async function seats(base, l) {
  const box = h('div#seats');
  async function load() {
    clear(box);
    let d;
    try { d = await get(`${base}/${l.id}/seats`); } catch (x) { box.append(h('p.error', { role: 'alert', text: x.message })); return; }
    box.append(h('p', { text: `${d.inUse} of ${d.maxSeats} seats in use.` }),
      d.seats.length ? h('ul', d.seats.map((s) => h('li', `${s.username || s.userId || 'license'} · ${s.ip || '?'} · since ${fmtDate(s.since)} `,
        h('button.danger', { type: 'button', text: 'Free', on: { click: async () => {
          try { await del(`${base}/${l.id}/seats/${s.id}`); toast('Seat freed: that session ended'); load(); } catch (x) { toast(x.message, 'error'); }
        } } })))) : h('p.muted', { text: 'No seat is held now.' }));
  }
  await load();
  await modal('Seats of ' + l.key, box, { ok: 'Close', cancel: null });
}
