// Package integrations owns the owner's webhook integrations (SPEC 2 "Integration", 4.8,
// 6.1) and their durable delivery queue:
//
//   - Service: create, list, update, delete, test, regenerate the signing secret (CUSTOM
//     only), list delivery attempts, show one delivery and redeliver it, with the
//     destination policy of core/webhooks
//     checked on every create and URL change;
//   - Dispatcher: subscribed to the event pipeline, it turns each application event into
//     one queued Delivery per enabled integration subscribed to it;
//   - Worker: on every node, claims due deliveries from storage under a lease (so a
//     delivery is sent by one node at a time and survives restarts), sends them with the
//     policy-checking client (the address rule runs again at dial time: a name rebound
//     to a private address ends the delivery failed, with the reason), records every
//     attempt and keeps the request the last one put on the wire (Delivery.Sent, shown by
//     the delivery detail), retries with backoff and jitter for
//     webhooks.MaxAge, and disables an integration after webhooks.DisableAfter
//     consecutive failed deliveries, writing a log entry that says why. A finished
//     delivery leaves the queue for the store's history (storage.DeliveryStore), so
//     claims cost the same whatever the retention (WorkerConfig.Retention,
//     KEYWARD_WEBHOOK_RETENTION) keeps; at start the worker moves what an older version
//     left finished in the queue, in bounded rounds between its claims. The history is
//     bounded by age and by count: every hour the worker removes finished deliveries
//     and attempts older than the retention, and those of each integration beyond its
//     newest WorkerConfig.MaxPerIntegration (KEYWARD_WEBHOOK_MAX_PER_INTEGRATION, 10,000;
//     deliveries by last update, attempts by time), in batches of
//     WorkerConfig.TrimBatch between its claims. Pending deliveries are never removed.
//
// Delivery is at least once: a node that dies after sending but before recording the
// outcome leaves the delivery to be sent again when its lease ends. CUSTOM receivers
// drop duplicates by the X-Keyward-Delivery id (see core/webhooks/SIGNATURES.md).
package integrations
