package server

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestPublicURLFollowsAddr (issue 22): unset, the public URL mailed links use follows the
// listen address (a server on :8091 mails links to :8091), and a set one is kept.
func TestPublicURLFollowsAddr(t *testing.T) {
	for addr, want := range map[string]string{
		":8091": "http://localhost:8091", "0.0.0.0:9000": "http://localhost:9000", "127.0.0.1:8080": "http://127.0.0.1:8080",
		"[::]:7000": "http://localhost:7000", "[::1]:7001": "http://[::1]:7001",
	} {
		env := map[string]string{"KEYWARD_ADDR": addr}
		c, err := LoadConfig("keyward serve", nil, func(k string) string { return env[k] }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if c.PublicURL != want {
			t.Errorf("KEYWARD_ADDR=%s: public URL %q, want %q", addr, c.PublicURL, want)
		}
	}
	env := map[string]string{"KEYWARD_ADDR": ":8091", "KEYWARD_PUBLIC_URL": "https://keys.example.com"}
	c, err := LoadConfig("keyward serve", nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil || c.PublicURL != "https://keys.example.com" {
		t.Fatalf("a set public URL: %q, %v", c.PublicURL, err)
	}
}

// TestBusyPortNamesTheSetting: a port in use stops the server with KEYWARD_ADDR named.
func TestBusyPortNamesTheSetting(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	env := map[string]string{"KEYWARD_ADDR": l.Addr().String(), "KEYWARD_DATA_DIR": t.TempDir()}
	c, err := LoadConfig("keyward serve", nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(t.Context(), c, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "KEYWARD_ADDR") {
		t.Fatalf("a busy port: %v", err)
	}
}
