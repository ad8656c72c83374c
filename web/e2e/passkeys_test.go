package e2e

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// TestPasskeyAddSignInAndReauth: in Chromium with a virtual authenticator (CDP WebAuthn
// domain: ctap2, internal transport, resident keys, user verification), the owner adds a
// passkey on the account page, signs out, signs in with it alone, turns TOTP on and signs
// in with the password and the passkey as the second factor (that step axe-checked when
// KEYWARD_TEST_AXE is set), changes the email through the link mailed to the new address,
// and confirms a sensitive action (removing the
// passkey) with it in the re-authentication dialog. The public URL is
// http://localhost:port: a relying party id cannot be an IP address.
func TestPasskeyAddSignInAndReauth(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	origin := "http://localhost:" + port
	n := startNodeAt(t, addr, t.TempDir(), "KEYWARD_PUBLIC_URL="+origin)
	n.admin(t, "create", "--username", "keyholder", "--email", "keyholder@example.com", "--password", "Keyholder-Pass-1")
	b := newBrowser(t, 1280, 900)
	b.do("virtual authenticator", webauthn.Enable().WithEnableUI(false), chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := webauthn.AddVirtualAuthenticator(&webauthn.VirtualAuthenticatorOptions{Protocol: webauthn.AuthenticatorProtocolCtap2,
			Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal, HasResidentKey: true,
			HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true}).Do(ctx)
		return err
	}))

	b.do("open", chromedp.Navigate(origin+"/#/login"), chromedp.WaitVisible(`.auth [name=password]`, chromedp.ByQuery))
	b.fill(".auth", map[string]string{"username": "keyholder", "password": "Keyholder-Pass-1"})
	b.click(".auth", "Sign in")
	b.waitText("main", "Applications")

	// Add a passkey on the account page: the first one shows the recovery codes.
	b.hash("account")
	b.waitText("#passkeys", "No passkey yet")
	b.fill("main", map[string]string{"name": "Chromium key"})
	b.click("main", "Add a passkey")
	b.waitText("#passkeys", "Chromium key")
	b.waitText("#recovery-codes-shown", "shown only this once")

	// Sign out, then sign in with the passkey alone (no username, no password).
	b.click("body", "Sign out")
	b.do("sign-in page", chromedp.WaitVisible(`#passkey-sign-in`, chromedp.ByQuery))
	b.click(".auth", "Sign in with a passkey")
	b.waitText("main", "Applications")
	b.hash("account")
	b.waitText("#passkeys", "Chromium key")
	b.waitGone("#passkeys", "never") // its last use is listed

	// Turn TOTP on: the password sign-in now asks for a second factor, and the passkey
	// answers it in place of the code (POST /api/auth/login with passkey).
	b.click("main", "Set up 2FA")
	secret := b.text("#totp-secret")
	b.fill("main", map[string]string{"code": nextCode(t, secret, 0)})
	b.click("main", "Enable 2FA")
	b.waitText("main", "Disable 2FA")
	b.click("body", "Sign out")
	b.fill(".auth", map[string]string{"username": "keyholder", "password": "Keyholder-Pass-1"})
	b.click(".auth", "Sign in")
	b.do("second factor", chromedp.WaitVisible(`.auth [name=twoFactorCode]`, chromedp.ByQuery), chromedp.WaitVisible(`#passkey-second`, chromedp.ByQuery))
	b.waitText(".auth", "or use a passkey")
	if axe := axeSource(t); axe != nil {
		b.axe(axe, "sign-in second factor")
	}
	b.click(".auth", "Use a passkey")
	b.waitText("main", "Applications")
	b.hash("account")
	b.waitText("#passkeys", "Chromium key")

	// Change the email: nothing changes until the new address follows its link.
	b.fill("main", map[string]string{"email": "keyholder2@example.com"})
	b.click("main", "Change email")
	b.waitText("body", "confirmation link is on its way")
	link := n.mailedLink(t, "keyholder2@example.com", "confirm-email")
	b.do("confirm link", chromedp.Navigate(link))
	b.waitText(".auth", "email changed")
	b.do("account again", chromedp.Navigate(origin+"/#/account"))
	b.waitText("#account-email", "keyholder2@example.com")
	b.waitText("#passkeys", "Chromium key")

	// The session's last proof of identity is made an hour old in the database the node
	// shares, so removing the passkey asks who it is: the passkey answers.
	var sid string // the JWT's session claim
	b.eval(`JSON.parse(atob(sessionStorage.getItem('keyward.token').split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))).sid`, &sid)
	ageSession(t, n.dataDir, sid)
	b.click("#passkeys", "Remove")
	b.click("dialog", "Remove")
	b.do("reauth dialog", chromedp.WaitVisible(`#reauth-passkey`, chromedp.ByQuery))
	b.click("dialog", "Use a passkey")
	b.waitText("#passkeys", "No passkey yet")
	b.waitText("body", "Passkey removed")
	b.shot("passkeys-1280")
	b.clean()
}

// ageSession moves the owner session's last proof of identity an hour back, past the
// re-authentication window, in the node's SQLite database (a second store on one file).
func ageSession(t *testing.T, dataDir, sid string) {
	t.Helper()
	if sid == "" {
		t.Fatal("no current session listed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dataDir, "keyward.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.UpdateOwnerSession(ctx, sid, storage.OwnerSessionChange{AuthAt: storage.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
}
