package apps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// CreateUserInput is the body of a user creation (SPEC 4.3).
type CreateUserInput struct {
	Username    string
	Password    string
	Email       string
	Level       *int
	ExpiresAt   *string
	DeviceLimit *int
	Metadata    json.RawMessage
}

// CreateUser adds a user to the app within the plan's maxUsersPerApp.
func (s *Service) CreateUser(ctx context.Context, o Owner, appID string, in CreateUserInput) (storage.AppUser, error) {
	expires, err := parseTime("expiresAt", in.ExpiresAt)
	if err != nil {
		return storage.AppUser{}, err
	}
	meta, err := normalizeMetadata(in.Metadata)
	if err != nil {
		return storage.AppUser{}, err
	}
	if err := core.FirstError(ValidateUsername("username", in.Username), ValidateUserPassword("password", in.Password),
		intIn("level", in.Level, 0, maxLevel), intIn("deviceLimit", in.DeviceLimit, 0, maxDeviceLimit)); err != nil {
		return storage.AppUser{}, err
	}
	if in.Email != "" {
		if err := core.ValidateEmail("email", in.Email); err != nil {
			return storage.AppUser{}, err
		}
	}
	if _, err := s.app(ctx, o, appID); err != nil {
		return storage.AppUser{}, err
	}
	if err := s.checkUserLimit(ctx, o, appID); err != nil {
		return storage.AppUser{}, err
	}
	hash, err := s.hasher.Hash(ctx, in.Password)
	if err != nil {
		return storage.AppUser{}, err
	}
	now := s.clock()
	u := storage.AppUser{ID: uuid.NewString(), AppID: appID, Username: in.Username, PasswordHash: hash, Email: in.Email,
		Level: 1, DeviceLimit: 1, Enabled: true, CreatedAt: now, UpdatedAt: now}
	core.Set(&u.Level, in.Level)
	core.Set(&u.DeviceLimit, in.DeviceLimit)
	core.Set(&u.ExpiresAt, expires)
	core.Set(&u.Metadata, meta)
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.UserCreate, u.Username, "user created", map[string]any{"userId": u.ID}))
	audit.Created(ctx, u)
	if err := s.store.CreateUser(octx, u); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return storage.AppUser{}, core.E(core.CodeConflict, "a user named %q exists in this application", in.Username)
		}
		return storage.AppUser{}, fmt.Errorf("apps: create user: %w", err)
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.AppUser{}, err
	}
	return u, nil
}

// checkUserLimit refuses a new user beyond the plan's maxUsersPerApp. The client API's
// register flow calls it too.
func (s *Service) checkUserLimit(ctx context.Context, o Owner, appID string) error {
	plan := s.plans.MustGet(o.Plan)
	n, err := s.store.CountUsers(ctx, appID)
	if err != nil {
		return fmt.Errorf("apps: count users: %w", err)
	}
	if n >= plan.Limits.MaxUsersPerApp {
		return core.E(core.CodePlanLimit, "the %s plan allows %d users per application; upgrade to add more", plan.Name, plan.Limits.MaxUsersPerApp)
	}
	return nil
}

// UserQueryInput is the list query of SPEC 4.3 as strings from the URL.
type UserQueryInput struct {
	Search, SortBy, SortOrder, Banned, Expired string
	// InGrace "true" keeps the users expired less than the app's graceSeconds ago.
	InGrace string
	Page    storage.Page
}

// ListUsers answers one page of the app's users and the total.
func (s *Service) ListUsers(ctx context.Context, o Owner, appID string, in UserQueryInput) ([]storage.AppUser, int, storage.Page, error) {
	q := storage.UserQuery{Search: in.Search, Now: s.clock()}
	var err error
	if q.Page, err = page(in.Page); err != nil {
		return nil, 0, q.Page, err
	}
	if err := maxLen("search", &in.Search, maxSearch); err != nil {
		return nil, 0, q.Page, err
	}
	switch in.SortBy {
	case "":
		q.SortBy = storage.UserSortCreatedAt
	case storage.UserSortUsername, storage.UserSortCreatedAt, storage.UserSortLastLoginAt, storage.UserSortExpiresAt:
		q.SortBy = in.SortBy
	default:
		return nil, 0, q.Page, core.Invalid("sortBy", "sortBy must be one of username, created_at, last_login_at, expires_at")
	}
	if q.Desc, err = sortOrder(in.SortOrder); err != nil {
		return nil, 0, q.Page, err
	}
	if q.Banned, err = optionalBool("banned", in.Banned); err != nil {
		return nil, 0, q.Page, err
	}
	switch in.Expired {
	case "", "false":
	case "true":
		q.Expired = true
	default:
		return nil, 0, q.Page, core.Invalid("expired", "expired must be true or false")
	}
	app, err := s.app(ctx, o, appID)
	if err != nil {
		return nil, 0, q.Page, err
	}
	if err := inGrace(&q, app, in.InGrace); err != nil {
		return nil, 0, q.Page, err
	}
	list, total, err := s.store.ListUsers(ctx, appID, q)
	if err != nil {
		return nil, 0, q.Page, fmt.Errorf("apps: list users: %w", err)
	}
	return list, total, q.Page, nil
}

func sortOrder(s string) (desc bool, err error) {
	switch strings.ToLower(s) {
	case "", "asc":
		return false, nil
	case "desc":
		return true, nil
	}
	return false, core.Invalid("sortOrder", "sortOrder must be asc or desc")
}

func optionalBool(field, s string) (*bool, error) {
	switch s {
	case "":
		return nil, nil
	case "true":
		t := true
		return &t, nil
	case "false":
		f := false
		return &f, nil
	}
	return nil, core.Invalid(field, "%s must be true or false", field)
}

// UserDetail is a user with its devices and subscriptions.
type UserDetail struct {
	User          storage.AppUser
	Devices       []storage.Device
	Subscriptions []storage.License
}

// GetUser answers a user with its devices and its active license as subscription.
func (s *Service) GetUser(ctx context.Context, o Owner, appID, userID string) (UserDetail, error) {
	u, err := s.user(ctx, o, appID, userID)
	if err != nil {
		return UserDetail{}, err
	}
	devices, _, err := s.store.ListDevices(ctx, appID, storage.DeviceQuery{UserID: u.ID, Page: storage.Page{Limit: storage.MaxPageSize}})
	if err != nil {
		return UserDetail{}, fmt.Errorf("apps: user devices: %w", err)
	}
	d := UserDetail{User: u, Devices: devices, Subscriptions: []storage.License{}}
	if u.LicenseID != "" {
		l, err := s.store.GetLicense(ctx, appID, u.LicenseID)
		if err == nil {
			d.Subscriptions = append(d.Subscriptions, l)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return UserDetail{}, fmt.Errorf("apps: user license: %w", err)
		}
	}
	return d, nil
}

func (s *Service) user(ctx context.Context, o Owner, appID, userID string) (storage.AppUser, error) {
	if _, err := s.app(ctx, o, appID); err != nil {
		return storage.AppUser{}, err
	}
	u, err := s.store.GetUser(ctx, appID, userID)
	return u, notFound(err, "user")
}

// UpdateUserInput holds the members to change (SPEC 4.3); nil members stay.
type UpdateUserInput struct {
	Password, Email, ExpiresAt, BanReason, HWID, DisplayName, PCName, LockedIP       *string
	Level, DeviceLimit, HwidResetMax, HwidResetCooldown, IPResetMax, IPResetCooldown *int
	Enabled, Banned                                                                  *bool
	Metadata                                                                         json.RawMessage
}

// UpdateUser changes only the given members. Banning records the reason; unbanning clears it.
func (s *Service) UpdateUser(ctx context.Context, o Owner, appID, userID string, in UpdateUserInput) (storage.AppUser, error) {
	expires, err := parseTime("expiresAt", in.ExpiresAt)
	if err != nil {
		return storage.AppUser{}, err
	}
	meta, err := normalizeMetadata(in.Metadata)
	if err != nil {
		return storage.AppUser{}, err
	}
	if err := core.FirstError(intIn("level", in.Level, 0, maxLevel), intIn("deviceLimit", in.DeviceLimit, 0, maxDeviceLimit),
		intIn("hwidResetMax", in.HwidResetMax, 0, maxUses), intIn("hwidResetCooldown", in.HwidResetCooldown, 0, maxDuration),
		intIn("ipResetMax", in.IPResetMax, 0, maxUses), intIn("ipResetCooldown", in.IPResetCooldown, 0, maxDuration),
		maxLen("banReason", in.BanReason, maxNote), maxLen("hwid", in.HWID, maxHWID), maxLen("displayName", in.DisplayName, maxDisplayName),
		maxLen("pcName", in.PCName, maxHWID), maxLen("lockedIp", in.LockedIP, 64)); err != nil {
		return storage.AppUser{}, err
	}
	if in.Email != nil && *in.Email != "" {
		if err := core.ValidateEmail("email", *in.Email); err != nil {
			return storage.AppUser{}, err
		}
	}
	var hash *string
	if in.Password != nil {
		if err := ValidateUserPassword("password", *in.Password); err != nil {
			return storage.AppUser{}, err
		}
		h, err := s.hasher.Hash(ctx, *in.Password)
		if err != nil {
			return storage.AppUser{}, err
		}
		hash = &h
	}
	if _, err := s.user(ctx, o, appID, userID); err != nil {
		return storage.AppUser{}, err
	}
	octx, ch := s.begin(ctx)
	u, err := s.store.UpdateUser(octx, appID, userID, audit.Track(ctx, func(u *storage.AppUser) error {
		core.Set(&u.PasswordHash, hash)
		core.Set(&u.Email, in.Email)
		core.Set(&u.ExpiresAt, expires)
		core.Set(&u.HWID, in.HWID)
		core.Set(&u.DisplayName, in.DisplayName)
		core.Set(&u.PCName, in.PCName)
		core.Set(&u.LockedIP, in.LockedIP)
		core.Set(&u.Level, in.Level)
		core.Set(&u.DeviceLimit, in.DeviceLimit)
		core.Set(&u.HwidResetMax, in.HwidResetMax)
		core.Set(&u.HwidResetCooldown, in.HwidResetCooldown)
		core.Set(&u.IPResetMax, in.IPResetMax)
		core.Set(&u.IPResetCooldown, in.IPResetCooldown)
		core.Set(&u.Enabled, in.Enabled)
		core.Set(&u.Metadata, meta)
		core.Set(&u.Banned, in.Banned)
		core.Set(&u.BanReason, in.BanReason)
		if in.Banned != nil && !*in.Banned {
			u.BanReason = ""
		}
		u.UpdatedAt = s.clock()
		var evs []events.Event
		if in.Banned != nil && *in.Banned {
			evs = append(evs, event(appID, events.UserBan, u.Username, "user banned: "+u.BanReason, map[string]any{"userId": u.ID, "reason": u.BanReason}))
		}
		ch.Set(append(evs, event(appID, events.UserUpdate, u.Username, "user updated", map[string]any{"userId": u.ID}))...)
		return nil
	}))
	if err != nil {
		return storage.AppUser{}, notFound(err, "user")
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.AppUser{}, err
	}
	return u, nil
}

// DeleteUser removes the user and its devices.
func (s *Service) DeleteUser(ctx context.Context, o Owner, appID, userID string) error {
	u, err := s.user(ctx, o, appID, userID)
	if err != nil {
		return err
	}
	octx, ch := s.begin(ctx)
	ch.Add(event(appID, events.UserDelete, u.Username, "user deleted", map[string]any{"userId": u.ID}))
	if err := s.store.DeleteUser(octx, appID, userID); err != nil {
		return notFound(err, "user")
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	return nil
}

// ResetHWID clears the user's hwid, locked IP and devices, within hwidResetMax resets
// (0 = unlimited) spaced by hwidResetCooldown seconds.
func (s *Service) ResetHWID(ctx context.Context, o Owner, appID, userID string) (storage.AppUser, int, error) {
	if _, err := s.user(ctx, o, appID, userID); err != nil {
		return storage.AppUser{}, 0, err
	}
	now := s.clock()
	// The reset's audit entry goes with the user's write, which changes the record it
	// describes (a change with no event of its own: the event is the devices' removal's).
	uctx, _ := s.begin(ctx)
	u, err := s.store.UpdateUser(uctx, appID, userID, audit.Track(ctx, func(u *storage.AppUser) error {
		if u.HwidResetMax > 0 && u.HwidResets >= u.HwidResetMax {
			return core.E(core.CodeForbidden, "HWID reset limit reached (%d)", u.HwidResetMax)
		}
		if u.HwidResetCooldown > 0 && !u.LastHwidResetAt.IsZero() {
			next := u.LastHwidResetAt.Add(time.Duration(u.HwidResetCooldown) * time.Second)
			if now.Before(next) {
				return core.RateLimited(next.Sub(now))
			}
		}
		u.HWID, u.LockedIP = "", ""
		u.HwidResets++
		u.LastHwidResetAt = now
		u.UpdatedAt = now
		return nil
	}))
	if err != nil {
		return storage.AppUser{}, 0, notFound(err, "user")
	}
	// The reset's event names the devices removed, so it is stored with their removal,
	// the reset's last write (SQLite: in its transaction; MongoDB: Commit appends it
	// before the answer).
	octx, ch := s.begin(ctx)
	ch.OnCount(func(n int) []events.Event {
		return []events.Event{event(appID, events.UserHWIDReset, u.Username, "hardware id reset", map[string]any{"userId": u.ID, "devicesRemoved": n})}
	})
	n, err := s.store.DeleteUserDevices(octx, appID, userID)
	if err != nil {
		return storage.AppUser{}, 0, fmt.Errorf("apps: reset devices: %w", err)
	}
	ch.Counted(n)
	if err := ch.Commit(ctx); err != nil {
		return storage.AppUser{}, 0, err
	}
	return u, n, nil
}

// ExtendUser moves the user's expiry by duration seconds: from the current expiry, or
// from now when it is unset or past.
func (s *Service) ExtendUser(ctx context.Context, o Owner, appID, userID string, duration *int64) (storage.AppUser, error) {
	if duration == nil {
		return storage.AppUser{}, core.Invalid("duration", "duration is required (seconds)")
	}
	if err := int64In("duration", duration, 1, maxDuration); err != nil {
		return storage.AppUser{}, err
	}
	if _, err := s.user(ctx, o, appID, userID); err != nil {
		return storage.AppUser{}, err
	}
	now := s.clock()
	octx, ch := s.begin(ctx)
	u, err := s.store.UpdateUser(octx, appID, userID, audit.Track(ctx, func(u *storage.AppUser) error {
		base := u.ExpiresAt
		if base.IsZero() || base.Before(now) {
			base = now
		}
		u.ExpiresAt = core.AddSeconds(base, *duration) // bounded: an expiry must read back
		u.UpdatedAt = now
		ch.Set(event(appID, events.UserExtend, u.Username, fmt.Sprintf("access extended by %d seconds", *duration),
			map[string]any{"userId": u.ID, "duration": *duration, "expiresAt": u.ExpiresAt.Format(time.RFC3339)}))
		return nil
	}))
	if err != nil {
		return storage.AppUser{}, notFound(err, "user")
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.AppUser{}, err
	}
	return u, nil
}

// UserIPInfo answers the user's last login IP and locked IP (admin only; checked at the edge).
func (s *Service) UserIPInfo(ctx context.Context, o Owner, appID, userID string) (storage.AppUser, error) {
	return s.user(ctx, o, appID, userID)
}
