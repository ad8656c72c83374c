package commerce

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/mail"
	"github.com/keyward/keyward/storage"
)

// PortalKind is the connection kind where an app's buyer portal settings lived before
// they moved to the app (storage.App.Portal, changed through apps.Service.UpdateApp).
// Deprecated: such connections stay readable for one release (the upgrade copies their
// switches to the app); new ones are refused.
const PortalKind Provider = "portal"

// Portal timings: a mailed code lives CodeTTL and works once; a session idles out after
// SessionTTL (each request pushes it back).
const (
	PortalCodeTTL    = 10 * time.Minute
	PortalSessionTTL = 30 * time.Minute
)

// PortalEngine is where codes and sessions live: the cluster engine (memory or Redis), so
// that a code mailed by one node signs in on any other and a session works on every node.
type PortalEngine interface {
	cluster.OneTimeTokens
	cluster.Values
}

// PortalSeats lists and frees a floating license's seats (client.Service).
type PortalSeats interface {
	Seats(ctx context.Context, appID, licenseID string) ([]client.Seat, error)
	FreeSeat(ctx context.Context, appID, licenseID, id string) error
}

// PortalFiles lists and opens the app's files (files.Service).
type PortalFiles interface {
	List(ctx context.Context, o apps.Owner, appID string) ([]storage.File, error)
	Open(ctx context.Context, o apps.Owner, appID, id string) (storage.File, io.ReadCloser, error)
}

// AuditRecorder stores an audit entry (audit.Service).
type AuditRecorder interface {
	Record(ctx context.Context, e storage.AuditEntry) error
}

// PortalDeps are the portal's collaborators beyond the service's.
type PortalDeps struct {
	Engine   PortalEngine
	Seats    PortalSeats
	Files    PortalFiles
	Resetter HWIDResetter
	Audit    AuditRecorder
}

// Portal is the buyers' side: sign-in with a key and a mailed code, and the actions the
// app's owner turned on. Every action is checked against the app's portal settings as
// they are now, so switching an action off takes effect at the next request.
type Portal struct {
	s *Service
	d PortalDeps
}

// Portal answers the buyer portal of s.
func (s *Service) Portal(d PortalDeps) *Portal { return &Portal{s: s, d: d} }

// ActorBuyer is the audit actor type of a buyer's portal action; its id is the license's.
const ActorBuyer = "buyer"

// PortalCall is who asks: for the audit entries.
type PortalCall struct {
	IP, Method, Route, Path string
}

// PortalSession is a signed-in buyer: one license of one app.
type PortalSession struct {
	AppID     string `json:"appId"`
	LicenseID string `json:"licenseId"`
}

var (
	errPortalOff   = core.E(core.CodeNotFound, "this app has no buyer portal")
	errPortalLogin = core.E(core.CodeUnauthorized, "the key or the code is wrong, or the code has expired or was used: ask for a new code")
	errNoSession   = core.E(core.CodeUnauthorized, "sign in with your license key and a mailed code")
)

// Settings answers the app with its portal settings, NOT_FOUND when there is no such app
// or its portal is off.
func (p *Portal) Settings(ctx context.Context, appID string) (storage.App, error) {
	app, err := p.s.d.Store.GetAppByID(ctx, appID)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.App{}, errPortalOff
	} else if err != nil {
		return storage.App{}, fmt.Errorf("commerce: read app: %w", err)
	}
	if !app.Portal.Enabled {
		return storage.App{}, errPortalOff
	}
	return app, nil
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func codeKey(appID, licenseID, code string) string {
	return "portal:code:" + appID + ":" + licenseID + ":" + sha256Hex(code)
}

func sessionKey(token string) string { return "portal:session:" + sha256Hex(token) }

// NormalizeKey is how a buyer's typed key is looked up (keys are upper case).
func NormalizeKey(key string) string { return strings.ToUpper(strings.TrimSpace(key)) }

// RequestCode mails a one-time code to the license's buyer: the order's email, else the
// email of the user the key reaches. An unknown key, or one with no address, mails
// nothing and answers the same (the answer does not tell which keys exist). The caller
// rate-limits per key and per address.
func (p *Portal) RequestCode(ctx context.Context, appID, key string) error {
	app, err := p.Settings(ctx, appID)
	if err != nil {
		return err
	}
	l, err := p.s.d.Store.GetLicenseByKey(ctx, appID, NormalizeKey(key))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("commerce: read license: %w", err)
	}
	to := p.buyerEmail(ctx, l)
	if to == "" || p.s.d.Mail == nil {
		return nil
	}
	n, err := rand.Int(rand.Reader, big.NewInt(100_000_000))
	if err != nil {
		return fmt.Errorf("commerce: code: %w", err)
	}
	code := fmt.Sprintf("%08d", n.Int64())
	// The engine forgets the code after its ttl; the expiry in the value is what the
	// service's clock checks (the same on every node and engine).
	expires := strconv.FormatInt(p.s.d.Now().Add(PortalCodeTTL).UnixMilli(), 10)
	if err := p.d.Engine.PutToken(ctx, codeKey(appID, l.ID, code), expires, PortalCodeTTL); err != nil {
		return fmt.Errorf("commerce: store code: %w", err)
	}
	appName := app.Name
	p.s.d.Mail.Enqueue(mail.Message{To: to, Subject: "Your sign-in code for " + appName,
		Text: fmt.Sprintf("Your code: %s\n\nIt signs in to the %s buyer portal once, within %d minutes. If you did not ask for it, ignore this mail.\n",
			code, appName, int(PortalCodeTTL/time.Minute))})
	return nil
}

// order finds the order that issued the license (its note names the store and the
// order; the order must list the license), or ok false.
func (p *Portal) order(ctx context.Context, l storage.License) (storage.Order, bool) {
	provider, orderID, found := strings.Cut(l.Note, " order ")
	if !found || orderID == "" {
		return storage.Order{}, false
	}
	conns, err := p.s.d.Store.ListStoreConnections(ctx, l.AppID)
	if err != nil {
		return storage.Order{}, false
	}
	for _, c := range conns {
		if c.Provider != provider {
			continue
		}
		o, err := p.s.d.Store.FindOrder(ctx, c.ID, orderID, "")
		if err == nil && containsID(o.LicenseIDs, l.ID) {
			return o, true
		}
	}
	return storage.Order{}, false
}

func containsID(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func (p *Portal) user(ctx context.Context, l storage.License) (storage.AppUser, bool) {
	for _, name := range usersOf(l) {
		if u, err := p.s.d.Store.GetUserByUsername(ctx, l.AppID, name); err == nil {
			return u, true
		}
	}
	return storage.AppUser{}, false
}

func (p *Portal) buyerEmail(ctx context.Context, l storage.License) string {
	if o, ok := p.order(ctx, l); ok && o.Email != "" {
		return o.Email
	}
	if u, ok := p.user(ctx, l); ok {
		return u.Email
	}
	return ""
}

// SignIn takes the mailed code (once: of two simultaneous tries on two nodes one wins)
// and answers a session token. The caller limits the tries per key and per address.
func (p *Portal) SignIn(ctx context.Context, call PortalCall, appID, key, code string) (string, error) {
	if strings.TrimSpace(key) == "" {
		return "", core.Invalid("key", "key is required")
	}
	if strings.TrimSpace(code) == "" {
		return "", core.Invalid("code", "code is required")
	}
	app, err := p.Settings(ctx, appID)
	if err != nil {
		return "", err
	}
	l, err := p.s.d.Store.GetLicenseByKey(ctx, appID, NormalizeKey(key))
	if errors.Is(err, storage.ErrNotFound) {
		return "", errPortalLogin
	} else if err != nil {
		return "", fmt.Errorf("commerce: read license: %w", err)
	}
	v, ok, err := p.d.Engine.TakeToken(ctx, codeKey(appID, l.ID, strings.TrimSpace(code)))
	if err != nil {
		return "", fmt.Errorf("commerce: take code: %w", err)
	}
	if expires, perr := strconv.ParseInt(v, 10, 64); !ok || perr != nil || p.s.d.Now().UnixMilli() > expires {
		return "", errPortalLogin
	}
	token := secrets.Random(32)
	b, _ := json.Marshal(PortalSession{AppID: appID, LicenseID: l.ID})
	if err := p.d.Engine.SetValue(ctx, sessionKey(token), b, PortalSessionTTL); err != nil {
		return "", fmt.Errorf("commerce: store session: %w", err)
	}
	if err := p.audit(ctx, call, app, l, "portal_sessions"); err != nil {
		return "", err
	}
	return token, nil
}

// Session answers the session of token for appID, pushing its idle timeout back.
func (p *Portal) Session(ctx context.Context, appID, token string) (PortalSession, error) {
	if token == "" {
		return PortalSession{}, errNoSession
	}
	b, _, ok, err := p.d.Engine.GetValue(ctx, sessionKey(token))
	if err != nil {
		return PortalSession{}, fmt.Errorf("commerce: read session: %w", err)
	}
	var s PortalSession
	if !ok || json.Unmarshal(b, &s) != nil || s.AppID != appID {
		return PortalSession{}, errNoSession
	}
	if _, err := p.d.Engine.TouchValue(ctx, sessionKey(token), PortalSessionTTL); err != nil {
		return PortalSession{}, fmt.Errorf("commerce: touch session: %w", err)
	}
	return s, nil
}

// SignOut ends the session of token.
func (p *Portal) SignOut(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	_, err := p.d.Engine.DeleteValue(ctx, sessionKey(token))
	return err
}

// PortalView is what the buyer sees of the license.
type PortalView struct {
	AppName string
	License storage.License
	Status  string
	// ExpiresAt is the license's expiry, else (not activated yet) its user's.
	ExpiresAt    time.Time
	Switches     storage.PortalSwitches
	Seats        []client.Seat
	HWIDBound    bool
	HWIDResets   int
	HWIDResetMax int
	NextResetAt  time.Time
	Files        []storage.File
}

// license reads the session's license and the app with its portal settings (the portal
// may have been turned off, or the license revoked, since the sign-in).
func (p *Portal) license(ctx context.Context, s PortalSession) (storage.License, storage.App, error) {
	app, err := p.Settings(ctx, s.AppID)
	if err != nil {
		return storage.License{}, app, err
	}
	l, err := p.s.d.Store.GetLicense(ctx, s.AppID, s.LicenseID)
	if errors.Is(err, storage.ErrNotFound) {
		return l, app, errNoSession
	} else if err != nil {
		return l, app, fmt.Errorf("commerce: read license: %w", err)
	}
	return l, app, nil
}

func (p *Portal) statusOf(l storage.License) string {
	switch {
	case l.Banned:
		return "banned"
	case !l.Enabled:
		return "disabled"
	case !l.ExpiresAt.IsZero() && l.ExpiresAt.Before(p.s.d.Now()):
		return "expired"
	}
	return "active"
}

// View answers the license as the buyer sees it.
func (p *Portal) View(ctx context.Context, s PortalSession) (PortalView, error) {
	l, app, err := p.license(ctx, s)
	if err != nil {
		return PortalView{}, err
	}
	v := PortalView{License: l, Status: p.statusOf(l), Switches: app.Portal.PortalSwitches, AppName: app.Name, ExpiresAt: l.ExpiresAt}
	if u, ok := p.user(ctx, l); ok {
		v.HWIDBound, v.HWIDResets, v.HWIDResetMax = u.HWID != "", u.HwidResets, u.HwidResetMax
		if v.ExpiresAt.IsZero() {
			v.ExpiresAt = u.ExpiresAt
		}
		if u.HwidResetCooldown > 0 && !u.LastHwidResetAt.IsZero() {
			if next := u.LastHwidResetAt.Add(time.Duration(u.HwidResetCooldown) * time.Second); next.After(p.s.d.Now()) {
				v.NextResetAt = next
			}
		}
	}
	if p.d.Seats != nil {
		if v.Seats, err = p.d.Seats.Seats(ctx, l.AppID, l.ID); err != nil {
			return PortalView{}, err
		}
	}
	if app.Portal.Downloads && v.Status == "active" && p.d.Files != nil {
		o, err := p.owner(ctx, app)
		if err != nil {
			return PortalView{}, err
		}
		if v.Files, err = p.d.Files.List(ctx, o, l.AppID); err != nil {
			return PortalView{}, err
		}
	}
	return v, nil
}

func (p *Portal) owner(ctx context.Context, app storage.App) (apps.Owner, error) {
	acct, err := p.s.d.Store.GetAccount(ctx, app.AccountID)
	if err != nil {
		return apps.Owner{}, fmt.Errorf("commerce: read owner: %w", err)
	}
	return apps.Owner{AccountID: acct.ID, Plan: acct.Plan}, nil
}

func switchedOff(what string) error {
	return core.E(core.CodeForbidden, "the app's owner has turned %s off in the buyer portal", what)
}

// audit records a buyer's action in the owner's audit log, as the owner's twin would be.
func (p *Portal) audit(ctx context.Context, call PortalCall, app storage.App, l storage.License, recordType string) error {
	if p.d.Audit == nil {
		return nil
	}
	return p.d.Audit.Record(ctx, storage.AuditEntry{AccountID: app.AccountID, AppID: l.AppID, ActorType: ActorBuyer, ActorID: l.ID,
		ActorName: "buyer of " + maskKey(l.Key), IP: call.IP, Method: call.Method, Route: call.Route, Path: call.Path,
		RecordType: recordType, RecordID: l.ID, Status: 200, CreatedAt: p.s.now()})
}

// ResetHWID resets the hardware binding of the user the license reaches, within that
// user's reset limit and cooldown (apps.Service.ResetHWID, which writes the
// user.hwid_reset event the owner's reset writes).
func (p *Portal) ResetHWID(ctx context.Context, call PortalCall, s PortalSession) (int, error) {
	l, app, err := p.license(ctx, s)
	if err != nil {
		return 0, err
	}
	if !app.Portal.HWIDReset || p.d.Resetter == nil {
		return 0, switchedOff("HWID resets")
	}
	u, ok := p.user(ctx, l)
	if !ok {
		return 0, core.E(core.CodeConflict, "nobody has signed in with this key yet: there is no hardware binding to reset")
	}
	o, err := p.owner(ctx, app)
	if err != nil {
		return 0, err
	}
	_, n, err := p.d.Resetter.ResetHWID(ctx, o, l.AppID, u.ID)
	if err != nil {
		return 0, err
	}
	return n, p.audit(ctx, call, app, l, "users")
}

// buyerEvent is the event of a buyer's action on the license: SPEC 6.1 has no name for a
// seat released or a key mailed again, and license.update is the nearest (the license's
// seats, or what its buyer was sent, changed); data.action tells which, data.actor that
// the buyer did it in the portal.
func buyerEvent(call PortalCall, l storage.License, action, message string, data map[string]any) events.Event {
	d := map[string]any{"licenseId": l.ID, "action": action, "actor": ActorBuyer}
	for k, v := range data {
		d[k] = v
	}
	return events.Event{Name: events.LicenseUpdate, AppID: l.AppID, Username: l.UsedBy, IP: call.IP, Message: message, Data: d}
}

// withEvent runs a buyer's change and stores its event before the answer (events.Change):
// a seat lives in the cluster engine and a mail in the mail queue, so there is no database
// write for the event to ride in; Commit appends it in a write the answer waits for (as on
// MongoDB), and a change whose event could not be stored answers the error.
func (p *Portal) withEvent(ctx context.Context, e events.Event, change func(context.Context) error) error {
	_, ch := events.Begin(ctx, p.s.d.Bus)
	ch.Add(e)
	if err := change(ctx); err != nil {
		return err
	}
	return ch.Commit(ctx)
}

// ReleaseSeat frees one seat of the license (its session ends).
func (p *Portal) ReleaseSeat(ctx context.Context, call PortalCall, s PortalSession, seatID string) error {
	l, app, err := p.license(ctx, s)
	if err != nil {
		return err
	}
	if !app.Portal.SeatRelease || p.d.Seats == nil {
		return switchedOff("seat release")
	}
	e := buyerEvent(call, l, "seat_release", "seat "+seatID+" of license "+l.Key+" released by its buyer", map[string]any{"seatId": seatID})
	if err := p.withEvent(ctx, e, func(ctx context.Context) error { return p.d.Seats.FreeSeat(ctx, l.AppID, l.ID, seatID) }); err != nil {
		return err
	}
	return p.audit(ctx, call, app, l, "licenses")
}

// Download opens one of the app's files for an active license.
func (p *Portal) Download(ctx context.Context, s PortalSession, fileID string) (storage.File, io.ReadCloser, error) {
	l, app, err := p.license(ctx, s)
	if err != nil {
		return storage.File{}, nil, err
	}
	if !app.Portal.Downloads || p.d.Files == nil {
		return storage.File{}, nil, switchedOff("downloads")
	}
	if st := p.statusOf(l); st != "active" {
		return storage.File{}, nil, core.E(core.CodeForbidden, "the license is %s: its downloads are closed", st)
	}
	o, err := p.owner(ctx, app)
	if err != nil {
		return storage.File{}, nil, err
	}
	return p.d.Files.Open(ctx, o, l.AppID, fileID)
}

// Resend mails the license's key again: the order's mail (all its keys) when a store
// issued it, else the key alone to the user's address.
func (p *Portal) Resend(ctx context.Context, call PortalCall, s PortalSession) error {
	l, app, err := p.license(ctx, s)
	if err != nil {
		return err
	}
	if !app.Portal.Resend {
		return switchedOff("mailing the key again")
	}
	if o, ok := p.order(ctx, l); ok && o.Email != "" && len(o.Keys) > 0 {
		e := buyerEvent(call, l, "key_resend", "keys of order "+o.OrderID+" mailed again to its buyer", map[string]any{"orderId": o.ID})
		if err := p.withEvent(ctx, e, func(ctx context.Context) error { return p.s.ResendKeys(ctx, o) }); err != nil {
			return err
		}
		return p.audit(ctx, call, app, l, "orders")
	}
	u, ok := p.user(ctx, l)
	if !ok || u.Email == "" || p.s.d.Mail == nil {
		return core.E(core.CodeConflict, "this key has no buyer address to mail it to")
	}
	e := buyerEvent(call, l, "key_resend", "license "+l.Key+" mailed again to its buyer", nil)
	if err := p.withEvent(ctx, e, func(context.Context) error {
		p.s.d.Mail.Enqueue(mail.Message{To: u.Email, Subject: "Your license key", Text: "Your license key:\n\n" + l.Key + "\n"})
		return nil
	}); err != nil {
		return err
	}
	return p.audit(ctx, call, app, l, "licenses")
}
