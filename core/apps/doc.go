// Package apps owns an owner's applications and the records under them (SPEC 4.2 to 4.5):
// applications with their secrets, stats and plan limits; application users; license keys;
// devices; and access tokens.
//
// Ownership is checked first on every call: an app of another account is NOT_FOUND, never
// FORBIDDEN, so ids cannot be probed. Secrets are stored as hashes with the last 6
// characters for the mask; license keys and tokens come from crypto/rand.
package apps
