package wire

import (
	"errors"
	"strings"
	"testing"
	"time"
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

// sentPeer keeps what a socket was sent.
type sentPeer struct{ sent []string }

func (p *sentPeer) Send(msg []byte) bool      { p.sent = append(p.sent, string(msg)); return true }
func (p *sentPeer) SendShared(f *Shared) bool { return p.Send(f.Msg) }
func (p *sentPeer) Close(Disconnect)          {}

// countLimiter allows n messages and answers every refusal.
type countLimiter struct{ n int }

func (l *countLimiter) Allow(time.Time) bool                  { l.n--; return l.n >= 0 }
func (l *countLimiter) Warn(time.Time) bool                   { return true }
func (l *countLimiter) Bound() (limit int, per time.Duration) { return 1, 10 * time.Second }

// TestAccept: a frame within the limit is decoded; a frame that is no message and a frame
// over the limit are answered with an error saying why, and not handed on.
func TestAccept(t *testing.T) {
	p, rate := &sentPeer{}, &countLimiter{n: 2}
	if in, ok := Accept(p, rate, time.Now(), []byte(`{"type":"chat"}`)); !ok || in.Type != "chat" || len(p.sent) != 0 {
		t.Fatalf("a message within the limit: %+v, %v, sent %q", in, ok, p.sent)
	}
	if _, ok := Accept(p, rate, time.Now(), []byte(`nope`)); ok || len(p.sent) != 1 || !strings.Contains(p.sent[0], "JSON object") {
		t.Fatalf("no message: ok %v, sent %q", ok, p.sent)
	}
	if _, ok := Accept(p, rate, time.Now(), []byte(`{"type":"chat"}`)); ok || len(p.sent) != 2 || !strings.Contains(p.sent[1], "rate limited: at most 1 messages per 10s") {
		t.Fatalf("over the limit: ok %v, sent %q", ok, p.sent)
	}
}
