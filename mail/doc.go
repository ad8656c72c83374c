// Package mail delivers Keyward's mails (verification, password reset, notices) off the
// request path. A Queue takes messages without blocking and its Run, on a goroutine that
// its owner starts and stops (the node's supervisor, internal/supervise), hands them to a
// Sender, retrying failures with backoff and logging them; callers never see delivery
// errors. Close tries what is left once, for a queue whose Run ended or never ran. Two senders exist: SMTP (github.com/wneessen/go-mail, STARTTLS or implicit TLS,
// optional auth) when configured, and the Outbox, which writes every mail as one RFC 5322
// .eml file in a folder and logs its subject, so a single-node owner needs no SMTP server.
package mail
