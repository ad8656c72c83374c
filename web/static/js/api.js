// The Dashboard REST API client. The JWT is kept in sessionStorage: only this origin's
// scripts can read it, and the page's Content-Security-Policy admits no script but this
// origin's own files; it is dropped on logout, on a 401 and when the tab closes.

const TOKEN = 'keyward.token';

export const session = {
  get token() { return sessionStorage.getItem(TOKEN); },
  set(token) { sessionStorage.setItem(TOKEN, token); },
  clear() { sessionStorage.removeItem(TOKEN); },
};

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
  let res;
  try {
    res = await fetch(path, {
      method, headers: headers(body !== undefined), credentials: 'omit', cache: 'no-store',
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
    session.clear();
    onUnauthorized(e);
  }
  throw e;
}

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
