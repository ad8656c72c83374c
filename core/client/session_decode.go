package client

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// decodeSession decodes a session as sessions.put encoded it. Every request of a session
// and every socket's upgrade decode one, and encoding/json's reflection was most of a
// socket's session read: what json.Marshal writes for a Session (one flat object of
// known keys, plain strings, an integer, RFC 3339 times, no spaces) is read here by hand.
// Anything else (an escape, a key it does not know, a null, a space) goes to
// json.Unmarshal, so the answer is always encoding/json's.
func decodeSession(b []byte, s *Session) error {
	if decodeSessionFast(b, s) {
		return nil
	}
	*s = Session{}
	return json.Unmarshal(b, s)
}

// decodeSessionFast decodes b into s and answers true, or answers false (s then holds
// anything) when b is not in the shape json.Marshal gives a Session.
func decodeSessionFast(b []byte, s *Session) bool {
	*s = Session{}
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	i := 1
	if b[i] == '}' {
		return i == len(b)-1
	}
	for {
		key, next, ok := plainString(b, i)
		if !ok || next >= len(b) || b[next] != ':' {
			return false
		}
		i = next + 1
		if string(key) == "seatn" {
			end := i
			for end < len(b) && (b[end] == '-' || (b[end] >= '0' && b[end] <= '9')) {
				end++
			}
			num := b[i:end]
			// JSON's integers only: no leading zero, no lone sign.
			digits := num
			if len(digits) > 0 && digits[0] == '-' {
				digits = digits[1:]
			}
			if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
				return false
			}
			n, err := strconv.Atoi(string(num))
			if err != nil {
				return false
			}
			s.SeatLimit, i = n, end
		} else {
			v, next, ok := plainString(b, i)
			if !ok || !setSessionField(s, key, v) {
				return false
			}
			i = next
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i == len(b)-1
		default:
			return false
		}
	}
}

// plainString reads the JSON string at b[i] when it has no escape and no control
// character and is valid UTF-8 (what encoding/json copies as it is), answering its
// contents and the index after its closing quote.
func plainString(b []byte, i int) (v []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			v = b[i+1 : j]
			if !ascii && !utf8.Valid(v) {
				return nil, 0, false
			}
			return v, j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, 0, false
}

// setSessionField sets the string field of s whose JSON key is key (exactly: a key in
// another case is left to encoding/json, which matches keys without regard to case).
func setSessionField(s *Session, key, v []byte) bool {
	switch string(key) {
	case "app":
		s.AppID = string(v)
	case "acc":
		s.AccountID = string(v)
	case "hwid":
		s.HWID = string(v)
	case "ip":
		s.IP = string(v)
	case "cc":
		s.Country = string(v)
	case "ver":
		s.Version = string(v)
	case "uid":
		s.UserID = string(v)
	case "user":
		s.Username = string(v)
	case "fk":
		s.FileKey = string(v)
	case "seat":
		s.Seat = string(v)
	case "at":
		return sessionTime(&s.CreatedAt, v)
	case "login":
		return sessionTime(&s.LoginAt, v)
	default:
		return false
	}
	return true
}

// sessionTime parses an RFC 3339 time as time.Time's UnmarshalJSON does (UnmarshalText
// is the same strict parse, without the quotes).
func sessionTime(t *time.Time, v []byte) bool {
	return t.UnmarshalText(v) == nil
}
