package mail

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"log/slog"

	gomail "github.com/wneessen/go-mail"

	"github.com/keyward/keyward/core/secrets"
)

// Message is one plain-text mail.
type Message struct {
	To      string
	Subject string
	Text    string
}

// Sender delivers one message now, or fails.
type Sender interface {
	Send(ctx context.Context, from string, m Message) error
}

func build(from string, m Message) (*gomail.Msg, error) {
	msg := gomail.NewMsg()
	if err := msg.From(from); err != nil {
		return nil, fmt.Errorf("mail: from address %q: %w", from, err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("mail: to address %q: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageID()
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	return msg, nil
}

// Outbox writes each message as an .eml file in Dir.
type Outbox struct {
	Dir string
	Log *slog.Logger
}

// NewOutbox makes the folder if needed (0700: mails carry reset links; each .eml is 0600,
// as os.CreateTemp makes it) and checks that it is writable.
func NewOutbox(dir string, log *slog.Logger) (*Outbox, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mail: outbox %s: %w", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return nil, fmt.Errorf("mail: outbox %s is not writable: %w", dir, err)
	}
	_ = probe.Close()
	_ = os.Remove(probe.Name())
	return &Outbox{Dir: dir, Log: log}, nil
}

// Send writes the message atomically (temp file, then rename) so readers never see half a mail.
func (o *Outbox) Send(_ context.Context, from string, m Message) error {
	msg, err := build(from, m)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s-%s.eml", time.Now().UTC().Format("20060102T150405.000000000Z"), secrets.Random(6))
	tmp, err := os.CreateTemp(o.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("mail: outbox: %w", err)
	}
	if _, err := msg.WriteTo(tmp); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("mail: outbox write: %w", err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("mail: outbox close: %w", err)
	}
	path := filepath.Join(o.Dir, name)
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("mail: outbox rename: %w", err)
	}
	o.Log.Info("mail written to outbox", "to", m.To, "subject", m.Subject, "file", path)
	return nil
}

// SMTPConfig configures delivery through an SMTP server.
type SMTPConfig struct {
	Host     string
	Port     int // default 587, or 465 with ImplicitTLS
	Username string
	Password string
	// TLS is "starttls" (default: STARTTLS required), "tls" (implicit TLS, port 465),
	// "opportunistic" (STARTTLS when offered) or "none".
	TLS string
	// InsecureSkipVerify disables certificate checks (test servers only).
	InsecureSkipVerify bool
	Timeout            time.Duration
}

// SMTP delivers through an SMTP server.
type SMTP struct {
	cfg SMTPConfig
}

// NewSMTP validates the configuration.
func NewSMTP(cfg SMTPConfig) (*SMTP, error) {
	if cfg.Host == "" {
		return nil, fmt.Errorf("mail: SMTP host is required")
	}
	switch strings.ToLower(cfg.TLS) {
	case "", "starttls", "tls", "opportunistic", "none":
	default:
		return nil, fmt.Errorf("mail: SMTP TLS mode %q is not one of starttls, tls, opportunistic, none", cfg.TLS)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 15 * time.Second
	}
	return &SMTP{cfg: cfg}, nil
}

// Send dials, sends and hangs up; one connection per message keeps failure handling simple
// at the volumes an auth server mails.
func (s *SMTP) Send(ctx context.Context, from string, m Message) error {
	msg, err := build(from, m)
	if err != nil {
		return err
	}
	c := s.cfg
	opts := []gomail.Option{gomail.WithTimeout(c.Timeout),
		gomail.WithTLSConfig(&tls.Config{ServerName: c.Host, InsecureSkipVerify: c.InsecureSkipVerify, MinVersion: tls.VersionTLS12})}
	port := c.Port
	switch strings.ToLower(c.TLS) {
	case "tls":
		opts = append(opts, gomail.WithSSL())
		if port == 0 {
			port = 465
		}
	case "opportunistic":
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case "none":
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	}
	if port == 0 {
		port = 587
	}
	opts = append(opts, gomail.WithPort(port))
	if c.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(c.Username), gomail.WithPassword(c.Password))
	}
	client, err := gomail.NewClient(c.Host, opts...)
	if err != nil {
		return fmt.Errorf("mail: SMTP client: %w", err)
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("mail: SMTP send to %s: %w", m.To, err)
	}
	return nil
}
