// Package core holds the rules of the Keyward specification that are shared by every
// domain package below it: the domain error values (a stable code, a user-facing message
// and, for validation, the field at fault) and the validators for the values every
// domain shares (usernames, emails, passwords, one-time codes).
//
// Domain packages live beneath it (core/accounts, core/plans, …). They know nothing about
// HTTP or WebSocket frames; the http package turns their errors into the envelope of SPEC
// section 7 in one function.
package core
