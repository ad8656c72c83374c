// Package apikeys owns the scoped API keys of an account (issue 14): named keys limited to
// scopes of the form "resource:action" (or the presets "read" and "full"), optionally to
// some applications and to a lifetime, beside the account key of the specification (which
// stays and is "full").
//
// A key is stored as its SHA-256 only, found by that hash and compared again in constant
// time. Nothing caches a key: every request reads it, so a revoked key (its record
// deleted) is refused by every node from the next request on. The last use (time and IP)
// is written at most once a minute per key and address, so that a busy key does not turn
// every read into a write.
//
// The package knows the vocabulary of scopes (Resources, Actions) and how a key's scopes
// grant a needed one (Grants); which route needs which scope is the http package's table.
package apikeys
