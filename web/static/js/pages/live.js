// Live pages over the dashboard socket (Business plan): sessions, events, chat, broadcast,
// commands, and the hook editor.

import { h, clear, fmtDate, toast, modal, badge } from '../dom.js';
import { get, post, patch, del, socketTicket } from '../api.js';
import { form, section, field, fieldError } from '../forms.js';

const FEED_TYPES = ['session_connect', 'session_disconnect', 'chat', 'status', 'typing', 'custom_event'];
const FEED_MAX = 200;

async function needsPlan(ctx) {
  const me = await ctx.me(true); // the plan may have changed since the last page
  if (me.plan?.limits?.webSocketAccess) return null;
  return h('div.card#plan-needed', h('h2', { text: 'Live needs the Business plan' }),
    h('p', { text: `Your plan (${me.plan?.displayName || me.plan?.name}) has no WebSocket access, so sessions, chat and hooks are not available. ` },
      h('a', { href: '#/account', text: 'See the plans' })));
}

export async function live(ctx) {
  const blocked = await needsPlan(ctx);
  if (blocked) return blocked;
  const appId = ctx.appId;
  const status = h('span.badge#socket-state', { text: 'connecting' });
  const count = h('strong#online-count', { text: '0' });
  const sessBody = h('tbody#sessions');
  const feed = h('ol.feed#feed', { 'aria-live': 'polite' });
  const chatLog = h('ol.feed#chat-log');
  const chatTo = h('select#chat-to', { 'aria-label': 'chat with' }, h('option', { value: '', text: 'choose a user' }));
  let sessions = [];
  let ws = null;
  let closed = false;
  let retry = 0;

  function send(msg) {
    if (!ws || ws.readyState !== WebSocket.OPEN) { toast('The live connection is down; retrying.', 'error'); return false; }
    ws.send(JSON.stringify(msg));
    return true;
  }
  async function connect() {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    // A single-use ticket opens the socket: the token never travels in its URL.
    let ticket = '';
    try { ticket = await socketTicket(); } catch { /* refused below, and retried */ }
    if (closed) return;
    ws = new WebSocket(`${proto}//${location.host}/api/apps/${encodeURIComponent(appId)}/ws/connect?ticket=${encodeURIComponent(ticket)}`);
    ws.addEventListener('open', () => { retry = 0; status.textContent = 'connected'; status.className = 'badge ok'; applyFilters(); });
    ws.addEventListener('message', (e) => { let m; try { m = JSON.parse(e.data); } catch { return; } onMessage(m); });
    ws.addEventListener('close', (e) => {
      status.textContent = 'disconnected: reconnecting'; status.className = 'badge bad';
      if (closed) return;
      // Who is online is unknown while the socket is down: show no one rather than a stale list.
      sessions = []; renderSessions();
      count.textContent = '—';
      clear(sessBody).append(h('tr', h('td.muted#online-unknown', { colspan: 5, text: 'Unknown while the server cannot be reached; reconnecting…' })));
      if (e.code === 1006 && retry > 2) {
        // The upgrade was refused (token gone or plan changed): ask the API why.
        get(`/api/apps/${appId}/ws/online`).catch((x) => toast(x.message, 'error'));
      }
      setTimeout(() => { if (!closed) connect(); }, Math.min(30000, 1000 * 2 ** retry++));
    });
  }
  function onMessage(m) {
    const d = m.data || {};
    switch (m.type) {
      case 'online_count': count.textContent = String(d.count); return;
      case 'sessions': sessions = d.sessions || []; renderSessions(); return;
      case 'session_connect': case 'session_disconnect':
        addFeed(m.type, `${d.username} ${m.type === 'session_connect' ? 'connected from ' + (d.ip || '?') : 'left'}`);
        send({ type: 'get_sessions' }); send({ type: 'get_online' });
        return;
      case 'chat':
        addFeed('chat', `${d.username}: ${d.message}`);
        chatLog.append(h('li.in', h('strong', { text: d.username }), ': ', h('span', { text: d.message })));
        return;
      case 'status': addFeed('status', `${d.username} is ${d.status}`); return;
      case 'typing': addFeed('typing', `${d.username} ${d.typing ? 'is typing' : 'stopped typing'}`); return;
      case 'custom_event': addFeed('custom_event', `${d.username} sent ${d.event}: ${JSON.stringify(d.data ?? {})}`); return;
      case 'error': toast(d.message || 'The server refused a message', 'error'); return;
      default:
    }
  }
  function addFeed(type, text) {
    feed.prepend(h('li', { 'data-type': type }, h('time', { text: new Date().toLocaleTimeString() }), ' ', badge(type), ' ', h('span', { text })));
    while (feed.children.length > FEED_MAX) feed.lastChild.remove();
  }
  function renderSessions() {
    clear(sessBody);
    const chosen = chatTo.value;
    clear(chatTo).append(h('option', { value: '', text: 'choose a user' }));
    if (!sessions.length) sessBody.append(h('tr', h('td.muted', { colspan: 5, text: 'Nobody is online.' })));
    for (const s of sessions) {
      chatTo.append(h('option', { value: s.userId, text: s.username, selected: s.userId === chosen }));
      const reasonAct = (label, fn, cls = '') => h('button' + cls, { type: 'button', text: label, on: { click: async () => {
        const f = field({ name: 'reason', label: 'Reason (optional)' });
        if (!await modal(`${label} ${s.username}?`, f, { ok: label, danger: true })) return;
        fn(f.querySelector('input').value);
      } } });
      sessBody.append(h('tr', { 'data-user': s.userId },
        h('td', { 'data-label': 'User' }, h('a', { href: `#/apps/${appId}/users/${s.userId}`, text: s.username })),
        h('td', { 'data-label': 'IP', text: s.ip || '—' }), h('td', { 'data-label': 'Since', text: fmtDate(s.connectedAt) }),
        h('td', { 'data-label': 'Status', text: s.status || '' }),
        h('td.row-actions',
          h('button', { type: 'button', text: 'Chat', on: { click: () => { chatTo.value = s.userId; chatForm.querySelector('[name=message]').focus(); } } }),
          reasonAct('Kick', (reason) => send({ type: 'kick', userId: s.userId, reason })),
          reasonAct('Force logout', (reason) => post(`/api/apps/${appId}/ws/users/${s.userId}/force-logout`, { reason }).catch((x) => toast(x.message, 'error'))),
          reasonAct('Ban', (reason) => send({ type: 'ban', userId: s.userId, reason }), '.danger'))));
    }
  }
  const filterBox = h('fieldset.checks#feed-filters', h('legend', { text: 'Show' }), FEED_TYPES.map((t) => h('label', h('input', { type: 'checkbox', value: t, checked: t !== 'typing' }), ' ', t)));
  function applyFilters() { send({ type: 'set_filters', events: [...filterBox.querySelectorAll('input:checked')].map((i) => i.value).concat(['online_count', 'sessions']) }); }
  filterBox.addEventListener('change', applyFilters);

  const chatForm = form({ cls: 'inline', fields: [{ name: 'message', label: 'Message', required: true, maxlength: 2000 }], submit: 'Send',
    onSubmit: async (v, el) => {
      if (!chatTo.value) throw new Error('Choose who to chat with.');
      if (!v.message) throw fieldError('message', 'Write a message.');
      if (send({ type: 'chat', userId: chatTo.value, message: v.message })) {
        chatLog.append(h('li.out', h('strong', { text: 'you → ' + chatTo.selectedOptions[0].textContent }), ': ', h('span', { text: v.message })));
        el.querySelector('[name=message]').value = '';
      }
    } });
  const broadcast = form({ cls: 'inline', fields: [{ name: 'message', label: 'Message', required: true, maxlength: 2000 },
    { name: 'type', label: 'Type', type: 'select', options: [['info', 'info'], ['warning', 'warning'], ['alert', 'alert']] }], submit: 'Broadcast',
  onSubmit: async (v) => { const d = await post(`/api/apps/${appId}/ws/broadcast`, v); toast(`Sent to ${d.onlineUsers} online`); } });
  const target = () => [['', 'everyone'], ...sessions.map((s) => [s.userId, s.username])];
  const cmdFields = [{ name: 'command', label: 'Command', required: true, maxlength: 100 }, { name: 'payload', label: 'Payload (JSON object, optional)', type: 'json', rows: 2 }];
  const command = form({ fields: cmdFields, submit: 'Send command', onSubmit: async (v) => {
    if (v.payload !== undefined && (typeof v.payload !== 'object' || Array.isArray(v.payload) || v.payload === null)) throw fieldError('payload', 'The payload is a JSON object.');
    const userId = pickTarget(command);
    send({ type: 'command', command: v.command, payload: v.payload, userId: userId || undefined });
    toast('Command sent');
  } });
  const push = form({ fields: [{ name: 'payload', label: 'JSON object', type: 'json', required: true, rows: 3 }], submit: 'Push JSON', onSubmit: async (v) => {
    if (typeof v.payload !== 'object' || Array.isArray(v.payload) || v.payload === null) throw fieldError('payload', 'The payload is a JSON object.');
    if (JSON.stringify(v.payload).length > 16384) throw fieldError('payload', 'The payload is at most 16 KiB.');
    send({ type: 'push_json', payload: v.payload, userId: pickTarget(push) || undefined });
    toast('Pushed');
  } });
  chatForm.id = 'chat-form';
  broadcast.id = 'broadcast-form';
  command.id = 'command-form';
  push.id = 'push-form';
  for (const f of [command, push]) {
    const sel = h('select.target', { 'aria-label': 'to' });
    f.prepend(h('div.field', h('label', { text: 'To' }), sel));
    sel.addEventListener('focus', () => { const cur = sel.value; clear(sel).append(...target().map(([v, l]) => h('option', { value: v, text: l, selected: v === cur }))); });
    sel.append(h('option', { value: '', text: 'everyone' }));
  }
  function pickTarget(f) { return f.querySelector('select.target').value; }

  ctx.setCleanup(() => { closed = true; if (ws) ws.close(1000); });
  connect();
  renderSessions();
  return h('div.live',
    h('div.live-head', h('p', 'Online now: ', count, ' ', status)),
    h('div.grid', section('Sessions', h('div.table-wrap', h('table', h('thead', h('tr', ['User', 'IP', 'Since', 'Status', ''].map((t) => h('th', { text: t })))), sessBody))),
      section('Events', filterBox, feed)),
    h('div.grid', section('Chat', h('div.field', h('label', { for: 'chat-to', text: 'With' }), chatTo), chatLog, chatForm), section('Broadcast', broadcast)),
    h('div.grid', section('Command', command), section('Push JSON', push)));
}

// The hook editor: conditions and actions with the bounds of SPEC 8 checked in the form.
const BUILTIN = new Set(['ping', 'set_status', 'chat', 'typing', 'set_metadata', 'open', 'close', 'pong', 'variable_update', 'variable_delete',
  'user_variable_update', 'user_variable_delete', 'message', 'command', 'custom', 'force_logout', 'banned', 'error', 'online_count', 'sessions',
  'session_connect', 'session_disconnect', 'status', 'custom_event']);
const OPS = ['eq', 'neq', 'contains', 'exists'];
const ACTIONS = { respond: ['message'], send_message: ['userId', 'message', 'messageType'], broadcast: ['message', 'messageType'],
  push_json: ['payload', 'userId'], kick: ['userId', 'reason'], ban: ['userId', 'reason'], log: ['message', 'level'] };

export async function hooks(ctx) {
  const blocked = await needsPlan(ctx);
  if (blocked) return blocked;
  const base = `/api/apps/${ctx.appId}/ws/hooks`;
  const listBox = h('div');
  const editor = h('div');
  async function load() {
    clear(listBox);
    let d;
    try { d = await get(base); } catch (x) { listBox.append(h('p.error', { text: x.message })); return; }
    listBox.append(h('p.muted', { text: `${d.count} of 20 hooks` }), h('div.table-wrap', h('table', h('thead', h('tr', ['Priority', 'Name', 'Event', 'Conditions', 'Actions', 'State', ''].map((t) => h('th', { text: t })))),
      h('tbody', d.hooks.length ? d.hooks.map((k) => h('tr', h('td', { text: String(k.priority) }), h('td', { text: k.name }), h('td', h('code', { text: k.event })),
        h('td', { text: String(k.conditions.length) }), h('td', { text: k.actions.map((a) => a.type).join(', ') }),
        h('td', k.enabled ? badge('enabled', 'ok') : badge('disabled')),
        h('td.row-actions', h('button', { type: 'button', text: 'Edit', on: { click: () => edit(k) } }),
          h('button', { type: 'button', text: k.enabled ? 'Disable' : 'Enable', on: { click: () => patch(`${base}/${k.id}`, { enabled: !k.enabled }).then(load, (x) => toast(x.message, 'error')) } }),
          h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => {
            if (!await modal(`Delete the hook ${k.name}?`, h('p', { text: 'Clients sending its event get no answer from it any more.' }), { ok: 'Delete', danger: true })) return;
            del(`${base}/${k.id}`).then(load, (x) => toast(x.message, 'error'));
          } } })))) : h('tr', h('td.muted', { colspan: 7, text: 'No hooks yet.' }))))));
  }
  function edit(hook) {
    clear(editor).append(hookForm(hook, async (body) => {
      if (hook?.id) await patch(`${base}/${hook.id}`, body); else await post(base, body);
      toast('Hook saved');
      clear(editor).append(h('button.primary', { type: 'button', text: 'New hook', on: { click: () => edit(null) } }));
      load();
    }));
  }
  load();
  edit(null);
  return h('div', section('Hooks', h('p.muted', { text: 'A hook runs when a client socket sends a message of its event type and every condition holds; its actions run in order.' }), listBox), section('Editor', editor));
}

function hookForm(hook, save) {
  const conds = h('div.rows#conditions');
  const acts = h('div.rows#actions');
  const addCond = (c = {}) => {
    if (conds.children.length >= 5) { toast('A hook has at most 5 conditions.', 'warn'); return; }
    const row = h('div.row.cond', h('input', { name: 'field', placeholder: 'data.room', value: c.field || '', 'aria-label': 'field', maxlength: 200 }),
      h('select', { name: 'operator', 'aria-label': 'operator' }, OPS.map((o) => h('option', { value: o, text: o, selected: c.operator === o }))),
      h('input', { name: 'value', placeholder: 'value (JSON or text)', value: c.value === undefined ? '' : typeof c.value === 'string' ? c.value : JSON.stringify(c.value), 'aria-label': 'value' }),
      h('button', { type: 'button', text: '✕', 'aria-label': 'remove condition', on: { click: () => row.remove() } }));
    conds.append(row);
  };
  const addAct = (a = { type: 'respond' }) => {
    if (acts.children.length >= 5) { toast('A hook has at most 5 actions.', 'warn'); return; }
    const members = h('span.members');
    const typeSel = h('select', { name: 'type', 'aria-label': 'action' }, Object.keys(ACTIONS).map((t) => h('option', { value: t, text: t, selected: a.type === t })));
    const renderMembers = (vals) => {
      // Each member has a visible label, not only a placeholder.
      clear(members).append(...ACTIONS[typeSel.value].map((m) => h('label.member', h('span', { text: m }), h('input', { name: m,
        value: vals[m] === undefined ? '' : typeof vals[m] === 'string' ? vals[m] : JSON.stringify(vals[m]) }))));
    };
    typeSel.addEventListener('change', () => renderMembers({}));
    renderMembers(a);
    const row = h('div.row.act', typeSel, members, h('button', { type: 'button', text: '✕', 'aria-label': 'remove action', on: { click: () => row.remove() } }));
    acts.append(row);
  };
  (hook?.conditions || []).forEach(addCond);
  (hook?.actions || [{ type: 'respond', message: 'Hello {{username}}' }]).forEach(addAct);
  const fields = [
    { name: 'name', label: 'Name', required: true, maxlength: 100, value: hook?.name },
    { name: 'event', label: 'Event (the client message type)', required: true, maxlength: 50, value: hook?.event },
    { name: 'description', label: 'Description', maxlength: 500, value: hook?.description, omitEmpty: false },
    { name: 'priority', label: 'Priority (0–999, lower first)', type: 'number', min: 0, max: 999, value: hook?.priority ?? 0 },
    { name: 'enabled', label: 'Enabled', type: 'checkbox', value: hook ? hook.enabled : true },
  ];
  const el = form({
    fields, submit: hook?.id ? 'Save hook' : 'Create hook',
    extra: [h('h3', { text: 'Conditions (all must hold, at most 5)' }), conds, h('button', { type: 'button', text: 'Add condition', on: { click: () => addCond() } }),
      h('h3', { text: 'Actions (1–5, in order)' }), acts, h('button', { type: 'button', text: 'Add action', on: { click: () => addAct() } })],
    onSubmit: async (v) => {
      if (BUILTIN.has(v.event)) throw fieldError('event', `“${v.event}” is a built-in message type; choose another event name.`);
      if (v.priority !== undefined && (v.priority < 0 || v.priority > 999)) throw fieldError('priority', 'Priority is 0 to 999.');
      const conditions = [...conds.children].map((r) => {
        const c = { field: r.querySelector('[name=field]').value.trim(), operator: r.querySelector('[name=operator]').value };
        if (!c.field) throw new Error('Every condition needs a field.');
        if (c.field.split('.').length > 10) throw new Error('A field path has at most 10 segments.');
        if (c.operator !== 'exists') c.value = scalar(r.querySelector('[name=value]').value);
        if (typeof c.value === 'string' && c.value.length > 500) throw new Error('Condition values are at most 500 characters.');
        return c;
      });
      const actions = [...acts.children].map((r) => {
        const a = { type: r.querySelector('[name=type]').value };
        for (const m of ACTIONS[a.type]) {
          const raw = r.querySelector(`[name=${m}]`).value;
          if (raw === '') continue;
          if (m === 'payload') { try { a.payload = JSON.parse(raw); } catch { throw new Error('A push_json payload is a JSON object.'); } } else a[m] = raw;
        }
        if ((a.type === 'respond' || a.type === 'broadcast' || a.type === 'log' || a.type === 'send_message') && !a.message) throw new Error(`The ${a.type} action needs a message.`);
        if (a.message && a.message.length > 2000) throw new Error('Messages are at most 2000 characters.');
        if (a.reason && a.reason.length > 500) throw new Error('Reasons are at most 500 characters.');
        return a;
      });
      if (!actions.length) throw new Error('A hook needs at least one action.');
      await save({ ...v, conditions, actions });
    },
  });
  return el;
}

// scalar reads a condition value: a JSON number, boolean or string literal as such, else text.
function scalar(s) {
  const t = s.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (t !== '' && Number.isFinite(Number(t))) return Number(t);
  if (t.startsWith('"')) { try { return JSON.parse(t); } catch { /* plain text */ } }
  return s;
}
