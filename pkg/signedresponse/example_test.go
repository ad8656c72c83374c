package signedresponse_test

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/keyward/keyward/pkg/signedresponse"
)

// A program checks every answer of its Keyward server with the public key it ships with.
func Example() {
	pub, err := signedresponse.ParsePublicKey("MCowBQYDK2VwAyEA...") // the app's publicKey.base64 or .pem
	if err != nil {
		fmt.Println("bad key:", err)
		return
	}
	resp, err := http.Post("https://keyward.example.com/api/client/check", "application/json", nil)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := signedresponse.VerifyResponse(pub, resp.Header, resp.StatusCode, body, time.Now()); err != nil {
		fmt.Println("forged answer:", err) // do not trust the body
	}
}
