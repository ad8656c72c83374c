// Package softauthn is a software WebAuthn authenticator for Go tests: it answers a
// relying party's creation options with an attestation "none" registration response and
// its request options with assertions signed by an ES256 (P-256) key, as a browser with a
// platform authenticator would hand them to the page (the PublicKeyCredential JSON). The
// http tests run whole passkey ceremonies with it, without a browser.
//
// It keeps its credentials in memory (discoverable: each remembers its relying party and
// user handle), counts signatures per credential, sets user presence and verification,
// and lets a test break the rules a relying party must enforce: another origin
// (Authenticator.Origin), a counter that goes back (SetCounter).
package softauthn
