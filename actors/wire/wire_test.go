package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	for _, raw := range []string{`not json`, `[]`, `{}`, `{"type":5}`, `{"type":""}`, `null`} {
		if _, ok := Decode([]byte(raw)); ok {
			t.Errorf("Decode(%s) accepted", raw)
		}
	}
	in, ok := Decode([]byte(`{"type":"chat","data":{"message":"inside","userId":"u"},"message":"beside"}`))
	if !ok || in.Str("message") != "beside" || in.Str("userId") != "u" {
		t.Fatalf("members: %+v", in)
	}
	big := `{"type":"x","data":"` + strings.Repeat("a", MaxMessageBytes) + `"}`
	if _, ok := Decode([]byte(big)); ok {
		t.Fatal("a message over MaxMessageBytes was accepted")
	}
}

// TestEncodeNoHTMLEscaping: the C++ SDK does not decode \u0026 and the like.
func TestEncodeNoHTMLEscaping(t *testing.T) {
	got := string(Encode(Outgoing{Type: TypeMessage, Data: map[string]any{"message": "a & <b>"}}))
	if want := `{"type":"message","data":{"message":"a & <b>"}}`; got != want {
		t.Fatalf("Encode: %s, want %s", got, want)
	}
	if got := string(Encode(Outgoing{Type: TypePong})); got != `{"type":"pong"}` {
		t.Fatalf("a message without data: %s", got)
	}
}

// TestDisconnect: a Disconnect carries the code sent on the wire (no pseudo-codes), is an
// error value, and its frame reason fits a close frame.
func TestDisconnect(t *testing.T) {
	cases := map[int]Disconnect{
		1000: Normal("bye"), 1001: GoingAway("x"), 1008: Policy("x"), 1011: Internal("x"),
		4000: ForceLogout("x"), 4001: Kicked("x"), 4002: Banned("x"), 4003: Replaced("x"),
	}
	for code, d := range cases {
		if d.Code != code {
			t.Errorf("%v: code %d, want %d", d, d.Code, code)
		}
	}
	var err error = Kicked("out")
	var d Disconnect
	if !errors.As(err, &d) || d.Code != CodeKicked || d.Reason != "out" {
		t.Fatalf("a Disconnect as an error: %v", err)
	}
	long := Disconnect{Code: CodePolicy, Reason: strings.Repeat("é", 100)}.FrameReason()
	if len(long) > 120 || !strings.HasPrefix(long, "éé") || strings.ToValidUTF8(long, "") != long {
		t.Fatalf("frame reason of %d bytes: %q", len(long), long)
	}
}
