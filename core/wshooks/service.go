package wshooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
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

// changedTopic carries the id of an app whose hooks changed, to every node.
const changedTopic = "ws-hooks-changed"

// maxAge is how long a node uses an app's compiled hooks before reading them again, in
// case a change announcement was lost (the bus delivers at most once).
const maxAge = time.Minute

// Service runs the owner's hook flows and plans hook actions.
type Service struct {
	store Store
	apps  Apps
	bus   cluster.Bus
	now   func() time.Time
	log   *slog.Logger

	mu       sync.Mutex
	compiled map[string]compiledHooks // by app id
	// forgets counts forget calls: a load that raced with a change is not kept.
	forgets uint64

	unsubscribe func()
}

type compiledHooks struct {
	p      *hooks.Pipeline
	loaded time.Time
}

// New builds the service; Start subscribes it to hook changes of other nodes.
func New(store Store, a Apps, bus cluster.Bus, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Service{store: store, apps: a, bus: bus, now: now, log: log, compiled: map[string]compiledHooks{}}
}

// Start subscribes to hook changes announced by any node.
func (s *Service) Start(ctx context.Context) error {
	unsub, err := s.bus.Subscribe(ctx, changedTopic, func(p []byte) { s.forget(string(p)) })
	if err != nil {
		return fmt.Errorf("wshooks: subscribe: %w", err)
	}
	s.unsubscribe = unsub
	return nil
}

// Close ends the subscription.
func (s *Service) Close() {
	if s.unsubscribe != nil {
		s.unsubscribe()
	}
}

func (s *Service) forget(appID string) {
	s.mu.Lock()
	delete(s.compiled, appID)
	s.forgets++
	s.mu.Unlock()
}

// maxCompiled bounds the apps whose compiled hooks a node keeps; past it, entries older
// than maxAge are swept.
const maxCompiled = 10_000

// announce drops the app's compiled hooks here and on every other node.
func (s *Service) announce(ctx context.Context, appID string) {
	s.forget(appID)
	if err := s.bus.Publish(ctx, changedTopic, []byte(appID)); err != nil {
		s.log.Warn("wshooks: cannot announce a hook change; other nodes see it within a minute", "app", appID, "err", err)
	}
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
	if err := s.store.CreateWSHook(ctx, rec); err != nil {
		return Hook{}, err
	}
	s.announce(ctx, appID)
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
	rec, err := s.store.UpdateWSHook(ctx, appID, hookID, func(r *storage.WSHook) error {
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
	})
	if errors.Is(err, storage.ErrNotFound) {
		return Hook{}, errHookNotFound
	}
	if err != nil {
		return Hook{}, err
	}
	s.announce(ctx, appID)
	return decode(rec)
}

// Delete removes a hook.
func (s *Service) Delete(ctx context.Context, o apps.Owner, appID, hookID string) error {
	if _, err := s.apps.WebSocketApp(ctx, o, appID); err != nil {
		return err
	}
	err := s.store.DeleteWSHook(ctx, appID, hookID)
	if errors.Is(err, storage.ErrNotFound) {
		return errHookNotFound
	}
	if err != nil {
		return err
	}
	s.announce(ctx, appID)
	return nil
}

var _ realtime.Planner = (*Service)(nil)

// Plan runs the app's enabled hooks over a client message and answers the actions to
// carry out, in priority order.
func (s *Service) Plan(ctx context.Context, appID string, m realtime.HookInput) ([]realtime.HookAction, error) {
	p, err := s.pipeline(ctx, appID)
	if err != nil {
		return nil, err
	}
	steps := p.Plan(hooks.Message{Type: m.Type, Fields: m.Fields, UserID: m.UserID, Username: m.Username, IP: m.IP})
	out := make([]realtime.HookAction, 0, len(steps))
	for _, st := range steps {
		a := st.Action
		out = append(out, realtime.HookAction{HookID: st.HookID, HookName: st.HookName, Type: a.Type, Target: st.Target,
			UserID: st.UserID, Message: a.Message, MessageType: a.MessageType, Reason: a.Reason, Level: a.Level, Payload: a.Payload})
	}
	return out, nil
}

// pipeline answers the app's compiled hooks, reading them when this node has none or
// they are older than maxAge.
func (s *Service) pipeline(ctx context.Context, appID string) (*hooks.Pipeline, error) {
	now := s.now()
	s.mu.Lock()
	c, ok := s.compiled[appID]
	gen := s.forgets
	s.mu.Unlock()
	if ok && now.Sub(c.loaded) < maxAge {
		return c.p, nil
	}
	list, err := s.store.ListWSHooks(ctx, appID)
	if err != nil {
		return nil, fmt.Errorf("wshooks: read hooks of %s: %w", appID, err)
	}
	model := make([]hooks.Hook, 0, len(list))
	for _, r := range list {
		h, err := decode(r)
		if err != nil {
			// One unreadable hook must not silence the others.
			s.log.Warn("wshooks: skipping an unreadable hook", "app", appID, "err", err)
			continue
		}
		if h.Enabled {
			hooks.Normalize(&h.Hook)
			if err := hooks.Validate(h.Hook); err != nil {
				// Stored hooks were valid when written; one that no longer is (a bound
				// tightened since) is skipped, not allowed to stop the app's other hooks.
				s.log.Warn("wshooks: skipping a hook that does not validate", "app", appID, "hook", h.ID, "err", err)
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
		return nil, fmt.Errorf("wshooks: compile hooks of %s: %w", appID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forgets != gen {
		return p, nil // a change came in meanwhile: use this one, keep none
	}
	if len(s.compiled) >= maxCompiled {
		for id, c := range s.compiled {
			if now.Sub(c.loaded) >= maxAge {
				delete(s.compiled, id)
			}
		}
	}
	s.compiled[appID] = compiledHooks{p: p, loaded: now}
	return p, nil
}
