package accounts

import (
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
)

func TestMatchTOTPWindowAndReplay(t *testing.T) {
	secret, url, err := newTOTPSecret("owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if url == "" {
		t.Fatal("no URL")
	}
	now := time.Unix(1_800_000_000, 0)
	step := now.Unix() / totpPeriod
	at := func(offset time.Duration) string {
		c, err := totp.GenerateCode(secret, now.Add(offset))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if s, ok := matchTOTP(secret, at(0), now, 0); !ok || s != step {
		t.Fatalf("current code: %d %v", s, ok)
	}
	if s, ok := matchTOTP(secret, at(-30*time.Second), now, 0); !ok || s != step-1 {
		t.Fatalf("previous step: %d %v", s, ok)
	}
	if s, ok := matchTOTP(secret, at(30*time.Second), now, 0); !ok || s != step+1 {
		t.Fatalf("next step: %d %v", s, ok)
	}
	if _, ok := matchTOTP(secret, at(-90*time.Second), now, 0); ok {
		t.Fatal("code three steps old accepted")
	}
	if _, ok := matchTOTP(secret, at(0), now, step); ok {
		t.Fatal("replayed code accepted")
	}
	if _, ok := matchTOTP(secret, at(-30*time.Second), now, step); ok {
		t.Fatal("code older than the last accepted one accepted")
	}
	if _, ok := matchTOTP(secret, "000000", now, 0); ok && at(0) != "000000" {
		t.Fatal("wrong code accepted")
	}
}
