// Webhook integrations: create with the events picker, enable, test, secret, deliveries.

import { h, clear, fmtDate, toast, modal, badge, secretBox } from '../dom.js';
import { get, post, patch, del } from '../api.js';
import { form, section, field } from '../forms.js';
import { table } from './users.js';

export async function integrations(ctx) {
  const base = `/api/apps/${ctx.appId}/integrations`;
  const events = await get('/api/integrations/events');
  const listBox = h('div');
  const shown = h('div');
  const picker = (chosen = []) => h('fieldset.events', h('legend', { text: 'Events' }),
    h('div.toolbar', h('button', { type: 'button', text: 'All', on: { click: (e) => e.target.closest('fieldset').querySelectorAll('input').forEach((i) => { i.checked = true; }) } }),
      h('button', { type: 'button', text: 'None', on: { click: (e) => e.target.closest('fieldset').querySelectorAll('input').forEach((i) => { i.checked = false; }) } })),
    h('div.checks', events.map((e) => h('label', h('input', { type: 'checkbox', value: e, checked: chosen.includes(e) }), ' ', e))));
  const chosenOf = (el) => [...el.querySelectorAll('fieldset.events input:checked')].map((i) => i.value);
  async function load() {
    clear(listBox);
    let list;
    try { list = await get(base); } catch (x) { listBox.append(h('p.error', { text: x.message })); return; }
    listBox.append(table(['Name', 'Type', 'URL', 'Events', 'State', ''], list.map((i) => [i.name, i.type, h('code', { text: i.webhookUrl }), String(i.events.length),
      [i.enabled ? badge('enabled', 'ok') : badge('disabled'), i.disabledReason ? h('small.muted', { text: ' ' + i.disabledReason }) : null],
      h('span.row-actions',
        h('button', { type: 'button', text: 'Test', on: { click: async () => {
          try { const d = await post(`${base}/${i.id}/test`); toast(d.delivered ? `Delivered (${d.statusCode}, ${d.latencyMs} ms)` : `Not delivered: ${d.error || d.statusCode}`, d.delivered ? 'ok' : 'error'); } catch (x) { toast(x.message, 'error'); }
        } } }),
        h('button', { type: 'button', text: i.enabled ? 'Disable' : 'Enable', on: { click: () => patch(`${base}/${i.id}`, { enabled: !i.enabled }).then(load, (x) => toast(x.message, 'error')) } }),
        h('button', { type: 'button', text: 'Events', on: { click: async () => {
          const p = picker(i.events);
          if (await modal('Events of ' + i.name, p, { ok: 'Save', onOk: () => patch(`${base}/${i.id}`, { events: chosenOf(p.parentElement) }).then(() => true) })) load();
        } } }),
        h('button', { type: 'button', text: 'Edit URL', on: { click: async () => {
          const f = field({ name: 'webhookUrl', label: 'Webhook URL', type: 'url', value: i.webhookUrl, required: true,
            help: 'The host must resolve now to a public address: the server checks it on save, and again at every delivery (a host that later resolves to a private address fails the delivery).' });
          if (await modal('Webhook URL of ' + i.name, f, { ok: 'Save', onOk: () => patch(`${base}/${i.id}`, { webhookUrl: f.querySelector('input').value.trim() }).then(() => true) })) { toast('URL saved'); load(); }
        } } }),
        h('button', { type: 'button', text: 'Deliveries', on: { click: async () => {
          try {
            const d = await get(`${base}/${i.id}/deliveries`, { limit: 50 });
            const detail = h('div#delivery-detail');
            await modal('Last deliveries', h('div', table(['Time', 'Event', 'Attempt', 'Status', 'Time taken', 'Receiver said', ''], d.attempts.map((a) => [fmtDate(a.createdAt), a.event, String(a.attempt),
              a.success ? badge(String(a.statusCode), 'ok') : badge(a.error || String(a.statusCode), 'bad'), `${a.latencyMs} ms`,
              a.response ? h('code', { text: a.response.length > 300 ? a.response.slice(0, 300) + '…' : a.response }) : '—',
              a.deliveryId ? h('span.row-actions', h('button', { type: 'button', text: 'Payload', on: { click: () => showDelivery(`${base}/${i.id}/deliveries/${a.deliveryId}`, detail) } }),
                h('button', { type: 'button', text: 'Redeliver', on: { click: async () => {
                  try { await post(`${base}/${i.id}/deliveries/${a.deliveryId}/redeliver`); toast('Queued again: it is sent in a moment'); } catch (x) { toast(x.message, 'error'); }
                } } })) : ''])), detail), { ok: 'Close', cancel: null });
          } catch (x) { toast(x.message, 'error'); }
        } } }),
        i.type === 'CUSTOM' ? h('button', { type: 'button', text: 'New secret', on: { click: async () => {
          try { const d = await post(`${base}/${i.id}/secret/regenerate`); clear(shown).append(h('p.warn', { text: 'Signing secret, shown once:' }), secretBox(d.secret)); } catch (x) { toast(x.message, 'error'); }
        } } }) : null,
        h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => {
          if (!await modal(`Delete ${i.name}?`, h('p', { text: 'Queued deliveries are dropped.' }), { ok: 'Delete', danger: true })) return;
          del(`${base}/${i.id}`).then(load, (x) => toast(x.message, 'error'));
        } } }))])));
  }
  load();
  const pick = picker(['user.login', 'user.register', 'license.activate']);
  return h('div', section('Integrations', shown, listBox), section('New integration', form({
    fields: [{ name: 'name', label: 'Name', required: true }, { name: 'type', label: 'Type', type: 'select', options: [['DISCORD', 'Discord'], ['SLACK', 'Slack'], ['TELEGRAM', 'Telegram'], ['CUSTOM', 'Custom (signed JSON)']] },
      { name: 'webhookUrl', label: 'Webhook URL (https, public)', type: 'url', required: true,
        help: 'The server checks on save that the host resolves to a public address (a host that does not resolve yet is refused), and again at every delivery.' }, { name: 'enabled', label: 'Enabled', type: 'checkbox', value: true }],
    extra: [pick],
    submit: 'Create integration',
    onSubmit: async (v, el) => {
      const events = chosenOf(el);
      if (!events.length) throw new Error('Pick at least one event.');
      const d = await post(base, { ...v, events });
      el.querySelectorAll('[name=name], [name=webhookUrl]').forEach((i) => { i.value = ''; });
      clear(shown);
      if (d.secret) shown.append(h('p.warn', { text: 'Signing secret of ' + d.name + ', shown once:' }), secretBox(d.secret));
      load();
    },
  })));
}

// showDelivery puts one delivery under the attempts: the request its last attempt sent,
// exactly (header fields as written, body bytes as they went out, never re-rendered), the
// last error, and the queued event behind a disclosure.
async function showDelivery(path, box) {
  clear(box);
  try {
    const d = await get(path);
    box.append(h('h3', { text: `${d.event}: ${d.state}, ${d.attempts} attempt(s)` }));
    if (d.lastError) box.append(h('p.error', { text: 'Last error: ' + d.lastError }));
    if (d.sent) {
      box.append(h('h4', { text: 'Request as sent (last attempt)' }),
        h('pre.log-data.sent-headers', { text: [d.sent.method + ' (URL path hidden: it holds the webhook token)'].concat(d.sent.headers.map((x) => `${x.name}: ${x.value}`)).join('\n') }),
        h('h4', { text: d.sent.bodyEncoding === 'base64' ? 'Body (base64: not UTF-8)' : 'Body (exact bytes)' }),
        h('pre.log-data.sent-body', { text: d.sent.body }));
    } else {
      box.append(h('p.muted', { text: 'Nothing was sent yet: no attempt reached the receiver.' }));
    }
    box.append(h('details', h('summary', { text: 'Queued event' }), h('pre.log-data', { text: JSON.stringify(d.payload, null, 2) })));
  } catch (x) { box.append(h('p.error', { role: 'alert', text: x.message })); }
}
