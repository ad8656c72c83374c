// The application log: filters, stats, purge.

import { h, fmtDate, fmtNum, toast, modal, badge, clear, csv, readAll, saveFile } from '../dom.js';
import { get, del } from '../api.js';
import { listView, section, field } from '../forms.js';

const LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'];
export const levelBadge = (l) => badge(l, { WARNING: 'warn', ERROR: 'bad', CRITICAL: 'bad', DEBUG: '' }[l] ?? 'ok');

export async function logs(ctx) {
  const base = `/api/apps/${ctx.appId}/logs`;
  const events = await get(base + '/events').catch(() => []);
  const stats = h('div#log-stats');
  async function loadStats() {
    clear(stats);
    try {
      const s = await get(base + '/stats', { hours: 24 });
      stats.append(h('p', h('strong', { text: fmtNum(s.total) }), ' entries in the last 24 hours: ',
        Object.entries(s.byLevel || {}).map(([k, n]) => [levelBadge(k), ' ', fmtNum(n), ' ']), ),
      h('p.muted', { text: Object.entries(s.byEvent || {}).sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, n]) => `${k} ${n}`).join(' · ') }));
    } catch (x) { stats.append(h('p.error', { text: x.message })); }
  }
  loadStats();
  const lv = listView({
    load: async (p) => { const d = await get(base, p); return { items: d.logs, total: d.total }; },
    pageSize: 50,
    filters: [
      { name: 'event', label: 'Event', type: 'select', options: [['', 'any'], ...events.map((e) => [e, e])] },
      { name: 'level', label: 'Level', type: 'select', options: [['', 'any'], ...LEVELS.map((l) => [l, l])] },
      { name: 'username', label: 'Username', type: 'search' },
      { name: 'startDate', label: 'From', type: 'datetime' },
      { name: 'endDate', label: 'To', type: 'datetime' },
    ],
    columns: [
      { label: 'Time', get: (l) => fmtDate(l.createdAt) }, { label: 'Level', get: (l) => levelBadge(l.level) },
      { label: 'Event', get: (l) => h('code', { text: l.event }) }, { label: 'Message', get: (l) => l.message || '' },
      { label: 'User', get: (l) => l.username || '—' }, { label: 'IP', get: (l) => [l.ipAddress || '—', l.country ? ` (${l.country})` : ''] },
    ],
    actions: (l) => [h('button', { type: 'button', text: 'Details', on: { click: () => detail(l) } })],
    toolbar: [h('button#export-logs', { type: 'button', text: 'Export CSV', on: { click: async () => {
      try {
        const all = await readAll(async (p) => { const d = await get(base, { ...lv.state.filters, ...p }); return { items: d.logs, total: d.total }; }, 50000);
        saveFile('logs.csv', csv(['time', 'level', 'event', 'message', 'username', 'ip', 'country', 'data'],
          all.map((l) => [l.createdAt, l.level, l.event, l.message, l.username, l.ipAddress, l.country, l.data ? JSON.stringify(l.data) : ''])), 'text/csv');
        toast(`${fmtNum(all.length)} entries exported`);
      } catch (x) { toast(x.message, 'error'); }
    } } })],
    empty: 'No log entries match.',
  });
  const days = field({ name: 'days', label: 'Older than (days)', type: 'number', value: 30, min: 0 });
  return h('div', section('Last 24 hours', stats), h('div#logs', lv),
    section('Purge', h('div.inline', days, h('button.danger', { type: 'button', text: 'Purge old entries', on: { click: async () => {
      const n = days.querySelector('input').value;
      if (!await modal(`Delete entries older than ${n} days?`, h('p', { text: 'This cannot be undone.' }), { ok: 'Purge', danger: true })) return;
      try { const d = await del(`${base}?days=${encodeURIComponent(n)}`); toast(`${d.deleted} entries deleted`); lv.reload(); loadStats(); } catch (x) { toast(x.message, 'error'); }
    } } }))));
}

// detail shows one entry whole: every member, and its event data as JSON.
function detail(l) {
  const { data, ...rest } = l;
  return modal(l.event, h('div',
    h('dl', Object.entries(rest).filter(([, v]) => v !== null && v !== '' && typeof v !== 'object').map(([k, v]) => [h('dt', { text: k }), h('dd', { text: String(v) })])),
    h('h3', { text: 'Data' }), h('pre.log-data', { text: data == null ? '(none)' : JSON.stringify(data, null, 2) })), { ok: 'Close', cancel: null });
}
