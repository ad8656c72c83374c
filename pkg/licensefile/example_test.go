package licensefile_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/pkg/licensefile"
)

// A program checks the license file its user pasted, offline, with the public key it
// ships with (the app's publicKey in the dashboard), and this machine's HWID.
func ExampleVerify() {
	// In a real program: the file the user saved, and the key embedded at build time
	// (signedresponse.ParsePublicKey reads its base64 or PEM form).
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	file, _ := licensefile.Encode(priv, licensefile.Payload{AppID: "app-1", Key: "PRO-7KQ2M-0XH4P", Level: 2,
		IssuedAt: now.Add(-24 * time.Hour).Format(time.RFC3339), CheckInBy: now.Add(29 * 24 * time.Hour).Format(time.RFC3339),
		HWID: "this-machine"})

	p, err := licensefile.Verify(file, pub, licensefile.Options{Now: now, HWID: "this-machine"})
	switch {
	case errors.Is(err, licensefile.ErrCheckInDue):
		fmt.Println("please go online once to renew your license")
	case err != nil:
		fmt.Println("invalid license:", err)
	default:
		fmt.Println("licensed:", p.Key, "level", p.Level, "until check-in", p.CheckInBy)
	}
	// Output: licensed: PRO-7KQ2M-0XH4P level 2 until check-in 2030-05-30T12:00:00Z
}
