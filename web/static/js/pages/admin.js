// Administration (admin role): accounts, their plan and role.

import { h, fmtDate, fmtNum, toast, badge } from '../dom.js';
import { get, patch } from '../api.js';
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
  return h('div', h('h1', { text: 'Accounts' }), lv);
}
