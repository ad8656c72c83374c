// Store sales: connections (receiver address, signing secret, refund action), the product →
// license template mappings, and the orders with their keys and each notification's raw
// payload. Everything goes through the public API (docs/API.md, "Store sales").

import { h, clear, fmtDate, toast, modal, badge } from '../dom.js';
import { get, post, patch, del } from '../api.js';
import { form, section } from '../forms.js';
import { table } from './users.js';

const providers = [['stripe', 'Stripe'], ['paddle', 'Paddle Billing'], ['lemonsqueezy', 'Lemon Squeezy'], ['sellix', 'Sellix'],
  ['shoppy', 'Shoppy'], ['sellapp', 'SellApp'], ['gumroad', 'Gumroad (no signature: the address is the secret)'],
  ['discord', 'Discord bot (secret: the application public key)']];

const money = (o) => `${(o.amount / 100).toFixed(2)} ${o.currency}`;

export async function stores(ctx) {
  const base = `/api/apps/${ctx.appId}`;
  const connBox = h('div');
  const orderBox = h('div');
  const receiverURL = (c) => c.provider === 'discord'
    ? location.origin + c.receiverPath.replace('/api/stores/receive/', '/api/discord/interactions/')
    : location.origin + c.receiverPath;

  async function products(c) {
    const list = h('div');
    const reload = async () => {
      clear(list);
      const ps = await get(`${base}/stores/${c.id}/products`);
      list.append(ps.length ? table(['Product', 'Variant', 'Level', 'Duration (s)', 'Devices', 'Prefix', ''], ps.map((p) => [p.productId, p.variantId || 'any',
        String(p.level), String(p.duration), String(p.deviceLimit), p.keyPrefix,
        h('button.danger', { type: 'button', text: 'Delete', 'aria-label': `Delete mapping ${p.productId}`, on: { click: () => del(`${base}/stores/${c.id}/products/${p.id}`).then(reload, (x) => toast(x.message, 'error')) } })]))
        : h('p.muted', { text: 'No product mapped yet: its sales are refused until one is.' }));
    };
    await reload();
    const add = form({
      fields: [{ name: 'productId', label: 'Store product id', required: true }, { name: 'variantId', label: 'Variant or price id (empty: any)' },
        { name: 'level', label: 'Level', type: 'number', value: 1, min: 1 }, { name: 'duration', label: 'Duration (seconds, 0 = no limit)', type: 'number', value: 0, min: 0 },
        { name: 'deviceLimit', label: 'Device limit', type: 'number', value: 1, min: 1 }, { name: 'keyPrefix', label: 'Key prefix' },
        { name: 'createUser', label: 'Create a user per key', type: 'checkbox', value: false }],
      submit: 'Map product',
      onSubmit: async (v) => { await post(`${base}/stores/${c.id}/products`, v); await reload(); },
    });
    await modal('Products of ' + c.name, h('div', list, add), { ok: 'Close', cancel: null });
  }

  async function loadConnections() {
    clear(connBox);
    let list;
    try { list = await get(`${base}/stores`); } catch (x) { connBox.append(h('p.error', { text: x.message })); return; }
    if (!list.length) { connBox.append(h('p.muted', { text: 'No store connected.' })); return; }
    connBox.append(table(['Store', 'Name', 'Receiver address', 'On refund', 'State', ''], list.map((c) => [c.provider, c.name,
      h('code.receiver', { text: receiverURL(c) }), c.refundAction, c.enabled ? badge('enabled', 'ok') : badge('disabled'),
      h('span.row-actions',
        c.provider === 'discord' ? null : c.provider === 'portal'
          // Deprecated kind: the portal is a setting of the app now (its switches were copied there).
          ? h('a', { href: `#/apps/${ctx.appId}/settings`, text: 'Moved to Settings' })
          : h('button', { type: 'button', text: 'Products', on: { click: () => products(c).catch((x) => toast(x.message, 'error')) } }),
        h('button', { type: 'button', text: c.enabled ? 'Disable' : 'Enable', on: { click: () => patch(`${base}/stores/${c.id}`, { enabled: !c.enabled }).then(loadConnections, (x) => toast(x.message, 'error')) } }),
        h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => {
          if (!await modal(`Delete ${c.name}?`, h('p', { text: 'Its product mappings go; its orders stay.' }), { ok: 'Delete', danger: true })) return;
          del(`${base}/stores/${c.id}`).then(loadConnections, (x) => toast(x.message, 'error'));
        } } }))])));
  }

  async function showOrder(id) {
    const d = await get(`${base}/orders/${id}`);
    const o = d.order;
    const body = h('div.order',
      o ? h('dl', ['Order', o.orderId, 'Status', o.status, 'Buyer', o.email || '—', 'Amount', money(o), 'Paid through', o.paidThrough ? fmtDate(o.paidThrough) : '—']
        .reduce((acc, v, i, all) => (i % 2 ? acc : acc.concat([h('dt', { text: v }), h('dd', { text: all[i + 1] })])), [])) : null,
      o ? h('p', h('strong', { text: 'Keys: ' }), h('code', { text: o.keys.join('  ') || '—' })) : null,
      h('h3', { text: 'Notifications' }),
      d.events.map((e) => h('details', h('summary', { text: `${fmtDate(e.receivedAt)} · ${e.type} · ${e.outcome || ''}` }),
        h('pre.payload', { text: e.payload }))));
    await modal(o ? 'Order ' + o.orderId : 'Notifications no order took', body, { ok: 'Close', cancel: null });
  }

  async function loadOrders() {
    clear(orderBox);
    let d;
    try { d = await get(`${base}/orders`, { limit: 50 }); } catch (x) { orderBox.append(h('p.error', { text: x.message })); return; }
    orderBox.append(h('p.muted', { text: `${d.total} order(s)` }),
      d.orders.length ? table(['Time', 'Order', 'Buyer', 'Amount', 'Keys', 'Status', ''], d.orders.map((o) => [fmtDate(o.createdAt), o.orderId, o.email || '—', money(o),
        String(o.keys.length), badge(o.status, o.status === 'paid' ? 'ok' : o.status === 'canceled' ? 'warn' : o.status === 'issuing' ? undefined : 'bad'),
        h('span.row-actions',
          h('button', { type: 'button', text: 'Details', 'aria-label': `Details of order ${o.orderId}`, on: { click: () => showOrder(o.id).catch((x) => toast(x.message, 'error')) } }),
          h('button', { type: 'button', text: 'Resend keys', 'aria-label': `Resend the keys of order ${o.orderId}`, on: { click: () => post(`${base}/orders/${o.id}/resend`).then(() => toast('Keys mailed again', 'ok'), (x) => toast(x.message, 'error')) } }))])) : null,
      h('button', { type: 'button', text: 'Notifications no order took', on: { click: () => showOrder('unmatched').catch((x) => toast(x.message, 'error')) } }));
  }

  loadConnections();
  loadOrders();
  return h('div', section('Stores', connBox), section('Connect a store', form({
    fields: [{ name: 'provider', label: 'Store', type: 'select', options: providers }, { name: 'name', label: 'Name' },
      { name: 'secret', label: 'Signing secret (from the store)', type: 'password' },
      { name: 'refundAction', label: 'On refund or chargeback', type: 'select', options: [['ban', 'Ban the keys'], ['revoke', 'Delete the keys']] }],
    submit: 'Connect',
    onSubmit: async (v, el) => {
      const body = { ...v };
      if (!body.secret) delete body.secret;
      if (!body.name) delete body.name;
      await post(`${base}/stores`, body);
      el.querySelectorAll('[name=secret], [name=name]').forEach((i) => { i.value = ''; });
      loadConnections();
    },
  })), section('Orders', orderBox));
}
