// The dashboard's entry: a hash router over the pages, and the frame around them.

import { h, clear, toast, errorNotice } from './dom.js';
import { api, session, setUnauthorizedHandler, setReauthHandler, restore, afterSignIn } from './api.js';
import * as auth from './pages/auth.js';
import * as account from './pages/account.js';
import * as apps from './pages/apps.js';
import * as admin from './pages/admin.js';

const app = document.getElementById('app');
const state = { me: null };

// Routes: [pattern, page, needs sign-in]. Patterns match the hash after '#/'.
const routes = [
  [/^login$/, auth.login, false],
  [/^register$/, auth.register, false],
  [/^forgot$/, auth.forgot, false],
  [/^reset-2fa$/, auth.reset2FA, false],
  [/^account$/, account.page, true],
  [/^admin$/, admin.page, true],
  [/^audit$/, (ctx) => import('./pages/audit.js').then((m) => m.page(ctx)), true],
  [/^api-keys$/, (ctx) => import('./pages/apikeys.js').then((m) => m.page(ctx)), true],
  [/^apps$/, apps.list, true],
  [/^apps\/([\w-]+)(?:\/([\w-]+))?(?:\/([\w-]+))?$/, apps.detail, true],
];

export function go(hash) {
  if (location.hash === '#/' + hash) render(); else location.hash = '#/' + hash;
}

export async function me(refresh) {
  if (!state.me || refresh) state.me = await api('GET', '/api/auth/me');
  return state.me;
}

export function signedIn(token, account) {
  session.set(token);
  state.me = null;
  if (account) toast('Signed in as ' + account.username);
  // Back to the page open when the session ended, with the form it was sending sent again.
  afterSignIn().then(({ back, resent }) => {
    if (resent) toast('Your last change was sent again.');
    go(back || 'apps');
  });
}

async function logout() {
  try { await api('POST', '/api/auth/logout', {}, { keepSession: true }); } catch { /* the token may be gone already */ }
  session.clear();
  state.me = null;
  go('login');
}

setReauthHandler(account.reauthDialog);
setUnauthorizedHandler(() => {
  state.me = null;
  toast('Your session ended; sign in again.', 'warn');
  go('login');
});

function frame(content, signed) {
  const adminLink = h('a', { href: '#/admin', text: 'Admin', hidden: true });
  if (signed) me().then((m) => { adminLink.hidden = m.role !== 'admin'; }).catch(() => {});
  const nav = signed
    ? h('nav.top', { 'aria-label': 'main' },
      h('a.brand', { href: '#/apps' }, h('img', { src: document.querySelector('link[rel=icon]').href, alt: '', width: 22, height: 22 }), 'Keyward'),
      h('a', { href: '#/apps', text: 'Applications' }),
      h('a', { href: '#/account', text: 'Account' }), h('a', { href: '#/api-keys', text: 'API keys' }),
      h('a', { href: '#/audit', text: 'Audit log' }), h('a', { href: '/api/docs', text: 'API docs' }), adminLink,
      h('button.link#logout', { type: 'button', text: 'Sign out', on: { click: logout } }))
    : h('nav.top', h('a.brand', { href: '#/login' }, 'Keyward'));
  return [nav, h('main', content)];
}

let renderSeq = 0;
let cleanup = null;

async function render() {
  const seq = ++renderSeq;
  if (cleanup) { try { cleanup(); } catch { /* a page's cleanup must not stop navigation */ } cleanup = null; }
  // Links mailed by the server land on these paths; their token is read, then taken out of
  // the address bar (and the no-referrer policy keeps it from leaving the page).
  const mailed = { '/verify-email': auth.verify, '/reset-password': auth.resetPassword,
    '/confirm-email': auth.confirmEmail, '/cancel-email-change': auth.cancelEmailChange };
  if (mailed[location.pathname]) {
    const token = new URLSearchParams(location.search).get('token') || '';
    const page = mailed[location.pathname];
    history.replaceState(null, '', '/'); // no hash: the page's links then change it and route
    clear(app).append(...frame(page(token), false));
    return;
  }
  const path = location.hash.replace(/^#\/?/, '') || (session.token ? 'apps' : 'login');
  for (const [re, page, needsAuth] of routes) {
    const m = re.exec(path);
    if (!m) continue;
    if (needsAuth && !session.token) return go('login');
    if (!needsAuth && session.token && path === 'login') return go('apps');
    const ctx = { params: m.slice(1), me, go, setCleanup: (fn) => { cleanup = fn; } };
    const holder = h('div.page');
    clear(app).append(...frame(holder, needsAuth));
    try {
      const content = await page(ctx);
      if (seq !== renderSeq) return;
      holder.append(content);
    } catch (x) {
      if (seq !== renderSeq) return;
      holder.append(errorNotice(x, () => render()));
    }
    document.title = (holder.querySelector('h1')?.textContent || 'Dashboard') + ' · Keyward';
    if (!performance.getEntriesByName('keyward-ready').length) performance.mark('keyward-ready'); // first page usable
    return;
  }
  clear(app).append(...frame(h('p', { text: 'No such page. ' }, h('a', { href: '#/apps', text: 'Go to your applications' })), !!session.token));
}

window.addEventListener('hashchange', render);
// A new tab (or a reload) takes the browser's sign-in from the session's refresh cookie.
restore().finally(render);
