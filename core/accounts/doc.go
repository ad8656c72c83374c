// Package accounts owns an owner's account lifecycle (SPEC 4.1): registration with
// email verification, login with optional TOTP 2FA, JWT issue and revocation, password
// change and reset (by mailed token or by 2FA), the API key, plan selection and the
// administration of roles and plans; and the guards of the owner's own account (issues 22
// and 25):
//
//   - Owner sessions (sessions.go): every sign-in stores a session; its JWTs carry its id
//     and are refused on every node once it is signed out. A refresh secret (an HttpOnly
//     cookie at the edge) renews it; a single-use 30 s ticket opens the dashboard socket.
//     Password change or reset ends all sessions; 2FA changes and a recovery-code sign-in end
//     the others. A sign-in from a browser and address none of the live sessions has is
//     mailed to the owner.
//   - Re-authentication: sensitive actions need a sign-in or POST /api/auth/reauth within
//     ReauthWindow (REAUTH_REQUIRED otherwise); the edge decides which routes.
//   - Recovery codes (recovery.go): ten one-time codes, SHA-256 stored, compared in constant
//     time over every stored code.
//   - Breached passwords (breach.go): the k-anonymity range protocol, fail open or closed.
//   - Passkeys (passkeys.go): WebAuthn through go-webauthn, the relying party id and origin
//     from the public URL; register several (named), sign in with one alone (discoverable
//     or by username), in place of the TOTP code, or to re-authenticate. Each ceremony's
//     challenge is stored for 5 minutes and used once, so any node finishes it; a counter
//     that did not move on (go-webauthn's clone warning) is refused.
//   - Email change (email_change.go): a link to the new address makes it, a notice with a
//     cancel link goes to the old one; nothing changes until the new one confirms.
//
// Secrets: passwords are argon2id hashes (core/passwords); the API key, mailed tokens,
// refresh secrets, socket tickets, recovery codes and email change tokens are stored as SHA-256 hashes
// (core/secrets); TOTP codes are accepted once only (the last accepted time step is kept on
// the account). Answers that could reveal whether an account exists (register, resend
// verification, forgot password, login failures) are identical for known and unknown
// accounts.
package accounts
