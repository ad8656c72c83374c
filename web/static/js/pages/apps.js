// Applications: the list, creation (the secret shown once), and one application's pages.

import { h, clear, fmtDate, fmtNum, secretBox, toast, modal, badge, plural, errorNotice, saveFile } from '../dom.js';
import { get, post, patch, del } from '../api.js';
import { form, section, field, values } from '../forms.js';

export async function list(ctx) {
  const apps = await get('/api/apps');
  const me = await ctx.me();
  const created = h('div');
  const row = (a) => h('tr', { 'data-id': a.id },
    h('td', { 'data-label': 'Name' }, h('a', { href: `#/apps/${a.id}/overview`, text: a.name })),
    h('td', { 'data-label': 'Status' }, a.enabled === false ? badge('disabled', 'bad') : a.paused ? badge('paused', 'warn') : badge('enabled', 'ok')),
    h('td', { 'data-label': 'Version', text: a.version }),
    h('td', { 'data-label': 'Users', text: fmtNum(a.counts?.users) }),
    h('td', { 'data-label': 'Licenses', text: fmtNum(a.counts?.licenses) }),
    h('td', { 'data-label': 'Sessions', text: fmtNum(a.counts?.sessions) }),
    h('td', { 'data-label': 'Files', text: fmtNum(a.counts?.files) }),
    h('td', { 'data-label': 'Created', text: fmtDate(a.createdAt) }));
  const max = me.plan?.limits?.maxApps;
  const countLine = h('p.muted');
  const sayCount = () => { countLine.textContent = `${fmtNum(apps.length)} of ${plural(max, 'application')} on the ${me.plan?.displayName || me.plan?.name} plan`; };
  sayCount();
  const tbody = h('tbody', apps.length ? apps.map(row) : h('tr.none', h('td.muted', { colspan: 8, text: 'No applications yet: create the first one below.' })));
  return h('div', h('h1', { text: 'Applications' }), countLine,
    h('div.table-wrap', h('table#apps', h('thead', h('tr', ['Name', 'Status', 'Version', 'Users', 'Licenses', 'Sessions', 'Files', 'Created'].map((t) => h('th', { text: t })))),
      tbody)),
    section('New application', created, form({
      fields: [{ name: 'name', label: 'Name', required: true, maxlength: 64 }, { name: 'version', label: 'Version', placeholder: '1.0.0', maxlength: 32 },
        { name: 'description', label: 'Description', type: 'textarea', maxlength: 500, rows: 2 }],
      submit: 'Create application',
      onSubmit: async (v, el) => {
        const a = await post('/api/apps', v);
        el.reset();
        // The new app joins the list above at once.
        tbody.querySelector('tr.none')?.remove();
        apps.push(a);
        tbody.append(row(a));
        sayCount();
        clear(created).append(h('div.shown-once', h('p.warn', 'Application ', h('strong', { text: a.name }),
          ' created. Copy its secret now: it is shown only this once (your program sends it to init).'),
        secretBox(a.secret, 'application secret'), h('p', h('a#open-app', { href: `#/apps/${a.id}/overview`, text: 'Open the application →' }))));
      },
    })));
}

// One application's pages; the tab modules load when first opened.
const tabs = [
  ['overview', 'Overview', () => import('./overview.js')],
  ['users', 'Users', () => import('./users.js')],
  ['licenses', 'Licenses', () => import('./licenses.js')],
  ['variables', 'Variables', () => import('./variables.js')],
  ['files', 'Files', () => import('./files.js')],
  ['devices', 'Devices', () => import('./misc.js')],
  ['tokens', 'Tokens', () => import('./misc.js')],
  ['rules', 'Rules', () => import('./misc.js')],
  ['logs', 'Logs', () => import('./logs.js')],
  ['analytics', 'Analytics', () => import('./analytics.js')],
  ['integrations', 'Integrations', () => import('./integrations.js')],
  ['stores', 'Stores', () => import('./stores.js')],
  ['live', 'Live', () => import('./live.js')],
  ['hooks', 'Hooks', () => import('./live.js')],
  ['audit', 'Audit', () => import('./audit.js')],
  ['settings', 'Settings', null],
];

export async function detail(ctx) {
  const [id, tab = 'overview', sub] = ctx.params;
  const nav = h('nav.tabs', { 'aria-label': 'application' }, tabs.map(([k, label]) =>
    h('a' + (k === tab ? '.active' : ''), { href: `#/apps/${id}/${k}`, text: label, 'aria-current': k === tab ? 'page' : undefined })));
  const holder = h('div.tab-body');
  const root = h('div', h('div.app-head', h('h1', { text: 'Application' })), nav, holder);
  // The tabs stay when the server is away: the page says so under them, and Retry loads
  // the tab again (no reload).
  async function load() {
    clear(holder);
    try {
      const a = await get(`/api/apps/${id}`);
      root.firstChild.replaceWith(h('div.app-head', h('h1', { text: a.name }), a.enabled === false ? badge('disabled', 'bad') : a.paused ? badge('paused', 'warn') : null,
        h('span.muted', { text: 'v' + a.version })));
      const t = tabs.find(([k]) => k === tab);
      if (!t) { holder.append(h('p.error', { text: 'No such page.' })); return; }
      const body = t[2] ? await (await t[2]())[tab]({ ...ctx, app: a, appId: id, sub }) : settings(a, ctx);
      clear(holder).append(body);
      document.title = a.name + ' · Keyward';
    } catch (x) {
      clear(holder).append(errorNotice(x, load));
    }
  }
  await load();
  return root;
}

function settings(a, ctx) {
  const base = `/api/apps/${a.id}`;
  const stats = h('div.cards');
  get(base + '/stats').then((s) => stats.append(
    stat('Users', s.users.total, `${fmtNum(s.users.active)} active · ${fmtNum(s.users.banned)} banned`),
    stat('Licenses', s.licenses.total, `${fmtNum(s.licenses.used)} used · ${fmtNum(s.licenses.unused)} unused`),
    stat('Sessions', s.sessions.active, 'active now'),
    stat('Logins', s.logins.today, `today · ${fmtNum(s.logins.thisWeek)} this week`))).catch((x) => stats.append(h('p.error', { text: x.message })));
  const fields = [
    { name: 'name', label: 'Name', value: a.name, required: true, maxlength: 64 },
    { name: 'version', label: 'Version', value: a.version, maxlength: 32, help: 'Clients whose init sends another version are refused.' },
    { name: 'description', label: 'Description', type: 'textarea', value: a.description, maxlength: 500, omitEmpty: false, rows: 2 },
    { name: 'enabled', label: 'Enabled', type: 'checkbox', value: a.enabled },
    { name: 'paused', label: 'Paused (new logins refused)', type: 'checkbox', value: a.paused },
    { name: 'antiDebug', label: 'Anti-debug', type: 'checkbox', value: a.antiDebug },
    { name: 'antiVM', label: 'Anti-VM', type: 'checkbox', value: a.antiVM },
    { name: 'lockHwid', label: 'Lock to hardware id', type: 'checkbox', value: a.lockHwid },
    { name: 'lockIp', label: 'Lock to IP address', type: 'checkbox', value: a.lockIp },
    { name: 'lockPcName', label: 'Lock to computer name', type: 'checkbox', value: a.lockPcName },
    { name: 'fileEncryption', label: 'Encrypt client file downloads', type: 'checkbox', value: a.fileEncryption },
    { name: 'sessionTimeout', label: 'Session idle timeout (seconds, 0 = server default)', type: 'number', value: a.sessionTimeout ?? 0, min: 0, max: 2592000 },
    { name: 'graceSeconds', label: 'Grace period after expiry (seconds, 0 = none)', type: 'number', value: a.graceSeconds ?? 0, min: 0,
      help: 'Users whose time ran out less than this long ago may still sign in (they are told they are in grace).' },
    { name: 'licenseFileDays', label: 'Offline license files last (days)', type: 'number', value: a.licenseFileDays ?? 0, min: 0 },
  ];
  const secret = h('div#new-secret');
  const currentSecret = h('code#current-secret', { text: a.secret });
  return h('div', stats,
    section('Settings', form({ fields, submit: 'Save settings', onSubmit: async (v) => { await patch(base, v); toast('Saved'); } })),
    section('Secret', h('p', 'Current secret: ', currentSecret), secret,
      h('button', { type: 'button', text: 'Regenerate secret', on: { click: async () => {
        if (!await modal('Regenerate the secret?', h('p', { text: 'The old secret stops working at once: programs need the new one for init.' }), { ok: 'Regenerate', danger: true })) return;
        try { const d = await post(base + '/secret/regenerate'); currentSecret.textContent = '***' + d.secret.slice(-6); clear(secret).append(h('p.warn', { text: 'Copy it now: it is shown only this once.' }), secretBox(d.secret)); } catch (x) { toast(x.message, 'error'); }
      } } })),
    signing(a, base),
    portal(a, base),
    section('Delete', h('p', { text: 'Deleting removes the application and every user, license, file, variable and log under it.' }),
      h('button.danger#delete-app', { type: 'button', text: 'Delete application…', on: { click: async () => {
        const f = field({ name: 'confirmName', label: `Type the name “${a.name}” to confirm` });
        const done = await modal('Delete ' + a.name + '?', f, { ok: 'Delete for ever', danger: true, onOk: async () => {
          if (f.querySelector('input').value !== a.name) throw new Error('The name does not match.');
          await del(base, { confirm: true });
          return true;
        } });
        if (done) { toast('Application deleted'); ctx.go('apps'); }
      } } })));
}

// signing: signed responses on or off, the public key (base64 and PEM, downloadable), and
// a rotation whose confirmation says what breaks.
function signing(a, base) {
  const keyBox = h('div#public-key');
  const showKey = (pk) => {
    clear(keyBox);
    if (!pk) { keyBox.append(h('p.muted', { text: 'No signing key.' })); return; }
    keyBox.append(h('h3', { text: 'Public key (base64)' }), secretBox(pk.base64, 'public key base64'),
      h('h3', { text: 'Public key (PEM)' }), h('textarea.mono', { readonly: true, rows: 4, 'aria-label': 'public key PEM', value: pk.pem }),
      h('div.actions', h('button#download-pem', { type: 'button', text: 'Download .pem', on: { click: () => saveFile(`${a.name}-public.pem`, pk.pem, 'application/x-pem-file') } })));
  };
  showKey(a.publicKey);
  const toggle = h('input#sign-responses', { type: 'checkbox', checked: !!a.signResponses, on: { change: async (e) => {
    try { await patch(base, { signResponses: e.target.checked }); toast(e.target.checked ? 'Responses are signed' : 'Responses are no longer signed'); } catch (x) { e.target.checked = !e.target.checked; toast(x.message, 'error'); }
  } } });
  return section('Signing', h('p.muted', { text: 'With signed responses on, every Client API answer carries an Ed25519 signature your program checks with this public key; offline license files are signed with the same key.' }),
    h('div.field.check', toggle, h('label', { for: 'sign-responses', text: 'Sign Client API responses' })),
    keyBox,
    h('button.danger#rotate-key', { type: 'button', text: 'Rotate the signing key…', on: { click: async () => {
      const ok = await modal('Rotate the signing key?', h('div',
        h('p', { text: 'A new key pair replaces the current one at once. What breaks:' }),
        h('ul', h('li', { text: 'programs that check signatures with the old public key refuse every answer until they ship the new key;' }),
          h('li', { text: 'offline license files already issued no longer verify: issue them again.' }))), { ok: 'Rotate the key', danger: true });
      if (!ok) return;
      try { const d = await post(base + '/signing-key/regenerate'); showKey(d.publicKey); toast('New signing key in use'); } catch (x) { toast(x.message, 'error'); }
    } } }));
}

// The buyer portal's actions the owner turns on or off (docs/API.md, "Buyer portal").
const portalActions = [['hwidReset', 'Buyers may reset the HWID (within the user\'s limits)'], ['seatRelease', 'Buyers may release seats'],
  ['downloads', 'Buyers may download the app\'s files'], ['resend', 'Buyers may have the key mailed again']];

// portal: the app's buyer portal on or off, its address, and each buyer action's switch.
function portal(a, base) {
  const p = a.portal || {};
  const address = h('p#portal-address', 'Buyers sign in at ', h('code', { text: location.origin + (p.path || '/portal/' + a.id) }));
  const f = form({
    cls: 'portal-settings',
    fields: [{ name: 'enabled', label: 'Serve the buyer portal', type: 'checkbox', value: !!p.enabled },
      ...portalActions.map(([name, label]) => ({ name, label, type: 'checkbox', value: !!p[name] }))],
    submit: 'Save portal',
    onSubmit: async (v) => { a.portal = await patch(base + '/portal', v); toast(a.portal.enabled ? 'Buyer portal saved' : 'Buyer portal off'); },
  });
  return section('Buyer portal', h('p.muted', { text: 'Buyers sign in with their license key and a code mailed to them, see the license, and do what you allow here.' }),
    address, f);
}

export function stat(label, n, sub) {
  return h('div.stat', h('span.label', { text: label }), h('strong', { text: fmtNum(n) }), h('small', { text: sub || '' }));
}

export { values };
