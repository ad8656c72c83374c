// Files: upload with a progress bar, download, rename or re-version, delete.

import { h, clear, fmtDate, fmtBytes, toast, modal } from '../dom.js';
import { get, patch, del, upload, download } from '../api.js';
import { form, section, field, values } from '../forms.js';

export async function files(ctx) {
  const base = `/api/apps/${ctx.appId}/files`;
  const listBox = h('div');
  const progress = h('progress#upload-progress', { max: 100, value: 0, hidden: true, 'aria-label': 'upload progress' });
  const pct = h('span.muted');
  const up = form({
    cls: 'inline',
    fields: [{ name: 'file', label: 'File', type: 'file', required: true }, { name: 'name', label: 'Name (default: the file name)' },
      { name: 'version', label: 'Version', placeholder: '1.0.0' }],
    submit: 'Upload',
    extra: [h('div.progress', progress, pct)],
    onSubmit: async (v, el) => {
      const input = el.querySelector('input[type=file]');
      if (!input.files.length) throw Object.assign(new Error('Choose a file first.'), { field: 'file' });
      const fd = new FormData();
      if (v.name) fd.append('name', v.name);
      if (v.version) fd.append('version', v.version);
      fd.append('file', input.files[0]);
      progress.hidden = false;
      progress.value = 0;
      try {
        const f = await upload(base, fd, (r) => { progress.value = Math.round(r * 100); pct.textContent = Math.round(r * 100) + ' %'; });
        toast(`Uploaded ${f.name}`);
        el.reset();
        load();
      } finally {
        progress.hidden = true;
        pct.textContent = '';
      }
    },
  });
  async function load() {
    clear(listBox);
    let list;
    try { list = await get(base); } catch (x) { listBox.append(h('p.error', { text: x.message })); return; }
    listBox.append(h('div.table-wrap', h('table#files', h('thead', h('tr', ['Name', 'Version', 'Size', 'SHA-256', 'Uploaded', ''].map((t) => h('th', { text: t })))),
      h('tbody', list.length ? list.map((f) => h('tr', { 'data-id': f.id },
        h('td', { 'data-label': 'Name', text: f.name }), h('td', { 'data-label': 'Version', text: f.version }), h('td', { 'data-label': 'Size', text: fmtBytes(f.size) }),
        h('td', { 'data-label': 'SHA-256' }, h('code.hash', { text: (f.hash || '').slice(0, 16) + '…', title: f.hash })), h('td', { 'data-label': 'Uploaded', text: fmtDate(f.createdAt) }),
        h('td.row-actions',
          h('button', { type: 'button', text: 'Download', on: { click: () => download(`${base}/${f.id}/download`, f.name).catch((x) => toast(x.message, 'error')) } }),
          h('button', { type: 'button', text: 'Edit', on: { click: () => edit(f) } }),
          h('button.danger', { type: 'button', text: 'Delete', on: { click: async () => {
            if (!await modal(`Delete ${f.name}?`, h('p', { text: 'Clients can no longer download it.' }), { ok: 'Delete', danger: true })) return;
            try { await del(`${base}/${f.id}`); load(); } catch (x) { toast(x.message, 'error'); }
          } } })))) : h('tr', h('td.muted', { colspan: 6, text: 'No files yet.' }))))));
  }
  async function edit(f) {
    const fields = [{ name: 'name', label: 'Name', value: f.name, required: true }, { name: 'version', label: 'Version', value: f.version }];
    const holder = h('div', fields.map(field));
    if (await modal('Edit ' + f.name, holder, { ok: 'Save', onOk: () => patch(`${base}/${f.id}`, values(holder, fields)).then(() => true) })) load();
  }
  load();
  return h('div', section('Upload', up), section('Files', listBox));
}
