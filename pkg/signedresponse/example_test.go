package signedresponse_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/keyward/keyward/pkg/signedresponse"
)

// A program checks every answer of its Keyward server with the public key it ships with,
// against the request it sent: the exact body bytes, and a fresh challenge per call.
func Example() {
	pub, err := signedresponse.ParsePublicKey("MCowBQYDK2VwAyEA...") // the app's publicKey.base64 or .pem
	if err != nil {
		fmt.Println("bad key:", err)
		return
	}
	body := []byte(`{"sessionToken":"..."}`)
	req, err := http.NewRequest("POST", "https://keyward.example.com/api/client/check", bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	challenge := make([]byte, 16)
	_, _ = rand.Read(challenge)
	req.Header.Set(signedresponse.HeaderChallenge, hex.EncodeToString(challenge))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if err := signedresponse.VerifyResponse(pub, signedresponse.RequestOf(req, body), resp.Header, resp.StatusCode, answer, time.Now()); err != nil {
		fmt.Println("forged answer:", err) // do not trust the body
	}
}
