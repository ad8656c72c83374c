package hooks

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A template is the Message or Reason of an action: literal text with placeholders
// {{username}}, {{userId}}, {{type}} (the sender and the message type) and {{<dotted path>}}
// into the message (e.g. {{data.room}}, {{message}}). Spaces inside the braces are ignored.
// An unknown placeholder renders as empty; a string renders as itself; any other value
// renders as compact JSON. There is no other syntax: nothing in a template can call
// anything. Text that is not a well-formed placeholder (an unclosed "{{", "{{}}") stays as
// it is. The output is cut at MaxRenderedLength characters.
type template struct {
	parts []part
	plain bool // no placeholders: parts[0].text is the whole output
	size  int  // bytes of literal text
}

type part struct {
	text string // literal text, when ref is nil
	ref  ref
}

type ref interface{ value(m *Message) (any, bool) }

type senderName struct{}
type senderID struct{}
type messageType struct{}
type fieldRef struct{ p path }

func (senderName) value(m *Message) (any, bool)  { return m.Username, true }
func (senderID) value(m *Message) (any, bool)    { return m.UserID, true }
func (messageType) value(m *Message) (any, bool) { return m.Type, true }
func (f fieldRef) value(m *Message) (any, bool)  { return lookup(m, f.p) }

// parseTemplate splits s into literal text and placeholders.
func parseTemplate(s string) template {
	var t template
	lit := strings.Builder{}
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(s[i+2:], "}}")
		if j < 0 {
			break
		}
		name := strings.TrimSpace(s[i+2 : i+2+j])
		r := placeholder(name)
		if r == nil {
			// Not a placeholder: keep "{{" literally and look again after it.
			lit.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		lit.WriteString(s[:i])
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{text: lit.String()})
			lit.Reset()
		}
		t.parts = append(t.parts, part{ref: r})
		s = s[i+2+j+2:]
	}
	lit.WriteString(s)
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{text: lit.String()})
	}
	for _, p := range t.parts {
		t.size += len(p.text)
	}
	t.plain = len(t.parts) == 0 || (len(t.parts) == 1 && t.parts[0].ref == nil)
	return t
}

// placeholder resolves a placeholder's name, or nil when name is not a placeholder.
func placeholder(name string) ref {
	switch name {
	case "":
		return nil
	case "username":
		return senderName{}
	case "userId":
		return senderID{}
	case "type":
		return messageType{}
	}
	if strings.ContainsAny(name, "{}") || hasControl(name) || validateField("", name) != nil {
		return nil
	}
	return fieldRef{p: parsePath(name)}
}

// render fills t for m, cut at MaxRenderedLength characters.
func (t template) render(m *Message) string {
	if t.plain {
		if len(t.parts) == 0 {
			return ""
		}
		return truncate(t.parts[0].text)
	}
	var b strings.Builder
	b.Grow(t.size + 16*len(t.parts))
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.text)
		} else if v, ok := p.ref.value(m); ok {
			writeValue(&b, v)
		}
		if b.Len() > MaxRenderedLength*utf8.UTFMax {
			break
		}
	}
	return truncate(b.String())
}

func writeValue(b *strings.Builder, v any) {
	if s, ok := v.(string); ok {
		b.WriteString(s)
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return // not JSON (cannot come from a decoded message): render as empty
	}
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// truncate cuts s to MaxRenderedLength characters.
func truncate(s string) string {
	if len(s) <= MaxRenderedLength {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxRenderedLength {
			return s[:i]
		}
		n++
	}
	return s
}
