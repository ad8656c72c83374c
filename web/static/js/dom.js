// DOM helpers. Every string given here becomes a text node or an attribute value: nothing is
// ever parsed as HTML, so owner and client data cannot become markup or script.

const BOOL_ATTRS = new Set(['disabled', 'checked', 'required', 'selected', 'multiple', 'readonly', 'hidden']);

// h('tag.class#id', {attr: value, on: {click: fn}}, ...children)
export function h(spec, attrs, ...children) {
  const m = /^([a-z0-9]+)((?:[.#][\w-]+)*)$/i.exec(spec);
  if (!m) throw new Error('bad element spec ' + spec);
  const el = document.createElement(m[1]);
  for (const part of m[2].match(/[.#][\w-]+/g) || []) {
    if (part[0] === '.') el.classList.add(part.slice(1)); else el.id = part.slice(1);
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'value') {
      // The default value too, so that a form's reset() goes back to it, not to blank.
      if (el.tagName === 'INPUT' && el.type !== 'file') el.setAttribute('value', String(v));
      el.value = v;
      if (el.tagName === 'TEXTAREA') el.defaultValue = v;
    }
    else if (k === 'checked') el.checked = !!v;
    else if (BOOL_ATTRS.has(k)) el.setAttribute(k, '');
    else if (k.startsWith('on')) throw new Error('use on: {} for events');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function fmtDate(s) {
  if (!s) return '—';
  const d = new Date(s);
  if (isNaN(d)) return String(s);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit' });
}

export function fmtNum(n) {
  return typeof n === 'number' ? n.toLocaleString() : (n ?? '—');
}

export function fmtBytes(n) {
  if (typeof n !== 'number') return '—';
  const u = ['B', 'KB', 'MB', 'GB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}

// A short status message at the bottom of the screen.
export function toast(message, kind = 'ok') {
  let box = document.getElementById('toasts');
  if (!box) { box = h('div#toasts', { role: 'status' }); document.body.append(box); }
  const t = h('div.toast.' + kind, { text: message });
  box.append(t);
  while (box.children.length > 3) box.firstChild.remove();
  setTimeout(() => t.remove(), kind === 'error' ? 8000 : 4000);
}

// A modal dialog; resolves with the value of onOk, or null when cancelled.
export function modal(title, body, { ok = 'OK', danger = false, onOk = async () => true, cancel = 'Cancel' } = {}) {
  return new Promise((resolve) => {
    const err = h('p.error', { role: 'alert' });
    const okBtn = h('button.' + (danger ? 'danger' : 'primary'), { type: 'submit', text: ok });
    const dlg = h('dialog.modal', h('form', { method: 'dialog', on: { submit: submit } },
      h('h2', { text: title }), body, err,
      h('div.actions', cancel ? h('button', { type: 'button', text: cancel, on: { click: () => close(null) } }) : null, okBtn)));
    async function submit(e) {
      if (e.target !== e.currentTarget) return; // a form inside the dialog handles its own submit
      e.preventDefault();
      err.textContent = '';
      okBtn.disabled = true;
      try {
        const v = await onOk();
        if (v !== false && v !== undefined) close(v);
      } catch (x) {
        err.textContent = x.message;
      } finally {
        okBtn.disabled = false;
      }
    }
    function close(v) { dlg.close(); dlg.remove(); resolve(v); }
    dlg.addEventListener('cancel', () => { dlg.remove(); resolve(null); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

// Copies text and says so; falls back to selecting the field when the clipboard is refused.
export async function copy(text, field) {
  try {
    await navigator.clipboard.writeText(text);
    toast('Copied');
  } catch {
    if (field) { field.focus(); field.select(); }
    toast('Press Ctrl+C to copy', 'warn');
  }
}

// A read-only field with a copy button (secrets shown once).
export function secretBox(value, label) {
  const input = h('input.mono', { value, readonly: true, 'aria-label': label || 'secret', name: 'shown-secret' });
  return h('div.secret', input, h('button', { type: 'button', text: 'Copy', on: { click: () => copy(value, input) } }));
}

// Saves text as a file the browser downloads.
export function saveFile(name, text, type = 'text/plain') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function badge(text, kind = '') {
  return h('span.badge' + (kind ? '.' + kind : ''), { text });
}

// plural(1, 'app') is "1 app", plural(2, 'app') "2 apps".
export function plural(n, word, many = word + 's') {
  return `${fmtNum(n)} ${n === 1 ? word : many}`;
}

// awayNotice says in place that the server cannot be reached (or answered as a proxy does
// when it is down), with a Retry that runs again what failed: no reload, the page's
// frame and tabs stay. Other errors are shown as they are.
export function isAway(x) {
  return x && (x.code === 'NETWORK' || x.code === 'BAD_REPLY' || [502, 503, 504].includes(x.status));
}

export function errorNotice(x, retry) {
  if (!isAway(x) || !retry) return h('p.error', { role: 'alert', text: x.message });
  const box = h('div.away', { role: 'alert' },
    h('strong', { text: 'The server cannot be reached.' }), ' ',
    h('span', { text: 'Your work on this page is kept; try again when it is back.' }), ' ',
    h('button.away-retry', { type: 'button', text: 'Retry', on: { click: async (e) => {
      e.target.disabled = true;
      try { await retry(box); } finally { e.target.disabled = false; }
    } } }));
  return box;
}

// csvCell quotes a cell, and defuses cells a spreadsheet would run as a formula.
export function csvCell(v) {
  let s = String(v ?? '');
  if (/^[=+\-@\t\r]/.test(s)) s = "'" + s;
  return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

export function csv(head, rows) {
  return [head, ...rows].map((r) => r.map(csvCell).join(',')).join('\n') + '\n';
}

// Reads every page of a list route (limit 200 each) up to max items.
export async function readAll(load, max = 100000) {
  const out = [];
  for (let offset = 0; out.length < max;) {
    const { items, total } = await load({ limit: 200, offset });
    out.push(...items);
    offset += items.length;
    if (!items.length || offset >= total) break;
  }
  return out;
}

// parseCSV reads CSV text (quoted cells, "" inside quotes, CRLF or LF) into rows of cells.
export function parseCSV(text) {
  const rows = [];
  let row = []; let cell = ''; let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false; else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(cell); cell = ''; } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(cell); cell = '';
      if (row.some((x) => x !== '')) rows.push(row);
      row = [];
    } else cell += c;
  }
  row.push(cell);
  if (row.some((x) => x !== '')) rows.push(row);
  return rows;
}

// importDialog asks for CSV or text (pasted or from a file) and hands the rows to send.
export async function importDialog(title, help, send) {
  const area = h('textarea.mono#import-text', { rows: 8, 'aria-label': 'rows to import' });
  const file = h('input', { type: 'file', accept: '.csv,.txt,text/csv,text/plain', 'aria-label': 'file to import', on: { change: async (e) => {
    const f = e.target.files[0];
    if (f) area.value = await f.text();
  } } });
  return modal(title, h('div', h('p.muted', { text: help }), file, area), { ok: 'Import', onOk: () => send(parseCSV(area.value)) });
}
