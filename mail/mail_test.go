package mail

import (
	"context"
	"errors"
	"io"
	"log/slog"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestOutboxWritesOneRFC5322FilePerMail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "outbox")
	o, err := NewOutbox(dir, discard())
	if err != nil {
		t.Fatal(err)
	}
	msg := Message{To: "owner@example.com", Subject: "Hello & welcome", Text: "line one\ntoken: abc_DEF-123\n"}
	if err := o.Send(context.Background(), "Keyward <no-reply@example.com>", msg); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), ".eml") {
		t.Fatalf("outbox holds %v", entries)
	}
	f, err := os.Open(filepath.Join(dir, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parsed, err := netmail.ReadMessage(f)
	if err != nil {
		t.Fatalf("not RFC 5322: %v", err)
	}
	if got := parsed.Header.Get("Subject"); got != "Hello & welcome" {
		t.Fatalf("subject %q", got)
	}
	to, err := parsed.Header.AddressList("To")
	if err != nil || len(to) != 1 || to[0].Address != "owner@example.com" {
		t.Fatalf("to %v %v", to, err)
	}
	if parsed.Header.Get("Message-Id") == "" || parsed.Header.Get("Date") == "" {
		t.Fatal("missing Message-Id or Date")
	}
	body, _ := io.ReadAll(parsed.Body)
	if !strings.Contains(string(body), "token: abc_DEF-123") {
		t.Fatalf("body %q", body)
	}
}

func TestOutboxRefusesUnwritableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewOutbox(filepath.Join(file, "outbox"), discard()); err == nil {
		t.Fatal("outbox under a file accepted")
	}
}

// flaky fails its first n sends, then records what it delivers.
type flaky struct {
	mu        sync.Mutex
	failFirst int
	attempts  int
	delivered []Message
}

func (f *flaky) Send(_ context.Context, _ string, m Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	if f.attempts <= f.failFirst {
		return errors.New("smtp: 421 try again later")
	}
	f.delivered = append(f.delivered, m)
	return nil
}

func (f *flaky) snapshot() (int, []Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts, append([]Message(nil), f.delivered...)
}

func TestQueueRetriesFailedDeliveries(t *testing.T) {
	sender := &flaky{failFirst: 2}
	q := NewQueue(sender, QueueConfig{Backoff: 5 * time.Millisecond, Attempts: 5}, discard())
	defer startQueue(t, q)()
	q.Enqueue(Message{To: "a@example.com", Subject: "s", Text: "t"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		attempts, delivered := sender.snapshot()
		if len(delivered) == 1 {
			if attempts != 3 {
				t.Fatalf("delivered after %d attempts, want 3", attempts)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered; %d attempts", attempts)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestQueueGivesUpAfterAttempts(t *testing.T) {
	sender := &flaky{failFirst: 1 << 30}
	q := NewQueue(sender, QueueConfig{Backoff: time.Millisecond, Attempts: 3}, discard())
	stop := startQueue(t, q)
	q.Enqueue(Message{To: "a@example.com", Subject: "s", Text: "t"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if attempts, _ := sender.snapshot(); attempts >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("attempts not made")
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	if attempts, delivered := sender.snapshot(); attempts != 3 || len(delivered) != 0 {
		t.Fatalf("attempts %d delivered %d", attempts, len(delivered))
	}
}

func TestQueueEnqueueNeverBlocks(t *testing.T) {
	block := make(chan struct{})
	sender := senderFunc(func(context.Context, string, Message) error { <-block; return nil })
	q := NewQueue(sender, QueueConfig{Capacity: 2}, discard())
	stop := startQueue(t, q)
	done := make(chan struct{})
	go func() {
		for i := 0; i < 100; i++ {
			q.Enqueue(Message{To: "a@example.com"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Enqueue blocked on a full queue")
	}
	close(block)
	stop()
}

// TestQueueCloseWithoutRun: a queue nobody ran (an admin command's) still tries each
// waiting message once when it closes.
func TestQueueCloseWithoutRun(t *testing.T) {
	sender := &flaky{}
	q := NewQueue(sender, QueueConfig{}, discard())
	q.Enqueue(Message{To: "a@example.com"})
	q.Enqueue(Message{To: "b@example.com"})
	q.Close()
	if attempts, delivered := sender.snapshot(); attempts != 2 || len(delivered) != 2 {
		t.Fatalf("attempts %d delivered %d, want 2 and 2", attempts, len(delivered))
	}
}

// startQueue runs q as the node's supervisor does; the returned stop ends Run (which tries
// what waits once) and closes q.
func startQueue(t *testing.T, q *Queue) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = q.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			q.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

type senderFunc func(context.Context, string, Message) error

func (f senderFunc) Send(ctx context.Context, from string, m Message) error { return f(ctx, from, m) }

func TestSMTPConfigValidation(t *testing.T) {
	if _, err := NewSMTP(SMTPConfig{}); err == nil {
		t.Fatal("empty host accepted")
	}
	if _, err := NewSMTP(SMTPConfig{Host: "mail.example.com", TLS: "sometimes"}); err == nil {
		t.Fatal("unknown TLS mode accepted")
	}
	if _, err := NewSMTP(SMTPConfig{Host: "mail.example.com", TLS: "tls"}); err != nil {
		t.Fatal(err)
	}
}

func TestSMTPUnreachableServerFails(t *testing.T) {
	s, err := NewSMTP(SMTPConfig{Host: "127.0.0.1", Port: 1, TLS: "none", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), "a@example.com", Message{To: "b@example.com", Subject: "s", Text: "t"}); err == nil {
		t.Fatal("send to a closed port succeeded")
	}
}
