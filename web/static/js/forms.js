// Forms and lists built from descriptions. A refused submit shows the envelope's message in
// the form and marks the field the API named; what was typed stays in place.

import { h, clear, append, fmtNum } from './dom.js';

let seq = 0;

// field: {name, label, type (text|password|email|number|checkbox|select|textarea|datetime|json|file),
//         value, options: [[value, label]], required, min, max, maxlength, help, placeholder, autocomplete}
export function field(f) {
  const id = 'f' + (++seq);
  let input;
  const common = { id, name: f.name, required: f.required, placeholder: f.placeholder, autocomplete: f.autocomplete,
    'aria-describedby': f.help ? id + 'h' : undefined };
  switch (f.type) {
    case 'checkbox':
      input = h('input', { ...common, type: 'checkbox', checked: !!f.value });
      return h('div.field.check', input, h('label', { for: id, text: f.label }), f.help ? h('small', { id: id + 'h', text: f.help }) : null);
    case 'select':
      input = h('select', common, (f.options || []).map(([v, l]) => h('option', { value: v, text: l ?? v, selected: String(f.value ?? '') === String(v) })));
      break;
    case 'textarea': case 'json':
      input = h('textarea', { ...common, rows: f.rows || 4, maxlength: f.maxlength });
      input.value = f.type === 'json' && f.value !== undefined && typeof f.value !== 'string' ? JSON.stringify(f.value, null, 2) : (f.value ?? '');
      break;
    case 'datetime':
      input = h('input', { ...common, type: 'datetime-local', value: toLocalInput(f.value) });
      break;
    case 'file':
      input = h('input', { ...common, type: 'file' });
      break;
    default:
      input = h('input', { ...common, type: f.type || 'text', value: f.value ?? '', min: f.min, max: f.max, maxlength: f.maxlength, step: f.step,
        pattern: f.pattern, inputmode: f.inputmode });
  }
  return h('div.field', h('label', { for: id, text: f.label }), input, f.help ? h('small', { id: id + 'h', text: f.help }) : null);
}

function toLocalInput(v) {
  if (!v) return '';
  const d = new Date(v);
  if (isNaN(d)) return '';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// Reads a form's values by field description: numbers as numbers, checkboxes as booleans,
// datetimes as RFC 3339 (or '' when cleared), json parsed (a parse error names the field).
export function values(formEl, fields) {
  const out = {};
  for (const f of fields) {
    const el = formEl.querySelector(`[name="${f.name}"]`);
    if (!el || f.type === 'file') continue;
    if (f.type === 'checkbox') { out[f.name] = el.checked; continue; }
    const v = el.value;
    if (f.type === 'number') {
      if (v.trim() === '') { if (f.keepEmpty) out[f.name] = ''; continue; }
      const n = Number(v);
      if (!Number.isFinite(n) || (f.integer !== false && !Number.isInteger(n))) throw fieldError(f.name, `${f.label} must be a whole number.`);
      out[f.name] = n;
    } else if (f.type === 'datetime') {
      if (v === '') { if (f.keepEmpty) out[f.name] = ''; continue; }
      out[f.name] = new Date(v).toISOString();
    } else if (f.type === 'json') {
      if (v.trim() === '') continue;
      try { out[f.name] = JSON.parse(v); } catch { throw fieldError(f.name, `${f.label} is not valid JSON.`); }
    } else {
      if (v === '' && f.omitEmpty !== false && !f.required) continue;
      out[f.name] = v;
    }
  }
  return out;
}

export function fieldError(name, message) {
  const e = new Error(message);
  e.field = name;
  return e;
}

// form({fields, submit: 'Save', onSubmit: async (values, formEl) => {}, extra: [nodes]})
export function form({ fields, submit = 'Save', onSubmit, extra = [], cls = '' }) {
  const err = h('p.error', { role: 'alert' });
  const btn = h('button.primary', { type: 'submit', text: submit });
  const el = h('form' + (cls ? '.' + cls : ''), { novalidate: true }, fields.map(field), extra, err, h('div.actions', btn));
  el.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.textContent = '';
    el.querySelectorAll('.invalid').forEach((x) => x.classList.remove('invalid'));
    btn.disabled = true;
    try {
      await onSubmit(values(el, fields), el);
    } catch (x) {
      showError(el, err, x);
    } finally {
      btn.disabled = false;
    }
  });
  return el;
}

export function showError(formEl, errEl, x) {
  errEl.textContent = x.message;
  const name = x.field && String(x.field).split(/[.[]/)[0];
  const input = name && formEl.querySelector(`[name="${name}"]`);
  if (input && input.classList) { input.classList.add('invalid'); input.focus(); }
}

// A paged, filterable list.
// listView({load: async (params) => ({items, total}), columns: [{label, get: item => node|string, sort}],
//           filters: [fields], actions: item => [nodes], selectable, toolbar: [nodes], pageSize, empty})
export function listView(opts) {
  const pageSize = opts.pageSize || 25;
  const state = { offset: 0, sortBy: opts.sortBy, sortOrder: opts.sortOrder || 'desc', filters: {}, selected: new Set(), items: [] };
  const body = h('tbody');
  const info = h('span.muted');
  const err = h('p.error', { role: 'alert' });
  const prev = h('button', { type: 'button', text: '‹ Previous', on: { click: () => { state.offset = Math.max(0, state.offset - pageSize); reload(); } } });
  const next = h('button', { type: 'button', text: 'Next ›', on: { click: () => { state.offset += pageSize; reload(); } } });
  const selAll = opts.selectable ? h('input', { type: 'checkbox', 'aria-label': 'select all', on: { change: (e) => {
    for (const it of state.items) e.target.checked ? state.selected.add(it.id) : state.selected.delete(it.id);
    renderRows();
  } } }) : null;
  const head = h('tr', selAll ? h('th', selAll) : null, opts.columns.map((c) => {
    if (!c.sort) return h('th', { text: c.label });
    const b = h('button.link', { type: 'button', text: c.label, on: { click: () => {
      state.sortOrder = state.sortBy === c.sort && state.sortOrder === 'asc' ? 'desc' : 'asc';
      state.sortBy = c.sort;
      state.offset = 0;
      reload();
    } } });
    return h('th', { 'data-sort': c.sort }, b);
  }), opts.actions ? h('th', { text: '' }) : null);
  let filterForm = null;
  if (opts.filters && opts.filters.length) {
    filterForm = h('form.filters', { role: 'search' }, opts.filters.map(field), h('button', { type: 'submit', text: 'Filter' }));
    filterForm.addEventListener('submit', (e) => {
      e.preventDefault();
      try { state.filters = values(filterForm, opts.filters); } catch (x) { err.textContent = x.message; return; }
      state.offset = 0;
      reload();
    });
    filterForm.addEventListener('change', (e) => { if (e.target.tagName === 'SELECT' || e.target.type === 'checkbox') filterForm.requestSubmit(); });
  }
  const root = h('div.list', filterForm, opts.toolbar ? h('div.toolbar', opts.toolbar) : null, err,
    h('div.table-wrap', h('table', h('thead', head), body)), h('div.pager', prev, info, next));

  function renderRows() {
    clear(body);
    if (!state.items.length) {
      body.append(h('tr', h('td.muted', { colspan: opts.columns.length + 2, text: opts.empty || 'Nothing here yet.' })));
    }
    for (const it of state.items) {
      const tr = h('tr', { 'data-id': it.id });
      if (opts.selectable) {
        tr.append(h('td', h('input', { type: 'checkbox', 'aria-label': 'select', checked: state.selected.has(it.id), on: { change: (e) => {
          e.target.checked ? state.selected.add(it.id) : state.selected.delete(it.id);
          root.dispatchEvent(new Event('selection'));
        } } })));
      }
      for (const c of opts.columns) tr.append(h('td', { 'data-label': c.label }, c.get(it)));
      if (opts.actions) tr.append(h('td.row-actions', opts.actions(it, reload)));
      body.append(tr);
    }
    root.dispatchEvent(new Event('selection'));
  }

  async function reload() {
    err.textContent = '';
    try {
      const params = { ...state.filters, limit: pageSize, offset: state.offset };
      if (state.sortBy) { params.sortBy = state.sortBy; params.sortOrder = state.sortOrder; }
      const { items, total } = await opts.load(params);
      state.items = items || [];
      renderRows();
      const t = total ?? state.items.length;
      info.textContent = t ? `${fmtNum(state.offset + 1)}–${fmtNum(state.offset + state.items.length)} of ${fmtNum(t)}` : '';
      prev.disabled = state.offset === 0;
      next.disabled = state.offset + state.items.length >= t;
    } catch (x) {
      err.textContent = x.message;
    }
  }
  root.reload = reload;
  root.state = state;
  reload();
  return root;
}

export function section(title, ...children) {
  return append(h('section.card', h('h2', { text: title })), children);
}
