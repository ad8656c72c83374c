package softauthn_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/keyward/keyward/internal/softauthn"
)

type user struct{ creds []webauthn.Credential }

func (u *user) WebAuthnID() []byte                         { return []byte("acc-1") }
func (u *user) WebAuthnName() string                       { return "owner" }
func (u *user) WebAuthnDisplayName() string                { return "owner" }
func (u *user) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// TestCeremoniesPassGoWebAuthn runs registration and sign-ins through go-webauthn's own
// checks, and the refusals a relying party must make: another origin, a counter gone back.
func TestCeremoniesPassGoWebAuthn(t *testing.T) {
	wa, err := webauthn.New(&webauthn.Config{RPID: "keys.example.test", RPDisplayName: "t", RPOrigins: []string{"https://keys.example.test"}})
	if err != nil {
		t.Fatal(err)
	}
	auth := softauthn.New("https://keys.example.test")
	u := &user{}
	creation, session, err := wa.BeginRegistration(u, webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired))
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := json.Marshal(creation)
	resp, _, err := auth.Register(opts)
	if err != nil {
		t.Fatalf("Register: %v", err)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(resp)
	if err != nil {
		t.Fatalf("parse registration: %v", err)
	}
	cred, err := wa.CreateCredential(u, *session, parsed)
	if err != nil {
		t.Fatalf("CreateCredential: %v", err)
	}
	if cred.AttestationFormat != "none" || !cred.Flags.UserVerified {
		t.Fatalf("credential %+v: want attestation none, user verified", cred)
	}
	u.creds = []webauthn.Credential{*cred}

	login := func(origin string) (*webauthn.Credential, error) {
		assertion, session, err := wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
		if err != nil {
			t.Fatal(err)
		}
		opts, _ := json.Marshal(assertion)
		auth.Origin = origin
		resp, err := auth.Assert(opts)
		if err != nil {
			t.Fatalf("Assert: %v", err)
		}
		parsed, err := protocol.ParseCredentialRequestResponseBytes(resp)
		if err != nil {
			t.Fatalf("parse assertion: %v", err)
		}
		_, c, err := wa.ValidatePasskeyLogin(func(rawID, handle []byte) (webauthn.User, error) { return u, nil }, *session, parsed)
		return c, err
	}
	c, err := login("https://keys.example.test")
	if err != nil || c.Authenticator.SignCount != 1 || c.Authenticator.CloneWarning {
		t.Fatalf("sign-in: %+v, %v; want counter 1, no clone warning", c, err)
	}
	u.creds[0] = *c
	if _, err := login("https://evil.example.test"); err == nil || !strings.Contains(err.Error()+webauthnInfo(err), "rigin") {
		t.Fatalf("an assertion for another origin: %v, want refused for its origin", err)
	}
	auth.SetCounter(cred.ID, 0) // the next assertion says 1 again
	c, err = login("https://keys.example.test")
	if err != nil || !c.Authenticator.CloneWarning {
		t.Fatalf("a counter that did not move on: %+v, %v; want the clone warning", c, err)
	}
}

func webauthnInfo(err error) string {
	if pe, ok := err.(*protocol.Error); ok {
		return pe.DevInfo + pe.Details
	}
	return ""
}
