// Administration (admin role): accounts, their plan and role; the node's backups.

import { h, fmtDate, fmtNum, fmtBytes, toast, badge, clear } from '../dom.js';
import { get, patch, post, download } from '../api.js';
import { listView } from '../forms.js';

export async function page(ctx) {
  const me = await ctx.me();
  if (me.role !== 'admin') return h('p.error', { text: 'This page is for administrators.' });
  const plans = await get('/api/plans');
  const lv = listView({
    load: async (p) => { const d = await get('/api/admin/accounts', p); return { items: d.accounts, total: d.total }; },
    filters: [{ name: 'search', label: 'Search', type: 'search', placeholder: 'username or email' }],
    columns: [
      { label: 'Username', get: (a) => a.username }, { label: 'Email', get: (a) => a.email },
      { label: 'Verified', get: (a) => a.emailVerified ? badge('yes', 'ok') : badge('no', 'warn') },
      { label: 'Apps', get: (a) => fmtNum(a.applicationCount) },
      { label: 'API calls', get: (a) => `${fmtNum(a.apiCallsUsed)} / ${fmtNum(a.plan?.limits?.maxApiCallsMonth)}` },
      { label: 'Plan', get: (a) => select(a, 'plan', plans.map((p) => [p.name, p.displayName || p.name]), a.plan?.name) },
      { label: 'Role', get: (a) => select(a, 'role', [['user', 'user'], ['admin', 'admin']], a.role) },
      { label: 'Created', get: (a) => fmtDate(a.createdAt) },
    ],
  });
  function select(a, member, options, value) {
    const s = h('select', { 'aria-label': `${member} of ${a.username}` }, options.map(([v, l]) => h('option', { value: v, text: l, selected: v === value })));
    s.addEventListener('change', async () => {
      try { await patch(`/api/admin/accounts/${a.id}`, { [member]: s.value }); toast(`${a.username}: ${member} ${s.value}`); } catch (x) { toast(x.message, 'error'); lv.reload(); }
    });
    return s;
  }
  return h('div', h('h1', { text: 'Accounts' }), lv, backups());
}

// backups lists the node's backups with the last result and the schedule; an admin takes
// one now or downloads one (keyward restore FILE reads it).
function backups() {
  const status = h('p', { role: 'status' });
  const table = h('div');
  const take = h('button', { type: 'button', text: 'Take a backup now' });
  async function load() {
    let d;
    try { d = await get('/api/admin/backups'); } catch (x) { status.textContent = x.message; return; }
    const every = d.everySeconds ? `every ${fmtEvery(d.everySeconds)}` : 'only when taken here (KEYWARD_BACKUP_EVERY is not set)';
    const last = d.last ? (d.last.error ? `Last backup failed ${fmtDate(d.last.at)}: ${d.last.error}` : `Last backup ${fmtDate(d.last.at)}: ${d.last.name}, ${fmtBytes(d.last.size)} in ${fmtNum(d.last.durationMs)} ms`) : 'No backup taken since the server started.';
    status.textContent = `To ${d.destination}, ${every}; keeping ${d.keep || 'all'}. ${last}`;
    clear(table);
    if (!d.backups.length) { table.append(h('p', { text: 'No backups stored yet.' })); return; }
    table.append(h('table', h('thead', h('tr', h('th', { text: 'Backup' }), h('th', { text: 'Size' }), h('th', { text: 'Taken' }), h('th', { text: 'Action' }))),
      h('tbody', d.backups.map((b) => h('tr', h('td', { text: b.name }), h('td', { text: fmtBytes(b.size) }), h('td', { text: fmtDate(b.createdAt) }),
        h('td', h('button', { type: 'button', text: 'Download', 'aria-label': `Download ${b.name}`,
          on: { click: () => download(`/api/admin/backups/${encodeURIComponent(b.name)}`, b.name).catch((x) => toast(x.message, 'error')) } })))))));
  }
  take.addEventListener('click', async () => {
    take.disabled = true;
    status.textContent = 'Taking a backup…';
    try { const r = await post('/api/admin/backups'); toast(`Backup stored: ${r.name}`); } catch (x) { toast(x.message, 'error'); }
    take.disabled = false;
    load();
  });
  load();
  return h('section', h('h2', { text: 'Backups' }), status, take, table);
}

function fmtEvery(sec) {
  if (sec % 86400 === 0) return `${sec / 86400} d`;
  if (sec % 3600 === 0) return `${sec / 3600} h`;
  return `${Math.round(sec / 60)} min`;
}
