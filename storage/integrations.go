package storage

import (
	"context"
	"time"
)

// Integration is a webhook integration of an application (SPEC 2, Integration).
type Integration struct {
	ID    string
	AppID string
	Name  string
	// Kind is DISCORD, TELEGRAM, SLACK or CUSTOM (the API's `type`).
	Kind string `audit:"type"`
	// URL is the webhook URL, validated by the caller. It may hold a bot token
	// (Telegram), so it is only ever shown masked.
	URL string `audit:"url,secret"`
	// Events are the subscribed event names, in the order the owner gave them.
	Events  []string
	Enabled bool
	// Secret is the signing secret of a CUSTOM integration ("" for the others). It signs
	// every delivery, so it cannot be hashed: the engines store it sealed (see Sealer) and
	// answer it in clear.
	Secret string `audit:"secret,secret"`
	// ConsecutiveFailures counts deliveries that ended failed since the last success; the
	// delivery queue disables the integration when it reaches webhooks.DisableAfter.
	ConsecutiveFailures int
	// DisabledReason says why the queue disabled the integration; "" when it did not, and
	// cleared when the owner enables it again.
	DisabledReason string
	CreatedAt      time.Time `audit:"-"`
	UpdatedAt      time.Time `audit:"-"`
}

// IntegrationStore persists integrations.
type IntegrationStore interface {
	// CreateIntegration inserts an integration; ErrNotFound when its app does not exist.
	CreateIntegration(ctx context.Context, i Integration) error
	GetIntegration(ctx context.Context, appID, id string) (Integration, error)
	// ListIntegrations answers every integration of the app, oldest first.
	ListIntegrations(ctx context.Context, appID string) ([]Integration, error)
	// UpdateIntegration applies fn atomically (see UpdateAccount).
	UpdateIntegration(ctx context.Context, appID, id string, fn func(*Integration) error) (Integration, error)
	// DeleteIntegration removes the integration with its deliveries and their attempts.
	DeleteIntegration(ctx context.Context, appID, id string) error
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its next attempt (or for its first)
	DeliveryDelivered = "delivered" // an attempt succeeded
	DeliveryFailed    = "failed"    // a permanent failure, or retried for webhooks.MaxAge
)

// Delivery is one event queued for one integration: the durable queue of webhook sends.
// It survives restarts; any node may send it, one at a time, under a lease.
type Delivery struct {
	ID            string
	AppID         string
	IntegrationID string
	// EventID is the event's own id (the same for every integration it goes to); Event is
	// its name, e.g. user.login.
	EventID string
	Event   string
	// Payload is the event as JSON (webhooks.Event); the request is built from it at each
	// attempt, with the integration's URL and secret of that moment.
	Payload []byte
	State   string
	// Attempts counts the attempts made so far.
	Attempts int
	// NextAttemptAt is when the delivery is due; only pending deliveries are due.
	NextAttemptAt time.Time
	// LeaseOwner and LeaseUntil mark a delivery claimed by a worker; the claim ends when the
	// worker finishes the attempt or at LeaseUntil (the worker died), whichever is first.
	LeaseOwner string
	LeaseUntil time.Time
	// LastError is the error of the last failed attempt, "" otherwise.
	LastError string
	// Sent is the request of the last attempt that reached a receiver, as it went out
	// (headers as written, body bytes), in core/webhooks' stored form (opaque here); nil
	// until one did. The dashboard shows it as the delivery's payload.
	Sent      []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DeliveryAttempt is the record of one attempt, listed per integration.
type DeliveryAttempt struct {
	ID            string
	AppID         string
	IntegrationID string
	DeliveryID    string
	Event         string
	// Attempt numbers the attempts of one delivery from 1.
	Attempt int
	Success bool
	// StatusCode is the receiver's HTTP status, 0 when no response arrived.
	StatusCode int
	Latency    time.Duration // stored at millisecond precision
	Error      string
	// Response is the start of the response body (at most 512 bytes).
	Response  string
	CreatedAt time.Time
}

// IntegrationRef names an integration: its app and its id.
type IntegrationRef struct {
	AppID         string
	IntegrationID string
}

// DeliveryStore is the durable webhook delivery queue and the history of finished
// deliveries.
//
// The queue holds only the deliveries that are pending (due, waiting for a retry, or in
// flight); a delivery that ends (delivered, or failed for good) moves to the history,
// which keeps it for the dashboard (detail, redeliver) until PurgeDeliveries (by age) or
// TrimDeliveries (beyond an integration's newest, by count) removes it. Claims
// read the queue alone, so they cost the same however much history the retention keeps:
// on FerretDB, which filters in Go every query but an exact {_id}, that is the
// difference between a queue of thousands and one of the hundreds of thousands of
// deliveries a week of retention keeps.
//
// Every method takes a delivery by id wherever it is: callers never name the queue or
// the history. A delivery's id is unique across both (the engines keep one copy, or on
// MongoDB tolerate two while a move is under way, see storage/mongo's moveDelivery).
type DeliveryStore interface {
	// CreateDeliveries inserts the deliveries in one write: pending ones into the queue,
	// finished ones (a restored archive, an older version's) into the history. A
	// delivery whose integration no longer exists may be inserted; ClaimDeliveries never
	// answers it (it is removed).
	CreateDeliveries(ctx context.Context, ds []Delivery) error
	// ClaimDeliveries leases up to n due deliveries to owner until now+lease: pending,
	// NextAttemptAt <= now, and not leased (LeaseUntil <= now), oldest NextAttemptAt first.
	// A delivery is answered to one claimer at a time, across nodes. The answered records
	// carry the new lease. It reads the queue only, never the history.
	ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, n int) ([]Delivery, error)
	// UpdateDelivery applies fn atomically (see UpdateAccount) to the delivery, in the
	// queue or in the history. fn checks the lease it expects and returns an error to
	// abort when the lease was lost. A delivery fn finishes (delivered or failed) moves to
	// the history; one fn makes pending again (a redelivery) moves back to the queue.
	UpdateDelivery(ctx context.Context, id string, fn func(*Delivery) error) (Delivery, error)
	// AddDeliveryAttempt records an attempt.
	AddDeliveryAttempt(ctx context.Context, a DeliveryAttempt) error
	// ListDeliveryAttempts answers one page of the integration's attempts, newest first
	// (CreatedAt, then id), and the total.
	ListDeliveryAttempts(ctx context.Context, appID, integrationID string, p Page) ([]DeliveryAttempt, int, error)
	// PurgeDeliveries removes finished (delivered or failed) deliveries updated before
	// before, and attempts created before before, and answers how many deliveries went.
	PurgeDeliveries(ctx context.Context, before time.Time) (int, error)
	// IntegrationsOverHistory answers the integrations whose history holds more than
	// moreThan finished deliveries, sorted by app, then integration id. The count bound's
	// sweep (TrimDeliveries) starts from it.
	IntegrationsOverHistory(ctx context.Context, moreThan int) ([]IntegrationRef, error)
	// TrimDeliveries removes up to n of the integration's finished deliveries that are not
	// among its newest keep (by UpdatedAt, then id), the newest of those first, and
	// answers how many went: fewer than n once none beyond keep is left, or when some
	// were being changed at that moment (the next sweep takes them). One call is one bounded
	// write; the caller repeats it. Pending deliveries (the queue) are never touched, nor
	// counted.
	TrimDeliveries(ctx context.Context, appID, integrationID string, keep, n int) (int, error)
	// IntegrationsOverAttempts answers the integrations having more than moreThan
	// recorded attempts, sorted by app, then integration id.
	IntegrationsOverAttempts(ctx context.Context, moreThan int) ([]IntegrationRef, error)
	// TrimDeliveryAttempts removes up to n of the integration's attempts that are not
	// among its newest keep (by CreatedAt, then id), the newest of those first, and
	// answers how many went: fewer than n once none beyond keep is left. One call is one
	// bounded write.
	TrimDeliveryAttempts(ctx context.Context, appID, integrationID string, keep, n int) (int, error)
	// MoveFinishedDeliveries moves up to n finished deliveries that are still in the
	// queue (written there by a version before the history existed) to the history, and
	// answers how many it moved: fewer than n when none are left. The worker calls it in
	// bounded rounds at start; SQLite's migration 33 has already done it.
	MoveFinishedDeliveries(ctx context.Context, n int) (int, error)
}
