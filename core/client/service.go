package client

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/passwords"
	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/storage"
)

// Store is what the client flows read and write.
type Store interface {
	GetAppBySecretHash(ctx context.Context, hash string) (storage.App, error)
	storage.UserStore
	storage.LicenseStore
	storage.DeviceStore
	storage.TokenStore
	storage.VariableStore
	storage.FileStore
}

// Quota counts a client API call against the owner's monthly quota (usage.Meter).
type Quota interface {
	Count(ctx context.Context, accountID string) error
}

// Deps are the parts the service works with.
type Deps struct {
	Store    Store
	Apps     Snapshots
	Sessions SessionEngine
	Hasher   *passwords.Hasher
	Bus      events.Publisher
	// Country resolves addresses to countries; nil when no GeoIP database is set.
	Country rules.CountryResolver
	Quota   Quota
	// Archive keeps durable copies of sessions (nil: sessions live in the cluster engine
	// only). Start and Close run its writer.
	Archive storage.ClientSessionStore
	// Blobs holds file bytes.
	Blobs BlobOpener
	// Reset configures HWID/IP resets requested by clients.
	Reset ResetDeps
	Now   func() time.Time
	Log   *slog.Logger
}

// Service runs the client API.
type Service struct {
	d        Deps
	r        ResetDeps
	sessions sessions
	logins   *loginRecorder
	commit   *groupCommit
	// secretApps remembers the app each secret opened (openApp).
	secretApps secretApps
	// standings gathers the sockets' concurrent user reads (standings.go).
	standings standingReads
	endHooks  []func(ctx context.Context, appID, userID, token string)
}

// writeEvery is how often changes nobody waits for (sessions' new expiries) are written.
const writeEvery = 5 * time.Second

// New builds the service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	s := &Service{d: d, r: d.Reset, sessions: sessions{e: d.Sessions, now: d.Now},
		logins: &loginRecorder{store: d.Store, log: d.Log, pending: map[string]storage.UserLogin{}}}
	if d.Archive != nil {
		s.sessions.arch = newArchive(d.Archive, d.Log, d.Now)
	}
	st, _ := d.Bus.(stager)
	s.commit = newGroupCommit(func(ctx context.Context, final bool) error {
		// One write: the session copies, the last logins and the events staged by the
		// sign-ins of the round (withEvents), in one transaction where the engine has one
		// (storage.ClientSessionStore.SaveClientRound under events.Bus.WritePendingWith;
		// else written after them, before the round ends): an event stored is a session
		// and a last login stored. A login waits for the round; errors reach the events
		// through their tickets.
		write := s.writeRound
		if st == nil {
			return write(ctx, final)
		}
		return st.WritePendingWith(ctx, func(ctx context.Context) error { return write(ctx, final) })
	})
	s.sessions.durable = s.commit.wait
	return s
}

// writeRound writes a round's session copies and last logins together (archive.flush);
// without an archive, the logins alone.
func (s *Service) writeRound(ctx context.Context, final bool) error {
	if s.sessions.arch == nil {
		return s.logins.flush(ctx)
	}
	return s.sessions.arch.flush(ctx, final, s.logins.take())
}

// Start runs the background writer of session copies and last logins (without it, each
// login writes its own) under owner, the node's supervisor (kind client-writer; nil: a
// supervisor of its own). Close, or the owner's stop, writes the last round and ends it.
func (s *Service) Start(owner supervise.Starter) error { return s.commit.start(owner, writeEvery) }

// Close writes the last session changes and logins and stops the writer.
func (s *Service) Close() { s.commit.close() }

// Caller is what the edge knows about the client making a request.
type Caller struct {
	IP string
	// Country is the trusted proxy's country header, when configured.
	Country   string
	UserAgent string
}

func (s *Service) now() time.Time { return storage.Truncate(s.d.Now()) }

// country resolves the caller's country: the GeoIP database first, then the header.
func (s *Service) country(c Caller) string {
	if s.d.Country != nil {
		if a, err := netip.ParseAddr(c.IP); err == nil {
			if cc, ok := s.d.Country.Country(a); ok {
				return cc
			}
		}
	}
	return strings.ToUpper(strings.TrimSpace(c.Country))
}

// checkRules applies the app's rules to the caller and logs rule.triggered on a refusal.
func (s *Service) checkRules(snap Snapshot, c Caller, country, hwid, username string) error {
	subject := rules.Subject{HWID: hwid, Country: country}
	if a, err := netip.ParseAddr(c.IP); err == nil {
		subject.IP = a
	}
	d := snap.Rules.Check(subject)
	if d.Allowed {
		return nil
	}
	data := map[string]any{"type": d.Type, "reason": d.Reason}
	if d.Rule != nil {
		data["ruleId"], data["value"] = d.Rule.ID, d.Rule.Value
	}
	s.note(events.Event{Name: events.RuleTriggered, AppID: snap.App.ID, Username: username, IP: c.IP, Country: country,
		Level: events.LevelWarning, Message: fmt.Sprintf("access refused by a %s rule (%s)", d.Type, d.Reason), Data: data})
	return core.E(core.CodeRuleBlocked, "access from this %s is not allowed for this application", ruleSubject(d.Type))
}

func ruleSubject(typ string) string {
	switch typ {
	case rules.TypeIP:
		return "address"
	case rules.TypeHWID:
		return "device"
	}
	return "country"
}

// publish stores the events of a change before it is acknowledged: its error is the
// change's (a 503 when the event log is unavailable).
func (s *Service) publish(ctx context.Context, es ...events.Event) error {
	if s.d.Bus == nil {
		return nil
	}
	return s.d.Bus.Publish(ctx, es...)
}

// stager is what the event log offers beyond Publisher (events.Bus): events staged in the
// round it is gathering, and that round written by the client's own group commit.
type stager interface {
	Stage(es ...events.Event) (*events.Ticket, error)
	WritePendingWith(ctx context.Context, write func(ctx context.Context) error) error
}

// withEvents runs a sign-in's durable write (a session put, which waits for the client's
// group commit) and stores its events in the same round: they are staged first, the
// round that writes the session copies writes them with them (events.Bus.WritePendingWith), and
// the call waits for both; a write that fails withdraws its events. Without a stager the
// events are published after the write.
func (s *Service) withEvents(ctx context.Context, write func() error, es ...events.Event) error {
	st, ok := s.d.Bus.(stager)
	if !ok || s.d.Bus == nil {
		if err := write(); err != nil {
			return err
		}
		return s.publish(ctx, es...)
	}
	t, err := st.Stage(es...)
	if err != nil {
		return err
	}
	if err := write(); err != nil {
		t.Cancel()
		return err
	}
	return t.Wait(ctx)
}

// noteTimeout bounds the write of an event of a refusal.
const noteTimeout = 5 * time.Second

// note stores the event of a refusal (a failed login, a rule): the refusal is answered
// whether or not it is stored, so a failure is only logged.
func (s *Service) note(e events.Event) {
	if s.d.Bus == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), noteTimeout)
	defer cancel()
	if err := s.d.Bus.Publish(ctx, e); err != nil {
		s.d.Log.Warn("client: cannot log a refusal", "event", e.Name, "app", e.AppID, "err", err)
	}
}

// appUsable refuses a disabled app; paused apps refuse new logins only (checked there).
func appUsable(snap Snapshot) error {
	if !snap.App.Enabled {
		return core.E(core.CodeAppDisabled, "this application is disabled by its owner")
	}
	return nil
}

// InitInput is the body of init.
type InitInput struct {
	Secret, Version, HWID string
	// UserAgent picks the file encryption format later; kept from init.
}

// InitResult is what init answers.
type InitResult struct {
	Token     string
	App       storage.App
	ExpiresAt time.Time
	// Snap is the app's snapshot the session was opened on: the edge signs the answer
	// with it, as it signs a session call's with the call's (no second ask of the actor).
	Snap Snapshot
}

// Init exchanges the application secret for a new session (SPEC 4.10 init).
func (s *Service) Init(ctx context.Context, c Caller, in InitInput) (InitResult, error) {
	if in.Secret == "" {
		return InitResult{}, core.Invalid("secret", "secret is required (the application secret)")
	}
	if len(in.Secret) > 256 || len(in.HWID) > 512 || len(in.Version) > 64 {
		return InitResult{}, core.E(core.CodeUnauthorized, "invalid application secret")
	}
	snap, fileKey, err := s.openApp(ctx, in.Secret)
	if err != nil {
		return InitResult{}, err
	}
	if err := s.d.Quota.Count(ctx, snap.App.AccountID); err != nil {
		return InitResult{}, err
	}
	if err := appUsable(snap); err != nil {
		return InitResult{}, err
	}
	if in.Version != "" && snap.App.Version != "" && in.Version != snap.App.Version {
		return InitResult{}, core.E(core.CodeVersionMismatch, "this program is version %s; version %s is required", in.Version, snap.App.Version)
	}
	country := s.country(c)
	if err := s.checkRules(snap, c, country, strings.TrimSpace(in.HWID), ""); err != nil {
		return InitResult{}, err
	}
	now := s.now()
	sess := Session{Token: newToken(), AppID: snap.App.ID, AccountID: snap.App.AccountID, HWID: in.HWID, IP: c.IP,
		Country: country, Version: in.Version, CreatedAt: now, FileKey: fileKey}
	if err := s.withEvents(ctx, func() error { return s.sessions.put(ctx, sess, snap.SessionTTL) },
		events.Event{Name: events.SessionInit, AppID: snap.App.ID, IP: c.IP, Country: country, Level: events.LevelDebug,
			Message: "session started", Data: map[string]any{"version": in.Version}}); err != nil {
		return InitResult{}, err
	}
	return InitResult{Token: sess.Token, App: snap.App, ExpiresAt: now.Add(snap.SessionTTL), Snap: snap}, nil
}

// Call is an open client request: its session and app, checked and counted.
type Call struct {
	Session Session
	Snap    Snapshot
	Caller  Caller
	Country string
}

// Begin opens a call on a session: the session is live, the app usable, the call counted
// against the owner's quota, the nonce taken when needNonce, and the idle timeout started
// again. Every session-scoped call goes through it.
func (s *Service) Begin(ctx context.Context, c Caller, token, nonce string, needNonce bool) (Call, error) {
	sess, err := s.sessions.get(ctx, token)
	if err != nil {
		return Call{}, err
	}
	snap, err := s.d.Apps.Snapshot(ctx, sess.AppID)
	if err != nil {
		return Call{}, err
	}
	if err := s.d.Quota.Count(ctx, snap.App.AccountID); err != nil {
		return Call{}, err
	}
	if err := appUsable(snap); err != nil {
		return Call{}, err
	}
	if needNonce {
		if err := s.sessions.takeNonce(ctx, sess.Token, nonce); err != nil {
			return Call{}, err
		}
	}
	if err := s.sessions.touch(ctx, sess, snap.SessionTTL); err != nil {
		return Call{}, err
	}
	return Call{Session: sess, Snap: snap, Caller: c, Country: sess.Country}, nil
}

// ExpiresAt is when the call's session expires if nothing else happens.
func (s *Service) ExpiresAt(call Call) time.Time { return s.now().Add(call.Snap.SessionTTL) }

// Nonce issues a nonce for the session.
func (s *Service) Nonce(ctx context.Context, c Caller, token string) (string, error) {
	call, err := s.Begin(ctx, c, token, "", false)
	if err != nil {
		return "", err
	}
	return s.sessions.issueNonce(ctx, call.Session.Token)
}

// Heartbeat keeps the session alive (nonce required) and answers its new expiry.
func (s *Service) Heartbeat(ctx context.Context, c Caller, token, nonce string) (time.Time, error) {
	call, err := s.Begin(ctx, c, token, nonce, true)
	if err != nil {
		return time.Time{}, err
	}
	return s.HeartbeatOn(ctx, call)
}

// End ends the session.
func (s *Service) End(ctx context.Context, c Caller, token string) error {
	sess, err := s.sessions.get(ctx, token)
	if err != nil {
		return err
	}
	// The call counts toward the owner's quota, but ending a session is never refused:
	// a program past the quota must still be able to sign out.
	_ = s.d.Quota.Count(ctx, sess.AccountID)
	// The event is stored with the delete of the session's durable copy (sessions.end).
	octx, ch := events.Begin(ctx, s.d.Bus)
	ch.Add(events.Event{Name: events.SessionEnd, AppID: sess.AppID, Username: sess.Username, IP: c.IP, Country: sess.Country,
		Level: events.LevelDebug, Message: "session ended"})
	if _, err := s.sessions.end(octx, sess); err != nil {
		return err
	}
	if err := ch.Commit(ctx); err != nil {
		return err
	}
	if sess.LoggedIn() {
		for _, fn := range s.endHooks {
			fn(ctx, sess.AppID, sess.UserID, sess.Token)
		}
	}
	return nil
}

// OnEnd registers fn to run after a logged-in session ended by its own end call (the
// WebSocket channels close the session's socket). Set it up before serving; fn must not
// block for long.
func (s *Service) OnEnd(fn func(ctx context.Context, appID, userID, token string)) {
	s.endHooks = append(s.endHooks, fn)
}

// KillUserSessions ends every session of a user (dashboard kill-sessions, bans, deletes),
// writes user.session_kill and answers how many were live.
func (s *Service) KillUserSessions(ctx context.Context, appID, userID, username string) (int, error) {
	// The event, which names how many sessions were live, is stored with the delete of
	// the user's durable session copies (sessions.endUser).
	octx, ch := events.Begin(ctx, s.d.Bus)
	n, err := s.sessions.endUser(octx, appID, userID, func(n int) {
		ch.Set(events.Event{Name: events.UserSessionKill, AppID: appID, Username: username,
			Message: fmt.Sprintf("%d client sessions ended", n), Data: map[string]any{"userId": userID, "deleted": n}})
	})
	if err != nil {
		return n, err
	}
	if err := ch.Commit(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// HandleEvent ends the sessions of users the dashboard bans or deletes, so they cannot go
// on calling the API until their sessions expire. It runs on the event pipeline.
func (s *Service) HandleEvent(e events.Event) {
	if e.Name != "user.ban" && e.Name != "user.delete" {
		return
	}
	userID, _ := e.Data["userId"].(string)
	if userID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.KillUserSessions(ctx, e.AppID, userID, e.Username); err != nil {
		s.d.Log.Warn("client: cannot end the sessions of a banned or deleted user", "app", e.AppID, "user", userID, "err", err)
	}
}

// ActiveSessions counts the app's live sessions.
func (s *Service) ActiveSessions(ctx context.Context, appID string) (int, error) {
	return s.sessions.count(ctx, appID)
}
