// Package accounts owns an owner's account lifecycle (SPEC 4.1): registration with
// email verification, login with optional TOTP 2FA, JWT issue and revocation, password
// change and reset (by mailed token or by 2FA), the API key, plan selection and the
// administration of roles and plans.
//
// Secrets: passwords are argon2id hashes (core/passwords); the API key and mailed tokens
// are stored as SHA-256 hashes (core/secrets); TOTP codes are accepted once only (the last
// accepted time step is kept on the account). Answers that could reveal whether an account
// exists (register, resend verification, forgot password, login failures) are identical for
// known and unknown accounts.
package accounts
