package accounts

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core"
)

// TestBreachCheckFailsOpenOrClosed: a range service that answers finds a listed password
// and only its 5-character prefix is asked; one that does not answer within the timeout
// lets the password through by default and refuses it with FailClosed.
func TestBreachCheckFailsOpenOrClosed(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// SHA-1 of "password" is 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8.
	var asked []string
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		_, _ = io.WriteString(w, "1E4C9B93F3F0682250B6CF8331B7EE68FD8:3861493\r\n00000000000000000000000000000000000:0\r\n")
	}))
	defer good.Close()
	stop := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(stop)

	b := NewBreachChecker(BreachConfig{RangeURL: good.URL + "/range"}, log)
	err := b.Check(context.Background(), "password", "password")
	if core.CodeOf(err) != CodePasswordBreached {
		t.Fatalf("listed password: %v, want PASSWORD_BREACHED", err)
	}
	if err := b.Check(context.Background(), "password", "Not-In-The-List-42"); err != nil {
		t.Fatalf("unlisted password: %v", err)
	}
	if len(asked) != 2 || asked[0] != "/range/5BAA6" {
		t.Fatalf("asked %v, want /range/5BAA6 first (5 characters only)", asked)
	}
	for _, p := range asked {
		if len(strings.TrimPrefix(p, "/range/")) != 5 {
			t.Fatalf("asked %q: more than the 5-character prefix left the server", p)
		}
	}

	open := NewBreachChecker(BreachConfig{RangeURL: slow.URL + "/", Timeout: 100 * time.Millisecond}, log)
	if err := open.Check(context.Background(), "password", "password"); err != nil {
		t.Fatalf("fail open: %v, want the password accepted", err)
	}
	closed := NewBreachChecker(BreachConfig{RangeURL: slow.URL + "/", Timeout: 100 * time.Millisecond, FailClosed: true}, log)
	if err := closed.Check(context.Background(), "password", "password"); core.CodeOf(err) != core.CodeUnavailable {
		t.Fatalf("fail closed: %v, want UNAVAILABLE", err)
	}
	if NewBreachChecker(BreachConfig{}, log) != nil {
		t.Fatal("no range URL: want no checker")
	}
	var none *BreachChecker
	if err := none.Check(context.Background(), "password", "password"); err != nil {
		t.Fatalf("no checker: %v", err)
	}
}

// TestRecoveryCodeMatch: a code matches its own hash only, whatever its case and dashes.
func TestRecoveryCodeMatch(t *testing.T) {
	codes, hashes := newRecoveryCodes()
	if len(codes) != RecoveryCodeCount {
		t.Fatalf("%d codes", len(codes))
	}
	for i, c := range codes {
		h, ok := matchRecoveryCode(hashes, strings.ToUpper(c))
		if !ok || h != hashes[i] {
			t.Fatalf("code %d does not match its hash", i)
		}
	}
	if _, ok := matchRecoveryCode(hashes, "aaaaa-aaaaa"); ok {
		t.Fatal("an unknown code matched")
	}
	if _, ok := matchRecoveryCode(nil, codes[0]); ok {
		t.Fatal("a code matched with none stored")
	}
}
