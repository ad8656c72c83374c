package integrations

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/storage"
)

// MaxNameLength bounds an integration's name.
const MaxNameLength = 100

// secretPrefix starts every signing secret, so owners recognise one when they see it.
const secretPrefix = "whsec_"

// TestEvent is the name of the sample event sent by Test.
const TestEvent = "integration.test"

// AppAccess checks that the caller owns the app (apps.Service).
type AppAccess interface {
	GetApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
}

// Store is what the service and the queue persist.
type Store interface {
	storage.IntegrationStore
	storage.DeliveryStore
}

// Service runs the owner's integration flows (SPEC 4.8).
type Service struct {
	store     Store
	apps      AppAccess
	bus       events.Publisher
	validator webhooks.Validator
	client    *http.Client
	now       func() time.Time
}

// Options configure the service. AllowPrivate must match the delivery client's setting.
type Options struct {
	Validator webhooks.Validator
	// Client sends test messages; it must come from webhooks.NewClient.
	Client *http.Client
	Now    func() time.Time
}

// NewService builds the service.
func NewService(store Store, access AppAccess, bus events.Publisher, opt Options) *Service {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Client == nil {
		opt.Client = webhooks.NewClient(webhooks.Config{AllowPrivate: opt.Validator.AllowPrivate})
	}
	return &Service{store: store, apps: access, bus: bus, validator: opt.Validator, client: opt.Client, now: opt.Now}
}

// Input describes a new integration; every member but Enabled is required.
type Input struct {
	Name, Type, URL string
	Events          []string
	Enabled         *bool
}

// UpdateInput holds the members to change.
type UpdateInput struct {
	Name, URL *string
	Events    []string // nil keeps the events
	Enabled   *bool
}

func validName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", core.Invalid("name", "name is required")
	}
	if len([]rune(name)) > MaxNameLength {
		return "", core.Invalid("name", "name must be at most %d characters", MaxNameLength)
	}
	return name, nil
}

// validEvents checks the subscribed events and drops repeats, keeping the given order.
func validEvents(list []string) ([]string, error) {
	if len(list) == 0 {
		return nil, core.Invalid("events", "events must name at least one event (GET /api/integrations/events lists them)")
	}
	out := make([]string, 0, len(list))
	seen := map[string]bool{}
	for i, e := range list {
		if !Subscribable(events.Type(e)) {
			return nil, core.Invalid(fmt.Sprintf("events[%d]", i), "unknown event %q (GET /api/integrations/events lists them)", e)
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out, nil
}

// validURL applies the destination policy and checks that a request of the kind can be
// built for the URL (a Telegram URL must name its chat).
func (s *Service) validURL(ctx context.Context, kind, raw string) (string, error) {
	u, err := s.validator.Validate(ctx, strings.TrimSpace(raw))
	if err != nil {
		return "", err
	}
	sample := webhooks.Event{ID: "check", Name: TestEvent, Message: "check"}
	if _, err := webhooks.Build(kind, u.String(), sample, "check"); err != nil {
		msg := "webhookUrl cannot be used for this integration type"
		if kind == webhooks.KindTelegram {
			msg = "a TELEGRAM webhookUrl is https://api.telegram.org/bot<token>/sendMessage?chat_id=<chat id>"
		}
		return "", core.Invalid(webhooks.FieldURL, "%s", msg)
	}
	return u.String(), nil
}

// Create adds an integration. A CUSTOM integration gets its signing secret, answered here
// and by RegenerateSecret only.
func (s *Service) Create(ctx context.Context, o apps.Owner, appID string, in Input) (storage.Integration, error) {
	name, err := validName(in.Name)
	if err != nil {
		return storage.Integration{}, err
	}
	kind := strings.ToUpper(strings.TrimSpace(in.Type))
	if !webhooks.ValidKind(kind) {
		return storage.Integration{}, core.Invalid("type", "type must be one of DISCORD, TELEGRAM, SLACK, CUSTOM")
	}
	evs, err := validEvents(in.Events)
	if err != nil {
		return storage.Integration{}, err
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return storage.Integration{}, err
	}
	u, err := s.validURL(ctx, kind, in.URL)
	if err != nil {
		return storage.Integration{}, err
	}
	enabled := true
	if in.Enabled != nil {
		enabled = *in.Enabled
	}
	now := storage.Truncate(s.now())
	i := storage.Integration{ID: uuid.NewString(), AppID: appID, Name: name, Kind: kind, URL: u, Events: evs,
		Enabled: enabled, CreatedAt: now, UpdatedAt: now}
	if kind == webhooks.KindCustom {
		i.Secret = newSecret()
	}
	octx, ch := events.Begin(ctx, s.bus)
	ch.Add(integrationEvent(events.IntegrationCreate, i))
	audit.Created(ctx, i)
	if err := s.store.CreateIntegration(octx, i); err != nil {
		return storage.Integration{}, notFound(err)
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.Integration{}, err
	}
	return i, nil
}

func newSecret() string { return secretPrefix + secrets.Random(32) }

func notFound(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return core.E(core.CodeNotFound, "integration not found")
	}
	return err
}

// List answers the app's integrations, oldest first.
func (s *Service) List(ctx context.Context, o apps.Owner, appID string) ([]storage.Integration, error) {
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	return s.store.ListIntegrations(ctx, appID)
}

// Get answers one integration.
func (s *Service) Get(ctx context.Context, o apps.Owner, appID, id string) (storage.Integration, error) {
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return storage.Integration{}, err
	}
	i, err := s.store.GetIntegration(ctx, appID, id)
	return i, notFound(err)
}

// Update changes name, URL, events or enabled. Enabling an integration clears the failure
// count and the reason the queue disabled it.
func (s *Service) Update(ctx context.Context, o apps.Owner, appID, id string, in UpdateInput) (storage.Integration, error) {
	var name string
	var err error
	if in.Name != nil {
		if name, err = validName(*in.Name); err != nil {
			return storage.Integration{}, err
		}
	}
	var evs []string
	if in.Events != nil {
		if evs, err = validEvents(in.Events); err != nil {
			return storage.Integration{}, err
		}
	}
	cur, err := s.Get(ctx, o, appID, id)
	if err != nil {
		return storage.Integration{}, err
	}
	var u string
	if in.URL != nil {
		if u, err = s.validURL(ctx, cur.Kind, *in.URL); err != nil {
			return storage.Integration{}, err
		}
	}
	octx, ch := events.Begin(ctx, s.bus)
	i, err := s.store.UpdateIntegration(octx, appID, id, audit.Track(ctx, func(i *storage.Integration) error {
		if in.Name != nil {
			i.Name = name
		}
		if in.URL != nil {
			i.URL = u
		}
		if evs != nil {
			i.Events = evs
		}
		if in.Enabled != nil {
			if *in.Enabled && (!i.Enabled || i.DisabledReason != "") {
				i.ConsecutiveFailures, i.DisabledReason = 0, ""
			}
			i.Enabled = *in.Enabled
		}
		i.UpdatedAt = storage.Truncate(s.now())
		ch.Set(integrationEvent(events.IntegrationUpdate, *i))
		return nil
	}))
	if err != nil {
		return storage.Integration{}, notFound(err)
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.Integration{}, err
	}
	return i, nil
}

// Delete removes the integration with its queued deliveries and attempts.
func (s *Service) Delete(ctx context.Context, o apps.Owner, appID, id string) error {
	i, err := s.Get(ctx, o, appID, id)
	if err != nil {
		return err
	}
	octx, ch := events.Begin(ctx, s.bus)
	ch.Add(integrationEvent(events.IntegrationDelete, i))
	if err := s.store.DeleteIntegration(octx, appID, id); err != nil {
		return notFound(err)
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	return nil
}

// RegenerateSecret replaces a CUSTOM integration's signing secret; the old one stops
// signing at once (deliveries still queued are signed when sent, with the new one).
func (s *Service) RegenerateSecret(ctx context.Context, o apps.Owner, appID, id string) (string, error) {
	cur, err := s.Get(ctx, o, appID, id)
	if err != nil {
		return "", err
	}
	if cur.Kind != webhooks.KindCustom {
		return "", core.Invalid("type", "only CUSTOM integrations have a signing secret")
	}
	secret := newSecret()
	// No event: audit.Own has the write carry its audit entry (the secret redacted).
	_, err = s.store.UpdateIntegration(audit.Own(ctx), appID, id, audit.Track(ctx, func(i *storage.Integration) error {
		i.Secret, i.UpdatedAt = secret, storage.Truncate(s.now())
		return nil
	}))
	if err != nil {
		return "", notFound(err)
	}
	return secret, nil
}

// TestResult is what a test send did.
type TestResult struct {
	Delivered  bool
	StatusCode int
	Latency    time.Duration
	Error      string
	Message    string
}

// Test sends a sample message now, whether or not the integration is enabled, records the
// attempt with the others and says how it went. A failed send is a result, not an error.
func (s *Service) Test(ctx context.Context, o apps.Owner, appID, id string) (TestResult, error) {
	i, err := s.Get(ctx, o, appID, id)
	if err != nil {
		return TestResult{}, err
	}
	now := s.now()
	e := webhooks.Event{ID: uuid.NewString(), Name: TestEvent, AppID: appID, Time: now,
		Message: "Test message from Keyward: integration " + i.Name + " works.",
		Data:    map[string]any{"integration": i.Name, "type": i.Kind}}
	req, err := webhooks.BuildAt(i.Kind, i.URL, e, i.Secret, now)
	if err != nil {
		return TestResult{}, fmt.Errorf("test integration %s: %w", i.ID, err)
	}
	a := webhooks.Deliver(ctx, s.client, req)
	rec := attemptRecord(i, "", TestEvent, 1, a, storage.Truncate(s.now()))
	// The attempt's record is the test's change: its audit entry rides that insert.
	if err := s.store.AddDeliveryAttempt(audit.Own(ctx), rec); err != nil {
		return TestResult{}, fmt.Errorf("record test attempt: %w", err)
	}
	res := TestResult{Delivered: a.OK(), StatusCode: a.StatusCode, Latency: a.Latency, Error: a.Err}
	if a.OK() {
		res.Message = fmt.Sprintf("test message delivered (HTTP %d)", a.StatusCode)
	} else {
		res.Message = "test message not delivered: " + a.Err
	}
	return res, nil
}

// Attempts answers one page of the integration's delivery attempts, newest first.
func (s *Service) Attempts(ctx context.Context, o apps.Owner, appID, id string, p storage.Page) ([]storage.DeliveryAttempt, int, error) {
	if _, err := s.Get(ctx, o, appID, id); err != nil {
		return nil, 0, err
	}
	return s.store.ListDeliveryAttempts(ctx, appID, id, p)
}

func attemptRecord(i storage.Integration, deliveryID, event string, n int, a webhooks.Attempt, at time.Time) storage.DeliveryAttempt {
	return storage.DeliveryAttempt{ID: uuid.NewString(), AppID: i.AppID, IntegrationID: i.ID, DeliveryID: deliveryID,
		Event: event, Attempt: n, Success: a.OK(), StatusCode: a.StatusCode, Latency: a.Latency.Truncate(time.Millisecond),
		Error: a.Err, Response: a.Response, CreatedAt: at}
}

// integrationEvent is the event of a change of i, stored with the change (events.Change).
func integrationEvent(name events.Type, i storage.Integration) events.Event {
	return events.Event{Name: name, AppID: i.AppID, Message: fmt.Sprintf("%s integration %s", i.Kind, i.Name),
		Data: map[string]any{"integrationId": i.ID, "name": i.Name, "type": i.Kind, "enabled": i.Enabled}}
}

// MaskURL is the listed form of a webhook URL: scheme and host only. Paths and queries
// of webhook URLs hold the credentials (Discord and Slack tokens, Telegram bot tokens).
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "***"
	}
	return u.Scheme + "://" + u.Host + "/***"
}
