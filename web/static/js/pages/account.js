// The account page: plan and usage, API key, password, two-factor authentication, the
// signed-in sessions; and the dialog that confirms who the owner is before a sensitive action.

import { h, clear, fmtDate, fmtNum, secretBox, toast, modal, badge } from '../dom.js';
import { get, post, del, session } from '../api.js';
import { form, section } from '../forms.js';
import * as passkeys from '../passkeys.js';

export async function page(ctx) {
  const me = await ctx.me(true);
  const [plans, mail] = await Promise.all([get('/api/plans'), get('/api/auth/mail-outbox')]);
  return h('div', h('h1', { text: 'Account' }),
    h('div.grid', planCard(me, plans), keyCard(me)),
    twoFactorCard(me, ctx), passkeysCard(), passwordCard(), emailCard(me), sessionsCard(), outboxCard(mail.outbox));
}

// browserName shortens a User-Agent to what a person recognises.
function browserName(ua) {
  if (!ua) return 'Unknown browser';
  const m = /(Edg|OPR|Firefox|Chrome|Safari)\/[\d.]+/.exec(ua);
  const os = /Windows|Mac OS X|Android|iPhone|iPad|Linux/.exec(ua);
  const name = m ? { Edg: 'Edge', OPR: 'Opera' }[m[1]] || m[1] : ua.slice(0, 40);
  return os ? `${name} on ${os[0].replace('Mac OS X', 'macOS')}` : name;
}

// sessionsCard lists where the account is signed in and signs sessions out, one or all others.
function sessionsCard() {
  const body = h('tbody');
  const table = h('table#sessions', h('caption', { text: 'Signed-in sessions' }),
    h('thead', h('tr', ['Browser', 'Address', 'Signed in', 'Last used', ''].map((t) => h('th', { scope: 'col', text: t })))), body);
  async function load() {
    let list;
    try { list = await get('/api/auth/sessions'); } catch (x) { clear(body).append(h('tr', h('td', { colspan: 5, text: x.message }))); return; }
    clear(body).append(...list.map((s) => h('tr', { 'data-session': s.id },
      h('td', { title: s.userAgent }, browserName(s.userAgent), s.current ? [' ', badge('this browser', 'ok')] : null),
      h('td', { text: s.ip || '—' }), h('td', { text: fmtDate(s.createdAt) }), h('td', { text: fmtDate(s.lastUsedAt) }),
      h('td', s.current ? null : h('button', { type: 'button', text: 'Sign out', 'aria-label': `Sign out ${browserName(s.userAgent)} at ${s.ip}`,
        on: { click: async () => {
          try { await del('/api/auth/sessions/' + encodeURIComponent(s.id)); toast('Session signed out'); load(); } catch (x) { toast(x.message, 'error'); }
        } } })))));
  }
  load();
  const others = h('button#sign-out-others', { type: 'button', text: 'Sign out all other sessions', on: { click: async () => {
    const ok = await modal('Sign out every other session?', h('p', { text: 'Every other browser and device signed in to this account is signed out at once.' }),
      { ok: 'Sign out others', danger: true });
    if (!ok) return;
    try { const d = await post('/api/auth/sessions/revoke-others'); toast(`${d.count} other session${d.count === 1 ? '' : 's'} signed out`); load(); } catch (x) { toast(x.message, 'error'); }
  } } });
  return section('Sessions', h('p', { text: 'Where this account is signed in. A password change signs out everywhere; a 2FA change signs out the other sessions.' }),
    h('div.table-wrap', table), others);
}

// emailCard asks to change the email: the new address confirms, the current one may cancel.
function emailCard(me) {
  const f = form({
    fields: [{ name: 'email', label: 'New email address', type: 'email', required: true, autocomplete: 'email' }],
    submit: 'Change email', cls: 'inline',
    onSubmit: async (v) => {
      const d = await post('/api/auth/change-email', v);
      toast(d.message);
      f.reset();
    },
  });
  return section('Email', h('p', 'The account\'s email is ', h('strong#account-email', { text: me.email }),
    '. A new address takes effect when it confirms the link mailed to it; the current address is told and can cancel.'), f);
}

// passkeysCard lists the account's passkeys, adds one under a name, renames and removes.
function passkeysCard() {
  const body = h('tbody');
  const shown = h('div');
  const table = h('table#passkeys', h('caption', { text: 'Passkeys' }),
    h('thead', h('tr', ['Name', 'Added', 'Last used', ''].map((t) => h('th', { scope: 'col', text: t })))), body);
  async function load() {
    let list;
    try { list = await get('/api/auth/passkeys'); } catch (x) { clear(body).append(h('tr', h('td', { colspan: 4, text: x.message }))); return; }
    if (!list.length) { clear(body).append(h('tr', h('td', { colspan: 4, text: 'No passkey yet.' }))); return; }
    clear(body).append(...list.map((p) => h('tr', { 'data-passkey': p.id },
      h('td', p.name, p.backedUp ? [' ', badge('synced')] : null), h('td', { text: fmtDate(p.createdAt) }),
      h('td', { text: p.lastUsedAt ? fmtDate(p.lastUsedAt) : 'never' }),
      h('td', h('button', { type: 'button', text: 'Remove', 'aria-label': `Remove passkey ${p.name}`, on: { click: async () => {
        const ok = await modal(`Remove the passkey "${p.name}"?`, h('p', { text: 'It no longer signs in to this account.' }), { ok: 'Remove', danger: true });
        if (!ok) return;
        try { await del('/api/auth/passkeys/' + encodeURIComponent(p.id)); toast('Passkey removed'); load(); } catch (x) { toast(x.message, 'error'); }
      } } })))));
  }
  load();
  if (!passkeys.supported()) {
    return section('Passkeys', h('p', { text: 'This browser cannot use passkeys.' }), h('div.table-wrap', table));
  }
  const add = form({
    fields: [{ name: 'name', label: 'Passkey name', placeholder: 'e.g. work laptop', maxlength: 64, autocomplete: 'off' }],
    submit: 'Add a passkey', cls: 'inline',
    onSubmit: async (v) => {
      const p = await passkeys.register(v.name || '');
      toast(`Passkey "${p.name}" added`);
      if (p.recoveryCodes) clear(shown).append(codesShown(p.recoveryCodes));
      load();
    },
  });
  return section('Passkeys', h('p', { text: 'Sign in without a password, or in place of a 2FA code, with this device or a password manager.' }),
    h('div.table-wrap', table), add, shown);
}

// reauthDialog asks the owner to confirm who they are (password or a 2FA code) before a
// sensitive action; resolves true once the server accepted it.
export async function reauthDialog() {
  const password = h('input#reauth-password', { type: 'password', name: 'password', autocomplete: 'current-password' });
  const code = h('input#reauth-code', { name: 'twoFactorCode', inputmode: 'numeric', maxlength: 6, autocomplete: 'one-time-code' });
  const pkError = h('p.error', { role: 'alert' });
  const usePasskey = passkeys.supported() ? h('div.field', h('button#reauth-passkey', { type: 'button', text: 'Use a passkey', on: { click: async (e) => {
    pkError.textContent = '';
    try {
      await passkeys.reauth();
      confirmed = true;
      e.target.closest('form').requestSubmit(); // the dialog closes as confirmed
    } catch (x) { pkError.textContent = x.name === 'NotAllowedError' ? 'No passkey was chosen.' : x.message; }
  } } }), pkError) : null;
  let confirmed = false;
  const body = h('div', h('p', { text: 'This action needs a recent sign-in. Enter your password, or a code from your authenticator app, or use a passkey.' }),
    h('div.field', h('label', { for: 'reauth-password', text: 'Password' }), password),
    h('div.field', h('label', { for: 'reauth-code', text: 'or 2FA code' }), code), usePasskey);
  const ok = await modal('Confirm it is you', body, { ok: 'Confirm', onOk: async () => {
    if (confirmed) return true;
    const v = password.value ? { password: password.value } : { twoFactorCode: code.value.trim() };
    await post('/api/auth/reauth', v);
    return true;
  } });
  return !!ok;
}

// outboxCard names the folder this server writes its mails to when no SMTP server is set;
// only signed-in owners are told it.
function outboxCard(outbox) {
  if (!outbox) return null;
  return section('Mail', h('p', 'This server writes its mails to files (no SMTP server is set): the newest .eml files in ',
    h('code#mail-outbox', { text: outbox }), ' hold the links it mails.'));
}

export function usageBar(used, max) {
  const pct = max > 0 ? Math.min(100, (used / max) * 100) : 0;
  const bar = h('progress#usage', { max: 100, value: pct.toFixed(1), 'aria-label': 'API calls used this month' });
  return h('div.usage', bar, h('span', { text: `${fmtNum(used)} of ${fmtNum(max)} client API calls this month` }));
}

function planCard(me, plans) {
  const p = me.plan || {};
  const limits = p.limits || {};
  const choose = h('div.plans', plans.map((pl) => h('div.plan' + (pl.name === p.name ? '.current' : ''),
    h('strong', { text: pl.displayName || pl.name }), h('span', { text: ` $${pl.priceMonth}/month` }),
    h('ul', h('li', { text: `${fmtNum(pl.limits.maxApps)} apps` }), h('li', { text: `${fmtNum(pl.limits.maxUsersPerApp)} users per app` }),
      h('li', { text: `${fmtNum(pl.limits.maxApiCallsMonth)} API calls a month` }), h('li', { text: pl.limits.webSocketAccess ? 'Live (WebSocket)' : 'No live pages' })),
    pl.name === p.name ? badge('your plan', 'ok') : pl.name === 'free'
      ? h('button', { type: 'button', text: 'Move to free', on: { click: async () => {
        const ok = await modal('Move to the free plan?', h('p', { text: 'The free limits apply at once; only an administrator can move you back.' }),
          { ok: 'Move to free', danger: true, onOk: () => post('/api/auth/plan', { plan: 'free' }).then(() => true) });
        if (ok) location.reload();
      } } })
      : h('small.muted', { text: 'Assigned by an administrator' }))));
  return section('Plan', h('p#plan-name', h('strong', { text: p.displayName || p.name || '—' }), ` · resets ${fmtDate(me.apiCallsResetAt)}`),
    usageBar(me.apiCallsUsed || 0, limits.maxApiCallsMonth || 0),
    h('p.muted', { text: `${fmtNum(me.applicationCount)} of ${fmtNum(limits.maxApps)} applications` }), h('div#plans', choose),
    h('dl', h('dt', { text: 'Username' }), h('dd', { text: me.username }), h('dt', { text: 'Email' }), h('dd', { text: me.email }),
      h('dt', { text: 'Role' }), h('dd', { text: me.role }), h('dt', { text: 'Last sign-in' }), h('dd', { text: fmtDate(me.lastLoginAt) })));
}

function keyCard(me) {
  const shown = h('div');
  return section('API key', h('p', { text: 'For server-to-server calls: send it as the X-API-Key header. It cannot change the password, 2FA or the key itself.' }),
    h('p', h('code#api-key', { text: me.apiKey || '—' })), shown,
    h('button', { type: 'button', text: 'Regenerate', on: { click: async () => {
      const ok = await modal('Regenerate the API key?', h('p', { text: 'The current key stops working at once.' }), { ok: 'Regenerate', danger: true });
      if (!ok) return;
      try {
        const d = await post('/api/auth/api-key/regenerate');
        clear(shown).append(h('p.warn', { text: 'Copy it now: it is shown only this once.' }), secretBox(d.apiKey, 'new API key'));
      } catch (x) { toast(x.message, 'error'); }
    } } }));
}

function twoFactorCard(me, ctx) {
  const box = h('div');
  const render = (enabled) => {
    clear(box);
    if (enabled) {
      box.append(h('p', badge('enabled', 'ok'), ' Sign-in asks for a code from your authenticator app.'), form({
        fields: [{ name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' },
          { name: 'code', label: 'Code', required: true, inputmode: 'numeric', maxlength: 6, autocomplete: 'one-time-code' }],
        submit: 'Disable 2FA',
        onSubmit: async (v) => { await post('/api/auth/2fa/disable', v); toast('Two-factor authentication is off'); render(false); },
      }), recoveryBox());
      return;
    }
    box.append(h('p', badge('off'), ' Protect the account with a time-based code.'),
      h('button#setup-2fa', { type: 'button', text: 'Set up 2FA', on: { click: setup } }));
  };
  async function setup() {
    let d;
    try { d = await post('/api/auth/2fa/setup'); } catch (x) { toast(x.message, 'error'); return; }
    const canvas = h('canvas.qr', { width: 232, height: 232, role: 'img', 'aria-label': 'QR code for your authenticator app' });
    clear(box).append(h('p', { text: 'Scan this code with your authenticator app, or type the secret, then enter the code it shows.' }),
      canvas, h('p', 'Secret: ', h('code#totp-secret', { text: d.secret })),
      form({
        fields: [{ name: 'code', label: 'Code', required: true, inputmode: 'numeric', maxlength: 6, autocomplete: 'one-time-code' }],
        submit: 'Enable 2FA',
        onSubmit: async (v) => {
          const d = await post('/api/auth/2fa/enable', v);
          toast('Two-factor authentication is on');
          render(true);
          if (d.recoveryCodes) box.prepend(codesShown(d.recoveryCodes));
        },
      }));
    drawQR(canvas, d.otpauth);
  }
  render(me.twoFactorEnabled);
  return section('Two-factor authentication', box);
}

// codesShown shows recovery codes the one time the server answers them.
function codesShown(codes) {
  return h('div#recovery-codes-shown', h('p.warn', { text: 'Save these recovery codes now: they are shown only this once. Each one signs you in once in place of a code.' }),
    secretBox(codes.join('\n'), 'recovery codes'));
}

// recoveryBox says how many recovery codes are left and makes new ones.
function recoveryBox() {
  const left = h('span#recovery-left', { text: '…' });
  const shown = h('div');
  get('/api/auth/recovery-codes').then((d) => { left.textContent = String(d.remaining); }).catch(() => { left.textContent = '?'; });
  return h('div.recovery', h('h3', { text: 'Recovery codes' }), h('p', left, ' unused recovery codes.'), shown,
    h('button#regenerate-codes', { type: 'button', text: 'Make new recovery codes', on: { click: async () => {
      const ok = await modal('Make new recovery codes?', h('p', { text: 'The current codes stop working at once.' }), { ok: 'Make new codes', danger: true });
      if (!ok) return;
      try {
        const d = await post('/api/auth/recovery-codes/regenerate');
        clear(shown).append(codesShown(d.recoveryCodes));
        left.textContent = String(d.recoveryCodes.length);
      } catch (x) { toast(x.message, 'error'); }
    } } }));
}

// Draws a QR code of text on a canvas: the library encodes, the canvas only paints modules.
export async function drawQR(canvas, text) {
  const { default: qrcode } = await import('../../vendor/qrcode-generator/qrcode.mjs');
  const qr = qrcode(0, 'M');
  qr.addData(text);
  qr.make();
  const n = qr.getModuleCount();
  const quiet = 4;
  const cell = Math.floor(canvas.width / (n + 2 * quiet));
  const off = Math.floor((canvas.width - cell * n) / 2);
  const g = canvas.getContext('2d');
  g.fillStyle = '#fff';
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.fillStyle = '#000';
  for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) if (qr.isDark(r, c)) g.fillRect(off + c * cell, off + r * cell, cell, cell);
  canvas.dataset.modules = String(n);
}

function passwordCard() {
  return section('Change password', form({
    fields: [{ name: 'currentPassword', label: 'Current password (or a 2FA code below)', type: 'password', autocomplete: 'current-password' },
      { name: 'twoFactorCode', label: '2FA code', inputmode: 'numeric', maxlength: 6 },
      { name: 'newPassword', label: 'New password', type: 'password', required: true, autocomplete: 'new-password' }],
    submit: 'Change password',
    onSubmit: async (v, el) => { const d = await post('/api/auth/change-password', v); session.set(d.token); el.reset(); toast(d.message || 'Password changed'); },
  }));
}
