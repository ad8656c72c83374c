package server

import (
	"bytes"
	"errors"
	"flag"
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
	for _, want := range []string{"KEYWARD_ADDR", "KEYWARD_DATA_DIR", "KEYWARD_MONGO_URI", "KEYWARD_REDIS_URL", "KEYWARD_JWT_SECRET",
		"KEYWARD_SMTP_HOST", "KEYWARD_MAIL_OUTBOX", "KEYWARD_TRUSTED_PROXIES", "KEYWARD_LOG_LEVEL"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("help lacks %s", want)
		}
	}
}

func TestDefaultsAreTheEmbeddedMode(t *testing.T) {
	c, err := LoadConfig("t", nil, env(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":8080" || c.DataDir != "./data" || c.MailOutbox != "data/outbox" || c.MongoURI != "" || c.RedisURL != "" ||
		c.JWTTTL != 24*time.Hour || c.TrustedProxies != nil {
		t.Fatalf("defaults: %+v", c)
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
		"log level":      {"KEYWARD_LOG_LEVEL": "loud"},
		"short secret":   {"KEYWARD_JWT_SECRET": "short"},
		"redis sans jwt": {"KEYWARD_REDIS_URL": "redis://127.0.0.1:6379/0"},
		"duration":       {"KEYWARD_JWT_TTL": "forever"},
		"smtp tls":       {"KEYWARD_SMTP_HOST": "mail.example.com", "KEYWARD_SMTP_TLS": "maybe"},
		"body size":      {"KEYWARD_MAX_BODY_BYTES": "ten"},
		"short lease":    {"KEYWARD_WS_LEASE_TTL": "1s"},
		"redis url": {"KEYWARD_REDIS_URL": "redis://s1:26379/0?master_name=main&addr=nohostport",
			"KEYWARD_JWT_SECRET": strings.Repeat("x", 40)},
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
