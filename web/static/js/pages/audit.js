// The audit log: who changed what, account-wide (#/audit) or for one app (its Audit tab).
// Filters of GET /api/audit, paging, each change's before and after side by side, CSV.

import { h, fmtDate, badge, csv, readAll, saveFile, toast, modal } from '../dom.js';
import { get } from '../api.js';
import { listView } from '../forms.js';

const RECORD_TYPES = ['apps', 'users', 'licenses', 'tokens', 'variables', 'rules', 'files', 'integrations', 'hooks', 'realtime', 'logs', 'devices', 'account', 'api_keys'];

function loader(appId) {
  return async (p) => {
    const d = await get('/api/audit', { ...p, appId: appId || p.appId });
    return { items: d.entries, total: d.total };
  };
}

export async function page(ctx) {
  return h('div', h('h1', { text: 'Audit log' }), h('p.muted', { text: 'Every change made by you, your sessions and your API keys, newest first.' }), auditList(null));
}

// The app tab.
export async function audit(ctx) {
  return h('div', h('h2', { text: 'Audit log' }), auditList(ctx.appId));
}

function auditList(appId) {
  const load = loader(appId);
  let lv;
  const exportBtn = h('button#export-audit', { type: 'button', text: 'Export CSV', on: { click: async () => {
    try {
      const all = await readAll((p) => load({ ...lv.state.filters, ...p }), 10000);
      saveFile('audit.csv', csv(['time', 'actorType', 'actor', 'ip', 'method', 'route', 'recordType', 'recordId', 'status', 'before', 'after'],
        all.map((e) => [e.createdAt, e.actor?.type, e.actor?.name, e.ip, e.method, e.path, e.recordType, e.recordId, e.status,
          e.before ? JSON.stringify(e.before) : '', e.after ? JSON.stringify(e.after) : ''])), 'text/csv');
    } catch (x) { toast(x.message, 'error'); }
  } } });
  lv = listView({
    load,
    pageSize: 25,
    toolbar: [exportBtn],
    filters: [
      { name: 'recordType', label: 'Record', type: 'select', options: [['', 'any'], ...RECORD_TYPES.map((t) => [t, t])] },
      { name: 'actorId', label: 'Actor id', placeholder: 'API key or session id', type: 'search' },
      { name: 'from', label: 'From', type: 'datetime' },
      { name: 'to', label: 'To', type: 'datetime' },
    ],
    columns: [
      { label: 'Time', get: (e) => fmtDate(e.createdAt) },
      { label: 'Who', get: (e) => [badge(e.actor?.type || '?'), ' ', e.actor?.name || ''] },
      { label: 'What', get: (e) => [h('code', { text: e.method }), ' ', e.recordType, ' ', h('code', { text: e.recordId || '' })] },
      { label: 'From', get: (e) => e.ip || '—' },
    ],
    actions: (e) => [h('button', { type: 'button', text: 'Changes', on: { click: () => showChange(e) } })],
    empty: 'No changes recorded for these filters.',
  });
  return h('div#audit', lv);
}

function showChange(e) {
  const pre = (v) => h('pre', { text: v == null ? '(nothing recorded)' : JSON.stringify(v, null, 2) });
  return modal(`${e.method} ${e.recordType}`, h('div',
    h('p.muted', { text: `${fmtDate(e.createdAt)} · ${e.actor?.type} ${e.actor?.name || ''} · ${e.ip || ''} · ${e.path}` }),
    h('div.diff', h('div', h('h3', { text: 'Before' }), pre(e.before)), h('div', h('h3', { text: 'After' }), pre(e.after)))),
  { ok: 'Close', cancel: null });
}
