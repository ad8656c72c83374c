package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
)

// ResetTTL is how long a mailed HWID/IP reset link works.
const ResetTTL = time.Hour

// Mailer takes mails without blocking (mail.Queue).
type Mailer interface{ Enqueue(m mail.Message) }

// ResetDeps are what the reset flow needs besides the rest of the service.
type ResetDeps struct {
	Tokens    cluster.OneTimeTokens
	Mailer    Mailer
	PublicURL string
}

// pendingReset is what a reset link stands for, kept under the hash of its token.
type pendingReset struct {
	AppID  string `json:"app"`
	UserID string `json:"user"`
	// HWID is the new hardware id to bind after the reset ("" leaves the user unbound).
	HWID string `json:"hwid,omitempty"`
}

func resetKey(token string) string { return "creset:" + secrets.Hash(token) }

// checkResetLimits refuses a reset beyond the user's maximum or inside its cooldown.
func checkResetLimits(u storage.AppUser, now time.Time) error {
	if u.HwidResetMax > 0 && u.HwidResets >= u.HwidResetMax {
		return core.E(core.CodeForbidden, "this account has used its %d HWID resets", u.HwidResetMax)
	}
	if u.IPResetMax > 0 && u.IPResets >= u.IPResetMax {
		return core.E(core.CodeForbidden, "this account has used its %d IP resets", u.IPResetMax)
	}
	for _, c := range []struct {
		last time.Time
		secs int
	}{{u.LastHwidResetAt, u.HwidResetCooldown}, {u.LastIPResetAt, u.IPResetCooldown}} {
		if c.secs > 0 && !c.last.IsZero() {
			if wait := c.last.Add(time.Duration(c.secs) * time.Second).Sub(now); wait > 0 {
				return core.RateLimited(wait)
			}
		}
	}
	return nil
}

// RequestReset mails the signed-in user a single-use link that resets the HWID and IP
// bindings (SPEC 4.10). licenseKey, when given, must be the user's active license.
func (s *Service) RequestReset(ctx context.Context, call Call, licenseKey, newHWID string) error {
	if s.r.Tokens == nil || s.r.Mailer == nil {
		return core.E(core.CodeUnavailable, "resets are not configured on this server")
	}
	if len(newHWID) > maxHWID || len(licenseKey) > maxLicenseKey {
		return core.Invalid("hwid", "hwid or licenseKey is too long")
	}
	u, err := s.CurrentUser(ctx, call)
	if err != nil {
		return err
	}
	if key := strings.TrimSpace(licenseKey); key != "" {
		l, err := s.findLicense(ctx, u.AppID, key)
		if err != nil {
			return err
		}
		if l.ID != u.LicenseID && u.Username != l.Key {
			return core.E(core.CodeLicenseInvalid, "this license key is not the account's license")
		}
	}
	if u.Email == "" {
		return core.Invalid("email", "the account has no email address to send the confirmation to")
	}
	if err := checkResetLimits(u, s.now()); err != nil {
		return err
	}
	token := secrets.Random(32)
	b, _ := json.Marshal(pendingReset{AppID: u.AppID, UserID: u.ID, HWID: newHWID})
	if err := s.r.Tokens.PutToken(ctx, resetKey(token), string(b), ResetTTL); err != nil {
		return fmt.Errorf("store reset token: %w", err)
	}
	// The request's event goes with it (events.Change). The request is the token, kept by
	// the cluster engine, whose write carries no event outbox: Commit appends the event in
	// a write of its own, and only then is the link mailed (the token is usable only
	// through the mail). An append refused withdraws the token: the request is answered
	// an error and nothing is mailed, so no acknowledged request lacks its event.
	_, ch := events.Begin(ctx, s.d.Bus)
	ch.Add(events.Event{Name: events.UserResetRequested, AppID: u.AppID, Username: u.Username, IP: call.Caller.IP,
		Country: call.Country, Message: "HWID/IP reset requested; confirmation mailed", Data: map[string]any{"userId": u.ID}})
	if err := ch.Commit(ctx); err != nil {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, _, terr := s.r.Tokens.TakeToken(tctx, resetKey(token)); terr != nil {
			s.d.Log.Warn("client: reset: cannot withdraw the token of a request whose event was not stored; it expires unmailed", "user", u.ID, "err", terr)
		}
		return err
	}
	link := strings.TrimRight(s.r.PublicURL, "/") + "/api/client/confirm-reset/" + token
	s.r.Mailer.Enqueue(mail.Message{To: u.Email, Subject: "Confirm your device reset for " + call.Snap.App.Name,
		Text: fmt.Sprintf("Someone asked to reset the device (HWID) and IP address bound to your account %q of %s.\n\n"+
			"To confirm, open this link within an hour (it works once):\n\n%s\n\ntoken: %s\n\nIf it was not you, ignore this mail.\n",
			u.Username, call.Snap.App.Name, link, token)})
	return nil
}

// ErrResetLink answers an unknown, used or expired reset link.
var ErrResetLink = core.E(core.CodeNotFound, "this reset link is invalid, was already used or has expired")

// ConfirmReset applies a mailed reset: the HWID and IP bindings are cleared (the HWID set
// to the new one when the request named it), the user's devices removed and the reset
// counted against the user's limits.
func (s *Service) ConfirmReset(ctx context.Context, token string) (storage.AppUser, error) {
	if s.r.Tokens == nil || token == "" || len(token) > 128 {
		return storage.AppUser{}, ErrResetLink
	}
	raw, ok, err := s.r.Tokens.TakeToken(ctx, resetKey(token))
	if err != nil {
		return storage.AppUser{}, fmt.Errorf("take reset token: %w", err)
	}
	if !ok {
		return storage.AppUser{}, ErrResetLink
	}
	var p pendingReset
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return storage.AppUser{}, ErrResetLink
	}
	now := s.now()
	u, err := s.d.Store.UpdateUser(ctx, p.AppID, p.UserID, func(u *storage.AppUser) error {
		if err := checkResetLimits(*u, now); err != nil {
			return err
		}
		u.HWID, u.LockedIP = p.HWID, ""
		u.HwidResets++
		u.IPResets++
		u.LastHwidResetAt, u.LastIPResetAt, u.UpdatedAt = now, now, now
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return storage.AppUser{}, ErrResetLink
	}
	if err != nil {
		return storage.AppUser{}, err
	}
	// The reset's event names the devices removed: it is stored with their removal
	// (events.Change; a removal that fails leaves it to Commit).
	octx, ch := events.Begin(ctx, s.d.Bus)
	ch.OnCount(func(n int) []events.Event {
		return []events.Event{{Name: events.UserHWIDReset, AppID: u.AppID, Username: u.Username,
			Message: "HWID and IP reset confirmed by the user", Data: map[string]any{"userId": u.ID, "devicesRemoved": n}}}
	})
	n, err := s.d.Store.DeleteUserDevices(octx, u.AppID, u.ID)
	if err != nil {
		s.d.Log.Warn("client: reset: cannot remove devices", "user", u.ID, "err", err)
	}
	ch.Counted(n)
	if err := ch.Commit(ctx); err != nil {
		return storage.AppUser{}, err
	}
	return u, nil
}
