// Application variables (typed), and the typed-variable editor license variables share.

import { h, clear, toast, modal, badge } from '../dom.js';
import { get, post, patch, del } from '../api.js';
import { form, section, field, fieldError } from '../forms.js';

export const TYPES = ['STRING', 'INT', 'FLOAT', 'BOOL', 'JSON'];
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

// checkValue says, before anything is sent, why a value does not fit its type (the API
// checks the same and has the last word).
export function checkValue(type, value) {
  if (new TextEncoder().encode(value).length > 64 * 1024) return 'Values are at most 64 KiB.';
  switch (type) {
    case 'INT': {
      if (!/^[+-]?\d+$/.test(value.trim())) return 'An INT is a whole number such as 42 or -7.';
      const n = BigInt(value.trim());
      return n < INT64_MIN || n > INT64_MAX ? 'An INT must fit in 64 bits.' : '';
    }
    case 'FLOAT':
      return value.trim() === '' || !Number.isFinite(Number(value)) ? 'A FLOAT is a finite number such as 3.14.' : '';
    case 'BOOL':
      return value === 'true' || value === 'false' ? '' : 'A BOOL is exactly true or false.';
    case 'JSON':
      try { JSON.parse(value); return ''; } catch (e) { return 'Not valid JSON: ' + e.message; }
    default:
      return '';
  }
}

export async function variables(ctx) {
  const box = h('div');
  await typedEditor(`/api/apps/${ctx.appId}/variables`, box);
  return h('div', section('Application variables', h('p.muted', { text: 'Every client of the application can read these; connected clients get changes live.' }), box));
}

// typedEditor lists the variables at base and lets the owner add, edit and delete them.
export async function typedEditor(base, box) {
  clear(box);
  let list;
  try { list = await get(base); } catch (x) { box.append(h('p.error', { role: 'alert', text: x.message })); return; }
  const reload = () => typedEditor(base, box);
  const rows = list.map((v) => h('tr', { 'data-key': v.key },
    h('td', { 'data-label': 'Key' }, h('code', { text: v.key })), h('td', { 'data-label': 'Type' }, badge(v.type)),
    h('td.value', { 'data-label': 'Value' }, h('code', { text: v.value })),
    h('td.row-actions', h('button', { type: 'button', text: 'Edit', on: { click: () => edit(v) } }),
      h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => {
        if (!await modal(`Delete ${v.key}?`, h('p', { text: 'Clients stop seeing it at once.' }), { ok: 'Delete', danger: true })) return;
        try { await del(`${base}/${v.id}`); reload(); } catch (x) { toast(x.message, 'error'); }
      } } }))));
  async function edit(v) {
    const typeF = field({ name: 'type', label: 'Type', type: 'select', value: v.type, options: TYPES.map((t) => [t, t]) });
    const valF = field({ name: 'value', label: 'Value', type: 'textarea', value: v.value });
    const ok = await modal('Edit ' + v.key, h('div', typeF, valF), { ok: 'Save', onOk: async () => {
      const type = typeF.querySelector('select').value;
      const value = valF.querySelector('textarea').value;
      const why = checkValue(type, value);
      if (why) throw new Error(why);
      await patch(`${base}/${v.id}`, { type, value });
      return true;
    } });
    if (ok) { toast('Saved'); reload(); }
  }
  box.append(h('div.table-wrap', h('table.vars', h('thead', h('tr', ['Key', 'Type', 'Value', ''].map((t) => h('th', { text: t })))),
    h('tbody', rows.length ? rows : h('tr', h('td.muted', { colspan: 4, text: 'No variables yet.' }))))),
  form({
    cls: 'inline',
    fields: [{ name: 'key', label: 'Key', required: true, maxlength: 128 }, { name: 'type', label: 'Type', type: 'select', options: TYPES.map((t) => [t, t]) },
      { name: 'value', label: 'Value', type: 'textarea', rows: 1, omitEmpty: false }],
    submit: 'Add variable',
    onSubmit: async (v) => {
      const why = checkValue(v.type, v.value ?? '');
      if (why) throw fieldError('value', why);
      await post(base, v);
      toast('Variable added');
      reload();
    },
  }));
}
