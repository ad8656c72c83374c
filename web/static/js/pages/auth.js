// Signed-out pages: sign in (with the 2FA step), register, email verification, password resets.

import { h, clear } from '../dom.js';
import { api, post } from '../api.js';
import { form, showError } from '../forms.js';
import { signedIn } from '../main.js';
import * as passkeys from '../passkeys.js';

// Whether mails go to files; the folder's path is told to signed-in owners only.
const mailToFiles = document.querySelector('meta[name=keyward-mail]')?.content === 'outbox';

function card(title, ...body) {
  return h('div.auth', h('h1', { text: title }), ...body);
}

function outboxNote() {
  if (!mailToFiles) return null;
  return h('p.note', 'This server writes its mails to files (no SMTP server is set): open the newest .eml file in its mail outbox folder (',
    h('code', { text: 'KEYWARD_MAIL_OUTBOX' }), ', by default ', h('code', { text: 'outbox' }),
    ' in its data directory) and follow the link in it.');
}

const passwordHelp = 'At least 8 characters, with an upper-case letter, a lower-case letter and a digit.';

export function login() {
  const fields = [
    { name: 'username', label: 'Username or email', required: true, autocomplete: 'username' },
    { name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'current-password' },
  ];
  const box = h('div');
  const resend = h('div');
  const f = form({
    fields, submit: 'Sign in',
    onSubmit: async (v) => {
      clear(resend);
      const out = await api('POST', '/api/auth/login', v, { raw: true });
      if (out.requires2FA) { clear(box).append(twoFactorStep(v)); return; }
      if (out.requireVerify) {
        resend.append(h('p.warn', { text: out.message || 'Verify your email address first.' }), outboxNote(), resendForm());
        return;
      }
      signedIn(out.token, out.account);
    },
  });
  box.append(f);
  const pkError = h('p.error', { role: 'alert' });
  const withPasskey = passkeys.supported() ? h('div.passkey-sign-in',
    h('button#passkey-sign-in', { type: 'button', text: 'Sign in with a passkey', on: { click: async () => {
      pkError.textContent = '';
      try {
        const out = await passkeys.signIn(f.querySelector('[name=username]')?.value.trim() || '');
        signedIn(out.token, out.account);
      } catch (x) { pkError.textContent = x.name === 'NotAllowedError' ? 'No passkey was chosen.' : x.message; }
    } } }), pkError) : null;
  return card('Sign in', box, withPasskey, resend,
    h('p.links', h('a', { href: '#/register', text: 'Create an account' }), ' · ',
      h('a', { href: '#/forgot', text: 'Forgot password' }), ' · ', h('a', { href: '#/reset-2fa', text: 'Reset with 2FA' })));
}

function twoFactorStep(creds) {
  const recovery = form({
    fields: [{ name: 'recoveryCode', label: 'Recovery code', required: true, autocomplete: 'off', maxlength: 16 }],
    submit: 'Use recovery code',
    onSubmit: async (v) => {
      const out = await api('POST', '/api/auth/login', { ...creds, ...v }, { raw: true });
      signedIn(out.token, out.account);
    },
  });
  const other = h('details.recovery', h('summary', { text: 'Lost your authenticator? Use a recovery code' }), recovery);
  const intro = h('p', { text: 'Enter the 6-digit code from your authenticator app.' });
  const withPasskey = h('div.passkey-second');
  offerPasskey(creds, intro, withPasskey);
  return h('div', intro, withPasskey, form({
    fields: [{ name: 'twoFactorCode', label: 'Authentication code', required: true, autocomplete: 'one-time-code', inputmode: 'numeric', maxlength: 6 }],
    submit: 'Verify',
    onSubmit: async (v) => {
      const out = await api('POST', '/api/auth/login', { ...creds, ...v }, { raw: true });
      if (out.requires2FA) throw Object.assign(new Error(out.message || 'A code is needed.'), { field: 'twoFactorCode' });
      signedIn(out.token, out.account);
    },
  }), other);
}

// offerPasskey adds "Use a passkey" to the second-factor step when the browser can use one
// and the account has one: a sign-in ceremony begun with the username lists the account's
// passkeys (allowCredentials), and its answer goes with the password to /api/auth/login in
// place of the code. A server without passkeys (no public URL, or one whose host is an IP
// address) answers 409 and the step stays as it was. The probe's challenge is used by the
// first try; a later try begins another.
async function offerPasskey(creds, intro, slot) {
  if (!passkeys.supported()) return;
  let begun;
  try { begun = await post('/api/auth/passkeys/login/begin', { username: creds.username }); } catch { return; }
  if (!begun.options?.publicKey?.allowCredentials?.length) return;
  const pkError = h('p.error#passkey-second-error', { role: 'alert' });
  const button = h('button#passkey-second', { type: 'button', text: 'Use a passkey', 'aria-describedby': 'passkey-second-error', on: { click: async () => {
    pkError.textContent = '';
    button.disabled = true;
    try {
      const b = begun || await post('/api/auth/passkeys/login/begin', { username: creds.username });
      begun = null;
      const out = await api('POST', '/api/auth/login', { ...creds, passkey: await passkeys.get(b) }, { raw: true });
      if (out.requires2FA) throw new Error(out.message || 'The passkey was not accepted.');
      signedIn(out.token, out.account);
    } catch (x) {
      pkError.textContent = x.name === 'NotAllowedError' ? 'No passkey was chosen.' : x.message;
      button.focus();
    } finally { button.disabled = false; }
  } } });
  intro.textContent = 'Enter the 6-digit code from your authenticator app, or use a passkey.';
  slot.append(button, pkError);
}

function resendForm() {
  return form({
    fields: [{ name: 'email', label: 'Email', type: 'email', required: true }], submit: 'Send the link again',
    onSubmit: async (v, el) => { const d = await post('/api/auth/resend-verification', v); el.replaceWith(h('p.ok', { text: d.message })); },
  });
}

export function register() {
  const box = h('div');
  box.append(form({
    fields: [
      { name: 'email', label: 'Email', type: 'email', required: true, autocomplete: 'email' },
      { name: 'username', label: 'Username', required: true, autocomplete: 'username', help: '3–32 letters, digits, _ . or -' },
      { name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'new-password', help: passwordHelp },
    ],
    submit: 'Create account',
    onSubmit: async (v) => {
      const d = await post('/api/auth/register', v);
      clear(box).append(h('p.ok#registered', { text: d.message || 'Check your mail for the verification link.' }), outboxNote(),
        h('p', h('a', { href: '#/login', text: 'Back to sign in' })));
    },
  }));
  return card('Create your account', box, h('p.links', h('a', { href: '#/login', text: 'I have an account' })));
}

// emailChange answers a link of an email change: the new address's confirmation or the
// old address's cancel (both authenticate by their token alone).
function emailChange(title, path, busy) {
  return (token) => {
    const status = h('p', { text: busy });
    post(path, { token })
      .then((d) => { status.className = 'ok'; status.textContent = d.message; })
      .catch((x) => { status.className = 'error'; status.textContent = x.message; });
    return card(title, status, h('p.links', h('a', { href: '#/login', text: 'Sign in' })));
  };
}

export const confirmEmail = emailChange('New email address', '/api/auth/change-email/confirm', 'Confirming your new address…');
export const cancelEmailChange = emailChange('Email change', '/api/auth/change-email/cancel', 'Cancelling the change…');

export function verify(token) {
  const status = h('p', { text: 'Verifying your address…' });
  post('/api/auth/verify-email', { token })
    .then((d) => signedIn(d.token, d.account))
    .catch((x) => { status.className = 'error'; status.textContent = x.message; });
  return card('Email verification', status, h('p.links', h('a', { href: '#/login', text: 'Sign in' })));
}

export function forgot() {
  const box = h('div');
  box.append(form({
    fields: [{ name: 'email', label: 'Email', type: 'email', required: true }], submit: 'Mail me a reset link',
    onSubmit: async (v) => { const d = await post('/api/auth/forgot-password', v); clear(box).append(h('p.ok', { text: d.message }), outboxNote()); },
  }));
  return card('Forgot password', box, h('p.links', h('a', { href: '#/login', text: 'Back to sign in' })));
}

export function resetPassword(token) {
  const box = h('div');
  box.append(form({
    fields: [{ name: 'newPassword', label: 'New password', type: 'password', required: true, autocomplete: 'new-password', help: passwordHelp }],
    submit: 'Set password',
    onSubmit: async (v) => { const d = await post('/api/auth/reset-password', { token, ...v }); clear(box).append(h('p.ok', { text: d.message })); },
  }));
  return card('Choose a new password', box, h('p.links', h('a', { href: '#/login', text: 'Sign in' })));
}

export function reset2FA() {
  const box = h('div');
  box.append(form({
    fields: [
      { name: 'username', label: 'Username or email', required: true },
      { name: 'twoFactorCode', label: 'Authentication code', required: true, inputmode: 'numeric', maxlength: 6 },
      { name: 'newPassword', label: 'New password', type: 'password', required: true, help: passwordHelp },
    ],
    submit: 'Reset password',
    onSubmit: async (v) => { const d = await post('/api/auth/reset-password-2fa', v); clear(box).append(h('p.ok', { text: d.message })); },
  }));
  return card('Reset with your authenticator', box, h('p.links', h('a', { href: '#/login', text: 'Back to sign in' })));
}

export { showError };
