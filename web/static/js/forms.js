// Forms and lists built from descriptions. A refused submit shows the envelope's message in
// the form and marks the field the API named; what was typed stays in place.

import { h, clear, append, fmtNum, errorNotice } from './dom.js';

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
  const state = { offset: 0, sortBy: opts.sortBy, sortOrder: opts.sortOrder || 'desc', filters: {}, selected: new Set(), items: [],
    pageSize: opts.pageSize || 25 };
  const body = h('tbody');
  const info = h('span.muted');
  const err = h('div.list-error');
  const prev = h('button', { type: 'button', text: '‹ Previous', on: { click: () => { state.offset = Math.max(0, state.offset - state.pageSize); reload(); } } });
  const next = h('button', { type: 'button', text: 'Next ›', on: { click: () => { state.offset += state.pageSize; reload(); } } });
  const selAll = opts.selectable ? h('input', { type: 'checkbox', 'aria-label': 'select all', on: { change: (e) => {
    for (const it of state.items) e.target.checked ? state.selected.add(it.id) : state.selected.delete(it.id);
    renderRows();
  } } }) : null;
  const head = h('tr', selAll ? h('th', selAll) : null, opts.columns.map((c) => {
    if (!c.sort) return h('th', { text: c.label });
    // A sortable column says so: a button with an arrow, and aria-sort on the sorted one.
    const b = h('button.link.sort', { type: 'button', title: 'Sort by ' + c.label, on: { click: () => {
      state.sortOrder = state.sortBy === c.sort && state.sortOrder === 'asc' ? 'desc' : 'asc';
      state.sortBy = c.sort;
      state.offset = 0;
      reload();
    } } }, c.label, h('span.arrow', { 'aria-hidden': 'true' }));
    return h('th', { 'data-sort': c.sort }, b);
  }), opts.actions ? h('th', h('span.sr-only', { text: 'Actions' })) : null);
  function markSort() {
    for (const th of head.querySelectorAll('th[data-sort]')) {
      const on = th.dataset.sort === state.sortBy;
      if (on) th.setAttribute('aria-sort', state.sortOrder === 'asc' ? 'ascending' : 'descending'); else th.removeAttribute('aria-sort');
      th.querySelector('.arrow').textContent = on ? (state.sortOrder === 'asc' ? ' ▲' : ' ▼') : ' ↕';
    }
  }
  const sizeSel = h('select', { 'aria-label': 'rows per page', on: { change: (e) => { state.pageSize = Number(e.target.value); state.offset = 0; reload(); } } },
    [10, 25, 50, 100, 200].map((n) => h('option', { value: n, text: `${n} per page`, selected: n === state.pageSize })));
  let filterForm = null;
  if (opts.filters && opts.filters.length) {
    filterForm = h('form.filters', { role: 'search' }, opts.filters.map(field), h('button', { type: 'submit', text: 'Filter' }));
    filterForm.addEventListener('submit', (e) => {
      e.preventDefault();
      try { state.filters = values(filterForm, opts.filters); } catch (x) { clear(err).append(h('p.error', { role: 'alert', text: x.message })); return; }
      state.offset = 0;
      reload();
    });
    filterForm.addEventListener('change', (e) => { if (e.target.tagName === 'SELECT' || e.target.type === 'checkbox') filterForm.requestSubmit(); });
  }
  // On a phone the table head (and its select-all box) is hidden: a button does the same.
  const selPage = selAll ? h('button.select-page', { type: 'button', text: 'Select all on this page', on: { click: () => { selAll.checked = !selAll.checked; selAll.dispatchEvent(new Event('change')); } } }) : null;
  const root = h('div.list', filterForm, opts.toolbar || selPage ? h('div.toolbar', selPage, opts.toolbar) : null, err,
    h('div.table-wrap', h('table', h('thead', head), body)), h('div.pager', prev, info, next, sizeSel));

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
    if (selAll) selAll.checked = state.items.length > 0 && state.items.every((it) => state.selected.has(it.id));
    root.dispatchEvent(new Event('selection'));
  }
  // clearSelection forgets the chosen rows (after a bulk action removed or changed them).
  root.clearSelection = () => { state.selected.clear(); if (selAll) selAll.checked = false; root.dispatchEvent(new Event('selection')); };

  async function reload() {
    clear(err);
    markSort();
    try {
      const params = { ...state.filters, limit: state.pageSize, offset: state.offset };
      if (state.sortBy) { params.sortBy = state.sortBy; params.sortOrder = state.sortOrder; }
      const { items, total } = await opts.load(params);
      state.items = items || [];
      renderRows();
      const t = total ?? state.items.length;
      info.textContent = t ? `${fmtNum(state.offset + 1)}–${fmtNum(state.offset + state.items.length)} of ${fmtNum(t)}` : '';
      prev.disabled = state.offset === 0;
      next.disabled = state.offset + state.items.length >= t;
    } catch (x) {
      clear(err).append(errorNotice(x, () => reload()));
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
