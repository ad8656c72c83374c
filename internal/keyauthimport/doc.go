// Package keyauthimport moves a KeyAuth server's data into one Keyward account: it reads a
// mysqldump of KeyAuth's MySQL/MariaDB database and writes its apps, users, license keys,
// subscriptions (as each user's level and expiry), variables, user variables, blacklists
// (as rules) and Discord webhooks (as integrations) into the account's apps, and answers a
// Report of what mapped, what did not, and why. `keyward import keyauth` runs it.
//
// The dump is read by a streaming reader of mysqldump's output (Reader: CREATE TABLE for
// column order, INSERT with multi-row VALUES, MySQL string escapes, NULL, numbers, hex and
// bit literals), one row at a time in constant memory besides the row; it is fuzzed
// (FuzzReader). The rows of the tables that map are kept, compact, until the dump is read
// (a user's level comes from its subscriptions, which may come after it), then written in
// batches (storage's CreateUsers, CreateLicenses, CreateVariables, CreateRules), so that
// an import costs a few round trips per thousand records on either engine.
//
// Passwords: KeyAuth stores PHP's password_hash (bcrypt, $2y$). The hash is kept as it is;
// core/passwords verifies it at the user's next client login and the login stores an
// argon2id hash in its place (core/client), so no user is asked to reset.
//
// What KeyAuth's schema names that does not map (sessions, logs, chats, file links,
// server-side request webhooks, seller settings, custom messages...) is counted and
// explained in the Report. The facts of the schema (tables, columns, formats) come from
// KeyAuth's public source; testdata/make-fixture.sh builds a dump from them with MariaDB.
//
// An import is all or nothing per run: it refuses before writing when an app name is
// taken in the account or the account's plan is too small, and deletes the apps it
// created when a write fails.
package keyauthimport
