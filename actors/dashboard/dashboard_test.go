package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/realtime"
)

// The DashboardActor's own tests: a Dashboard joins a real directory of AppActors
// (app.Apps, its own protoactor system), so every message goes through its actor as in a
// node; the node's presence reads answer from a real memory cluster engine. Frames are
// handed with Hand, which returns once the frame and the I/O it started are done, so the
// tests need no waiting for actions; deliveries and timers are polled for.

const testApp = "app1"

// peer is a wire.Peer that keeps what it was sent, decoded, and how it was closed.
type peer struct {
	mu     sync.Mutex
	msgs   []map[string]any
	closed wire.Disconnect
}

func (p *peer) Send(msg []byte) bool {
	var m map[string]any
	if err := json.Unmarshal(msg, &m); err != nil {
		panic(fmt.Sprintf("not JSON: %q", msg))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Code != 0 {
		return false
	}
	p.msgs = append(p.msgs, m)
	return true
}

func (p *peer) SendShared(f *wire.Shared) bool { return p.Send(f.Msg) }

func (p *peer) Close(d wire.Disconnect) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Code == 0 {
		p.closed = d
	}
}

func (p *peer) all() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.msgs)
}

func (p *peer) types() []string {
	var out []string
	for _, m := range p.all() {
		out = append(out, m["type"].(string))
	}
	return out
}

// last answers the last message sent, or nil.
func (p *peer) last() map[string]any {
	all := p.all()
	if len(all) == 0 {
		return nil
	}
	return all[len(all)-1]
}

func (p *peer) closedWith() wire.Disconnect {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// errorText answers the message of an error message m ("" when m is not one).
func errorText(m map[string]any) string {
	if m == nil || m["type"] != wire.TypeError {
		return ""
	}
	data, _ := m["data"].(map[string]any)
	s, _ := data["message"].(string)
	return s
}

// node is the dashboard's Node: presence reads answer from a real memory engine, the
// actions are recorded (and answer fail[action] when set), and the clock is the test's.
type node struct {
	engine *memory.Engine
	every  time.Duration

	mu    sync.Mutex
	now   time.Time
	calls []string
	fail  map[string]error
	bugs  []string
}

func newNode(t *testing.T) *node {
	e := memory.New(memory.Config{})
	t.Cleanup(func() { _ = e.Close() })
	return &node{engine: e, every: time.Hour, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), fail: map[string]error{}}
}

func (n *node) Now() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.now
}

func (n *node) advance(d time.Duration) {
	n.mu.Lock()
	n.now = n.now.Add(d)
	n.mu.Unlock()
}

func (n *node) RecheckEvery() time.Duration { return n.every }

func (n *node) Bug(what string, err error) {
	n.mu.Lock()
	n.bugs = append(n.bugs, what+": "+err.Error())
	n.mu.Unlock()
}

func (n *node) record(call string, action string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = append(n.calls, call)
	return n.fail[action]
}

func (n *node) failWith(action string, err error) {
	n.mu.Lock()
	n.fail[action] = err
	n.mu.Unlock()
}

func (n *node) recorded() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.calls)
}

func (n *node) bugList() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.bugs)
}

func (n *node) Online(ctx context.Context, appID string) (int, error) {
	if err := n.record("online "+appID, "get_online"); err != nil {
		return 0, err
	}
	return n.engine.Count(ctx, appID)
}

func (n *node) Sessions(ctx context.Context, appID string) ([]realtime.SessionInfo, error) {
	if err := n.record("sessions "+appID, "get_sessions"); err != nil {
		return nil, err
	}
	list, err := n.engine.List(ctx, appID)
	if err != nil {
		return nil, err
	}
	out := make([]realtime.SessionInfo, 0, len(list))
	for _, s := range list {
		out = append(out, realtime.SessionInfo{ID: s.ID, UserID: s.User})
	}
	return out, nil
}

func (n *node) Chat(_ context.Context, appID, userID, message string) (bool, error) {
	return true, n.record(fmt.Sprintf("chat %s %s %s", appID, userID, message), "chat")
}

func (n *node) Push(_ context.Context, appID, userID string, payload map[string]any) (int, error) {
	raw, _ := json.Marshal(payload)
	return 1, n.record(fmt.Sprintf("push %s %s %s", appID, userID, raw), "push_json")
}

func (n *node) Typing(_ context.Context, appID, userID string, typing bool) error {
	return n.record(fmt.Sprintf("typing %s %s %v", appID, userID, typing), "typing")
}

func (n *node) Kick(_ context.Context, appID, userID, reason string) (bool, error) {
	return true, n.record(fmt.Sprintf("kick %s %s %s", appID, userID, reason), "kick")
}

func (n *node) Ban(_ context.Context, appID, userID, reason string) error {
	return n.record(fmt.Sprintf("ban %s %s %s", appID, userID, reason), "ban")
}

func (n *node) Command(_ context.Context, appID, userID, command string, payload map[string]any) (int, error) {
	raw, _ := json.Marshal(payload)
	return 1, n.record(fmt.Sprintf("command %s %s %s %s", appID, userID, command, raw), "command")
}

// auditLog is an Auditor that keeps each entry as "action user reason/command".
type auditLog struct {
	mu      sync.Mutex
	entries []string
}

func (a *auditLog) Audit(action, userID string, details map[string]any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries = append(a.entries, fmt.Sprintf("%s %s %v/%v", action, userID, details["reason"], details["command"]))
}

func (a *auditLog) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.entries)
}

// directory starts a node's directory of AppActors for the test.
func directory(t *testing.T) *app.Apps[struct{}] {
	t.Helper()
	dir := app.NewApps(func(context.Context, string) (struct{}, error) { return struct{}{}, nil }, app.AppsConfig{})
	t.Cleanup(dir.Close)
	return dir
}

// open makes a dashboard socket of testApp, joins it to dir (its actor starts) and greets
// it with no first messages unless greet is false.
func open(t *testing.T, dir *app.Apps[struct{}], n Node, greet bool, opts ...Option) (*Dashboard, *peer) {
	t.Helper()
	p := &peer{}
	d := New(n, fmt.Sprintf("dash-%d", time.Now().UnixNano()), testApp, p, opts...)
	if err := dir.Join(t.Context(), testApp, d.ID, d); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Leave(testApp, d.ID) })
	if greet {
		if err := d.Greet(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	return d, p
}

// hand hands the dashboard one frame and returns once it and its action are done.
func hand(t *testing.T, d *Dashboard, frame string) {
	t.Helper()
	d.Hand(t.Context(), []byte(frame))
}

// waitFor polls cond for up to 30 s (deliveries and timers arrive on the actor's goroutine;
// the bound holds on a loaded machine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func delivery(typ, text string) *Delivery {
	return &Delivery{Msg: wire.Encode(wire.Outgoing{Type: typ, Data: map[string]any{"text": text}}), Type: typ}
}

// texts answers the data.text of each message, in order ("" for one without).
func texts(p *peer) []string {
	var out []string
	for _, m := range p.all() {
		data, _ := m["data"].(map[string]any)
		s, _ := data["text"].(string)
		out = append(out, s)
	}
	return out
}

// TestDeliveriesWaitForTheGreeting: deliveries that reach the actor before the socket's
// first messages are held, then sent after them in their order; once greeted, a delivery
// goes straight out.
func TestDeliveriesWaitForTheGreeting(t *testing.T) {
	dir := directory(t)
	d, p := open(t, dir, newNode(t), false)

	d.Ref().Tell(delivery(wire.TypeSessionConnect, "held 1"))
	d.Ref().Tell(delivery(wire.TypeSessionDisconnect, "held 2"))
	first := [][]byte{
		wire.Encode(wire.Outgoing{Type: wire.TypeOnlineCount, Data: map[string]any{"count": 0}}),
		wire.Encode(wire.Outgoing{Type: wire.TypeSessions, Data: map[string]any{"sessions": []any{}}}),
	}
	if err := d.Greet(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	// Greet returns once the first messages and what was held are queued: the actor
	// handles its messages in order, so the two deliveries told before it are among them.
	want := []string{wire.TypeOnlineCount, wire.TypeSessions, wire.TypeSessionConnect, wire.TypeSessionDisconnect}
	if got := p.types(); !slices.Equal(got, want) {
		t.Fatalf("after the greeting: %v, want %v", got, want)
	}
	if got := texts(p); got[2] != "held 1" || got[3] != "held 2" {
		t.Fatalf("held deliveries out of order: %v", got)
	}
	d.Ref().Tell(delivery(wire.TypeStatus, "live"))
	waitFor(t, "the delivery after the greeting", func() bool { return len(p.all()) == 5 })
	if got := texts(p)[4]; got != "live" {
		t.Fatalf("the delivery after the greeting: %q", got)
	}
}

// TestGreetingThatCannotHappen: Greet to a socket whose actor is gone answers an error
// once its context ends, instead of waiting for ever.
func TestGreetingThatCannotHappen(t *testing.T) {
	dir := directory(t)
	d, _ := open(t, dir, newNode(t), false)
	dir.Leave(testApp, d.ID)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := d.Greet(ctx, nil); err == nil {
		t.Fatal("a greeting to a socket that left answered no error")
	}
}

// TestFilters: set_filters keeps only the listed types (pong and error always come
// through); a bad list is refused and leaves the filters as they were; a socket without
// filters gets every type.
func TestFilters(t *testing.T) {
	dir := directory(t)
	n := newNode(t)
	d, p := open(t, dir, n, true)

	d.Ref().Tell(delivery(wire.TypeSessionConnect, "unfiltered"))
	waitFor(t, "an unfiltered delivery", func() bool { return len(p.all()) == 1 })

	hand(t, d, `{"type":"set_filters","events":["chat"]}`)
	if got := p.types(); len(got) != 1 {
		t.Fatalf("set_filters answered something: %v", got)
	}
	d.Ref().Tell(delivery(wire.TypeSessionConnect, "filtered out"))
	d.Ref().Tell(delivery(wire.TypeChat, "wanted"))
	waitFor(t, "the wanted delivery", func() bool { return len(p.all()) == 2 })
	hand(t, d, `{"type":"ping"}`) // pong is never filtered out
	if got := texts(p); got[1] != "wanted" || p.types()[2] != wire.TypePong {
		t.Fatalf("filtered: %v %v", p.types(), got)
	}

	for _, bad := range []string{
		`{"type":"set_filters","events":"chat"}`,
		`{"type":"set_filters","events":["chat",7]}`,
		`{"type":"set_filters","events":[` + strings.Repeat(`"x",`, 100) + `"x"]}`,
	} {
		before := len(p.all())
		hand(t, d, bad)
		if msg := errorText(p.last()); len(p.all()) != before+1 || !strings.Contains(msg, "events must be an array") {
			t.Fatalf("%s answered %v", bad, p.last())
		}
	}
	// The refused lists changed nothing: a chat still comes through, a status does not.
	before := len(p.all())
	d.Ref().Tell(delivery(wire.TypeStatus, "still filtered"))
	d.Ref().Tell(delivery(wire.TypeChat, "still wanted"))
	waitFor(t, "the chat after refused filters", func() bool { return len(p.all()) == before+1 })
	if got := texts(p)[before]; got != "still wanted" {
		t.Fatalf("after refused filters: %q", got)
	}

	// An empty list lets through only pong and error.
	hand(t, d, `{"type":"set_filters","events":[]}`)
	d.Ref().Tell(delivery(wire.TypeChat, "dropped"))
	hand(t, d, `{"type":"ping"}`)
	if got := p.types(); got[len(got)-1] != wire.TypePong || slices.Contains(texts(p), "dropped") {
		t.Fatalf("empty filters: %v", got)
	}
}

// TestMessageLimit: 30 messages per 10 s; the 31st is answered once with the bound, the
// ones after it in the same window not at all, and nothing they asked is done; the next
// window takes messages again.
func TestMessageLimit(t *testing.T) {
	dir := directory(t)
	n := newNode(t)
	d, p := open(t, dir, n, true)

	for range realtime.DashboardMessages {
		hand(t, d, `{"type":"ping"}`)
	}
	if got := p.types(); len(got) != realtime.DashboardMessages || slices.ContainsFunc(got, func(s string) bool { return s != wire.TypePong }) {
		t.Fatalf("30 pings answered %v", got)
	}
	hand(t, d, `{"type":"kick","userId":"u1"}`)
	msg := errorText(p.last())
	if !strings.Contains(msg, "rate limited") || !strings.Contains(msg, "30") {
		t.Fatalf("the 31st message answered %v", p.last())
	}
	for range 5 {
		hand(t, d, `{"type":"ban","userId":"u1"}`)
	}
	if got := len(p.all()); got != realtime.DashboardMessages+1 {
		t.Fatalf("refused messages after the first were answered: %d messages", got)
	}
	if calls := n.recorded(); len(calls) != 0 {
		t.Fatalf("refused messages reached the node: %v", calls)
	}

	n.advance(realtime.DashboardWindow)
	hand(t, d, `{"type":"kick","userId":"u1","reason":"bye"}`)
	if calls := n.recorded(); !slices.Equal(calls, []string{"kick app1 u1 bye"}) {
		t.Fatalf("the next window: %v", calls)
	}
}

// TestActionsAndWhatIsAudited: each action asks the node with the socket's app and the
// message's members; the ones that changed something (kick, ban, command, push_json,
// chat) are audited once they succeeded, with their reason and command; reads and typing
// are not; a refused action is answered with its error and not audited; an action that
// failed on a bug is answered "internal error" and reported to the node.
func TestActionsAndWhatIsAudited(t *testing.T) {
	dir := directory(t)
	n := newNode(t)
	audit := &auditLog{}
	d, p := open(t, dir, n, true, WithAudit(audit))

	ctx := t.Context()
	for _, s := range []cluster.PresentSocket{{ID: "s1", User: "u1"}, {ID: "s2", User: "u2"}} {
		if _, err := n.engine.Admit(ctx, testApp, s, time.Minute, 10); err != nil {
			t.Fatal(err)
		}
	}
	hand(t, d, `{"type":"get_online"}`)
	if m := p.last(); m["type"] != wire.TypeOnlineCount || m["data"].(map[string]any)["count"] != 2.0 {
		t.Fatalf("get_online answered %v", m)
	}
	hand(t, d, `{"type":"get_sessions"}`)
	if m := p.last(); m["type"] != wire.TypeSessions || len(m["data"].(map[string]any)["sessions"].([]any)) != 2 {
		t.Fatalf("get_sessions answered %v", m)
	}

	for _, frame := range []string{
		`{"type":"chat","userId":"u1","message":"hi"}`,
		`{"type":"push_json","userId":"u1","payload":{"a":1}}`,
		`{"type":"typing","userId":"u1","typing":true}`,
		`{"type":"kick","userId":"u1","reason":"spam"}`,
		`{"type":"ban","userId":"u2","reason":"abuse"}`,
		`{"type":"command","userId":"u1","command":"reload","payload":{"x":"y"}}`,
		`{"type":"command","command":"all"}`,
	} {
		hand(t, d, frame)
	}
	wantCalls := []string{
		"online app1", "sessions app1",
		"chat app1 u1 hi",
		`push app1 u1 {"a":1}`,
		"typing app1 u1 true",
		"kick app1 u1 spam",
		"ban app1 u2 abuse",
		`command app1 u1 reload {"x":"y"}`,
		"command app1  all null",
	}
	if got := n.recorded(); !slices.Equal(got, wantCalls) {
		t.Fatalf("node calls:\n%q\nwant\n%q", got, wantCalls)
	}
	wantAudit := []string{
		"chat u1 /", "push_json u1 /", "kick u1 spam/", "ban u2 abuse/", "command u1 /reload", "command  /all",
	}
	if got := audit.list(); !slices.Equal(got, wantAudit) {
		t.Fatalf("audited:\n%q\nwant\n%q", got, wantAudit)
	}
	if slices.Contains(p.types(), wire.TypeError) {
		t.Fatalf("a successful action was answered with an error: %v", p.all())
	}

	// Refused by the node (a domain error): answered with its message, not audited.
	n.failWith("kick", core.Invalid("userId", "no such user"))
	hand(t, d, `{"type":"kick","userId":"nobody"}`)
	if msg := errorText(p.last()); msg != "no such user" {
		t.Fatalf("a refused kick answered %v", p.last())
	}
	// A part that did not answer: "try again", not audited, not a bug.
	n.failWith("ban", cluster.ErrUnavailable)
	hand(t, d, `{"type":"ban","userId":"u1"}`)
	if msg := errorText(p.last()); !strings.Contains(msg, "try again") {
		t.Fatalf("an unavailable ban answered %v", p.last())
	}
	// A bug: "internal error", reported, not audited.
	n.failWith("chat", errors.New("nil map"))
	hand(t, d, `{"type":"chat","userId":"u1","message":"x"}`)
	if msg := errorText(p.last()); msg != "internal error" {
		t.Fatalf("a chat that failed on a bug answered %v", p.last())
	}
	if bugs := n.bugList(); len(bugs) != 1 || !strings.HasPrefix(bugs[0], "dashboard chat") {
		t.Fatalf("bugs reported: %v", bugs)
	}
	if got := audit.list(); len(got) != len(wantAudit) {
		t.Fatalf("a failed action was audited: %q", got)
	}
}

// TestRefusedMessagesAskNothing: a message that is not valid is answered with an error
// and reaches neither the node nor the audit.
func TestRefusedMessagesAskNothing(t *testing.T) {
	dir := directory(t)
	n := newNode(t)
	audit := &auditLog{}
	d, p := open(t, dir, n, true, WithAudit(audit))
	for frame, want := range map[string]string{
		`not json`:                                   "a message is a JSON object",
		`{"type":"kick","userId":7}`:                 "userId must be a string",
		`{"type":"push_json","userId":["u1"]}`:       "userId must be a string",
		`{"type":"typing","userId":"u1"}`:            "typing needs userId",
		`{"type":"typing","typing":true}`:            "typing needs userId",
		`{"type":"typing","userId":"u1","typing":1}`: "typing needs userId",
		`{"type":"explode"}`:                         `unknown message type "explode"`,
	} {
		hand(t, d, frame)
		if msg := errorText(p.last()); !strings.Contains(msg, want) {
			t.Fatalf("%s answered %v, want %q", frame, p.last(), want)
		}
	}
	if calls := n.recorded(); len(calls) != 0 {
		t.Fatalf("refused messages reached the node: %v", calls)
	}
	if got := audit.list(); len(got) != 0 {
		t.Fatalf("refused messages were audited: %v", got)
	}
}

// TestNoAuditorAuditsNothing: a socket made without WithAudit carries out its actions.
func TestNoAuditorAuditsNothing(t *testing.T) {
	dir := directory(t)
	n := newNode(t)
	d, p := open(t, dir, n, true)
	hand(t, d, `{"type":"kick","userId":"u1"}`)
	if calls := n.recorded(); len(calls) != 1 || slices.Contains(p.types(), wire.TypeError) {
		t.Fatalf("kick without an auditor: calls %v, answers %v", calls, p.all())
	}
}

// checker is a TokenCheck whose answer the test sets; block holds each check until it is
// closed.
type checker struct {
	answer atomic.Pointer[error]
	checks atomic.Int32
	block  chan struct{}
}

func (c *checker) Recheck(ctx context.Context) error {
	c.checks.Add(1)
	if c.block != nil {
		select {
		case <-c.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if e := c.answer.Load(); e != nil {
		return *e
	}
	return nil
}

func (c *checker) set(err error) { c.answer.Store(&err) }

// TestTokenRecheck: the actor checks its owner's token on its timer; a check that could
// not be made, or that fails on anything but UNAUTHORIZED, changes nothing; UNAUTHORIZED
// tells the socket and closes it with the policy code. A check under way is never
// started twice, and the timer stops with the socket.
func TestTokenRecheck(t *testing.T) {
	dir := directory(t)
	n := newNode(t)
	n.every = 5 * time.Millisecond

	c := &checker{}
	_, p := open(t, dir, n, true, WithRecheck(c))
	waitFor(t, "three checks", func() bool { return c.checks.Load() >= 3 })
	c.set(cluster.ErrUnavailable)
	at := c.checks.Load()
	waitFor(t, "checks that cannot be made", func() bool { return c.checks.Load() >= at+3 })
	c.set(core.E(core.CodeForbidden, "not this one"))
	at = c.checks.Load()
	waitFor(t, "checks that fail otherwise", func() bool { return c.checks.Load() >= at+3 })
	if got := p.closedWith(); got.Code != 0 {
		t.Fatalf("closed with %+v while the token was valid or could not be checked", got)
	}
	c.set(core.E(core.CodeUnauthorized, "revoked"))
	waitFor(t, "the close", func() bool { return p.closedWith().Code != 0 })
	if got := p.closedWith(); got.Code != wire.CodePolicy || !strings.Contains(errorText(p.last()), "sign in again") {
		t.Fatalf("revoked: closed with %+v after %v", got, p.last())
	}

	// A slow check is not started again by the timer while it runs.
	slow := &checker{block: make(chan struct{})}
	d, _ := open(t, dir, n, true, WithRecheck(slow))
	waitFor(t, "the slow check", func() bool { return slow.checks.Load() == 1 })
	time.Sleep(20 * n.every) // the timer fires meanwhile
	if got := slow.checks.Load(); got != 1 {
		t.Fatalf("%d checks under way at once", got)
	}
	close(slow.block)
	waitFor(t, "the checks after the slow one", func() bool { return slow.checks.Load() >= 2 })

	// The timer stops with the socket.
	dir.Leave(testApp, d.ID)
	time.Sleep(4 * n.every)
	at = slow.checks.Load()
	time.Sleep(20 * n.every)
	if got := slow.checks.Load(); got > at+1 {
		t.Fatalf("%d checks after the socket left", got-at)
	}
}

// TestNoRecheckWithoutTokenCheck: a socket made without WithRecheck never starts the
// timer (Work is never asked for a check it could not make).
func TestNoRecheckWithoutTokenCheck(t *testing.T) {
	dir := directory(t)
	n := newNode(t)
	n.every = time.Millisecond
	_, p := open(t, dir, n, true)
	time.Sleep(20 * time.Millisecond)
	if got := p.closedWith(); got.Code != 0 {
		t.Fatalf("closed with %+v", got)
	}
}

// TestRefusal: a socket that could not be opened is told "try again" with the policy
// code when a part did not answer, "internal error" with 1011 for a bug.
func TestRefusal(t *testing.T) {
	msg, closing := Refusal(cluster.ErrUnavailable)
	if closing.Code != wire.CodePolicy || !strings.Contains(string(msg), "try again") {
		t.Fatalf("unavailable: %s %+v", msg, closing)
	}
	msg, closing = Refusal(errors.New("bug"))
	if closing.Code != wire.CodeInternal || !strings.Contains(string(msg), "internal error") {
		t.Fatalf("bug: %s %+v", msg, closing)
	}
}
