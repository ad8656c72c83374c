// Passkeys in the browser (WebAuthn): the server's ceremony options arrive as JSON with
// binary members in base64url, and the browser's answer goes back the same way. Each
// ceremony is begin (options and a challenge id) then finish (the credential as JSON).

import { api, post } from './api.js';

export const supported = () => typeof window.PublicKeyCredential === 'function' && !!navigator.credentials;

function fromB64(s) {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4));
  return Uint8Array.from(b, (c) => c.charCodeAt(0)).buffer;
}

function toB64(buf) {
  if (!buf) return undefined;
  let s = '';
  for (const c of new Uint8Array(buf)) s += String.fromCharCode(c);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

const withIds = (list) => (list || []).map((c) => ({ ...c, id: fromB64(c.id) }));

// credentialJSON is PublicKeyCredential.toJSON(), written out for the browsers without it.
function credentialJSON(cred) {
  const r = cred.response;
  const response = { clientDataJSON: toB64(r.clientDataJSON) };
  if (r.attestationObject) {
    response.attestationObject = toB64(r.attestationObject);
    response.transports = r.getTransports ? r.getTransports() : [];
  } else {
    Object.assign(response, { authenticatorData: toB64(r.authenticatorData), signature: toB64(r.signature), userHandle: toB64(r.userHandle) });
  }
  return { id: cred.id, rawId: toB64(cred.rawId), type: cred.type, authenticatorAttachment: cred.authenticatorAttachment || undefined,
    clientExtensionResults: cred.getClientExtensionResults ? cred.getClientExtensionResults() : {}, response };
}

// create runs a registration ceremony begun by begin; answers the finish body's members.
export async function create(begun) {
  const pk = begun.options.publicKey;
  const publicKey = { ...pk, challenge: fromB64(pk.challenge), user: { ...pk.user, id: fromB64(pk.user.id) }, excludeCredentials: withIds(pk.excludeCredentials) };
  const cred = await navigator.credentials.create({ publicKey });
  return { challengeId: begun.challengeId, credential: credentialJSON(cred) };
}

// get runs a sign-in or reauthentication ceremony begun by begin.
export async function get(begun) {
  const pk = begun.options.publicKey;
  const publicKey = { ...pk, challenge: fromB64(pk.challenge), allowCredentials: withIds(pk.allowCredentials) };
  const cred = await navigator.credentials.get({ publicKey, mediation: begun.options.mediation || undefined });
  return { challengeId: begun.challengeId, credential: credentialJSON(cred) };
}

// signIn signs in with a passkey (username optional) and answers the session.
export async function signIn(username) {
  const begun = await post('/api/auth/passkeys/login/begin', username ? { username } : {});
  return post('/api/auth/passkeys/login/finish', await get(begun));
}

// register adds a passkey named name to the signed-in account; answers the new passkey
// (with the recovery codes the first time).
export async function register(name) {
  const begun = await post('/api/auth/passkeys/register/begin');
  return api('POST', '/api/auth/passkeys/register/finish', { ...(await create(begun)), name });
}

// reauth confirms who the owner is with one of their passkeys.
export async function reauth() {
  const begun = await post('/api/auth/reauth/passkey/begin');
  // A refused passkey is not a refused session: keep it (no renewal and sign-out on 401).
  return api('POST', '/api/auth/reauth', { passkey: await get(begun) }, { keepSession: true });
}
