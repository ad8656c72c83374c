// Users of an application: the list, creation, and one user's page.

import { h, clear, fmtDate, toast, modal, badge, plural, csv, readAll, saveFile, importDialog } from '../dom.js';
import { get, post, patch, del } from '../api.js';
import { form, listView, section, field, values } from '../forms.js';

export async function users(ctx) {
  if (ctx.sub) return user(ctx, ctx.sub);
  const base = `/api/apps/${ctx.appId}/users`;
  let lv;
  const selCount = h('span.muted#selected-count', { text: 'none selected' });
  const bulkButtons = [['ban', 'Ban'], ['unban', 'Unban'], ['extend', 'Extend…'], ['reset-hwid', 'Reset HWID'], ['delete', 'Delete']].map(([action, label]) =>
    h('button' + (action === 'delete' || action === 'ban' ? '.danger' : ''), { type: 'button', text: label, disabled: true, 'data-action': action,
      on: { click: () => bulk(ctx.appId, action, { ids: [...lv.state.selected] }).then((done) => { if (done) { lv.clearSelection(); lv.reload(); } }) } }));
  const toolbar = [h('div.selection-bar', { role: 'group', 'aria-label': 'act on the selected users' }, selCount, bulkButtons),
    h('button.danger#delete-expired', { type: 'button', text: 'Delete expired…', on: { click: () => bulk(ctx.appId, 'delete', { filter: 'expired' }).then((done) => done && lv.reload()) } }),
    h('button#export-users', { type: 'button', text: 'Export CSV', on: { click: () => exportUsers(ctx.appId) } }),
    h('button#import-users', { type: 'button', text: 'Import CSV…', on: { click: () => importUsers(ctx.appId).then((d) => d && lv.reload()) } })];
  lv = listView({
    sortBy: 'created_at',
    selectable: true,
    toolbar,
    load: async (p) => { const d = await get(base, p); return { items: d.users, total: d.total }; },
    filters: [
      { name: 'search', label: 'Search', placeholder: 'username or email', type: 'search' },
      { name: 'banned', label: 'Banned', type: 'select', options: [['', 'any'], ['true', 'banned'], ['false', 'not banned']] },
      { name: 'expired', label: 'Expired', type: 'select', options: [['', 'any'], ['true', 'expired']] },
    ],
    columns: [
      { label: 'Username', sort: 'username', get: (u) => h('a', { href: `#/apps/${ctx.appId}/users/${u.id}`, text: u.username }) },
      { label: 'Name', get: (u) => u.displayName || '—' },
      { label: 'Email', get: (u) => u.email || '—' },
      { label: 'Level', get: (u) => String(u.level) },
      { label: 'Status', get: userStatus },
      { label: 'Expires', sort: 'expires_at', get: (u) => fmtDate(u.expiresAt) },
      { label: 'Last login', sort: 'last_login_at', get: (u) => fmtDate(u.lastLoginAt) },
      { label: 'Created', sort: 'created_at', get: (u) => fmtDate(u.createdAt) },
    ],
    actions: (u, reload) => [
      h('button', { type: 'button', text: u.banned ? 'Unban' : 'Ban', on: { click: () => banToggle(ctx.appId, u).then(reload) } }),
    ],
  });
  lv.addEventListener('selection', () => {
    const n = lv.state.selected.size;
    selCount.textContent = n ? plural(n, 'user') + ' selected' : 'none selected';
    for (const b of bulkButtons) b.disabled = n === 0;
  });
  return h('div', section('New user', createForm(ctx.appId, () => lv.reload())), lv);
}

const BULK_WORDS = { ban: 'Ban', unban: 'Unban', extend: 'Extend', 'reset-hwid': 'Reset the HWID of', delete: 'Delete' };

// bulk asks once, sends one request (POST users/bulk) and says what happened per row.
async function bulk(appId, action, target) {
  const who = target.filter === 'expired' ? 'every expired user' : plural(target.ids.length, 'user');
  const body = { action, ...target };
  const parts = [];
  let reason = null; let days = null;
  if (action === 'ban') { reason = field({ name: 'banReason', label: 'Reason (shown to the users)' }); parts.push(reason); }
  if (action === 'extend') { days = field({ name: 'days', label: 'Days to add', type: 'number', value: 30, min: 1 }); parts.push(days); }
  if (action === 'delete') parts.push(h('p', { text: 'The users and their devices are removed. This cannot be undone.' }));
  const d = await modal(`${BULK_WORDS[action]} ${who}?`, h('div', parts), { ok: BULK_WORDS[action].split(' ')[0], danger: action === 'delete' || action === 'ban', onOk: async () => {
    if (reason) body.banReason = reason.querySelector('input').value;
    if (days) {
      const n = Number(days.querySelector('input').value);
      if (!(n > 0)) throw new Error('Give a number of days above 0.');
      body.duration = Math.round(n * 86400);
    }
    return post(`/api/apps/${appId}/users/bulk`, body);
  } });
  if (!d) return false;
  const failed = d.results.filter((r) => !r.ok);
  toast(`${BULK_WORDS[action]}: ${plural(d.succeeded, 'user')} done` + (failed.length ? `, ${failed.length} refused (${failed[0].error.message})` : ''), failed.length ? 'warn' : 'ok');
  return true;
}

async function exportUsers(appId) {
  try {
    const all = await readAll(async (p) => { const d = await get(`/api/apps/${appId}/users`, { ...p, sortBy: 'created_at', sortOrder: 'asc' }); return { items: d.users, total: d.total }; });
    saveFile('users.csv', csv(['id', 'username', 'email', 'displayName', 'level', 'banned', 'banReason', 'expiresAt', 'lastLoginAt', 'createdAt'],
      all.map((u) => [u.id, u.username, u.email, u.displayName, u.level, u.banned, u.banReason, u.expiresAt, u.lastLoginAt, u.createdAt])), 'text/csv');
    toast(`${plural(all.length, 'user')} exported`);
  } catch (x) { toast(x.message, 'error'); }
}

function userStatus(u) {
  const b = [];
  if (u.banned) b.push(badge('banned', 'bad'));
  if (u.enabled === false) b.push(badge('disabled', 'bad'));
  if (u.expiresAt && new Date(u.expiresAt) < new Date()) b.push(badge('expired', 'warn'));
  return b.length ? b : badge('active', 'ok');
}

async function banToggle(appId, u) {
  try {
    if (u.banned) { await patch(`/api/apps/${appId}/users/${u.id}`, { banned: false }); toast(`${u.username} unbanned`); return; }
    const f = field({ name: 'reason', label: 'Reason (shown to the user)' });
    const ok = await modal(`Ban ${u.username}?`, f, { ok: 'Ban', danger: true });
    if (!ok) return;
    await patch(`/api/apps/${appId}/users/${u.id}`, { banned: true, banReason: f.querySelector('input').value });
    toast(`${u.username} banned`);
  } catch (x) { toast(x.message, 'error'); }
}

function createForm(appId, done) {
  return form({
    cls: 'inline',
    fields: [
      { name: 'username', label: 'Username', required: true, maxlength: 64 },
      { name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'new-password' },
      { name: 'email', label: 'Email', type: 'email' },
      { name: 'level', label: 'Level', type: 'number', value: 1 },
      { name: 'deviceLimit', label: 'Device limit (0 = unlimited)', type: 'number', value: 1, min: 0 },
      { name: 'expiresAt', label: 'Expires', type: 'datetime' },
    ],
    submit: 'Create user',
    onSubmit: async (v, el) => { const u = await post(`/api/apps/${appId}/users`, v); el.reset(); toast(`User ${u.username} created`); done(); },
  });
}

async function user(ctx, userId) {
  const base = `/api/apps/${ctx.appId}/users/${userId}`;
  const u = await get(base);
  const fields = [
    { name: 'email', label: 'Email', type: 'email', value: u.email, omitEmpty: false },
    { name: 'displayName', label: 'Display name', value: u.displayName, omitEmpty: false },
    { name: 'password', label: 'New password (blank keeps it)', type: 'password', autocomplete: 'new-password' },
    { name: 'level', label: 'Level', type: 'number', value: u.level },
    { name: 'expiresAt', label: 'Expires (blank: never)', type: 'datetime', value: u.expiresAt, keepEmpty: true },
    { name: 'deviceLimit', label: 'Device limit (0 = unlimited)', type: 'number', value: u.deviceLimit, min: 0 },
    { name: 'enabled', label: 'Enabled', type: 'checkbox', value: u.enabled },
    { name: 'banned', label: 'Banned', type: 'checkbox', value: u.banned },
    { name: 'banReason', label: 'Ban reason', value: u.banReason, omitEmpty: false },
    { name: 'hwid', label: 'Hardware id', value: u.hwid, omitEmpty: false },
    { name: 'pcName', label: 'Computer name', value: u.pcName, omitEmpty: false },
    { name: 'lockedIp', label: 'Locked IP', value: u.lockedIp, omitEmpty: false },
    { name: 'hwidResetMax', label: 'HWID resets allowed (0 = unlimited)', type: 'number', value: u.hwidResetMax, min: 0 },
    { name: 'hwidResetCooldown', label: 'HWID reset cooldown (seconds)', type: 'number', value: u.hwidResetCooldown, min: 0 },
    { name: 'ipResetMax', label: 'IP resets allowed (0 = unlimited)', type: 'number', value: u.ipResetMax, min: 0 },
    { name: 'ipResetCooldown', label: 'IP reset cooldown (seconds)', type: 'number', value: u.ipResetCooldown, min: 0 },
    { name: 'metadata', label: 'Metadata (JSON object)', type: 'json', value: u.metadata || {} },
  ];
  const act = (label, fn, cls = '') => h('button' + cls, { type: 'button', text: label, on: { click: async () => {
    try { await fn(); } catch (x) { toast(x.message, 'error'); }
  } } });
  const extendField = { name: 'days', label: 'Days', type: 'number', value: 30, min: 1 };
  const extendForm = form({ cls: 'inline', fields: [extendField], submit: 'Extend', onSubmit: async (v) => {
    if (!(v.days > 0)) throw Object.assign(new Error('Give a number of days above 0.'), { field: 'days' });
    const d = await post(base + '/extend', { duration: v.days * 86400 });
    toast('Now expires ' + fmtDate(d.expiresAt));
    ctx.go(`apps/${ctx.appId}/users/${userId}`);
  } });
  const vars = h('div');
  loadVars(base, vars);
  return h('div',
    h('p', h('a', { href: `#/apps/${ctx.appId}/users`, text: '← Users' })),
    h('h2#user-name', { text: u.username }), h('p', userStatus(u), ' created ', fmtDate(u.createdAt), ' · last login ', fmtDate(u.lastLoginAt)),
    h('div.toolbar',
      act(u.banned ? 'Unban' : 'Ban', async () => { await banToggle(ctx.appId, u); ctx.go(`apps/${ctx.appId}/users/${userId}`); }),
      act('Reset HWID', async () => { const d = await post(base + '/reset-hwid'); toast(`HWID reset: ${d.devicesRemoved} device(s) removed`); }),
      act('Kill sessions', async () => { const d = await post(base + '/kill-sessions'); toast(`${d.deleted} session(s) ended`); }),
      act('Delete user', async () => {
        if (!await modal(`Delete ${u.username}?`, h('p', { text: 'The user and its devices are removed.' }), { ok: 'Delete', danger: true })) return;
        await del(base); toast('User deleted'); ctx.go(`apps/${ctx.appId}/users`);
      }, '.danger')),
    section('Extend the subscription', extendForm),
    section('Edit', form({ fields, submit: 'Save user', onSubmit: async (v) => { await patch(base, v); toast('Saved'); } })),
    section('Devices', table(['Hardware id', 'Computer', 'IP', 'First seen', 'Last seen'],
      (u.devices || []).map((d) => [d.hwid, d.pcName || '—', d.ip || '—', fmtDate(d.createdAt), fmtDate(d.lastSeenAt)]))),
    section('Subscriptions', table(['License', 'Level', 'Expires', 'Activated'],
      (u.subscriptions || []).map((s) => [s.key || s.licenseKey || '—', String(s.level ?? '—'), fmtDate(s.expiresAt), fmtDate(s.activatedAt)]))),
    section('User variables', vars));
}

export function table(head, rows) {
  return h('div.table-wrap', h('table', h('thead', h('tr', head.map((t) => h('th', { text: t })))),
    h('tbody', rows.length ? rows.map((r) => h('tr', r.map((c, i) => h('td', { 'data-label': head[i] }, c)))) : h('tr', h('td.muted', { colspan: head.length, text: 'None.' })))));
}

async function loadVars(base, box) {
  clear(box);
  let list;
  try { list = await get(base + '/variables'); } catch (x) { box.append(h('p.error', { text: x.message })); return; }
  box.append(table(['Key', 'Value', ''], list.map((v) => [v.key, h('code', { text: v.value }), h('span.row-actions',
    h('button', { type: 'button', text: 'Edit', on: { click: async () => {
      const f = field({ name: 'value', label: 'Value', type: 'textarea', value: v.value });
      if (await modal('Edit ' + v.key, f, { ok: 'Save', onOk: () => patch(`${base}/variables/${v.id}`, { value: f.querySelector('textarea').value }).then(() => true) })) loadVars(base, box);
    } } }),
    h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => { try { await del(`${base}/variables/${v.id}`); loadVars(base, box); } catch (x) { toast(x.message, 'error'); } } } }))])),
  form({ cls: 'inline', fields: [{ name: 'key', label: 'Key', required: true }, { name: 'value', label: 'Value', required: true, omitEmpty: false }], submit: 'Add variable',
    onSubmit: async (v) => { await post(base + '/variables', v); loadVars(base, box); } }));
}

export { values };

// importUsers sends CSV rows (header: username,password[,email,level,expiresAt,deviceLimit])
// 200 at a time through POST users/import.
async function importUsers(appId) {
  const d = await importDialog('Import users', 'CSV with a header line: username,password and optionally email,level,expiresAt (RFC 3339),deviceLimit. At most 200 users per request; more are sent in parts.', async (rows) => {
    if (rows.length < 2) throw new Error('Give a header line and at least one user.');
    const head = rows[0].map((x) => x.trim());
    if (!head.includes('username') || !head.includes('password')) throw new Error('The header needs username and password.');
    const users = rows.slice(1).map((r) => {
      const u = {};
      head.forEach((k, i) => { const v = (r[i] ?? '').trim(); if (v === '') return; u[k] = ['level', 'deviceLimit'].includes(k) ? Number(v) : v; });
      return u;
    });
    const total = { succeeded: 0, failed: 0, first: null };
    for (let i = 0; i < users.length; i += 200) {
      const a = await post(`/api/apps/${appId}/users/import`, { users: users.slice(i, i + 200) });
      total.succeeded += a.succeeded; total.failed += a.failed;
      total.first ||= a.results.find((x) => !x.ok);
    }
    return total;
  });
  if (!d) return null;
  toast(`${plural(d.succeeded, 'user')} imported` + (d.failed ? `, ${d.failed} refused (${d.first.id}: ${d.first.error.message})` : ''), d.failed ? 'warn' : 'ok');
  return d;
}
