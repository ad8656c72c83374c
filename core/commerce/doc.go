// Package commerce turns a store's sales into licenses (issue 23): it verifies each store's
// signed notification as that store documents it, reads the notification into one shape
// (Notice), and runs an order through its life: paid (keys issued once), refunded or charged
// back (keys banned or revoked, as the connection says), renewed (keys extended), canceled
// (keys expire at the end of the paid period).
//
// What each verifier trusts:
//   - Stripe: `Stripe-Signature: t=…,v1=…[,v1=…]`, HMAC-SHA256 of "t.body" with the
//     endpoint secret, any v1 may match (secret rotation), t within 300 s of now.
//   - Paddle Billing: `Paddle-Signature: ts=…;h1=…[;h1=…]`, HMAC-SHA256 of "ts:body", ts
//     within 300 s.
//   - Lemon Squeezy: `X-Signature`, hex HMAC-SHA256 of the body.
//   - Sellix: `X-Sellix-Signature`, hex HMAC-SHA512 of the body.
//   - Shoppy (now Shoppex): `X-Shoppy-Signature` or `X-Shoppex-Signature`, hex HMAC-SHA512 of
//     the body (the legacy body-only scheme both document).
//   - SellApp: `Signature`, hex HMAC-SHA256 of the body.
//   - Gumroad signs nothing. Its ping is trusted because it arrives on the connection's
//     receiver path, a 192-bit random secret only the owner and Gumroad know (the path is
//     the credential: keep it out of logs and screenshots, rotate it by making a new
//     connection). Anyone holding that URL can forge a sale; the server cannot re-check the
//     sale with Gumroad offline, so an owner who needs more should sell through a store
//     that signs.
//
// Hex and HMAC comparisons are constant-time (hmac.Equal). Signature schemes with no
// timestamp (Lemon Squeezy, Sellix, Shoppy, SellApp, Gumroad) can be replayed by whoever
// captured a delivery; a replay is harmless because orders and events are idempotent by
// the store's ids.
//
// A connection of kind "discord" (discord.go) is no store: its secret is the app's
// Discord public key and its receiver serves Discord's interactions (Ed25519 over the
// timestamp and the body; /redeem, /license, /reset-hwid within the user's reset limits).
//
// Order events (order.paid, order.refunded, order.renewed, order.canceled) are written with
// the order's change (events.Change: in its SQLite transaction; on MongoDB in the write the
// answer waits for), by the delivery whose compare-and-swap moves the order, with ids
// derived from the order so that a retried step writes the same event; core/analytics
// sums the revenue from them. The keys' expiry is then set one license at a time (each
// write idempotent: a retry sets the same time).
//
// The buyer portal (portal.go) is the buyers' side of an app: the app's settings
// (storage.App.Portal, changed as an app update by core/apps) turn it and each action on or
// off; a connection of kind portal, where they lived before, is only read by the upgrade
// (deprecated). A buyer signs in with a key and a one-time code mailed to the order's
// address (codes and sessions live in the cluster engine, so every node serves them) and
// sees the license, resets the HWID, releases seats, downloads files and has the key mailed
// again, each action audited as the owner's twin is, and each change with its event
// (user.hwid_reset; license.update for a seat released or a key mailed again).
//
// Exactly once: an order is a record unique per (connection, store order id) in both
// engines; its license ids are derived from the order's id, and the order moves from
// issuing to paid by compare-and-swap, so two deliveries at the same moment on two nodes
// issue one set of keys (the loser waits for the winner's keys or answers 503 so the store
// retries).
package commerce
