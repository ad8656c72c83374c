package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/variables"
	"github.com/keyward/keyward/storage"
)

// Bounds of client data calls.
const (
	MaxLogMessage = 2000
	MaxLogData    = 8 << 10
	maxEventName  = 64
)

// Variables answers the app's variables, sorted by key.
func (s *Service) Variables(ctx context.Context, call Call) ([]storage.Variable, error) {
	return s.d.Store.ListVariables(ctx, call.Snap.App.ID, storage.ScopeApp, "")
}

// Variable answers one app variable by key.
func (s *Service) Variable(ctx context.Context, call Call, key string) (storage.Variable, error) {
	return s.oneVariable(ctx, call.Snap.App.ID, storage.ScopeApp, "", key)
}

func (s *Service) oneVariable(ctx context.Context, appID, scope, owner, key string) (storage.Variable, error) {
	if key == "" {
		return storage.Variable{}, core.Invalid("key", "key is required")
	}
	if len(key) > variables.MaxKeyLength {
		return storage.Variable{}, core.Invalid("key", "key must be at most %d characters", variables.MaxKeyLength)
	}
	v, err := s.d.Store.GetVariableByKey(ctx, appID, scope, owner, key)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Variable{}, core.E(core.CodeNotFound, "no variable with the key %q", key)
	}
	return v, err
}

// licenseOf answers the active license of the session's user (license variables are Pro+).
func (s *Service) licenseOf(ctx context.Context, call Call) (string, error) {
	if !call.Snap.Plan.Has(plans.FeatureLicenseVariables) {
		return "", core.E(core.CodePlanFeature, "license variables need the Pro plan or higher")
	}
	u, err := s.CurrentUser(ctx, call)
	if err != nil {
		return "", err
	}
	return u.LicenseID, nil
}

// LicenseVariables answers the variables of the user's active license ([] without one).
func (s *Service) LicenseVariables(ctx context.Context, call Call) ([]storage.Variable, error) {
	lic, err := s.licenseOf(ctx, call)
	if err != nil || lic == "" {
		return []storage.Variable{}, err
	}
	return s.d.Store.ListVariables(ctx, call.Snap.App.ID, storage.ScopeLicense, lic)
}

// LicenseVariable answers one variable of the user's active license.
func (s *Service) LicenseVariable(ctx context.Context, call Call, key string) (storage.Variable, error) {
	lic, err := s.licenseOf(ctx, call)
	if err != nil {
		return storage.Variable{}, err
	}
	if lic == "" {
		return storage.Variable{}, core.E(core.CodeNotFound, "the user has no active license")
	}
	return s.oneVariable(ctx, call.Snap.App.ID, storage.ScopeLicense, lic, key)
}

// UserVariables answers the signed-in user's variables.
func (s *Service) UserVariables(ctx context.Context, call Call) ([]storage.Variable, error) {
	u, err := s.CurrentUser(ctx, call)
	if err != nil {
		return nil, err
	}
	return s.d.Store.ListVariables(ctx, call.Snap.App.ID, storage.ScopeUser, u.ID)
}

// UserVariable answers one of the signed-in user's variables.
func (s *Service) UserVariable(ctx context.Context, call Call, key string) (storage.Variable, error) {
	u, err := s.CurrentUser(ctx, call)
	if err != nil {
		return storage.Variable{}, err
	}
	return s.oneVariable(ctx, call.Snap.App.ID, storage.ScopeUser, u.ID, key)
}

// SetUserVariable creates the user's variable, or overwrites it when the key exists.
func (s *Service) SetUserVariable(ctx context.Context, call Call, key, value string) (storage.Variable, error) {
	if key == "" {
		return storage.Variable{}, core.Invalid("key", "key is required")
	}
	if len(key) > variables.MaxKeyLength {
		return storage.Variable{}, core.Invalid("key", "key must be at most %d characters", variables.MaxKeyLength)
	}
	u, err := s.CurrentUser(ctx, call)
	if err != nil {
		return storage.Variable{}, err
	}
	appID, now := call.Snap.App.ID, s.now()
	for try := 0; try < 3; try++ {
		cur, err := s.d.Store.GetVariableByKey(ctx, appID, storage.ScopeUser, u.ID, key)
		if errors.Is(err, storage.ErrNotFound) {
			v := storage.Variable{ID: uuid.NewString(), AppID: appID, Scope: storage.ScopeUser, OwnerID: u.ID, Key: key,
				Value: value, Type: variables.TypeString, CreatedAt: now, UpdatedAt: now}
			if err := variables.CheckValue("value", v.Type, value); err != nil {
				return storage.Variable{}, err
			}
			octx, ch := events.Begin(ctx, s.d.Bus)
			ch.Add(userVariableEvent(call, u, events.VariableCreate, v))
			err = s.d.Store.CreateVariables(octx, []storage.Variable{v})
			if errors.Is(err, storage.ErrConflict) {
				continue // created concurrently: overwrite it
			}
			if err != nil {
				return storage.Variable{}, err
			}
			if err := ch.Commit(ctx); err != nil {
				return storage.Variable{}, err
			}
			return v, nil
		}
		if err != nil {
			return storage.Variable{}, err
		}
		octx, ch := events.Begin(ctx, s.d.Bus)
		v, err := s.d.Store.UpdateVariable(octx, appID, cur.ID, func(v *storage.Variable) error {
			if err := variables.CheckValue("value", v.Type, value); err != nil {
				return err
			}
			v.Value, v.UpdatedAt = value, now
			ch.Set(userVariableEvent(call, u, events.VariableUpdate, *v))
			return nil
		})
		if errors.Is(err, storage.ErrNotFound) {
			continue // deleted concurrently: create it
		}
		if err != nil {
			return storage.Variable{}, err
		}
		if err := ch.Commit(ctx); err != nil {
			return storage.Variable{}, err
		}
		return v, nil
	}
	return storage.Variable{}, core.E(core.CodeConflict, "the variable changed concurrently; try again")
}

// DeleteUserVariable removes one of the user's variables.
func (s *Service) DeleteUserVariable(ctx context.Context, call Call, key string) error {
	v, err := s.UserVariable(ctx, call, key)
	if err != nil {
		return err
	}
	octx, ch := events.Begin(ctx, s.d.Bus)
	ch.Add(userVariableEvent(call, storage.AppUser{ID: call.Session.UserID, Username: call.Session.Username}, events.VariableDelete, v))
	err = s.d.Store.DeleteVariable(octx, v.AppID, v.ID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		// Deleted concurrently: its event is that delete's, or this one's when it
		// was never stored.
		return s.publish(ctx, ch.Events()...)
	case err != nil:
		return err
	}
	return ch.Commit(ctx)
}

// userVariableEvent is the event of a client's change of its user's variable, stored
// with the change (events.Change).
func userVariableEvent(call Call, u storage.AppUser, name events.Type, v storage.Variable) events.Event {
	return events.Event{Name: name, AppID: v.AppID, Username: u.Username, IP: call.Caller.IP, Country: call.Country,
		Level: events.LevelDebug, Message: "user variable " + v.Key + " changed by the client",
		Data: map[string]any{"scope": storage.ScopeUser, "userId": u.ID, "key": v.Key, "value": v.Value}}
}

// TokenUser validates access tokens (apps.Service).
type TokenUser interface {
	UseToken(ctx context.Context, appID, value string) (storage.Token, bool, error)
}

// ValidateToken checks an access token and counts the use (SPEC 4.10 validate token).
func (s *Service) ValidateToken(ctx context.Context, call Call, tokens TokenUser, value string) (storage.Token, bool, error) {
	if value == "" {
		return storage.Token{}, false, core.Invalid("token", "token is required")
	}
	if len(value) > 256 {
		return storage.Token{}, false, nil
	}
	checked := func(valid bool) events.Event {
		return events.Event{Name: events.TokenValidate, AppID: call.Snap.App.ID, Username: call.Session.Username, IP: call.Caller.IP,
			Country: call.Country, Level: events.LevelDebug, Message: fmt.Sprintf("access token checked: valid=%t", valid)}
	}
	// A valid token's use is a change (its count): its event is stored with it
	// (events.Change, in UseToken's update). A refused token changes nothing, so its
	// event is stored on its own, once the refusal is known.
	octx, ch := events.Begin(ctx, s.d.Bus)
	ch.Add(checked(true))
	t, ok, err := tokens.UseToken(octx, call.Snap.App.ID, value)
	if err != nil {
		return t, false, err
	}
	if !ok {
		if err := s.publish(ctx, checked(false)); err != nil {
			return storage.Token{}, false, err
		}
		return t, false, nil
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.Token{}, false, err
	}
	return t, true, nil
}

// LicenseCheck is the client license-check result (SPEC 2); an unknown key is a result,
// not an error.
type LicenseCheck struct {
	Valid, Exists, Banned, Enabled bool
	Issues                         []string
	Reason                         string
	License                        *storage.License
}

// CheckLicense reports on a key without using it.
func (s *Service) CheckLicense(ctx context.Context, call Call, key string) (LicenseCheck, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return LicenseCheck{}, core.Invalid("licenseKey", "licenseKey is required")
	}
	res := LicenseCheck{Issues: []string{}}
	if len(key) > maxLicenseKey {
		res.Issues, res.Reason = []string{"not_found"}, "unknown license key"
		return res, nil
	}
	l, err := s.findLicense(ctx, call.Snap.App.ID, key)
	if errors.Is(err, errUnknownLicense) {
		res.Issues, res.Reason = []string{"not_found"}, "unknown license key"
		return res, nil
	}
	if err != nil {
		return LicenseCheck{}, err
	}
	now := s.now()
	res.Exists, res.Banned, res.Enabled, res.License = true, l.Banned, l.Enabled, &l
	if l.Banned {
		res.Issues = append(res.Issues, "banned")
	}
	if !l.Enabled {
		res.Issues = append(res.Issues, "disabled")
	}
	if !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt) {
		res.Issues = append(res.Issues, "expired")
	}
	if l.MaxUses > 0 && l.UsedCount >= l.MaxUses {
		// All uses taken stops a new activation, not the key's holder.
		held, err := s.heldBy(ctx, call, l)
		if err != nil {
			return LicenseCheck{}, err
		}
		if !held {
			res.Issues = append(res.Issues, "max_uses_reached")
		}
	}
	res.Valid = len(res.Issues) == 0
	if !res.Valid {
		res.Reason = "license " + strings.ReplaceAll(strings.Join(res.Issues, ", "), "_", " ")
	}
	return res, nil
}

// heldBy reports whether the caller holds l, so that its taken uses do not matter: the
// session's signed-in user activated it, or it is a key that signs in alone (license login)
// and its user exists, the key being that user's identity.
func (s *Service) heldBy(ctx context.Context, call Call, l storage.License) (bool, error) {
	if sess := call.Session; sess.LoggedIn() {
		if strings.EqualFold(sess.Username, l.Key) || (l.UsedBy != "" && strings.EqualFold(sess.Username, l.UsedBy)) {
			return true, nil
		}
		u, err := s.d.Store.GetUser(ctx, l.AppID, sess.UserID)
		switch {
		case err == nil:
			return u.LicenseID == l.ID, nil
		case !errors.Is(err, storage.ErrNotFound):
			return false, fmt.Errorf("check license: read session user: %w", err)
		}
		return false, nil
	}
	_, err := s.d.Store.GetUserByUsername(ctx, l.AppID, l.Key)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("check license: find the key's user: %w", err)
}

// serverNamespaces are the event namespaces of the server's own events. A client log event
// in one of them could pass for a server event: forged webhook messages (user.ban …), a
// session kill of another user (user.ban with a userId) or app snapshot reloads (app.update).
var serverNamespaces = []string{"user", "license", "session", "token", "file", "variable", "rule", "integration", "app", "ws"}

func serverEvent(event string) bool {
	ns, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(event)), ".")
	return slices.Contains(serverNamespaces, ns)
}

// WriteLog writes a client log entry (SPEC 4.10 write log).
func (s *Service) WriteLog(ctx context.Context, call Call, event, message, level string, data json.RawMessage) error {
	message = strings.TrimSpace(message)
	switch {
	case message == "":
		return core.Invalid("message", "message is required")
	case len([]rune(message)) > MaxLogMessage:
		return core.Invalid("message", "message must be at most %d characters", MaxLogMessage)
	case len(event) > maxEventName:
		return core.Invalid("event", "event must be at most %d characters", maxEventName)
	case serverEvent(event):
		return core.Invalid("event", "event %q is in a namespace the server reserves for its own events", event)
	case len(data) > MaxLogData:
		return core.Invalid("data", "data must be at most %d bytes", MaxLogData)
	}
	lvl := strings.ToUpper(strings.TrimSpace(level))
	switch lvl {
	case "":
		lvl = events.LevelInfo
	case "WARN":
		lvl = events.LevelWarning
	case events.LevelDebug, events.LevelInfo, events.LevelWarning, events.LevelError, events.LevelCritical:
	default:
		return core.Invalid("level", "level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
	}
	if event == "" {
		event = "client.log"
	}
	var fields map[string]any
	if len(data) > 0 && string(data) != "null" {
		if err := json.Unmarshal(data, &fields); err != nil {
			return core.Invalid("data", "data must be a JSON object")
		}
	}
	return s.publish(ctx, events.Event{Name: events.Type(event), AppID: call.Snap.App.ID, Username: call.Session.Username, IP: call.Caller.IP,
		Country: call.Country, Level: lvl, Message: message, Data: fields})
}

// ChangePassword changes the signed-in user's password.
func (s *Service) ChangePassword(ctx context.Context, call Call, current, next string) error {
	if current == "" {
		return core.Invalid("currentPassword", "currentPassword is required")
	}
	if err := apps.ValidateUserPassword("newPassword", next); err != nil {
		return err
	}
	u, err := s.CurrentUser(ctx, call)
	if err != nil {
		return err
	}
	if err := s.d.Hasher.Verify(ctx, u.PasswordHash, current); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return core.E(core.CodeUnauthorized, "the current password is wrong")
	}
	hash, err := s.d.Hasher.Hash(ctx, next)
	if err != nil {
		return err
	}
	now := s.now()
	octx, ch := events.Begin(ctx, s.d.Bus)
	ch.Add(events.Event{Name: events.UserUpdate, AppID: u.AppID, Username: u.Username, IP: call.Caller.IP, Country: call.Country,
		Message: "password changed by the client", Data: map[string]any{"userId": u.ID}})
	_, err = s.d.Store.UpdateUser(octx, u.AppID, u.ID, func(u *storage.AppUser) error {
		u.PasswordHash, u.UpdatedAt = hash, now
		return nil
	})
	if err != nil {
		return err
	}
	return ch.Commit(ctx)
}

// Update is the check-update answer.
type Update struct {
	Available       bool
	Latest, Current string
	File            *storage.File
	CheckedAt       time.Time
}

// CheckUpdate compares the client's version with the newest file of the name (the app's
// newest file when name is ""); no file at all is "no update".
func (s *Service) CheckUpdate(ctx context.Context, call Call, current, name string) (Update, error) {
	if len(current) > 64 || len(name) > 256 {
		return Update{}, core.Invalid("currentVersion", "currentVersion or fileName is too long")
	}
	f, err := s.d.Store.LatestFile(ctx, call.Snap.App.ID, name)
	if errors.Is(err, storage.ErrNotFound) {
		latest := current
		if latest == "" {
			latest = call.Snap.App.Version
		}
		return Update{Latest: latest, Current: current}, nil
	}
	if err != nil {
		return Update{}, err
	}
	latest := f.Version
	if latest == "" {
		latest = call.Snap.App.Version
	}
	return Update{Available: latest != "" && CompareVersions(latest, current) > 0, Latest: latest, Current: current, File: &f}, nil
}
