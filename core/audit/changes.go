package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Redacted is the value of a secret member in an entry, before and after: the entry says
// that the secret changed, never what it was or became.
const Redacted = "[redacted]"

// Change is one record as an updater held it before and after its write: two values of
// the same struct type (the storage record, or the service's own view of it).
type Change struct {
	Before, After any
}

// Changes collects the changes made while serving one request. The HTTP edge puts one in
// the request's context (WithChanges) and turns what it holds into the request's audit
// entry; the core services' update paths add the records they held (Changed), so that no
// one has to read the record again, and the entry shows what the write did rather than
// what the request asked.
type Changes struct {
	mu   sync.Mutex
	list []Change
}

type changesKey struct{}

// WithChanges answers ctx carrying a new collector, and the collector.
func WithChanges(ctx context.Context) (context.Context, *Changes) {
	c := &Changes{}
	return context.WithValue(ctx, changesKey{}, c), c
}

// Changed hands the record an updater read (before) and wrote (after) to the request's
// collector; without one (a call that is not a Dashboard or admin request) it does
// nothing.
func Changed(ctx context.Context, before, after any) {
	c, _ := ctx.Value(changesKey{}).(*Changes)
	if c == nil {
		return
	}
	c.mu.Lock()
	c.list = append(c.list, Change{Before: before, After: after})
	c.mu.Unlock()
}

// Created hands the records a creation is about to store to the request's collector, as
// Changed hands an update's: before is nil (nothing was there), after the record as the
// store call writes it. The creation's own store call (the one carrying events.Change)
// builds the request's entry from them inside its write (storage.AuditOutbox): the entry
// names the created record and holds its members, secrets redacted. Call it just before
// that store call, with the records it is given.
func Created(ctx context.Context, recs ...any) {
	c, _ := ctx.Value(changesKey{}).(*Changes)
	if c == nil {
		return
	}
	c.mu.Lock()
	for _, r := range recs {
		c.list = append(c.list, Change{After: r})
	}
	c.mu.Unlock()
}

// Made is what a bulk entry holds of each record an import made: its id, nothing before,
// its name (a user's) or key (a license's) after.
type Made struct {
	ID   string
	Name string
}

// Creation reports whether ch is a record created (Created): nothing before it.
func (ch Change) Creation() bool { return ch.Before == nil && ch.After != nil }

// Track wraps a store updater (the func an Update method of storage hands the record
// it read) so that, with a collector in ctx, the record as read and as fn left it are
// handed to the collector once fn succeeds. A store that runs the updater again (a
// compare-and-swap retry) replaces the change: the last run is the one written. Before is
// a shallow copy: fn replaces slices and maps rather than editing them in place.
func Track[T any](ctx context.Context, fn func(*T) error) func(*T) error {
	c, _ := ctx.Value(changesKey{}).(*Changes)
	if c == nil {
		return fn
	}
	slot := -1
	return func(rec *T) error {
		before := *rec
		if err := fn(rec); err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if slot < 0 {
			slot = len(c.list)
			c.list = append(c.list, Change{})
		}
		c.list[slot] = Change{Before: before, After: *rec}
		return nil
	}
}

// List answers the changes collected so far, in the order they were made.
func (c *Changes) List() []Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Change(nil), c.list...)
}

// Diff answers the members of the record that differ between before and after, as JSON
// objects (before's values, after's values). Members are the record's exported fields,
// named by their `audit` struct tag, else the field name in lower camel case (HWID is
// "hwid", LockedIP "lockedIp"). A field tagged `audit:"name,secret"` (or `audit:",secret"`)
// is recorded as Redacted on both sides when it changed; a field tagged `audit:"-"` is not
// recorded (bookkeeping such as UpdatedAt). The redaction rests on the record's fields:
// nothing the client sent reaches the entry, so a member name spelled another way, or a
// member no record has, cannot put a secret or a change that did not happen into it.
//
// A nil before is a creation (Created): before is answered empty and after holds every
// member the record sets.
func Diff(before, after any) (string, string, error) {
	if before == nil && after != nil {
		zero := reflect.New(reflect.Indirect(reflect.ValueOf(after)).Type()).Elem().Interface()
		_, a, err := Diff(zero, after)
		return "", a, err
	}
	bv, av := reflect.ValueOf(before), reflect.ValueOf(after)
	for bv.Kind() == reflect.Pointer {
		bv = bv.Elem()
	}
	for av.Kind() == reflect.Pointer {
		av = av.Elem()
	}
	if bv.Kind() != reflect.Struct || bv.Type() != av.Type() {
		return "", "", fmt.Errorf("audit: diff of %T and %T: want two values of one struct type", before, after)
	}
	b, a := map[string]any{}, map[string]any{}
	t := bv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, secret, skip := member(f)
		if skip {
			continue
		}
		x, y := bv.Field(i).Interface(), av.Field(i).Interface()
		if equal(x, y) {
			continue
		}
		if secret {
			b[name], a[name] = Redacted, Redacted
			continue
		}
		b[name], a[name] = value(x), value(y)
	}
	bj, err := json.Marshal(b)
	if err != nil {
		return "", "", fmt.Errorf("audit: diff of %T: %w", before, err)
	}
	aj, err := json.Marshal(a)
	if err != nil {
		return "", "", fmt.Errorf("audit: diff of %T: %w", after, err)
	}
	return string(bj), string(aj), nil
}

// member reads a field's audit tag: its member name, whether it is secret, whether it is
// left out.
func member(f reflect.StructField) (name string, secret, skip bool) {
	tag := f.Tag.Get("audit")
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	if tag == "secret" {
		// `audit:"secret"` reads as a name but is always meant as the option (it was
		// written so on store connections and orders, whose secrets then went in clear).
		name, opts = "", "secret"
	}
	if name == "" {
		name = lowerCamel(f.Name)
	}
	return name, opts == "secret", false
}

// lowerCamel names a Go field as the API does: the first word in lower case, each
// following word capitalised, initialisms as words (PCName: pcName, LockedIP: lockedIp).
func lowerCamel(s string) string {
	r := []rune(s)
	var words []string
	start := 0
	for i := 1; i <= len(r); i++ {
		// A word starts at an upper-case letter after a lower-case one (lockedIP: locked|IP),
		// and at the last upper-case letter of a run followed by a lower-case one
		// (PCName: PC|Name).
		if i == len(r) || (unicode.IsUpper(r[i]) && (unicode.IsLower(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1])))) {
			words = append(words, string(r[start:i]))
			start = i
		}
	}
	var out strings.Builder
	for i, w := range words {
		lw := strings.ToLower(w)
		if i == 0 {
			out.WriteString(lw)
			continue
		}
		out.WriteString(strings.ToUpper(lw[:1]) + lw[1:])
	}
	return out.String()
}

func equal(x, y any) bool {
	if tx, ok := x.(time.Time); ok {
		return tx.Equal(y.(time.Time))
	}
	return reflect.DeepEqual(x, y)
}

// value is a member's value as the entry shows it: times in RFC 3339 (null for the zero
// time), everything else as JSON encodes it.
func value(v any) any {
	if t, ok := v.(time.Time); ok {
		if t.IsZero() {
			return nil
		}
		return t.UTC().Format(time.RFC3339)
	}
	if b, ok := v.([]byte); ok && json.Valid(b) {
		return json.RawMessage(b) // a JSON document kept as bytes (hook conditions)
	}
	return v
}

// SecretLookingFields answers the fields of rec (a struct) whose Go name says they hold a
// secret (Hash, Secret, Password, Key but not a key's public parts, URL) and whose audit tag
// neither redacts nor leaves them out: the test that keeps new record fields from reaching
// an entry in clear.
func SecretLookingFields(rec any) []string {
	t := reflect.TypeOf(rec)
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		n := strings.ToLower(f.Name)
		looks := false
		for _, s := range []string{"hash", "secret", "password", "signingkey", "url"} {
			looks = looks || strings.Contains(n, s)
		}
		if !looks {
			continue
		}
		if _, secret, skip := member(f); !secret && !skip {
			out = append(out, f.Name)
		}
	}
	return out
}
