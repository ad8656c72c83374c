// Package variables owns app, user and license variables (SPEC 4.6): typed values checked
// against their type on every write, keys unique within their owner, lists sorted by key,
// license variables only on plans that include them, and one event per change
// (variable.create, variable.update, variable.delete) on the event bus, which the log, the
// webhooks and the WebSocket fan-out consume.
package variables

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/storage"
)

// Types of variable values.
const (
	TypeString = "STRING"
	TypeInt    = "INT"
	TypeFloat  = "FLOAT"
	TypeBool   = "BOOL"
	TypeJSON   = "JSON"
)

// Bounds documented in docs/API.md.
const (
	MaxKeyLength   = 128
	MaxValueLength = 64 << 10
	MaxBulk        = 500
)

// CheckType normalises a type name (default STRING) and refuses unknown ones.
func CheckType(field, typ string) (string, error) {
	switch t := strings.ToUpper(strings.TrimSpace(typ)); t {
	case "":
		return TypeString, nil
	case TypeString, TypeInt, TypeFloat, TypeBool, TypeJSON:
		return t, nil
	}
	return "", core.Invalid(field, "%s must be one of STRING, INT, FLOAT, BOOL, JSON", field)
}

// CheckValue refuses a value that is not of the type.
func CheckValue(field, typ, value string) error {
	if len(value) > MaxValueLength {
		return core.Invalid(field, "%s must be at most %d bytes", field, MaxValueLength)
	}
	switch typ {
	case TypeInt:
		if _, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err != nil {
			return core.Invalid(field, "%s must be an integer for type INT", field)
		}
	case TypeFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return core.Invalid(field, "%s must be a finite number for type FLOAT", field)
		}
	case TypeBool:
		if value != "true" && value != "false" {
			return core.Invalid(field, "%s must be true or false for type BOOL", field)
		}
	case TypeJSON:
		if !json.Valid([]byte(value)) {
			return core.Invalid(field, "%s must be valid JSON for type JSON", field)
		}
	}
	return nil
}

// CheckKey refuses empty, overlong or control-character keys.
func CheckKey(field, key string) error {
	if key == "" {
		return core.Invalid(field, "%s is required", field)
	}
	if len(key) > MaxKeyLength {
		return core.Invalid(field, "%s must be at most %d characters", field, MaxKeyLength)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f {
			return core.Invalid(field, "%s must not contain control characters", field)
		}
	}
	return nil
}

// Records is what the service reads and writes.
type Records interface {
	storage.VariableStore
	GetUser(ctx context.Context, appID, id string) (storage.AppUser, error)
	GetLicense(ctx context.Context, appID, id string) (storage.License, error)
}

// Service runs the variable flows.
type Service struct {
	store Records
	apps  interface {
		GetApp(ctx context.Context, o apps.Owner, appID string) (storage.App, error)
	}
	plans *plans.Catalogue
	bus   events.Publisher
	now   func() time.Time
}

// New builds the service.
func New(store Records, appsSvc *apps.Service, catalogue *plans.Catalogue, bus events.Publisher, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, apps: appsSvc, plans: catalogue, bus: bus, now: now}
}

// Input is one variable to write; Type and Value may be nil on update (unchanged).
type Input struct {
	Key   string
	Value *string
	Type  *string
}

// Target names whose variables are meant: the app, a user or a license of it.
type Target struct {
	Scope   string
	OwnerID string // user or license id; "" for the app
}

// check validates the caller's access to the target: app ownership, the user or license
// existing in the app, and the plan feature for license variables.
func (s *Service) check(ctx context.Context, o apps.Owner, appID string, t Target) error {
	if t.Scope == storage.ScopeLicense && !s.plans.MustGet(o.Plan).Has(plans.FeatureLicenseVariables) {
		return core.E(core.CodePlanFeature, "license variables need the Pro plan or higher")
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return err
	}
	var err error
	switch t.Scope {
	case storage.ScopeUser:
		_, err = s.store.GetUser(ctx, appID, t.OwnerID)
		if errors.Is(err, storage.ErrNotFound) {
			return core.E(core.CodeNotFound, "user not found")
		}
	case storage.ScopeLicense:
		_, err = s.store.GetLicense(ctx, appID, t.OwnerID)
		if errors.Is(err, storage.ErrNotFound) {
			return core.E(core.CodeNotFound, "license not found")
		}
	}
	return err
}

// newVariable validates one input into a record.
func (s *Service) newVariable(appID string, t Target, in Input, prefix string) (storage.Variable, error) {
	if err := CheckKey(prefix+"key", in.Key); err != nil {
		return storage.Variable{}, err
	}
	if in.Value == nil {
		return storage.Variable{}, core.Invalid(prefix+"value", "%svalue is required", prefix)
	}
	typ := ""
	if in.Type != nil {
		typ = *in.Type
	}
	typ, err := CheckType(prefix+"type", typ)
	if err != nil {
		return storage.Variable{}, err
	}
	if t.Scope == storage.ScopeUser {
		typ = TypeString // user variables are plain strings (SPEC 2)
	}
	if err := CheckValue(prefix+"value", typ, *in.Value); err != nil {
		return storage.Variable{}, err
	}
	now := storage.Truncate(s.now())
	return storage.Variable{ID: uuid.NewString(), AppID: appID, Scope: t.Scope, OwnerID: t.OwnerID, Key: in.Key,
		Value: *in.Value, Type: typ, CreatedAt: now, UpdatedAt: now}, nil
}

func conflict(err error, key string) error {
	if errors.Is(err, storage.ErrConflict) {
		return core.E(core.CodeConflict, "a variable with the key %q exists", key)
	}
	return err
}

// Create adds one variable.
func (s *Service) Create(ctx context.Context, o apps.Owner, appID string, t Target, in Input) (storage.Variable, error) {
	v, err := s.newVariable(appID, t, in, "")
	if err != nil {
		return storage.Variable{}, err
	}
	if err := s.check(ctx, o, appID, t); err != nil {
		return storage.Variable{}, err
	}
	octx, ch := events.Begin(ctx, s.bus)
	ch.Add(variableEvent(events.VariableCreate, v))
	audit.Created(ctx, v)
	if err := s.store.CreateVariables(octx, []storage.Variable{v}); err != nil {
		return storage.Variable{}, conflict(err, v.Key)
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.Variable{}, err
	}
	return v, nil
}

// CreateMany adds app variables all or nothing: one invalid entry refuses the batch.
func (s *Service) CreateMany(ctx context.Context, o apps.Owner, appID string, t Target, ins []Input) ([]storage.Variable, error) {
	if len(ins) == 0 || len(ins) > MaxBulk {
		return nil, core.Invalid("variables", "variables must hold 1 to %d entries", MaxBulk)
	}
	out := make([]storage.Variable, 0, len(ins))
	seen := map[string]bool{}
	for i, in := range ins {
		v, err := s.newVariable(appID, t, in, fmt.Sprintf("variables[%d].", i))
		if err != nil {
			return nil, err
		}
		if seen[v.Key] {
			return nil, core.Invalid(fmt.Sprintf("variables[%d].key", i), "the key %q appears twice", v.Key)
		}
		seen[v.Key] = true
		out = append(out, v)
	}
	if err := s.check(ctx, o, appID, t); err != nil {
		return nil, err
	}
	octx, ch := events.Begin(ctx, s.bus)
	for _, v := range out {
		ch.Add(variableEvent(events.VariableCreate, v))
		audit.Created(ctx, v)
	}
	if err := s.store.CreateVariables(octx, out); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil, core.E(core.CodeConflict, "one of the keys exists already; nothing was created")
		}
		return nil, err
	}
	if err := ch.Commit(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// List answers the target's variables sorted by key.
func (s *Service) List(ctx context.Context, o apps.Owner, appID string, t Target) ([]storage.Variable, error) {
	if err := s.check(ctx, o, appID, t); err != nil {
		return nil, err
	}
	return s.store.ListVariables(ctx, appID, t.Scope, t.OwnerID)
}

// get reads a variable of the target, NOT_FOUND when it belongs elsewhere.
func (s *Service) get(ctx context.Context, appID string, t Target, id string) (storage.Variable, error) {
	v, err := s.store.GetVariable(ctx, appID, id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (v.Scope != t.Scope || v.OwnerID != t.OwnerID)) {
		return storage.Variable{}, core.E(core.CodeNotFound, "variable not found")
	}
	return v, err
}

// Update changes the value and/or type; the value is checked against the resulting type.
func (s *Service) Update(ctx context.Context, o apps.Owner, appID string, t Target, id string, in Input) (storage.Variable, error) {
	if in.Value == nil && in.Type == nil {
		return storage.Variable{}, core.Invalid("value", "give value, type or both")
	}
	var typ string
	if in.Type != nil {
		var err error
		if typ, err = CheckType("type", *in.Type); err != nil {
			return storage.Variable{}, err
		}
		if t.Scope == storage.ScopeUser && typ != TypeString {
			return storage.Variable{}, core.Invalid("type", "user variables are strings")
		}
	}
	if err := s.check(ctx, o, appID, t); err != nil {
		return storage.Variable{}, err
	}
	if _, err := s.get(ctx, appID, t, id); err != nil {
		return storage.Variable{}, err
	}
	octx, ch := events.Begin(ctx, s.bus)
	v, err := s.store.UpdateVariable(octx, appID, id, audit.Track(ctx, func(v *storage.Variable) error {
		if in.Type != nil {
			v.Type = typ
		}
		if in.Value != nil {
			v.Value = *in.Value
		}
		if err := CheckValue("value", v.Type, v.Value); err != nil {
			return err
		}
		v.UpdatedAt = storage.Truncate(s.now())
		ch.Set(variableEvent(events.VariableUpdate, *v))
		return nil
	}))
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Variable{}, core.E(core.CodeNotFound, "variable not found")
	} else if err != nil {
		return storage.Variable{}, err
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.Variable{}, err
	}
	return v, nil
}

// Delete removes a variable.
func (s *Service) Delete(ctx context.Context, o apps.Owner, appID string, t Target, id string) error {
	if err := s.check(ctx, o, appID, t); err != nil {
		return err
	}
	v, err := s.get(ctx, appID, t, id)
	if err != nil {
		return err
	}
	octx, ch := events.Begin(ctx, s.bus)
	ch.Add(variableEvent(events.VariableDelete, v))
	if err := s.store.DeleteVariable(octx, appID, id); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return core.E(core.CodeNotFound, "variable not found")
		}
		return err
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	return nil
}

// variableEvent is the event of a change of v, stored with the change (events.Change).
func variableEvent(name events.Type, v storage.Variable) events.Event {
	data := map[string]any{"scope": v.Scope, "key": v.Key, "type": v.Type}
	if name != events.VariableDelete {
		data["value"] = v.Value
	}
	switch v.Scope {
	case storage.ScopeUser:
		data["userId"] = v.OwnerID
	case storage.ScopeLicense:
		data["licenseId"] = v.OwnerID
	}
	return events.Event{Name: name, AppID: v.AppID, Message: fmt.Sprintf("%s variable %q", v.Scope, v.Key), Data: data}
}
