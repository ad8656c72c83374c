package rules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// Bounds of the rule API.
const (
	MaxNoteLength = 500
	MaxBulk       = 500
)

// AppAccess checks that the caller owns the app (apps.Service).
type AppAccess interface {
	GetApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
}

// Service runs the owner's rule flows (SPEC 4.7).
type Service struct {
	store storage.RuleStore
	apps  AppAccess
	bus   events.Publisher
	now   func() time.Time
	// countryAvailable says whether a country source is configured; without one, country
	// rules are stored but inactive, and the API says so.
	countryAvailable bool
}

// NewService builds the service.
func NewService(store storage.RuleStore, access AppAccess, bus events.Publisher, countryAvailable bool, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, apps: access, bus: bus, countryAvailable: countryAvailable, now: now}
}

// CountryRulesActive reports whether country rules take effect on this installation.
func (s *Service) CountryRulesActive() bool { return s.countryAvailable }

// Input is one rule to create.
type Input struct {
	Type, Action, Value, Note string
	Enabled                   *bool
}

func (s *Service) build(appID string, in Input, prefix string) (storage.Rule, error) {
	if err := ValidateType(prefix+"type", in.Type); err != nil {
		return storage.Rule{}, err
	}
	if err := ValidateAction(prefix+"action", in.Action); err != nil {
		return storage.Rule{}, err
	}
	value, err := ValidateValue(in.Type, in.Value)
	if err != nil {
		var de *core.Error
		if errors.As(err, &de) && prefix != "" {
			de.Field = prefix + de.Field
		}
		return storage.Rule{}, err
	}
	if len([]rune(in.Note)) > MaxNoteLength {
		return storage.Rule{}, core.Invalid(prefix+"note", "note must be at most %d characters", MaxNoteLength)
	}
	enabled := true
	if in.Enabled != nil {
		enabled = *in.Enabled
	}
	now := storage.Truncate(s.now())
	return storage.Rule{ID: uuid.NewString(), AppID: appID, Type: in.Type, Action: in.Action, Value: value, Note: in.Note,
		Enabled: enabled, CreatedAt: now, UpdatedAt: now}, nil
}

// Create adds one rule.
func (s *Service) Create(ctx context.Context, o apps.Owner, appID string, in Input) (storage.Rule, error) {
	list, err := s.CreateMany(ctx, o, appID, []Input{in}, false)
	if err != nil {
		return storage.Rule{}, err
	}
	return list[0], nil
}

// CreateMany adds rules all or nothing.
func (s *Service) CreateMany(ctx context.Context, o apps.Owner, appID string, ins []Input, bulk bool) ([]storage.Rule, error) {
	if bulk && (len(ins) == 0 || len(ins) > MaxBulk) {
		return nil, core.Invalid("rules", "rules must hold 1 to %d entries", MaxBulk)
	}
	out := make([]storage.Rule, 0, len(ins))
	seen := map[string]bool{}
	for i, in := range ins {
		prefix := ""
		if bulk {
			prefix = fmt.Sprintf("rules[%d].", i)
		}
		r, err := s.build(appID, in, prefix)
		if err != nil {
			return nil, err
		}
		k := r.Type + "|" + r.Action + "|" + r.Value
		if seen[k] {
			return nil, core.Invalid(prefix+"value", "the same rule appears twice")
		}
		seen[k] = true
		out = append(out, r)
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	octx, ch := events.Begin(ctx, s.bus)
	for _, r := range out {
		ch.Add(ruleEvent(events.RuleCreate, r))
		audit.Created(ctx, r)
	}
	if err := s.store.CreateRules(octx, out); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil, core.E(core.CodeConflict, "an identical rule exists already; nothing was created")
		}
		return nil, err
	}
	if err := ch.Commit(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// List answers the app's rules filtered by type and action.
func (s *Service) List(ctx context.Context, o apps.Owner, appID, typ, action string) ([]storage.Rule, error) {
	if typ != "" {
		if err := ValidateType("type", typ); err != nil {
			return nil, err
		}
	}
	if action != "" {
		if err := ValidateAction("action", action); err != nil {
			return nil, err
		}
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	return s.store.ListRules(ctx, appID, storage.RuleQuery{Type: typ, Action: action})
}

// UpdateInput holds the members to change.
type UpdateInput struct {
	Value, Note *string
	Enabled     *bool
}

// Update changes value, note or enabled; a new value is validated against the rule's type.
func (s *Service) Update(ctx context.Context, o apps.Owner, appID, id string, in UpdateInput) (storage.Rule, error) {
	if in.Note != nil && len([]rune(*in.Note)) > MaxNoteLength {
		return storage.Rule{}, core.Invalid("note", "note must be at most %d characters", MaxNoteLength)
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return storage.Rule{}, err
	}
	octx, ch := events.Begin(ctx, s.bus)
	r, err := s.store.UpdateRule(octx, appID, id, audit.Track(ctx, func(r *storage.Rule) error {
		if in.Value != nil {
			v, err := ValidateValue(r.Type, strings.TrimSpace(*in.Value))
			if err != nil {
				return err
			}
			r.Value = v
		}
		if in.Note != nil {
			r.Note = *in.Note
		}
		if in.Enabled != nil {
			r.Enabled = *in.Enabled
		}
		r.UpdatedAt = storage.Truncate(s.now())
		ch.Set(ruleEvent(events.RuleUpdate, *r))
		return nil
	}))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return storage.Rule{}, core.E(core.CodeNotFound, "rule not found")
	case errors.Is(err, storage.ErrConflict):
		return storage.Rule{}, core.E(core.CodeConflict, "an identical rule exists already")
	case err != nil:
		return storage.Rule{}, err
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.Rule{}, err
	}
	return r, nil
}

// Delete removes a rule.
func (s *Service) Delete(ctx context.Context, o apps.Owner, appID, id string) error {
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return err
	}
	r, err := s.store.GetRule(ctx, appID, id)
	octx, ch := events.Begin(ctx, s.bus)
	if err == nil {
		ch.Add(ruleEvent(events.RuleDelete, r))
		err = s.store.DeleteRule(octx, appID, id)
	}
	if errors.Is(err, storage.ErrNotFound) {
		return core.E(core.CodeNotFound, "rule not found")
	} else if err != nil {
		return err
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	return nil
}

// ruleEvent is the event of a change of r, stored with the change (events.Change).
func ruleEvent(name events.Type, r storage.Rule) events.Event {
	return events.Event{Name: name, AppID: r.AppID, Message: fmt.Sprintf("%s %s rule %s", r.Action, r.Type, r.Value),
		Data: map[string]any{"ruleId": r.ID, "type": r.Type, "action": r.Action, "value": r.Value, "enabled": r.Enabled}}
}
