package wire

import "fmt"

// Close codes a socket is closed with: RFC 6455's for the ends that are not the domain's,
// and SPEC 6.3's 4000 range, which the SDKs read and act on.
const (
	// CodeNormal: the socket's work is over.
	CodeNormal = 1000
	// CodeGoingAway: the node shuts down; the program connects again, to another node.
	CodeGoingAway = 1001
	// CodePolicy: the socket is refused, or no longer allowed (its token ended).
	CodePolicy = 1008
	// CodeInternal: the server failed (a bug), not the socket's program.
	CodeInternal = 1011

	CodeForceLogout = 4000
	CodeKicked      = 4001
	CodeBanned      = 4002
	CodeReplaced    = 4003
)

// maxReason bounds a close frame's reason: 123 bytes fit a control frame with its code.
const maxReason = 120

// Disconnect is why a socket is closed: the close code sent and its reason. It is an
// error value, so the reason a socket ended can travel as one.
type Disconnect struct {
	Code   int
	Reason string
}

func (d Disconnect) Error() string {
	return fmt.Sprintf("socket closed with %d: %s", d.Code, d.Reason)
}

// Normal, GoingAway, Policy, Internal, ForceLogout, Kicked, Banned and Replaced are the
// Disconnects of each close code.
func Normal(reason string) Disconnect      { return Disconnect{Code: CodeNormal, Reason: reason} }
func GoingAway(reason string) Disconnect   { return Disconnect{Code: CodeGoingAway, Reason: reason} }
func Policy(reason string) Disconnect      { return Disconnect{Code: CodePolicy, Reason: reason} }
func Internal(reason string) Disconnect    { return Disconnect{Code: CodeInternal, Reason: reason} }
func ForceLogout(reason string) Disconnect { return Disconnect{Code: CodeForceLogout, Reason: reason} }
func Kicked(reason string) Disconnect      { return Disconnect{Code: CodeKicked, Reason: reason} }
func Banned(reason string) Disconnect      { return Disconnect{Code: CodeBanned, Reason: reason} }
func Replaced(reason string) Disconnect    { return Disconnect{Code: CodeReplaced, Reason: reason} }

// FrameReason is the reason as a close frame carries it: at most 120 bytes of valid UTF-8.
func (d Disconnect) FrameReason() string {
	s := d.Reason
	if len(s) > maxReason {
		s = s[:maxReason]
	}
	return toValidUTF8(s)
}
