package server

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHelpListsEverySetting(t *testing.T) {
	var out bytes.Buffer
	_, err := LoadConfig("keyward serve", []string{"--help"}, env(nil), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err %v", err)
	}
	for _, o := range options() {
		if !strings.Contains(out.String(), "$"+o.env) || !strings.Contains(out.String(), "-"+o.flag) {
			t.Fatalf("help lacks %s / %s:\n%s", o.flag, o.env, out.String())
		}
	}
	// Each setting once, its default once, in the order of options(); never the value an
	// environment variable gives (it may be a secret).
	help := out.String()
	last := -1
	for _, o := range options() {
		at := strings.Index(help, "  --"+o.flag+" ")
		if at < 0 || strings.Count(help, "  --"+o.flag+" ") != 1 || at < last {
			t.Fatalf("--%s is not listed once in order:\n%s", o.flag, help)
		}
		last = at
		if o.def != "" {
			if n := strings.Count(help, fmt.Sprintf("[$%s] (default %q)", o.env, o.def)); n != 1 {
				t.Fatalf("--%s: its default shown %d times, want once:\n%s", o.flag, n, help)
			}
		}
	}
	if n := strings.Count(help, "(default \""); n != countDefaults() {
		t.Fatalf("%d defaults shown, want %d:\n%s", n, countDefaults(), help)
	}
	out.Reset()
	_, _ = LoadConfig("keyward serve", []string{"--help"}, env(map[string]string{"KEYWARD_JWT_SECRET": "a-secret-that-must-not-be-printed-0123456789"}), &out)
	if strings.Contains(out.String(), "a-secret-that-must-not-be-printed") {
		t.Fatalf("help prints the environment's secret:\n%s", out.String())
	}
	for _, want := range []string{"KEYWARD_ADDR", "KEYWARD_DATA_DIR", "KEYWARD_MONGO_URI", "KEYWARD_REDIS_URL", "KEYWARD_JWT_SECRET",
		"KEYWARD_SECRETS_KEY", "KEYWARD_SMTP_HOST", "KEYWARD_MAIL_OUTBOX", "KEYWARD_TRUSTED_PROXIES", "KEYWARD_LOG_LEVEL",
		"KEYWARD_JWT_LEEWAY"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("help lacks %s", want)
		}
	}
}

func countDefaults() int {
	n := 0
	for _, o := range options() {
		if o.def != "" {
			n++
		}
	}
	return n
}

func TestDefaultsAreTheEmbeddedMode(t *testing.T) {
	c, err := LoadConfig("t", nil, env(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.DataDir != "./data" || c.MailOutbox != "data/outbox" || c.MongoURI != "" || c.RedisURL != "" ||
		c.JWTTTL != 24*time.Hour || c.JWTLeeway != 5*time.Second || c.TrustedProxies != nil {
		t.Fatalf("defaults: %+v", c)
	}
	if c.WebhookLease != time.Minute {
		t.Fatalf("webhook lease: %v, want 1m", c.WebhookLease)
	}
	if c.WebhookRetention != 7*24*time.Hour || c.WebhookMaxPerIntegration != 10_000 {
		t.Fatalf("webhook history bounds: %v, %d; want 168h, 10000", c.WebhookRetention, c.WebhookMaxPerIntegration)
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	c, err := LoadConfig("t", []string{"--addr", "127.0.0.1:9000"}, env(map[string]string{"KEYWARD_ADDR": ":7000",
		"KEYWARD_DATA_DIR": "/tmp/kw", "KEYWARD_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.1"}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9000" || c.DataDir != "/tmp/kw" || c.MailOutbox != "/tmp/kw/outbox" ||
		len(c.TrustedProxies) != 2 || c.TrustedProxies[1] != "192.168.1.1" {
		t.Fatalf("config: %+v", c)
	}
}

func TestBadConfigurationIsRefusedClearly(t *testing.T) {
	cases := map[string]map[string]string{
		"log level":         {"KEYWARD_LOG_LEVEL": "loud"},
		"short secret":      {"KEYWARD_JWT_SECRET": "short"},
		"redis sans jwt":    {"KEYWARD_REDIS_URL": "redis://127.0.0.1:6379/0"},
		"short secrets key": {"KEYWARD_SECRETS_KEY": "short"},
		// A cluster node without the shared secrets key could not read what others sealed.
		"redis sans secrets key": {"KEYWARD_REDIS_URL": "redis://127.0.0.1:6379/0", "KEYWARD_JWT_SECRET": strings.Repeat("j", 40)},
		"duration":               {"KEYWARD_JWT_TTL": "forever"},
		"negative jwt leeway":    {"KEYWARD_JWT_LEEWAY": "-1s"},
		"long jwt leeway":        {"KEYWARD_JWT_LEEWAY": "2m"},
		"smtp tls":               {"KEYWARD_SMTP_HOST": "mail.example.com", "KEYWARD_SMTP_TLS": "maybe"},
		"body size":              {"KEYWARD_MAX_BODY_BYTES": "ten"},
		"short lease":            {"KEYWARD_WS_LEASE_TTL": "1s"},
		"no webhook history":     {"KEYWARD_WEBHOOK_MAX_PER_INTEGRATION": "0"},
		"short webhook lease":    {"KEYWARD_WEBHOOK_LEASE": "5s"},
		"redis url": {"KEYWARD_REDIS_URL": "redis://s1:26379/0?master_name=main&addr=nohostport",
			"KEYWARD_JWT_SECRET": strings.Repeat("x", 40), "KEYWARD_SECRETS_KEY": strings.Repeat("s", 40)},
	}
	for name, vars := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := LoadConfig("t", nil, env(vars), &bytes.Buffer{})
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
