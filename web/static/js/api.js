// The Dashboard REST API client. The JWT is kept in sessionStorage: only this origin's
// scripts can read it, and the page's Content-Security-Policy admits no script but this
// origin's own files; it is dropped on logout, on a 401 and when the tab closes.
//
// A sign-in holds across tabs and past the JWT's expiry through the session's refresh
// secret, an HttpOnly, SameSite=Strict cookie sent only to POST /api/auth/refresh (with the
// X-Keyward-Refresh header, which no other site's request can carry): a new tab, or a tab
// whose token is close to expiry while the owner is active, renews from it. When the
// session has ended, the page and a form being sent are kept for after the next sign-in.

const TOKEN = 'keyward.token';
const RETURN_TO = 'keyward.returnTo';
const PENDING = 'keyward.pending';
// Renew when the token has less than this left, if the owner did something lately.
const RENEW_BEFORE_MS = 10 * 60 * 1000;
const ACTIVE_WITHIN_MS = 15 * 60 * 1000;

export const session = {
  get token() { return sessionStorage.getItem(TOKEN); },
  set(token) { sessionStorage.setItem(TOKEN, token); },
  clear() { sessionStorage.removeItem(TOKEN); },
};

// expiresAt reads the token's own expiry (ms), 0 when it cannot.
function expiresAt(token) {
  try {
    const claims = JSON.parse(atob(token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/')));
    return (claims.exp || 0) * 1000;
  } catch { return 0; }
}

let lastActivity = Date.now();
for (const ev of ['pointerdown', 'keydown']) addEventListener(ev, () => { lastActivity = Date.now(); }, { capture: true, passive: true });

let refreshing = null;
// refresh renews the session from its cookie; resolves true with a new token, false when
// there is no live session to renew. Concurrent callers share one request.
export function refresh() {
  if (!refreshing) {
    refreshing = fetch('/api/auth/refresh', {
      method: 'POST', credentials: 'same-origin', cache: 'no-store', headers: { 'X-Keyward-Refresh': '1' },
    }).then(async (res) => {
      const out = await res.json().catch(() => ({}));
      if (res.ok && out.success && out.data?.token) { session.set(out.data.token); return true; }
      return false;
    }).catch(() => false).finally(() => { refreshing = null; });
  }
  return refreshing;
}

// restore gives a tab without a token the browser's sign-in (another tab's, or this
// one's before a reload) when its session is still live.
export async function restore() {
  if (session.token) return true;
  return refresh();
}

async function renewIfDue() {
  const t = session.token;
  if (!t) return;
  const left = expiresAt(t) - Date.now();
  if (left < RENEW_BEFORE_MS && Date.now() - lastActivity < ACTIVE_WITHIN_MS) await refresh();
}

// afterSignIn answers the page to return to (the one open when the session ended) and
// sends again the form that was refused then.
export async function afterSignIn() {
  const back = sessionStorage.getItem(RETURN_TO);
  const pending = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(RETURN_TO);
  sessionStorage.removeItem(PENDING);
  let resent = null;
  if (pending) {
    try {
      const p = JSON.parse(pending);
      await api(p.method, p.path, p.body);
      resent = p;
    } catch { /* the form is shown again on its page */ }
  }
  return { back: back ? back.replace(/^#\/?/, '') : '', resent };
}

// keepForLater remembers where the owner was (and what they were sending) when the session
// ended, for afterSignIn.
function keepForLater(method, path, body) {
  if (location.hash && !/^#\/?(login|register|forgot|reset-2fa)?$/.test(location.hash)) sessionStorage.setItem(RETURN_TO, location.hash);
  if (method !== 'GET' && body !== undefined && !path.startsWith('/api/auth/')) {
    sessionStorage.setItem(PENDING, JSON.stringify({ method, path, body }));
  }
}

// socketTicket asks for a single-use ticket of 30 s that opens one dashboard socket, so
// the token never travels in a URL (where logs and consoles print it).
export async function socketTicket() {
  const d = await post('/api/auth/ws-ticket');
  return d.ticket;
}

// An error envelope from the API (or a network failure, code NETWORK).
export class ApiError extends Error {
  constructor(status, code, message, field, body) {
    super(message || code);
    this.status = status;
    this.code = code;
    this.field = field;
    this.body = body;
  }
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

function headers(json) {
  const hd = {};
  if (json) hd['Content-Type'] = 'application/json';
  if (session.token) hd.Authorization = 'Bearer ' + session.token;
  return hd;
}

async function parse(res) {
  let body;
  try {
    body = await res.json();
  } catch {
    throw new ApiError(res.status, 'BAD_REPLY', `The server answered ${res.status} without JSON.`);
  }
  return body;
}

// api('GET', '/api/apps') resolves with the envelope's data or throws an ApiError.
// opts.raw: resolve with the whole body even when success is false (login's 2FA step).
export async function api(method, path, body, opts = {}) {
  if (!opts.retried) await renewIfDue();
  let res;
  try {
    res = await fetch(path, {
      // The sign-in routes set (and logout clears) the refresh cookie; nothing else needs cookies.
      method, headers: headers(body !== undefined), credentials: path.startsWith('/api/auth/') ? 'same-origin' : 'omit', cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, 'NETWORK', 'The server cannot be reached: ' + e.message);
  }
  const out = await parse(res);
  if (opts.raw && (out.requires2FA || out.requireVerify)) return out;
  if (out.success === true) return out.data;
  const err = out.error || {};
  const e = new ApiError(res.status, err.code || 'ERROR', err.message || out.message || res.statusText, err.field, out);
  if (res.status === 401 && session.token && !opts.keepSession) {
    // The token expired or was refused: renew from the session once and send again.
    if (!opts.retried && await refresh()) return api(method, path, body, { ...opts, retried: true });
    session.clear();
    keepForLater(method, path, body);
    onUnauthorized(e);
  }
  if (res.status === 403 && err.code === 'REAUTH_REQUIRED' && !opts.retried && onReauth) {
    // A sensitive action: the owner confirms who they are, then it is sent again.
    if (await onReauth()) return api(method, path, body, { ...opts, retried: true });
  }
  throw e;
}

let onReauth = null;
// setReauthHandler installs the dialog that asks for the password, a code or a passkey;
// it resolves true once the server accepted one.
export function setReauthHandler(fn) { onReauth = fn; }

export const get = (p, q) => api('GET', q ? p + '?' + query(q) : p);
export const post = (p, b = {}) => api('POST', p, b);
export const patch = (p, b) => api('PATCH', p, b);
export const del = (p, b) => api('DELETE', p, b);

export function query(q) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') u.set(k, v);
  return u.toString();
}

// Uploads a multipart form with progress; resolves with data.
export function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open('POST', path);
    if (session.token) x.setRequestHeader('Authorization', 'Bearer ' + session.token);
    x.upload.addEventListener('progress', (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); });
    x.addEventListener('error', () => reject(new ApiError(0, 'NETWORK', 'The upload failed: the server cannot be reached.')));
    x.addEventListener('load', () => {
      let out = {};
      try { out = JSON.parse(x.responseText); } catch { /* below */ }
      if (out.success) return resolve(out.data);
      const err = out.error || {};
      const e = new ApiError(x.status, err.code || 'ERROR', err.message || `The server answered ${x.status}.`, err.field);
      if (x.status === 401) { session.clear(); onUnauthorized(e); }
      reject(e);
    });
    x.send(form);
  });
}

// Downloads a file through fetch (the bearer header cannot ride on a plain link).
export async function download(path, name) {
  const res = await fetch(path, { headers: headers(false), credentials: 'omit' });
  if (!res.ok) {
    const out = await parse(res);
    throw new ApiError(res.status, out.error?.code, out.error?.message);
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
