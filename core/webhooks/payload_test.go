package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var sampleTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func sampleEvent() Event {
	return Event{
		ID:      "evt_01",
		Name:    "user.login",
		AppID:   "app_42",
		Time:    sampleTime,
		Message: "alice logged in from <b>evil</b> & co @everyone **now**",
		Data: map[string]any{
			"username": "alice <admin>",
			"ip":       "203.0.113.9",
			"attempts": 3,
			"tags":     []string{"a", "b"},
			"none":     nil,
		},
	}
}

func readBody(t *testing.T, req *http.Request) []byte {
	t.Helper()
	b, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuildCustomExactBody(t *testing.T) {
	now := sampleTime.Add(time.Hour)
	req, err := BuildAt(KindCustom, "https://hooks.example.com/in", sampleEvent(), "whsec_x", now)
	if err != nil {
		t.Fatal(err)
	}
	body := readBody(t, req)
	want := `{"id":"evt_01","event":"user.login","appId":"app_42","timestamp":"2026-03-04T05:06:07Z",` +
		`"message":"alice logged in from <b>evil</b> & co @everyone **now**",` +
		`"data":{"attempts":3,"ip":"203.0.113.9","none":null,"tags":["a","b"],"username":"alice <admin>"}}`
	if string(body) != want {
		t.Fatalf("body\n got %s\nwant %s", body, want)
	}
	if req.Method != http.MethodPost || req.URL.String() != "https://hooks.example.com/in" {
		t.Errorf("request %s %s", req.Method, req.URL)
	}
	h := req.Header
	ts := strconv.FormatInt(now.Unix(), 10)
	if h.Get("Content-Type") != "application/json" || h.Get(HeaderEvent) != "user.login" ||
		h.Get(HeaderDelivery) != "evt_01" || h.Get(HeaderTimestamp) != ts {
		t.Errorf("headers %v", h)
	}
	if h.Get(HeaderSignature) != Sign("whsec_x", now.Unix(), body) {
		t.Errorf("signature %q", h.Get(HeaderSignature))
	}
	if !Verify("whsec_x", h.Get(HeaderSignature), now.Unix(), body, now, 0) {
		t.Error("the signature does not verify")
	}
	// The body can be replayed by the client (GetBody), e.g. on a retried connection.
	if req.GetBody == nil || req.ContentLength != int64(len(body)) {
		t.Errorf("GetBody %v, ContentLength %d", req.GetBody != nil, req.ContentLength)
	}
}

func TestBuildCustomDefaults(t *testing.T) {
	now := time.Unix(1700000000, 0)
	req, err := BuildAt(KindCustom, "https://hooks.example.com/", Event{ID: "e", Name: "app.update"}, "k", now)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(readBody(t, req), &got); err != nil {
		t.Fatal(err)
	}
	if d, ok := got["data"].(map[string]any); !ok || len(d) != 0 {
		t.Errorf("data = %#v, want {}", got["data"])
	}
	if got["timestamp"] != "2023-11-14T22:13:20Z" {
		t.Errorf("timestamp = %v, want the build time", got["timestamp"])
	}
	if _, ok := got["message"]; ok {
		t.Error("empty message is sent")
	}
}

func TestBuildErrors(t *testing.T) {
	e := sampleEvent()
	if _, err := Build("WEBHOOK", "https://x.example.com/", e, "k"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := Build("discord", "https://x.example.com/", e, "k"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("kinds are upper-case: %v", err)
	}
	if _, err := Build(KindCustom, "https://x.example.com/", e, ""); err == nil {
		t.Error("CUSTOM without a secret builds")
	}
	if _, err := Build(KindCustom, "https://x.example.com/", Event{Name: "user.login"}, "k"); err == nil {
		t.Error("CUSTOM without an event id builds")
	}
	if _, err := Build(KindSlack, "https://x.example.com/", Event{ID: "e"}, ""); err == nil {
		t.Error("an event without a name builds")
	}
	if _, err := Build(KindTelegram, "https://api.telegram.org/bot1:TOKEN/sendMessage", e, ""); err == nil {
		t.Error("TELEGRAM without chat_id builds")
	}
	bad := e
	bad.Data = map[string]any{"f": func() {}}
	if _, err := Build(KindCustom, "https://x.example.com/", bad, "k"); err == nil {
		t.Error("unencodable data builds")
	}
	// Errors never echo the URL: a Telegram URL carries the bot token.
	for _, kind := range []string{KindTelegram, KindDiscord} {
		_, err := Build(kind, "https://api.telegram.org/bot1:SECRETTOKEN/send\x7f?chat_id=1", e, "")
		if err == nil || strings.Contains(err.Error(), "SECRETTOKEN") {
			t.Errorf("%s with a bad URL: %v", kind, err)
		}
	}
	for _, k := range []string{KindDiscord, KindSlack, KindTelegram, KindCustom} {
		if !ValidKind(k) {
			t.Errorf("ValidKind(%s) = false", k)
		}
	}
	if ValidKind("EMAIL") {
		t.Error("ValidKind(EMAIL) = true")
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	return m
}

func TestBuildDiscord(t *testing.T) {
	req, err := Build(KindDiscord, "https://discord.com/api/webhooks/1/tok", sampleEvent(), "")
	if err != nil {
		t.Fatal(err)
	}
	raw := readBody(t, req)
	checkDiscord(t, raw)
	if !strings.Contains(string(raw), `"allowed_mentions":{"parse":[]}`) {
		t.Errorf("mentions are not suppressed: %s", raw)
	}
	if req.Header.Get(HeaderSignature) != "" {
		t.Error("a chat platform request is signed")
	}
}

// checkDiscord checks a body against Discord's execute-webhook format.
func checkDiscord(t *testing.T, raw []byte) {
	t.Helper()
	var m discordMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Content == "" || len(m.Embeds) != 1 {
		t.Fatalf("content %q, %d embeds", m.Content, len(m.Embeds))
	}
	e := m.Embeds[0]
	if e.Title != "user.login" || e.Timestamp != "2026-03-04T05:06:07Z" {
		t.Errorf("title %q timestamp %q", e.Title, e.Timestamp)
	}
	if !strings.Contains(e.Description, `\*\*now\*\*`) || !strings.Contains(e.Description, `\<b\>evil`) {
		t.Errorf("description not markdown-escaped: %q", e.Description)
	}
	fields := map[string]string{}
	for _, f := range e.Fields {
		fields[f.Name] = f.Value
	}
	if fields["username"] != `alice \<admin\>` || fields["attempts"] != "3" || fields["tags"] != `\["a","b"\]` || fields["none"] != "-" {
		t.Errorf("fields %q", fields)
	}
	if e.Footer == nil || !strings.Contains(e.Footer.Text, "app_42") {
		t.Errorf("footer %+v", e.Footer)
	}
}

func TestBuildDiscordLimits(t *testing.T) {
	e := sampleEvent()
	e.Name = strings.Repeat("n", 300)
	e.Message = strings.Repeat("m", 5000)
	e.Data = map[string]any{}
	for i := range 40 {
		e.Data[fmt.Sprintf("%s%02d", strings.Repeat("k", 300), i)] = strings.Repeat("v", 2000)
	}
	req, err := Build(KindDiscord, "https://discord.com/api/webhooks/1/tok", e, "")
	if err != nil {
		t.Fatal(err)
	}
	var m discordMessage
	if err := json.Unmarshal(readBody(t, req), &m); err != nil {
		t.Fatal(err)
	}
	em := m.Embeds[0]
	n := utf8.RuneCountInString
	total := n(em.Title) + n(em.Description) + n(em.Footer.Text)
	if n(em.Title) > discordTitleMax || n(em.Description) > discordDescriptionMax || len(em.Fields) > discordFieldsMax {
		t.Errorf("title %d, description %d, %d fields", n(em.Title), n(em.Description), len(em.Fields))
	}
	for _, f := range em.Fields {
		if n(f.Name) > discordFieldNameMax || n(f.Value) > discordFieldValueMax {
			t.Errorf("field of %d/%d runes", n(f.Name), n(f.Value))
		}
		total += n(f.Name) + n(f.Value)
	}
	if total > discordEmbedTotalMax {
		t.Errorf("embed of %d characters, Discord allows %d", total, discordEmbedTotalMax)
	}
	if !strings.Contains(em.Footer.Text, "more fields") {
		t.Errorf("dropped fields are not mentioned: %q", em.Footer.Text)
	}
	if n(m.Content) > discordContentMax {
		t.Errorf("content of %d runes", n(m.Content))
	}
}

func TestBuildSlack(t *testing.T) {
	req, err := Build(KindSlack, "https://hooks.slack.com/services/T/B/X", sampleEvent(), "")
	if err != nil {
		t.Fatal(err)
	}
	checkSlack(t, readBody(t, req))
}

// checkSlack checks a body against Slack's incoming-webhook Block Kit format.
func checkSlack(t *testing.T, raw []byte) {
	t.Helper()
	var m slackMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "user.login") || !strings.Contains(m.Text, "&lt;b&gt;evil&lt;/b&gt; &amp; co") {
		t.Errorf("text %q", m.Text)
	}
	if len(m.Blocks) < 3 || m.Blocks[0].Type != "header" || m.Blocks[0].Text.Type != "plain_text" || m.Blocks[0].Text.Text != "user.login" {
		t.Fatalf("blocks %+v", m.Blocks)
	}
	var fields []string
	for _, b := range m.Blocks {
		for _, f := range b.Fields {
			if f.Type != "mrkdwn" {
				t.Errorf("field type %q", f.Type)
			}
			fields = append(fields, f.Text)
		}
	}
	if !strings.Contains(strings.Join(fields, "|"), "*username*\nalice &lt;admin&gt;") {
		t.Errorf("fields %q", fields)
	}
	last := m.Blocks[len(m.Blocks)-1]
	if last.Type != "context" || len(last.Elements) != 1 || !strings.Contains(last.Elements[0].Text, "2026-03-04T05:06:07Z") {
		t.Errorf("context block %+v", last)
	}
}

func TestBuildSlackManyFields(t *testing.T) {
	e := sampleEvent()
	e.Data = map[string]any{}
	for i := range 45 {
		e.Data[fmt.Sprintf("k%02d", i)] = strings.Repeat("<", 3000)
	}
	req, err := Build(KindSlack, "https://hooks.slack.com/services/T/B/X", e, "")
	if err != nil {
		t.Fatal(err)
	}
	var m slackMessage
	if err := json.Unmarshal(readBody(t, req), &m); err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, b := range m.Blocks {
		if len(b.Fields) > slackFieldsPerBlock {
			t.Errorf("section of %d fields", len(b.Fields))
		}
		for _, f := range b.Fields {
			if utf8.RuneCountInString(f.Text) > slackFieldMax {
				t.Errorf("field of %d characters", utf8.RuneCountInString(f.Text))
			}
		}
		count += len(b.Fields)
	}
	if count != slackFieldsMax || !strings.Contains(m.Blocks[len(m.Blocks)-1].Elements[0].Text, "+15 more fields") {
		t.Errorf("%d fields shown; context %q", count, m.Blocks[len(m.Blocks)-1].Elements[0].Text)
	}
}

func TestBuildTelegram(t *testing.T) {
	req, err := Build(KindTelegram, "https://api.telegram.org/bot123:ABC/sendMessage?chat_id=-1001234", sampleEvent(), "")
	if err != nil {
		t.Fatal(err)
	}
	checkTelegram(t, readBody(t, req), "-1001234")

	req, err = Build(KindTelegram, "https://api.telegram.org/bot123:ABC/sendMessage?chat_id=%40mychannel", sampleEvent(), "")
	if err != nil {
		t.Fatal(err)
	}
	if m := decode(t, readBody(t, req)); m["chat_id"] != "@mychannel" {
		t.Errorf("chat_id %v", m["chat_id"])
	}
}

// checkTelegram checks a body against the Bot API sendMessage call in HTML parse mode.
func checkTelegram(t *testing.T, raw []byte, chatID string) {
	t.Helper()
	var m telegramMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.ChatID != chatID || m.ParseMode != "HTML" {
		t.Errorf("chat_id %q parse_mode %q", m.ChatID, m.ParseMode)
	}
	for _, want := range []string{"<b>user.login</b>", "&lt;b&gt;evil&lt;/b&gt; &amp; co", "<b>username</b>: alice &lt;admin&gt;", "2026-03-04T05:06:07Z"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.Text)
		}
	}
	if strings.Contains(m.Text, "<admin>") || strings.Contains(m.Text, "<b>evil") {
		t.Errorf("user text is not escaped:\n%s", m.Text)
	}
}

func TestBuildTelegramLength(t *testing.T) {
	e := sampleEvent()
	e.Message = strings.Repeat("&", 5000)
	e.Data = map[string]any{}
	for i := range 100 {
		e.Data[fmt.Sprintf("key%03d", i)] = strings.Repeat("<", 500)
	}
	req, err := Build(KindTelegram, "https://api.telegram.org/bot1:A/sendMessage?chat_id=1", e, "")
	if err != nil {
		t.Fatal(err)
	}
	var m telegramMessage
	if err := json.Unmarshal(readBody(t, req), &m); err != nil {
		t.Fatal(err)
	}
	// Telegram counts the text after entity parsing: strip tags, unescape entities.
	visible := strings.NewReplacer("<b>", "", "</b>", "", "<i>", "", "</i>", "",
		"&lt;", "<", "&gt;", ">", "&amp;", "&", "&quot;", `"`).Replace(m.Text)
	if n := utf8.RuneCountInString(visible); n > telegramTextMax {
		t.Errorf("text of %d visible characters, Telegram allows %d", n, telegramTextMax)
	}
	if strings.Count(m.Text, "<b>") != strings.Count(m.Text, "</b>") || !strings.Contains(m.Text, "more fields") {
		t.Errorf("malformed or untruncated text:\n%.300s", m.Text)
	}
}
