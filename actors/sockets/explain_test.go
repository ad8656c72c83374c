package sockets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/session"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/storage"
)

// failing refuses every socket with err, at admission and at every revalidation.
type failing struct{ err error }

func (f failing) CheckSocket(context.Context, client.Caller, string) (client.SocketUser, error) {
	return client.SocketUser{}, f.err
}

func (f failing) CheckSockets(_ context.Context, _ string, socks []client.SocketCheck) []error {
	errs := make([]error, len(socks))
	for i := range errs {
		errs[i] = f.err
	}
	return errs
}

// TestRefusalOfABug: an error that is neither a domain answer nor a part that did not
// answer is a bug. The socket is told INTERNAL and closed with 1011, never "try again",
// and the node logs and counts it; a part that did not answer (the cluster engine,
// storage, the app's actor, a deadline) is still UNAVAILABLE with the policy close, and a
// domain refusal keeps its code.
func TestRefusalOfABug(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		code     core.Code
		closing  int
		internal uint64
	}{
		{"bug", errors.New("nil map somewhere"), core.CodeInternal, wire.CodeInternal, 1},
		{"engine", fmt.Errorf("count: %w", cluster.ErrUnavailable), core.CodeUnavailable, wire.CodePolicy, 0},
		{"storage", fmt.Errorf("read: %w", storage.ErrUnavailable), core.CodeUnavailable, wire.CodePolicy, 0},
		{"actor", fmt.Errorf("snapshot: %w", app.ErrClosed), core.CodeUnavailable, wire.CodePolicy, 0},
		{"deadline", fmt.Errorf("admit: %w", context.DeadlineExceeded), core.CodeUnavailable, wire.CodePolicy, 0},
		{"domain", core.E(core.CodeAppPaused, "paused"), core.CodeAppPaused, wire.CodePolicy, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := memory.New(memory.Config{})
			t.Cleanup(func() { e.Close() })
			s := New(Deps{Engine: e, Sessions: failing{tc.err}})
			if err := s.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			_, err := s.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, "tok", &recorder{})
			if err == nil {
				t.Fatal("admitted")
			}
			msg, closing := Refusal(err)
			var m struct {
				Type string
				Data struct{ Reason, Code string }
			}
			if err := json.Unmarshal(msg, &m); err != nil || m.Type != wire.TypeForceLogout || m.Data.Code != string(tc.code) {
				t.Fatalf("refusal %s (%v); want force_logout with %s", msg, err, tc.code)
			}
			if closing.Code != tc.closing || closing.Reason != m.Data.Reason {
				t.Fatalf("closed with %+v; want %d and the message's reason %q", closing, tc.closing, m.Data.Reason)
			}
			if got := s.Stats().InternalErrors; got != tc.internal {
				t.Fatalf("internal errors counted: %d, want %d", got, tc.internal)
			}
		})
	}
}

// TestRevalidationOfABug: a revalidation that fails on a bug closes the socket with 1011
// and counts it; one whose parts did not answer changes nothing (the next one decides).
func TestRevalidationOfABug(t *testing.T) {
	e := memory.New(memory.Config{})
	t.Cleanup(func() { e.Close() })
	known := sessions{"tok-u1": user("u1"), "tok-u2": user("u2")}
	s := New(Deps{Engine: e, Sessions: known})
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	bugged, waiting := &recorder{}, &recorder{}
	c1, err := s.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, "tok-u1", bugged)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, "tok-u2", waiting)
	if err != nil {
		t.Fatal(err)
	}
	c1.Ref().Tell(session.Verdict{Err: errors.New("index out of range")})
	c2.Ref().Tell(session.Verdict{Err: fmt.Errorf("check: %w", cluster.ErrUnavailable)})
	waitUntil(t, "the close after a bug", func() bool { return bugged.closedWith() == wire.CodeInternal })
	waitUntil(t, "the failed check counted", func() bool { return s.Stats().RevalidationFailed == 1 })
	if st := s.Stats(); st.InternalErrors != 1 || st.RevalidationClosed != 1 {
		t.Fatalf("stats %+v; want one internal error and one close", st)
	}
	if waiting.closedWith() != 0 {
		t.Fatalf("a socket whose check could not be made closed with %d", waiting.closedWith())
	}
}

// buggyMembers is a memory engine whose presence lists fail with an error no part would
// answer (a bug), so that the session list of a dashboard's greeting fails.
type buggyMembers struct{ *memory.Engine }

func (buggyMembers) List(context.Context, string) ([]cluster.PresentSocket, error) {
	return nil, errors.New("decoding went wrong")
}

// TestDashboardRefusalOfABug: a dashboard socket that cannot be opened because of a bug is
// told "internal error" and closed with 1011, and the node counts it; one whose parts did
// not answer is told to try again and closed with the policy code.
func TestDashboardRefusalOfABug(t *testing.T) {
	e := buggyMembers{memory.New(memory.Config{})}
	t.Cleanup(func() { e.Close() })
	s := New(Deps{Engine: e, Sessions: sessions{}})
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	_, err := s.ConnectDashboard(t.Context(), "app", &recorder{})
	if err == nil {
		t.Fatal("a dashboard opened without its session list")
	}
	if got := s.Stats().InternalErrors; got != 1 {
		t.Fatalf("internal errors counted: %d, want 1", got)
	}
	if msg, closing := DashboardRefusal(err); closing.Code != wire.CodeInternal || !strings.Contains(string(msg), "internal error") {
		t.Fatalf("a bug refused with %s and %+v", msg, closing)
	}
	msg, closing := DashboardRefusal(fmt.Errorf("list: %w", cluster.ErrUnavailable))
	if closing.Code != wire.CodePolicy || !strings.Contains(string(msg), "try again") {
		t.Fatalf("an unavailable engine refused with %s and %+v", msg, closing)
	}
}
