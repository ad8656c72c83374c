// Package client owns everything client software does (SPEC 4.10, CLIENT-SDKS.md): client
// sessions and their nonces, the authentication flows (login, register, license-only login,
// activate), and the data calls of a signed-in program. A password login that verifies a
// hash of another scheme (bcrypt, kept by keyward import keyauth) stores an argon2id hash of
// the password in the same write as the login (rehashed in auth.go).
//
// Hot path. Each request reads its application from the app's actor (app.Apps in actors/app, a
// Snapshot of the app, its owner's plan and its compiled rules) instead of storage, and its
// session from the cluster engine: a session is a value with an idle ttl (cluster.Values),
// listed in expiring sets per app and per user (cluster.ExpiringSets) for counting and
// killing, and its open nonces are an expiring set of their own, bounded per session. A
// heartbeat therefore costs cluster-engine operations only, never a storage write. A
// stored session is decoded by hand (session_decode.go; any other shape by
// encoding/json). A socket's upgrade reads its user's standing, and the concurrent
// upgrades of an app share that read (standings.go).
//
// Durability. Sessions have durable copies in storage (archive.go), read only for a token
// the cluster engine does not know. init and the logins answer only once their session's
// copy and the login's last-login record are written: they wait for a round of the one
// background writer (commit.go), which writes everything pending in one batch, so the
// logins made meanwhile share a write (group commit) and an acknowledged session survives
// a crash. A session's new expiry after a call is only marked, and written with the next
// round (at the latest every 5 s); that mark only moves a stored copy's expiry later: it
// never re-creates a copy an end or a kill removed, nor undoes a sign-in written since the
// call read its session (storage.ClientSession.ExtendOnly). An end or a kill removes the
// live session first and its copies last, in one write with its event (session.end, user.session_kill; on SQLite
// one transaction): that write is the change's point of no return. init finds its app
// through the secret's remembered app, checked against the app's snapshot
// (secretcache.go), so it reads no table.
//
// Authentication order (documented in docs/API.md; each refusal writes user.login_failed
// with the reason, through the event pipeline, and changes nothing):
//
//  1. the session exists and the nonce is open (at the edge: UNAUTHORIZED, NONCE_REQUIRED);
//  2. the app is enabled (APP_DISABLED) and not paused (APP_PAUSED);
//  3. the rules: ip (addresses and CIDRs), hwid, country (RULE_BLOCKED, rule.triggered);
//  4. the credentials (UNAUTHORIZED), or for a license login the key (LICENSE_INVALID);
//  5. the user: banned (BANNED), disabled (USER_DISABLED), expired (EXPIRED) beyond the
//     app's grace (grace.go: inside it the answer warns and the log gets user.grace);
//  6. the locks the app enables: HWID (HWID_LOCKED; a new hwid beyond the user's device
//     limit is DEVICE_LIMIT, and a deviceLimit of 0 is none), IP (IP_LOCKED), PC name
//     (PC_NAME_LOCKED); a first login binds. A returning user's new device is then
//     registered before anything else is written, its count of the user's devices and its
//     insert one step (storage.DeviceStore.CreateDeviceWithin), so that concurrent logins
//     from new devices cannot pass the limit together; a login that fails after it
//     removes it again, unless the user is bound to it;
//  7. the license, when one is given: banned (BANNED), expired (EXPIRED), disabled
//     (LICENSE_INVALID), uses left (LICENSE_USED), consumed atomically in storage so that
//     concurrent activations of a key with one use left succeed once.
//
// Last, a user whose license limits floating seats takes a seat (seats.go: a lease in
// cluster.Leases, SEATS_FULL when none is free), renewed by heartbeats.
//
// Locks come before the license so that a refused login never spends a license use. A
// license login's first use creates the key's user, bound, before it takes the use: the
// unique username picks one activation among concurrent first logins, and the others log in
// as that user under its locks, alike on every storage engine.
package client
