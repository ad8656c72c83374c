package mail

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// receiver is a real SMTP server (emersion/go-smtp) on loopback that requires STARTTLS and
// AUTH PLAIN, and can refuse its first deliveries with a temporary error.
type receiver struct {
	mu       sync.Mutex
	refuse   int
	messages []string
	authed   []string
}

func (r *receiver) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{r: r}, nil }

type session struct {
	r    *receiver
	user string
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "mailer" || pass != "s3cret" {
			return errors.New("bad credentials")
		}
		s.user = user
		return nil
	}), nil
}
func (s *session) Reset()        {}
func (s *session) Logout() error { return nil }
func (s *session) Mail(string, *smtp.MailOptions) error {
	if s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.r.refuse > 0 {
		s.r.refuse--
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	}
	return nil
}
func (s *session) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.r.mu.Lock()
	s.r.messages = append(s.r.messages, string(b))
	s.r.authed = append(s.r.authed, s.user)
	s.r.mu.Unlock()
	return nil
}

func (r *receiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.messages...)
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func startReceiver(t *testing.T, refuse int) (*receiver, int) {
	t.Helper()
	r := &receiver{refuse: refuse}
	srv := smtp.NewServer(r)
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}}
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r, ln.Addr().(*net.TCPAddr).Port
}

func TestSMTPDeliversWithSTARTTLSAndAuth(t *testing.T) {
	r, port := startReceiver(t, 0)
	s, err := NewSMTP(SMTPConfig{Host: "127.0.0.1", Port: port, Username: "mailer", Password: "s3cret", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), "Keyward <no-reply@example.com>", Message{To: "owner@example.com", Subject: "Verify", Text: "token: abc"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.received()
	if len(got) != 1 || !strings.Contains(got[0], "Subject: Verify") || !strings.Contains(got[0], "token: abc") {
		t.Fatalf("received %q", got)
	}
}

func TestSMTPWrongPasswordFails(t *testing.T) {
	_, port := startReceiver(t, 0)
	s, _ := NewSMTP(SMTPConfig{Host: "127.0.0.1", Port: port, Username: "mailer", Password: "wrong", InsecureSkipVerify: true})
	if err := s.Send(context.Background(), "a@example.com", Message{To: "b@example.com", Subject: "s", Text: "t"}); err == nil {
		t.Fatal("delivered with a wrong password")
	}
}

func TestSMTPRefusesAnUntrustedCertificate(t *testing.T) {
	_, port := startReceiver(t, 0)
	s, _ := NewSMTP(SMTPConfig{Host: "127.0.0.1", Port: port, Username: "mailer", Password: "s3cret"})
	if err := s.Send(context.Background(), "a@example.com", Message{To: "b@example.com", Subject: "s", Text: "t"}); err == nil {
		t.Fatal("delivered over TLS with a self-signed certificate")
	}
}

func TestQueueRetriesATemporarilyFailingSMTPServer(t *testing.T) {
	r, port := startReceiver(t, 2)
	s, _ := NewSMTP(SMTPConfig{Host: "127.0.0.1", Port: port, Username: "mailer", Password: "s3cret", InsecureSkipVerify: true})
	q := NewQueue(s, QueueConfig{Backoff: 10 * time.Millisecond, Attempts: 5}, discard())
	defer startQueue(t, q)()
	q.Enqueue(Message{To: "owner@example.com", Subject: "Retry me", Text: "hello"})
	deadline := time.Now().Add(20 * time.Second)
	for len(r.received()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not delivered after the server recovered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(r.received()[0], "Retry me") {
		t.Fatalf("received %q", r.received())
	}
}
