// Package webhooks owns the delivery of events to integrations (SPEC 2 "Integration", 4.8,
// 6.1), everything except storage and the durable queue, which come from the layers above:
//
//   - the destination policy: ValidateURL accepts only absolute https URLs, without
//     userinfo, whose host is, or resolves only to, public addresses; NewClient repeats the
//     address check on every connection it dials, after DNS, so a name that resolves to a
//     private address later (DNS rebinding) is still refused. It also ignores environment
//     proxies, does not follow redirects and reads at most 64 KiB of a response;
//   - the payloads: Build turns an Event into the request for each integration type:
//     Discord's execute-webhook body, Slack's incoming-webhook body, Telegram's sendMessage
//     call, and Keyward's own JSON, signed with the integration secret, for CUSTOM (Sign,
//     Verify; the scheme for receivers is in SIGNATURES.md);
//   - one delivery attempt and its verdict: Deliver says whether it succeeded and, if not,
//     whether to retry and how soon the receiver asked us to, and records the request as it
//     went out (SentRequest: the header fields as the transport wrote them, through
//     net/http/httptrace, and the body bytes; never the URL, whose path holds chat
//     platforms' tokens), which the delivery log shows the owner. A destination refused at
//     dial time sends nothing and says so in words that name the setting to change;
//   - the retry policy: NextDelay, NextRetry and the constants of the schedule (retries for
//     at least MaxAge, an integration disabled after DisableAfter failed deliveries).
//
// The package knows nothing of HTTP handlers or storage. URL errors are core VALIDATION_ERROR
// errors on the webhookUrl field; delivery errors are plain text safe to show the owner,
// never containing the URL, since Telegram URLs carry the bot token.
package webhooks
