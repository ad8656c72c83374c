// Users of an application: the list, creation, and one user's page.

import { h, clear, fmtDate, toast, modal, badge } from '../dom.js';
import { get, post, patch, del } from '../api.js';
import { form, listView, section, field, values } from '../forms.js';

export async function users(ctx) {
  if (ctx.sub) return user(ctx, ctx.sub);
  const base = `/api/apps/${ctx.appId}/users`;
  let lv;
  lv = listView({
    sortBy: 'created_at',
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
  return h('div', section('New user', createForm(ctx.appId, () => lv.reload())), lv);
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
