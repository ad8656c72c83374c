package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/passwords"
	"github.com/keyward/keyward/storage"
)

// Bounds of client input.
const (
	maxHWID        = 256
	maxPCName      = 128
	maxDisplayName = 64
	maxLicenseKey  = 128
)

// LoginInput is the body of login.
type LoginInput struct {
	Username, Password, LicenseKey, HWID, PCName string
}

// RegisterInput is the body of register.
type RegisterInput struct {
	Username, Password, Email, DisplayName, LicenseKey, HWID, PCName string
}

// LicenseInput is the body of license-only login.
type LicenseInput struct {
	LicenseKey, HWID, PCName string
}

// AuthResult is what a successful authentication answers.
type AuthResult struct {
	User storage.AppUser
	// Key is what SDKs show as "Authenticated as": the license key when one was used,
	// else the username.
	Key              string
	LicenseActivated bool
	// Returning is true when a license login found the key's user from an earlier use.
	Returning bool
	Warnings  []string
}

// failed writes user.login_failed with the refusal's code and returns err unchanged.
func (s *Service) failed(call Call, username string, err error) error {
	var de *core.Error
	if errors.As(err, &de) {
		s.note(events.Event{Name: events.UserLoginFailed, AppID: call.Snap.App.ID, Username: username, IP: call.Caller.IP,
			Country: call.Country, Level: events.LevelWarning, Message: "login refused: " + de.Message,
			Data: map[string]any{"reason": string(de.Code)}})
	}
	return err
}

func validClientStrings(hwid, pcName, licenseKey string) error {
	switch {
	case len(hwid) > maxHWID:
		return core.Invalid("hwid", "hwid must be at most %d bytes", maxHWID)
	case len(pcName) > maxPCName:
		return core.Invalid("pcName", "pcName must be at most %d bytes", maxPCName)
	case len(licenseKey) > maxLicenseKey:
		return core.Invalid("licenseKey", "licenseKey must be at most %d bytes", maxLicenseKey)
	}
	return nil
}

// gate applies steps 2 and 3 of the order: a paused app and the rules.
func (s *Service) gate(call Call, hwid, username string) error {
	if call.Snap.App.Paused {
		return core.E(core.CodeAppPaused, "this application is paused by its owner; try again later")
	}
	return s.checkRules(call.Snap, call.Caller, call.Country, hwid, username)
}

// BannedMessage starts the message of a banned user's refusal; the owner's reason follows
// after ": " (BanReasonOf takes it back out).
const BannedMessage = "this account is banned"

// BanReasonOf answers the owner's reason of a banned user's refusal message (the text
// after BannedMessage), "" when it has none.
func BanReasonOf(msg string) string {
	return strings.TrimPrefix(strings.TrimPrefix(msg, BannedMessage), ": ")
}

// checkUser is step 5.
func checkUser(u storage.AppUser, now time.Time) error {
	switch {
	case u.Banned:
		msg := BannedMessage
		if u.BanReason != "" {
			msg += ": " + u.BanReason
		}
		return core.E(core.CodeBanned, "%s", msg)
	case !u.Enabled:
		return core.E(core.CodeUserDisabled, "this account is disabled")
	case !u.ExpiresAt.IsZero() && !now.Before(u.ExpiresAt):
		return core.E(core.CodeExpired, "this account's subscription expired at %s", u.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// binding is what a login binds to the user under the app's locks.
type binding struct {
	hwid, ip, pcName string
	// newDevice says the hwid is not yet a registered device of the user.
	newDevice bool
	// seenHWID and seenPCName are the device and computer name of a login on an app that
	// does not bind them: recorded as the user's, so an owner sees where users sign in
	// from before turning a lock on (which then binds them).
	seenHWID, seenPCName string
}

// checkLocks is step 6: it answers what to bind, or the lock that refuses. The device
// check reads the user's devices (outside any update) for an early refusal, before any
// hashing or write; claimDevice enforces the limit. The rest is re-checked in apply.
func (s *Service) checkLocks(ctx context.Context, call Call, u storage.AppUser, hwid, pcName string) (binding, error) {
	app := call.Snap.App
	var b binding
	if app.LockHwid {
		if hwid == "" {
			return b, core.E(core.CodeHWIDLocked, "this application binds accounts to a device; the client must send its hwid")
		}
		known := u.HWID == hwid
		if !known && u.ID != "" {
			devices, _, err := s.d.Store.ListDevices(ctx, app.ID, storage.DeviceQuery{UserID: u.ID, Page: storage.Page{Limit: storage.MaxPageSize}})
			if err != nil {
				return b, fmt.Errorf("list devices: %w", err)
			}
			known = slices.ContainsFunc(devices, func(d storage.Device) bool { return d.HWID == hwid })
			if !known {
				// The bound hwid counts as a device even if it has no device record
				// (bound before devices were recorded, or set by the owner).
				count := len(devices)
				if u.HWID != "" && !slices.ContainsFunc(devices, func(d storage.Device) bool { return d.HWID == u.HWID }) {
					count++
				}
				if limit := u.DeviceLimit; limit > 0 && count >= limit { // 0: no limit (docs/API.md)
					return b, deviceLimitReached(limit)
				}
			}
		}
		b.hwid, b.newDevice = hwid, !known
	} else if hwid != u.HWID {
		b.seenHWID = hwid
	}
	if app.LockIP {
		if u.LockedIP != "" && u.LockedIP != call.Caller.IP {
			return b, core.E(core.CodeIPLocked, "this account is bound to another IP address; ask for an IP reset")
		}
		b.ip = call.Caller.IP
	}
	if app.LockPcName {
		switch {
		case pcName == "":
			return b, core.E(core.CodePCNameLocked, "this application binds accounts to a computer name; the client must send pcName")
		case u.PCName != "" && u.PCName != pcName:
			return b, core.E(core.CodePCNameLocked, "this account is bound to another computer")
		}
		b.pcName = pcName
	} else if pcName != u.PCName {
		b.seenPCName = pcName
	}
	return b, nil
}

// deviceLimitReached is the refusal of a new device to a user who has limit already.
func deviceLimitReached(limit int) error {
	if limit == 1 {
		return core.E(core.CodeHWIDLocked, "this account is bound to another device; ask for an HWID reset")
	}
	return core.E(core.CodeDeviceLimit, "this account has reached its limit of %d devices", limit)
}

// apply writes the binding and the login into u (inside an atomic update: it re-checks
// what a concurrent login may have bound meanwhile).
func (b binding) apply(u *storage.AppUser, call Call, now time.Time) error {
	if b.hwid != "" && u.HWID == "" {
		u.HWID = b.hwid
	}
	if b.seenHWID != "" {
		u.HWID = b.seenHWID
	}
	if b.seenPCName != "" {
		u.PCName = b.seenPCName
	}
	if b.ip != "" {
		if u.LockedIP != "" && u.LockedIP != b.ip {
			return core.E(core.CodeIPLocked, "this account is bound to another IP address; ask for an IP reset")
		}
		u.LockedIP = b.ip
	}
	if b.pcName != "" {
		if u.PCName != "" && u.PCName != b.pcName {
			return core.E(core.CodePCNameLocked, "this account is bound to another computer")
		}
		u.PCName = b.pcName
	}
	u.LastLoginAt, u.LastLoginIP, u.UpdatedAt = now, call.Caller.IP, now
	return nil
}

// bindsNothing reports whether applying b to u would change only the fields a batched
// login records (last login, and the device and computer name seen where not bound).
func (b binding) bindsNothing(u storage.AppUser) bool {
	return !(b.hwid != "" && u.HWID == "") && !(b.ip != "" && u.LockedIP == "") && !(b.pcName != "" && u.PCName == "")
}

// recordLogin updates u for a login that binds nothing, without a write of its own: the
// login goes to the batched recorder, whose write signIn waits for.
func (s *Service) recordLogin(u storage.AppUser, b binding, call Call, now time.Time) storage.AppUser {
	u.LastLoginAt, u.LastLoginIP = now, call.Caller.IP
	if b.seenHWID != "" {
		u.HWID = b.seenHWID
	}
	if b.seenPCName != "" {
		u.PCName = b.seenPCName
	}
	s.logins.mark(storage.UserLogin{AppID: u.AppID, UserID: u.ID, IP: u.LastLoginIP, HWID: b.seenHWID, PCName: b.seenPCName, At: now})
	return u
}

// registerDevice records a newly bound device of a user the call created (no other login
// can count its devices yet); a device registered concurrently is fine.
func (s *Service) registerDevice(ctx context.Context, call Call, u storage.AppUser, b binding, pcName string, now time.Time) {
	if !b.newDevice {
		return
	}
	if err := s.d.Store.CreateDevice(ctx, newDevice(call, u, b, pcName, now)); err != nil && !errors.Is(err, storage.ErrConflict) {
		s.d.Log.Warn("client: cannot register device", "app", u.AppID, "user", u.ID, "err", err)
	}
}

// claimDevice registers a returning user's new device before the login writes anything
// else, its count of the user's devices and its insert one step
// (storage.DeviceStore.CreateDeviceWithin): checkLocks' count alone let concurrent
// logins from new devices pass the limit together. undo removes the device when the
// login fails before the user is updated, or at its sign-in when the user is not bound
// to it (keepIfBound).
func (s *Service) claimDevice(ctx context.Context, call Call, u storage.AppUser, b binding, pcName string, now time.Time) (undo func(), err error) {
	if !b.newDevice {
		return func() {}, nil
	}
	d := newDevice(call, u, b, pcName, now)
	limit := u.DeviceLimit
	create := func() error { return s.d.Store.CreateDeviceWithin(ctx, d, limit, u.HWID) }
	if limit <= 0 { // no limit
		create = func() error { return s.d.Store.CreateDevice(ctx, d) }
	}
	switch err := create(); {
	case errors.Is(err, storage.ErrLimit):
		return nil, deviceLimitReached(limit)
	case errors.Is(err, storage.ErrConflict):
		return func() {}, nil // the same device, registered by a concurrent login
	case errors.Is(err, storage.ErrNotFound):
		// The user was deleted since it was read: refused as unauthorized, as a login's
		// update of a deleted user is (whose answer reads "invalid username or password").
		return nil, core.E(core.CodeUnauthorized, "this account no longer exists")
	case err != nil:
		return nil, fmt.Errorf("register device: %w", err)
	}
	return func() {
		// The request's context may be what failed.
		if _, err := s.d.Store.DeleteDevice(context.WithoutCancel(ctx), d.AppID, d.ID); err != nil && !errors.Is(err, storage.ErrNotFound) {
			s.d.Log.Warn("client: cannot undo the device of a failed login", "app", d.AppID, "user", d.UserID, "err", err)
		}
	}, nil
}

// keepIfBound undoes a claimed device after the login failed at its sign-in, unless the
// user is bound to it (this login's update bound it, or it was): the bound device keeps
// its record.
func (b binding) keepIfBound(u storage.AppUser, undo func()) {
	if b.hwid == "" || u.HWID != b.hwid {
		undo()
	}
}

func newDevice(call Call, u storage.AppUser, b binding, pcName string, now time.Time) storage.Device {
	return storage.Device{ID: uuid.NewString(), AppID: u.AppID, UserID: u.ID, Username: u.Username, HWID: b.hwid,
		PCName: pcName, IP: call.Caller.IP, CreatedAt: now, LastSeenAt: now}
}

// licenseGrant is what activating a license gives the user.
type licenseGrant struct {
	lic storage.License
	// prevUsedBy and prevActivatedAt are the key's fields before this use took it, so
	// that giving the use back restores them.
	prevUsedBy      string
	prevActivatedAt time.Time
}

func (g licenseGrant) apply(u *storage.AppUser, now time.Time) {
	l := g.lic
	u.Level = l.Level
	u.LicenseID = l.ID
	if l.DiscordID != "" {
		u.DiscordID = l.DiscordID
	}
	switch {
	case l.Duration > 0:
		// Time starts at activation; activating while time is left adds to it.
		base := now
		if u.ExpiresAt.After(now) {
			base = u.ExpiresAt
		}
		u.ExpiresAt = core.AddSeconds(base, l.Duration) // bounded: an expiry must read back
	case !l.ExpiresAt.IsZero():
		u.ExpiresAt = l.ExpiresAt
	default:
		u.ExpiresAt = time.Time{} // a lifetime key
	}
}

// checkLicense is the read-only part of step 7.
func checkLicense(l storage.License, now time.Time) error {
	switch {
	case l.Banned:
		return core.E(core.CodeBanned, "this license key is banned")
	case !l.Enabled:
		return core.E(core.CodeLicenseInvalid, "this license key is disabled")
	case !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt):
		return core.E(core.CodeExpired, "this license key expired at %s", l.ExpiresAt.Format(time.RFC3339))
	case l.MaxUses > 0 && l.UsedCount >= l.MaxUses:
		return core.E(core.CodeLicenseUsed, "this license key has no uses left")
	}
	return nil
}

var errUnknownLicense = core.E(core.CodeLicenseInvalid, "unknown license key")

func (s *Service) findLicense(ctx context.Context, appID, key string) (storage.License, error) {
	key = strings.TrimSpace(key)
	l, err := s.d.Store.GetLicenseByKey(ctx, appID, key)
	if errors.Is(err, storage.ErrNotFound) && key != strings.ToUpper(key) {
		// Keys are generated upper-case; people retype them in lower case.
		l, err = s.d.Store.GetLicenseByKey(ctx, appID, strings.ToUpper(key))
	}
	if errors.Is(err, storage.ErrNotFound) {
		return storage.License{}, errUnknownLicense
	}
	if err != nil {
		return storage.License{}, fmt.Errorf("find license: %w", err)
	}
	return l, nil
}

// consumeLicense takes one use of the key for username, atomically: of concurrent
// activations of a key with one use left exactly one succeeds.
func (s *Service) consumeLicense(ctx context.Context, appID, key, username string, now time.Time) (licenseGrant, error) {
	l, err := s.findLicense(ctx, appID, key)
	if err != nil {
		return licenseGrant{}, err
	}
	var prevUsedBy string
	var prevActivatedAt time.Time
	l, err = s.d.Store.UpdateLicense(ctx, appID, l.ID, func(l *storage.License) error {
		if err := checkLicense(*l, now); err != nil {
			return err
		}
		prevUsedBy, prevActivatedAt = l.UsedBy, l.ActivatedAt
		l.UsedCount++
		l.UsedBy = username
		if l.ActivatedAt.IsZero() {
			l.ActivatedAt = now
		}
		l.UpdatedAt = now
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return licenseGrant{}, errUnknownLicense
	}
	if err != nil {
		return licenseGrant{}, err
	}
	return licenseGrant{lic: l, prevUsedBy: prevUsedBy, prevActivatedAt: prevActivatedAt}, nil
}

// refundLicense gives back a use taken by a flow that then failed: the count, and who used
// the key and when it was first activated unless another use changed them meanwhile.
func (s *Service) refundLicense(ctx context.Context, g licenseGrant) {
	err := retryUndo(ctx, func() error { return s.giveBack(ctx, g) })
	if err != nil {
		s.d.Log.Warn("client: cannot give back a license use", "license", g.lic.ID, "err", err)
	}
}

// giveBack is one try of refundLicense.
func (s *Service) giveBack(ctx context.Context, g licenseGrant) error {
	_, err := s.d.Store.UpdateLicense(ctx, g.lic.AppID, g.lic.ID, func(l *storage.License) error {
		if l.UsedCount > 0 {
			l.UsedCount--
		}
		if l.UsedBy == g.lic.UsedBy {
			l.UsedBy = g.prevUsedBy
		}
		if l.ActivatedAt.Equal(g.lic.ActivatedAt) {
			l.ActivatedAt = g.prevActivatedAt
		}
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil // the key was deleted meanwhile: nothing to give back
	}
	return err
}

// signIn makes the session authenticated as u.
func (s *Service) signIn(ctx context.Context, call Call, u storage.AppUser, now time.Time) error {
	sess := call.Session
	sess.UserID, sess.Username, sess.LoginAt = u.ID, u.Username, now
	if err := s.takeSeat(ctx, call, &sess, u); err != nil {
		return err
	}
	return s.sessions.put(ctx, sess, call.Snap.SessionTTL)
}

func activated(call Call, u storage.AppUser, g licenseGrant) events.Event {
	return events.Event{Name: events.LicenseActivate, AppID: call.Snap.App.ID, Username: u.Username, IP: call.Caller.IP,
		Country: call.Country, Message: "license activated",
		Data: map[string]any{"licenseId": g.lic.ID, "userId": u.ID, "level": g.lic.Level}}
}

// Login signs a user in with username and password, optionally activating a license.
func (s *Service) Login(ctx context.Context, call Call, in LoginInput) (AuthResult, error) {
	if err := validClientStrings(in.HWID, in.PCName, in.LicenseKey); err != nil {
		return AuthResult{}, err
	}
	if in.Username == "" || in.Password == "" {
		return AuthResult{}, core.Invalid("username", "username and password are required")
	}
	res, err := s.login(ctx, call, in)
	if err != nil {
		return res, s.failed(call, in.Username, err)
	}
	return res, nil
}

func (s *Service) login(ctx context.Context, call Call, in LoginInput) (AuthResult, error) {
	if err := s.gate(call, in.HWID, in.Username); err != nil {
		return AuthResult{}, err
	}
	appID := call.Snap.App.ID
	u, err := s.d.Store.GetUserByUsername(ctx, appID, in.Username)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return AuthResult{}, fmt.Errorf("login: find user: %w", err)
	}
	// An unknown user costs a verification too, so timing does not tell users apart.
	if err := s.d.Hasher.Verify(ctx, u.PasswordHash, in.Password); err != nil {
		if ctx.Err() != nil {
			return AuthResult{}, err
		}
		return AuthResult{}, core.E(core.CodeUnauthorized, "invalid username or password")
	}
	now := s.now()
	judged := expiryJudgedAt(call.Snap, now) // the app's grace after expiry
	if err := checkUser(u, judged); err != nil && !(in.LicenseKey != "" && isExpired(err)) {
		// An expired user may log in with a new license key: that is how they renew.
		return AuthResult{}, err
	}
	b, err := s.checkLocks(ctx, call, u, in.HWID, in.PCName)
	if err != nil {
		return AuthResult{}, err
	}
	rehash, err := s.rehashed(ctx, u.PasswordHash, in.Password)
	if err != nil {
		return AuthResult{}, err
	}
	undoDevice, err := s.claimDevice(ctx, call, u, b, in.PCName, now)
	if err != nil {
		return AuthResult{}, err
	}
	var grant licenseGrant
	activate := in.LicenseKey != ""
	if activate {
		if grant, err = s.consumeLicense(ctx, appID, in.LicenseKey, u.Username, now); err != nil {
			undoDevice()
			return AuthResult{}, err
		}
	}
	if !activate && rehash == "" && b.bindsNothing(u) {
		u = s.recordLogin(u, b, call, now)
	} else if u, err = s.d.Store.UpdateUser(ctx, appID, u.ID, func(stored *storage.AppUser) error {
		if rehash != "" && stored.PasswordHash == u.PasswordHash {
			// Unless the password changed since it was verified.
			stored.PasswordHash = rehash
		}
		u := stored
		if activate {
			grant.apply(u, now)
		}
		if err := checkUser(*u, judged); err != nil {
			return err
		}
		return b.apply(u, call, now)
	}); err != nil {
		undoDevice()
		if activate {
			s.refundLicense(ctx, grant)
		}
		if errors.Is(err, storage.ErrNotFound) {
			return AuthResult{}, core.E(core.CodeUnauthorized, "invalid username or password")
		}
		return AuthResult{}, err
	}
	var evs []events.Event
	if activate {
		evs = append(evs, activated(call, u, grant))
	}
	evs = append(evs, events.Event{Name: events.UserLogin, AppID: appID, Username: u.Username, IP: call.Caller.IP, Country: call.Country,
		Message: "user logged in", Data: map[string]any{"userId": u.ID, "licenseActivated": activate}})
	key := u.Username
	if activate {
		key = grant.lic.Key
	}
	warn, evs := signInWarnings(call, u, now, evs)
	if err := s.withEvents(ctx, func() error { return s.signIn(ctx, call, u, now) }, evs...); err != nil {
		b.keepIfBound(u, undoDevice)
		return AuthResult{}, err
	}
	return AuthResult{User: u, Key: key, LicenseActivated: activate, Warnings: warn}, nil
}

// rehashed answers an argon2id hash of password when the user's stored hash, which it
// just verified, is of another scheme (bcrypt, kept by keyward import keyauth), and ""
// otherwise: the login that verifies such a hash stores the new one in its own write, so
// imported users move to argon2id on their first login and are never asked to reset.
func (s *Service) rehashed(ctx context.Context, stored, password string) (string, error) {
	if !passwords.NeedsRehash(stored) {
		return "", nil
	}
	h, err := s.d.Hasher.Hash(ctx, password)
	if err != nil {
		return "", fmt.Errorf("login: rehash the password: %w", err)
	}
	return h, nil
}

func isExpired(err error) bool {
	var de *core.Error
	return errors.As(err, &de) && de.Code == core.CodeExpired
}

// warnings are notes C# clients show after a successful login.
func warnings(u storage.AppUser, now time.Time) []string {
	var w []string
	if !u.ExpiresAt.IsZero() && u.ExpiresAt.Sub(now) < 72*time.Hour {
		w = append(w, "subscription expires at "+u.ExpiresAt.Format(time.RFC3339))
	}
	return w
}

// Register creates a user and signs it in, optionally activating a license.
func (s *Service) Register(ctx context.Context, call Call, in RegisterInput) (AuthResult, error) {
	if err := core.FirstError(apps.ValidateUsername("username", in.Username), apps.ValidateUserPassword("password", in.Password),
		validClientStrings(in.HWID, in.PCName, in.LicenseKey)); err != nil {
		return AuthResult{}, err
	}
	if in.Email != "" {
		if err := core.ValidateEmail("email", in.Email); err != nil {
			return AuthResult{}, err
		}
	}
	if len([]rune(in.DisplayName)) > maxDisplayName {
		return AuthResult{}, core.Invalid("displayName", "displayName must be at most %d characters", maxDisplayName)
	}
	res, err := s.register(ctx, call, in)
	if err != nil {
		return res, s.failed(call, in.Username, err)
	}
	return res, nil
}

func (s *Service) register(ctx context.Context, call Call, in RegisterInput) (AuthResult, error) {
	if err := s.gate(call, in.HWID, in.Username); err != nil {
		return AuthResult{}, err
	}
	appID := call.Snap.App.ID
	now := s.now()
	if in.LicenseKey != "" {
		// Check the key before creating anything; it is consumed after the user exists.
		l, err := s.findLicense(ctx, appID, in.LicenseKey)
		if err != nil {
			return AuthResult{}, err
		}
		if err := checkLicense(l, now); err != nil {
			return AuthResult{}, err
		}
	}
	if err := s.checkUserLimit(ctx, call); err != nil {
		return AuthResult{}, err
	}
	if _, err := s.d.Store.GetUserByUsername(ctx, appID, in.Username); err == nil {
		return AuthResult{}, core.E(core.CodeConflict, "the username %q is taken", in.Username)
	}
	hash, err := s.d.Hasher.Hash(ctx, in.Password)
	if err != nil {
		return AuthResult{}, err
	}
	u := storage.AppUser{ID: uuid.NewString(), AppID: appID, Username: in.Username, PasswordHash: hash, Email: in.Email,
		DisplayName: in.DisplayName, Level: 1, DeviceLimit: 1, Enabled: true, CreatedAt: now, UpdatedAt: now}
	b, err := s.checkLocks(ctx, call, u, in.HWID, in.PCName)
	if err != nil {
		return AuthResult{}, err
	}
	if err := b.apply(&u, call, now); err != nil {
		return AuthResult{}, err
	}
	// Creating the user, using the key and signing in are one unit: a register answered with
	// an error leaves neither a user nor a used key behind. The stores have no transaction
	// spanning users and licenses (FerretDB v1.24, the MongoDB-wire server Keyward runs on,
	// has no multi-document transactions at all), so a failed step undoes the ones before
	// it, with a context of its own: the request's may be what failed.
	if err := s.d.Store.CreateUser(ctx, u); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return AuthResult{}, core.E(core.CodeConflict, "the username %q is taken", in.Username)
		}
		// The write may have landed although its answer was lost (a timeout, a dropped
		// connection): the user is ours to remove.
		s.undoRegistration(ctx, u, nil)
		return AuthResult{}, fmt.Errorf("register: create user: %w", err)
	}
	activate := in.LicenseKey != ""
	key := u.Username
	var grant *licenseGrant
	var evs []events.Event
	if activate {
		g, err := s.consumeLicense(ctx, appID, in.LicenseKey, u.Username, now)
		if err != nil {
			// The key was taken meanwhile: the registration did not happen.
			s.undoRegistration(ctx, u, nil)
			return AuthResult{}, err
		}
		grant = &g
		bound, err := s.d.Store.UpdateUser(ctx, appID, u.ID, func(u *storage.AppUser) error {
			g.apply(u, now)
			return nil
		})
		if err != nil {
			s.undoRegistration(ctx, u, grant)
			return AuthResult{}, fmt.Errorf("register: activate: %w", err)
		}
		u = bound
		key = g.lic.Key
		evs = append(evs, activated(call, u, g))
	}
	s.registerDevice(ctx, call, u, b, in.PCName, now)
	evs = append([]events.Event{{Name: events.UserRegister, AppID: appID, Username: u.Username, IP: call.Caller.IP, Country: call.Country,
		Message: "user registered", Data: map[string]any{"userId": u.ID, "licenseActivated": activate}}}, evs...)
	// The sign-in and its events are one step: refused at sign-in (the key's seats are
	// full, the session store is down) or with events that could not be stored, the
	// account and the key's use go, the device bound above with the user.
	if err := s.withEvents(ctx, func() error { return s.signIn(ctx, call, u, now) }, evs...); err != nil {
		s.undoRegistration(ctx, u, grant)
		return AuthResult{}, err
	}
	return AuthResult{User: u, Key: key, LicenseActivated: activate, Warnings: warnings(u, now)}, nil
}

// undoAttempts and undoWait bound the undo of a failed registration: the store that just
// failed a step may be failing for a moment (a busy pool, a failover), so the undo is tried
// a few times, in a context of its own.
const (
	undoAttempts = 4
	undoWait     = 250 * time.Millisecond
	undoTimeout  = 5 * time.Second
)

// undoRegistration removes the user u made by a registration that then failed (its
// devices go with it) and gives back the key's use when grant is set. It runs detached
// from the request's context, which may be cancelled or the very thing that failed.
func (s *Service) undoRegistration(ctx context.Context, u storage.AppUser, grant *licenseGrant) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	if grant != nil {
		s.refundLicense(ctx, *grant)
	}
	err := retryUndo(ctx, func() error {
		if err := s.d.Store.DeleteUser(ctx, u.AppID, u.ID); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		return nil
	})
	if err != nil {
		s.d.Log.Error("client: cannot undo a failed registration: the user stays", "app", u.AppID, "user", u.ID, "err", err)
	}
}

// retryUndo runs step until it succeeds, undoAttempts times at most, waiting longer each
// time; it answers the last error.
func retryUndo(ctx context.Context, step func() error) error {
	var err error
	for attempt := range undoAttempts {
		if err = step(); err == nil {
			return nil
		}
		if attempt+1 == undoAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(undoWait << attempt):
		}
	}
	return err
}

// checkUserLimit refuses a new user beyond the owner's plan's maxUsersPerApp.
func (s *Service) checkUserLimit(ctx context.Context, call Call) error {
	n, err := s.d.Store.CountUsers(ctx, call.Snap.App.ID)
	if err != nil {
		return fmt.Errorf("count users: %w", err)
	}
	if limit := call.Snap.Plan.Limits.MaxUsersPerApp; n >= limit {
		return core.E(core.CodePlanLimit, "this application has reached its limit of %d users", limit)
	}
	return nil
}

// License signs in with a license key alone: the key is the identity, and a user named
// after the key is created on its first use.
func (s *Service) License(ctx context.Context, call Call, in LicenseInput) (AuthResult, error) {
	if err := validClientStrings(in.HWID, in.PCName, in.LicenseKey); err != nil {
		return AuthResult{}, err
	}
	if strings.TrimSpace(in.LicenseKey) == "" {
		return AuthResult{}, core.Invalid("licenseKey", "licenseKey is required")
	}
	res, err := s.license(ctx, call, in)
	if err != nil {
		return res, s.failed(call, in.LicenseKey, err)
	}
	return res, nil
}

func (s *Service) license(ctx context.Context, call Call, in LicenseInput) (AuthResult, error) {
	if err := s.gate(call, in.HWID, in.LicenseKey); err != nil {
		return AuthResult{}, err
	}
	appID := call.Snap.App.ID
	now := s.now()
	l, err := s.findLicense(ctx, appID, in.LicenseKey)
	if err != nil {
		return AuthResult{}, err
	}
	u, err := s.d.Store.GetUserByUsername(ctx, appID, l.Key)
	switch {
	case err == nil:
		return s.licenseReturning(ctx, call, l, u, in, now)
	case !errors.Is(err, storage.ErrNotFound):
		return AuthResult{}, fmt.Errorf("license login: find user: %w", err)
	}
	// First use: the key must be usable, and is consumed. The user is created first, with
	// the key's grant and the device bound: the unique username decides which of concurrent
	// first logins activates, and the others (the same program retrying, or several of its
	// processes) find that user and log in as returning, under its locks, on every engine.
	if err := checkLicense(l, now); err != nil {
		return AuthResult{}, err
	}
	if err := s.checkUserLimit(ctx, call); err != nil {
		return AuthResult{}, err
	}
	u = storage.AppUser{ID: uuid.NewString(), AppID: appID, Username: l.Key, Level: 1, DeviceLimit: max(l.DeviceLimit, 1),
		DisplayName: l.DisplayName, Enabled: true, CreatedAt: now, UpdatedAt: now}
	b, err := s.checkLocks(ctx, call, u, in.HWID, in.PCName)
	if err != nil {
		return AuthResult{}, err
	}
	licenseGrant{lic: l}.apply(&u, now)
	if err := b.apply(&u, call, now); err != nil {
		return AuthResult{}, err
	}
	if err := s.d.Store.CreateUser(ctx, u); err != nil {
		if errors.Is(err, storage.ErrConflict) {
			// A concurrent first use created the user: log in as returning.
			if u, err = s.d.Store.GetUserByUsername(ctx, appID, l.Key); err == nil {
				return s.licenseReturning(ctx, call, l, u, in, now)
			}
		}
		return AuthResult{}, fmt.Errorf("license login: create user: %w", err)
	}
	grant, err := s.consumeLicense(ctx, appID, l.Key, l.Key, now)
	if err != nil {
		// The key was used up or changed meanwhile (an activation by another account):
		// this first use did not happen.
		if derr := s.d.Store.DeleteUser(ctx, appID, u.ID); derr != nil {
			s.d.Log.Warn("client: cannot undo a license user", "user", u.ID, "err", derr)
		}
		return AuthResult{}, err
	}
	s.registerDevice(ctx, call, u, b, in.PCName, now)
	if err := s.withEvents(ctx, func() error { return s.signIn(ctx, call, u, now) }, activated(call, u, grant), events.Event{Name: events.UserLogin, AppID: appID, Username: u.Username, IP: call.Caller.IP, Country: call.Country,
		Message: "user logged in with a license key", Data: map[string]any{"userId": u.ID, "licenseActivated": true}}); err != nil {
		return AuthResult{}, err
	}
	return AuthResult{User: u, Key: l.Key, LicenseActivated: true, Warnings: warnings(u, now)}, nil
}

// licenseReturning signs in the user of a key used before; no use is consumed.
func (s *Service) licenseReturning(ctx context.Context, call Call, l storage.License, u storage.AppUser, in LicenseInput, now time.Time) (AuthResult, error) {
	switch {
	case l.Banned:
		return AuthResult{}, core.E(core.CodeBanned, "this license key is banned")
	case !l.Enabled:
		return AuthResult{}, core.E(core.CodeLicenseInvalid, "this license key is disabled")
	}
	judged := expiryJudgedAt(call.Snap, now) // the app's grace after expiry
	if err := checkUser(u, judged); err != nil {
		return AuthResult{}, err
	}
	b, err := s.checkLocks(ctx, call, u, in.HWID, in.PCName)
	if err != nil {
		return AuthResult{}, err
	}
	undoDevice, err := s.claimDevice(ctx, call, u, b, in.PCName, now)
	if err != nil {
		return AuthResult{}, err
	}
	if b.bindsNothing(u) {
		u = s.recordLogin(u, b, call, now)
	} else if u, err = s.d.Store.UpdateUser(ctx, u.AppID, u.ID, func(u *storage.AppUser) error {
		if err := checkUser(*u, judged); err != nil {
			return err
		}
		return b.apply(u, call, now)
	}); err != nil {
		undoDevice()
		return AuthResult{}, err
	}
	warn, evs := signInWarnings(call, u, now, []events.Event{{Name: events.UserLogin, AppID: u.AppID, Username: u.Username, IP: call.Caller.IP, Country: call.Country,
		Message: "user logged in with a license key", Data: map[string]any{"userId": u.ID, "licenseActivated": false}}})
	if err := s.withEvents(ctx, func() error { return s.signIn(ctx, call, u, now) }, evs...); err != nil {
		b.keepIfBound(u, undoDevice)
		return AuthResult{}, err
	}
	return AuthResult{User: u, Key: l.Key, Returning: true, Warnings: warn}, nil
}

// Activate applies a license key to the signed-in user.
func (s *Service) Activate(ctx context.Context, call Call, licenseKey string) (storage.AppUser, error) {
	if err := validClientStrings("", "", licenseKey); err != nil {
		return storage.AppUser{}, err
	}
	if strings.TrimSpace(licenseKey) == "" {
		return storage.AppUser{}, core.Invalid("licenseKey", "licenseKey is required")
	}
	u, err := s.CurrentUser(ctx, call)
	if err != nil {
		return storage.AppUser{}, err
	}
	now := s.now()
	if u.Banned {
		return storage.AppUser{}, checkUser(u, now)
	}
	grant, err := s.consumeLicense(ctx, u.AppID, licenseKey, u.Username, now)
	if err != nil {
		return storage.AppUser{}, err
	}
	// The activation's event is stored with the user's update (events.Change).
	octx, ch := events.Begin(ctx, s.d.Bus)
	u, err = s.d.Store.UpdateUser(octx, u.AppID, u.ID, func(u *storage.AppUser) error {
		grant.apply(u, now)
		u.UpdatedAt = now
		ch.Set(activated(call, *u, grant))
		return nil
	})
	if err != nil {
		s.refundLicense(ctx, grant)
		return storage.AppUser{}, err
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.AppUser{}, err
	}
	return u, nil
}

// CurrentUser answers the session's user: NOT_LOGGED_IN before a login, UNAUTHORIZED
// when the user was deleted meanwhile.
func (s *Service) CurrentUser(ctx context.Context, call Call) (storage.AppUser, error) {
	if !call.Session.LoggedIn() {
		return storage.AppUser{}, core.E(core.CodeNotLoggedIn, "this call needs a logged-in session; call login, register or license first")
	}
	u, err := s.d.Store.GetUser(ctx, call.Snap.App.ID, call.Session.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.AppUser{}, core.E(core.CodeUnauthorized, "the user of this session no longer exists")
	}
	if err != nil {
		return storage.AppUser{}, fmt.Errorf("read session user: %w", err)
	}
	return u, nil
}
