// The buyer portal: sign in with a key and a mailed code, then the license and the actions
// the owner turned on. Every string from the server is put in with textContent.
const base = location.pathname.replace(/\/+$/, '');
const api = base + '/api';
const $ = (id) => document.getElementById(id);

function notice(text, error) {
  const n = $('notice');
  n.textContent = text || '';
  n.className = error ? 'error' : '';
  if (error) n.setAttribute('role', 'alert'); else n.setAttribute('role', 'status');
}

async function call(method, path, body) {
  const init = { method, headers: {}, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(api + path, init);
  } catch (e) {
    return { ok: false, status: 0, error: { code: 'NETWORK', message: 'The server cannot be reached; try again.' } };
  }
  let env = {};
  try { env = await resp.json(); } catch (e) { /* not JSON */ }
  return { ok: resp.ok && env.success, status: resp.status, data: env.data, error: env.error || { message: 'HTTP ' + resp.status } };
}

function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function when(s) {
  return s ? new Date(s).toLocaleString() : 'never';
}

function showSignIn() {
  $('license').hidden = true;
  $('signin').hidden = false;
  $('title').textContent = 'Sign in to your license';
}

function render(v) {
  $('signin').hidden = true;
  $('license').hidden = false;
  $('title').textContent = 'Your license';
  const facts = $('facts');
  facts.replaceChildren();
  const rows = [['Key', v.key], ['Status', v.status], ['Level', v.level], ['Expires', when(v.expiresAt)],
    ['Seats used', v.maxSeats > 0 ? v.seatsUsed + ' of ' + v.maxSeats : String(v.seatsUsed)],
    ['Hardware bound', v.hwidBound ? 'yes' : 'no'],
    ['HWID resets', v.hwidResetMax > 0 ? v.hwidResets + ' of ' + v.hwidResetMax : String(v.hwidResets)]];
  if (v.nextResetAt) rows.push(['Next reset from', when(v.nextResetAt)]);
  for (const [k, val] of rows) {
    facts.append(el('dt', k), el('dd', val));
  }
  $('reset-hwid').hidden = !v.switches.hwidReset;
  $('resend').hidden = !v.switches.resend;
  const seats = $('seat-list');
  seats.replaceChildren();
  $('seats').hidden = !(v.seats.length > 0);
  for (const s of v.seats) {
    const li = el('li', (s.username || 'a device') + (s.since ? ', since ' + when(s.since) : ''));
    if (v.switches.seatRelease) {
      const b = el('button', 'Release', { type: 'button', 'aria-label': 'Release the seat of ' + (s.username || 'a device') });
      b.addEventListener('click', () => act('DELETE', '/seats/' + encodeURIComponent(s.id), 'The seat was released.'));
      li.append(b);
    }
    seats.append(li);
  }
  const files = $('file-list');
  files.replaceChildren();
  $('files').hidden = !(v.switches.downloads && v.files.length > 0);
  for (const f of v.files) {
    const li = el('li');
    li.append(el('a', f.name + (f.version ? ' ' + f.version : ''), { href: api + '/files/' + encodeURIComponent(f.id), download: f.name }));
    li.append(document.createTextNode(' (' + Math.max(1, Math.round(f.size / 1024)) + ' KB)'));
    files.append(li);
  }
}

async function load() {
  const r = await call('GET', '/license');
  if (r.ok) render(r.data);
  else if (r.status === 401) showSignIn();
  else { showSignIn(); notice(r.error.message, true); }
  return r;
}

async function act(method, path, done) {
  const r = await call(method, path);
  if (!r.ok) {
    if (r.status === 401) showSignIn();
    notice(r.error.message, true);
    return;
  }
  await load();
  notice(done, false);
}

$('code-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const r = await call('POST', '/code', { key: $('key').value });
  if (!r.ok) { notice(r.error.message, true); return; }
  $('signin-form').hidden = false;
  notice(r.data.message, false);
  $('code').focus();
});

$('signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const r = await call('POST', '/session', { key: $('key').value, code: $('code').value });
  if (!r.ok) { notice(r.error.message, true); return; }
  $('code').value = '';
  $('signin-form').hidden = true;
  await load();
  notice('Signed in.', false);
  $('title').focus();
});

$('reset-hwid').addEventListener('click', () => act('POST', '/reset-hwid', 'The hardware binding was reset: sign in from your new device.'));
$('resend').addEventListener('click', () => act('POST', '/resend', 'The key was mailed to you again.'));
$('signout').addEventListener('click', async () => {
  await call('DELETE', '/session');
  showSignIn();
  notice('Signed out.', false);
});

$('title').setAttribute('tabindex', '-1');
load().then(() => performance.mark('keyward-ready'));
