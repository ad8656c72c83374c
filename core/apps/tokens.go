package apps

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// CreateTokensInput is the body of a token creation (SPEC 4.5).
type CreateTokensInput struct {
	Count     *int
	MaxUses   *int
	ExpiresAt *string
	Note      string
	Level     *int
}

// CreateTokens makes count random tokens (24 random bytes each) in one bulk write.
func (s *Service) CreateTokens(ctx context.Context, o Owner, appID string, in CreateTokensInput) ([]storage.Token, error) {
	count := 1
	if in.Count != nil {
		count = *in.Count
	}
	expires, err := parseTime("expiresAt", in.ExpiresAt)
	if err != nil {
		return nil, err
	}
	if err := core.FirstError(intIn("count", &count, 1, MaxTokenBatch), intIn("maxUses", in.MaxUses, 0, maxUses),
		intIn("level", in.Level, 0, maxLevel), maxLen("note", &in.Note, maxNote)); err != nil {
		return nil, err
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return nil, err
	}
	now := s.clock()
	out := make([]storage.Token, count)
	for i := range out {
		t := storage.Token{ID: uuid.NewString(), AppID: appID, Value: secrets.Random(24), Level: 1, Note: in.Note,
			Enabled: true, CreatedAt: now, UpdatedAt: now}
		core.Set(&t.MaxUses, in.MaxUses)
		core.Set(&t.Level, in.Level)
		core.Set(&t.ExpiresAt, expires)
		out[i] = t
	}
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.TokenCreate, "", fmt.Sprintf("%d token(s) created", count), map[string]any{"count": count}))
	for _, t := range out {
		audit.Created(ctx, t)
	}
	if err := s.store.CreateTokens(octx, out); err != nil {
		return nil, fmt.Errorf("apps: create tokens: %w", err)
	}
	if err := ch.Commit(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// ListTokens answers one page of the app's tokens, newest first, and the total.
func (s *Service) ListTokens(ctx context.Context, o Owner, appID string, p storage.Page) ([]storage.Token, int, storage.Page, error) {
	p, err := page(p)
	if err != nil {
		return nil, 0, p, err
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return nil, 0, p, err
	}
	list, total, err := s.store.ListTokens(ctx, appID, p)
	if err != nil {
		return nil, 0, p, fmt.Errorf("apps: list tokens: %w", err)
	}
	return list, total, p, nil
}

// UpdateTokenInput holds the members to change.
type UpdateTokenInput struct {
	MaxUses, Level *int
	Note           *string
	Enabled        *bool
}

// UpdateToken changes only the given members.
func (s *Service) UpdateToken(ctx context.Context, o Owner, appID, id string, in UpdateTokenInput) (storage.Token, error) {
	if err := core.FirstError(intIn("maxUses", in.MaxUses, 0, maxUses), intIn("level", in.Level, 0, maxLevel),
		maxLen("note", in.Note, maxNote)); err != nil {
		return storage.Token{}, err
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return storage.Token{}, err
	}
	// A token's edit has no event: audit.Own has its write carry its audit entry.
	t, err := s.store.UpdateToken(audit.Own(ctx), appID, id, audit.Track(ctx, func(t *storage.Token) error {
		core.Set(&t.MaxUses, in.MaxUses)
		core.Set(&t.Level, in.Level)
		core.Set(&t.Note, in.Note)
		core.Set(&t.Enabled, in.Enabled)
		t.UpdatedAt = s.clock()
		return nil
	}))
	return t, notFound(err, "token")
}

// DeleteToken removes one token.
func (s *Service) DeleteToken(ctx context.Context, o Owner, appID, id string) error {
	if _, err := s.app(ctx, o, appID); err != nil {
		return err
	}
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.TokenDelete, "", "token deleted", map[string]any{"tokenId": id}))
	if err := s.store.DeleteToken(octx, appID, id); err != nil {
		return notFound(err, "token")
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	return nil
}

// errTokenRefused is the one answer for an unknown, disabled, expired or used-up token.
var errTokenRefused = errors.New("token refused")

// UseToken validates a token for the client API: it must exist, be enabled, not expired
// and under maxUses; its counter increments atomically.
func (s *Service) UseToken(ctx context.Context, appID, value string) (storage.Token, bool, error) {
	t, err := s.store.GetTokenByValue(ctx, appID, value)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Token{}, false, nil
	} else if err != nil {
		return storage.Token{}, false, fmt.Errorf("apps: token: %w", err)
	}
	now := s.clock()
	t, err = s.store.UpdateToken(ctx, appID, t.ID, audit.Track(ctx, func(t *storage.Token) error {
		if !t.Enabled || (!t.ExpiresAt.IsZero() && !t.ExpiresAt.After(now)) || (t.MaxUses > 0 && t.UsedCount >= t.MaxUses) {
			return errTokenRefused
		}
		t.UsedCount++
		t.UpdatedAt = now
		return nil
	}))
	switch {
	case errors.Is(err, errTokenRefused), errors.Is(err, storage.ErrNotFound):
		return storage.Token{}, false, nil
	case err != nil:
		return storage.Token{}, false, fmt.Errorf("apps: use token: %w", err)
	}
	return t, true, nil
}

// ListDevices answers one page of the app's devices, searched by hwid or username.
func (s *Service) ListDevices(ctx context.Context, o Owner, appID, search string, p storage.Page) ([]storage.Device, int, storage.Page, error) {
	p, err := page(p)
	if err != nil {
		return nil, 0, p, err
	}
	if err := maxLen("search", &search, maxSearch); err != nil {
		return nil, 0, p, err
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return nil, 0, p, err
	}
	list, total, err := s.store.ListDevices(ctx, appID, storage.DeviceQuery{Search: search, Page: p})
	if err != nil {
		return nil, 0, p, fmt.Errorf("apps: list devices: %w", err)
	}
	return list, total, p, nil
}

// DeleteDevice removes a device, freeing the user's slot: the user may then sign in from a
// new device (SPEC 4.5). When it is the device the user is bound to, the binding goes with
// it (the hwid, and the computer name it was registered with), else the bound hwid would
// still count as a device and refuse the new one.
func (s *Service) DeleteDevice(ctx context.Context, o Owner, appID, id string) error {
	if _, err := s.app(ctx, o, appID); err != nil {
		return err
	}
	d, err := s.store.DeleteDevice(ctx, appID, id)
	if err != nil {
		return notFound(err, "device")
	}
	now := s.clock()
	_, err = s.store.UpdateUser(ctx, appID, d.UserID, audit.Track(ctx, func(u *storage.AppUser) error {
		if u.HWID != d.HWID {
			return errUnchanged
		}
		u.HWID = ""
		if d.PCName != "" && u.PCName == d.PCName {
			u.PCName = ""
		}
		u.UpdatedAt = now
		return nil
	}))
	if err != nil && !errors.Is(err, errUnchanged) && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("apps: unbind the deleted device: %w", err)
	}
	return nil
}

// errUnchanged ends an atomic update that has nothing to change.
var errUnchanged = errors.New("nothing to change")
