package wshooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/hooks"
	"github.com/keyward/keyward/storage"
)

// Store is what the hooks are kept in.
type Store interface {
	storage.WSHookStore
}

// Apps admits an owner to an app's WebSocket features (apps.Service).
type Apps interface {
	WebSocketApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
}

// PlanOf asks the app's AppActor for the plan of a client message: the actor holds the
// app's compiled hooks (they load with its snapshot, see Load) and plans inside its
// Receive (app.Apps.Plan).
type PlanOf func(ctx context.Context, appID string, m hooks.Message) ([]hooks.Step, error)

// Service runs the owner's hook flows and plans hook actions. It keeps no compiled hooks of
// its own: they belong to the app's actor.
type Service struct {
	store Store
	apps  Apps
	plan  PlanOf
	// pub stores the app.hooks_change event of a hook's change with the change
	// (events.Change): the app's actor reloads the hooks, on this node when it is stored
	// and on every other from the event log.
	pub events.Publisher
	now func() time.Time
	log *slog.Logger
}

// New builds the service.
func New(store Store, a Apps, plan PlanOf, pub events.Publisher, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: store, apps: a, plan: plan, pub: pub, now: now, log: log}
}

// change begins a hook's change of the app: the context is for the change's own store
// call, which stores the app.hooks_change event (and the request's audit entry) with the
// change; Commit, once the call succeeded, announces it (its error is the change's).
func (s *Service) change(ctx context.Context, appID string) (context.Context, *events.Change) {
	octx, ch := events.Begin(ctx, s.pub)
	ch.Add(events.Event{Name: events.AppHooksChange, AppID: appID, Message: "WebSocket hooks changed"})
	return audit.Own(octx), ch
}

// Hook is a stored hook with its conditions and actions decoded.
type Hook struct {
	hooks.Hook
	AppID     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

func decode(h storage.WSHook) (Hook, error) {
	out := Hook{Hook: hooks.Hook{ID: h.ID, Name: h.Name, Event: h.Event, Description: h.Description, Enabled: h.Enabled,
		Priority: h.Priority}, AppID: h.AppID, CreatedAt: h.CreatedAt, UpdatedAt: h.UpdatedAt}
	if len(h.Conditions) > 0 {
		if err := json.Unmarshal(h.Conditions, &out.Conditions); err != nil {
			return Hook{}, fmt.Errorf("hook %s: conditions: %w", h.ID, err)
		}
	}
	if len(h.Actions) > 0 {
		if err := json.Unmarshal(h.Actions, &out.Actions); err != nil {
			return Hook{}, fmt.Errorf("hook %s: actions: %w", h.ID, err)
		}
	}
	if out.Conditions == nil {
		out.Conditions = []hooks.Condition{}
	}
	if out.Actions == nil {
		out.Actions = []hooks.Action{}
	}
	return out, nil
}

// encode stores h's model into r.
func encode(h hooks.Hook, r *storage.WSHook) error {
	conds := h.Conditions
	if conds == nil {
		conds = []hooks.Condition{}
	}
	c, err := json.Marshal(conds)
	if err != nil {
		return fmt.Errorf("encode conditions: %w", err)
	}
	a, err := json.Marshal(h.Actions)
	if err != nil {
		return fmt.Errorf("encode actions: %w", err)
	}
	r.Name, r.Event, r.Description, r.Enabled, r.Priority = h.Name, h.Event, h.Description, h.Enabled, h.Priority
	r.Conditions, r.Actions = c, a
	return nil
}

// List answers the app's hooks ordered by priority.
func (s *Service) List(ctx context.Context, o apps.Owner, appID string) ([]Hook, error) {
	if _, err := s.apps.WebSocketApp(ctx, o, appID); err != nil {
		return nil, err
	}
	list, err := s.store.ListWSHooks(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]Hook, 0, len(list))
	for _, h := range list {
		d, err := decode(h)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// CreateInput is the body of create; nil members take their defaults (enabled, priority 0).
type CreateInput struct {
	Name, Event, Description string
	Conditions               []hooks.Condition
	Actions                  []hooks.Action
	Enabled                  *bool
	Priority                 *int
}

// Create adds a hook after validating it; an app holds at most hooks.MaxHooksPerApp.
func (s *Service) Create(ctx context.Context, o apps.Owner, appID string, in CreateInput) (Hook, error) {
	if _, err := s.apps.WebSocketApp(ctx, o, appID); err != nil {
		return Hook{}, err
	}
	h := hooks.Hook{Name: in.Name, Event: in.Event, Description: in.Description, Conditions: in.Conditions, Actions: in.Actions, Enabled: true}
	if in.Enabled != nil {
		h.Enabled = *in.Enabled
	}
	if in.Priority != nil {
		h.Priority = *in.Priority
	}
	hooks.Normalize(&h)
	if err := hooks.Validate(h); err != nil {
		return Hook{}, err
	}
	n, err := s.store.CountWSHooks(ctx, appID)
	if err != nil {
		return Hook{}, err
	}
	if n >= hooks.MaxHooksPerApp {
		return Hook{}, core.E(core.CodePlanLimit, "an application has at most %d hooks", hooks.MaxHooksPerApp)
	}
	now := storage.Truncate(s.now())
	rec := storage.WSHook{ID: uuid.NewString(), AppID: appID, CreatedAt: now, UpdatedAt: now}
	if err := encode(h, &rec); err != nil {
		return Hook{}, err
	}
	octx, ch := s.change(ctx, appID)
	audit.Created(ctx, rec)
	if err := s.store.CreateWSHook(octx, rec); err != nil {
		return Hook{}, err
	}
	if err := ch.Commit(ctx); err != nil {
		return Hook{}, err
	}
	return decode(rec)
}

// UpdateInput holds the members to change; nil members stay as they are.
type UpdateInput struct {
	Name, Event, Description *string
	Conditions               *[]hooks.Condition
	Actions                  *[]hooks.Action
	Enabled                  *bool
	Priority                 *int
}

var errHookNotFound = core.E(core.CodeNotFound, "hook not found")

// Update changes the given members; the whole hook is validated again.
func (s *Service) Update(ctx context.Context, o apps.Owner, appID, hookID string, in UpdateInput) (Hook, error) {
	if _, err := s.apps.WebSocketApp(ctx, o, appID); err != nil {
		return Hook{}, err
	}
	octx, ch := s.change(ctx, appID)
	rec, err := s.store.UpdateWSHook(octx, appID, hookID, audit.Track(ctx, func(r *storage.WSHook) error {
		cur, err := decode(*r)
		if err != nil {
			return err
		}
		h := cur.Hook
		core.Set(&h.Name, in.Name)
		core.Set(&h.Event, in.Event)
		core.Set(&h.Description, in.Description)
		core.Set(&h.Conditions, in.Conditions)
		core.Set(&h.Actions, in.Actions)
		core.Set(&h.Enabled, in.Enabled)
		core.Set(&h.Priority, in.Priority)
		hooks.Normalize(&h)
		if err := hooks.Validate(h); err != nil {
			return err
		}
		r.UpdatedAt = storage.Truncate(s.now())
		return encode(h, r)
	}))
	if errors.Is(err, storage.ErrNotFound) {
		return Hook{}, errHookNotFound
	}
	if err != nil {
		return Hook{}, err
	}
	if err := ch.Commit(ctx); err != nil {
		return Hook{}, err
	}
	return decode(rec)
}

// Delete removes a hook.
func (s *Service) Delete(ctx context.Context, o apps.Owner, appID, hookID string) error {
	if _, err := s.apps.WebSocketApp(ctx, o, appID); err != nil {
		return err
	}
	octx, ch := s.change(ctx, appID)
	err := s.store.DeleteWSHook(octx, appID, hookID)
	if errors.Is(err, storage.ErrNotFound) {
		return errHookNotFound
	}
	if err != nil {
		return err
	}
	return ch.Commit(ctx)
}

var _ realtime.Planner = (*Service)(nil)

// Plan has the app's actor run its enabled hooks over a client message and answers the
// actions to carry out, in priority order.
func (s *Service) Plan(ctx context.Context, appID string, m realtime.HookInput) ([]realtime.HookAction, error) {
	steps, err := s.plan(ctx, appID, hooks.Message{Type: m.Type, Fields: m.Fields, UserID: m.UserID, Username: m.Username, IP: m.IP})
	if err != nil {
		return nil, err
	}
	out := make([]realtime.HookAction, 0, len(steps))
	for _, st := range steps {
		a := st.Action
		out = append(out, realtime.HookAction{HookID: st.HookID, HookName: st.HookName, Type: a.Type, Target: st.Target,
			UserID: st.UserID, Message: a.Message, MessageType: a.MessageType, Reason: a.Reason, Level: a.Level, Payload: a.Payload})
	}
	return out, nil
}

// Reader is what loading an app's hooks reads.
type Reader interface {
	ListWSHooks(ctx context.Context, appID string) ([]storage.WSHook, error)
}

// Load reads and compiles an app's hooks, for its actor's snapshot. A hook that cannot be
// read or no longer validates is skipped with a log line (one bad hook must not silence
// the others, nor stop the app's snapshot from loading); a storage error fails the load.
func Load(ctx context.Context, store Reader, appID string, log *slog.Logger) (*hooks.Pipeline, error) {
	list, err := store.ListWSHooks(ctx, appID)
	if err != nil {
		return nil, fmt.Errorf("wshooks: read hooks of %s: %w", appID, err)
	}
	model := make([]hooks.Hook, 0, len(list))
	for _, r := range list {
		h, err := decode(r)
		if err != nil {
			log.Warn("wshooks: skipping an unreadable hook", "app", appID, "err", err)
			continue
		}
		if h.Enabled {
			hooks.Normalize(&h.Hook)
			if err := hooks.Validate(h.Hook); err != nil {
				// Stored hooks were valid when written; one that no longer is (a bound
				// tightened since) is skipped.
				log.Warn("wshooks: skipping a hook that does not validate", "app", appID, "hook", h.ID, "err", err)
				continue
			}
		}
		if len(model) == hooks.MaxHooksPerApp {
			break
		}
		model = append(model, h.Hook)
	}
	p, err := hooks.Compile(model)
	if err != nil {
		// Validated hooks compile; if one does not, the app runs no hooks until the
		// owner fixes it rather than failing its client API.
		log.Error("wshooks: cannot compile the hooks of an app; none run", "app", appID, "err", err)
		return hooks.Compile(nil)
	}
	return p, nil
}
