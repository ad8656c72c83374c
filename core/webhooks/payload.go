package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Integration types (SPEC 2, Integration). The first three are chat platforms with their
// own message formats; CUSTOM receives Keyward's signed JSON.
const (
	KindDiscord  = "DISCORD"
	KindTelegram = "TELEGRAM"
	KindSlack    = "SLACK"
	KindCustom   = "CUSTOM"
)

// ValidKind reports whether kind is one of the integration types.
func ValidKind(kind string) bool {
	switch kind {
	case KindDiscord, KindTelegram, KindSlack, KindCustom:
		return true
	}
	return false
}

// userAgent identifies Keyward to receivers, which often filter or log by it.
const userAgent = "Keyward-Webhooks/1"

// Event is one occurrence to deliver: an application event of SPEC 6.1.
type Event struct {
	// ID identifies the event; CUSTOM receivers use it (X-Keyward-Delivery) to drop
	// duplicates, since a retried delivery may arrive twice.
	ID string
	// Name is the dotted event name, e.g. "user.login".
	Name  string
	AppID string
	// Time is when the event happened; zero means the build time.
	Time time.Time
	// Data is the event's details, shown as fields by chat platforms and sent as-is to
	// CUSTOM receivers. Values must be JSON-encodable.
	Data map[string]any
	// Message is a human-readable summary.
	Message string
}

// ErrUnknownKind is returned by Build for a type that is not an integration type.
var ErrUnknownKind = errors.New("unknown integration type")

// Build returns the delivery request for an integration of the given kind. Build a fresh
// request for every attempt: a CUSTOM request is signed with the time it is built, so a
// retry hours later still passes the receiver's freshness check.
func Build(kind, url string, e Event, secret string) (*http.Request, error) {
	return BuildAt(kind, url, e, secret, time.Now())
}

// BuildAt is Build with the signing time given, for deterministic tests.
func BuildAt(kind, rawURL string, e Event, secret string, now time.Time) (*http.Request, error) {
	if e.Name == "" {
		return nil, fmt.Errorf("build %s webhook: event has no name", kind)
	}
	if e.Time.IsZero() {
		e.Time = now
	}
	var (
		body []byte
		err  error
	)
	switch kind {
	case KindDiscord:
		body, err = marshal(discordPayload(e))
	case KindSlack:
		body, err = marshal(slackPayload(e))
	case KindTelegram:
		var p telegramMessage
		if p, err = telegramPayload(rawURL, e); err == nil {
			body, err = marshal(p)
		}
	case KindCustom:
		if secret == "" {
			return nil, fmt.Errorf("build CUSTOM webhook for event %s: integration has no signing secret", e.ID)
		}
		if e.ID == "" {
			return nil, errors.New("build CUSTOM webhook: event has no id")
		}
		body, err = marshal(customPayload(e))
	default:
		return nil, fmt.Errorf("build webhook of type %q: %w", kind, ErrUnknownKind)
	}
	if err != nil {
		return nil, fmt.Errorf("build %s webhook for event %s: %w", kind, e.Name, err)
	}

	req, err := http.NewRequest(http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		// The URL error would echo the URL (and a Telegram bot token); say only what failed.
		return nil, fmt.Errorf("build %s webhook for event %s: invalid webhook URL", kind, e.Name)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if kind == KindCustom {
		ts := now.Unix()
		req.Header.Set(HeaderEvent, e.Name)
		req.Header.Set(HeaderDelivery, e.ID)
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	}
	return req, nil
}

// marshal encodes JSON without HTML escaping (receivers see "<b>", not "\u003cb\u003e")
// and without the encoder's trailing newline, so the signed bytes are the sent bytes.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// CUSTOM: Keyward's own JSON, documented in SIGNATURES.md.

type customBody struct {
	ID        string         `json:"id"`
	Event     string         `json:"event"`
	AppID     string         `json:"appId"`
	Timestamp string         `json:"timestamp"`
	Message   string         `json:"message,omitempty"`
	Data      map[string]any `json:"data"`
}

func customPayload(e Event) customBody {
	data := e.Data
	if data == nil {
		data = map[string]any{} // receivers can always index "data"
	}
	return customBody{ID: e.ID, Event: e.Name, AppID: e.AppID,
		Timestamp: e.Time.UTC().Format(time.RFC3339), Message: e.Message, Data: data}
}

// DISCORD: the execute-webhook body, https://discord.com/developers/docs/resources/webhook.

// Discord's documented limits; a body over any of them is refused with 400.
const (
	discordContentMax     = 2000
	discordTitleMax       = 256
	discordDescriptionMax = 4096
	discordFieldsMax      = 25
	discordFieldNameMax   = 256
	discordFieldValueMax  = 1024
	discordFooterMax      = 2048
	discordEmbedTotalMax  = 6000
)

type discordMessage struct {
	Content         string          `json:"content"`
	Embeds          []discordEmbed  `json:"embeds"`
	AllowedMentions discordMentions `json:"allowed_mentions"`
}

// discordMentions with an empty parse list stops "@everyone" or a role mention inside
// user-controlled text (a username, a message) from pinging the owner's server.
type discordMentions struct {
	Parse []string `json:"parse"`
}

type discordEmbed struct {
	Title       string         `json:"title"`
	Description string         `json:"description,omitempty"`
	Timestamp   string         `json:"timestamp"`
	Fields      []discordField `json:"fields,omitempty"`
	Footer      *discordFooter `json:"footer,omitempty"`
}

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline"`
}

type discordFooter struct {
	Text string `json:"text"`
}

func discordPayload(e Event) discordMessage {
	embed := discordEmbed{
		Title:       truncate(e.Name, discordTitleMax),
		Description: truncate(discordEscape(e.Message), discordDescriptionMax),
		Timestamp:   e.Time.UTC().Format(time.RFC3339),
	}
	footer := footerText(e)
	total := utf8.RuneCountInString(embed.Title) + utf8.RuneCountInString(embed.Description) +
		utf8.RuneCountInString(footer) + 32 // room for the "+N more" note
	fields := eventFields(e.Data)
	for i, f := range fields {
		name := truncate(discordEscape(f.key), discordFieldNameMax)
		value := truncate(discordEscape(f.value), discordFieldValueMax)
		if value == "" {
			value = "-" // Discord refuses empty field values
		}
		size := utf8.RuneCountInString(name) + utf8.RuneCountInString(value)
		if len(embed.Fields) == discordFieldsMax || total+size > discordEmbedTotalMax {
			footer += fmt.Sprintf(" · +%d more fields", len(fields)-i)
			break
		}
		total += size
		embed.Fields = append(embed.Fields, discordField{Name: name, Value: value, Inline: len(value) <= 40})
	}
	embed.Footer = &discordFooter{Text: truncate(footer, discordFooterMax)}
	return discordMessage{
		Content:         truncate("Keyward: "+discordEscape(e.Name), discordContentMax),
		Embeds:          []discordEmbed{embed},
		AllowedMentions: discordMentions{Parse: []string{}},
	}
}

// discordEscape backslash-escapes the markdown Discord renders, so user-controlled text
// (usernames, messages) shows literally instead of formatting or forming masked links.
var discordEscape = strings.NewReplacer(
	`\`, `\\`, `*`, `\*`, `_`, `\_`, `~`, `\~`, "`", "\\`", `|`, `\|`,
	`>`, `\>`, `<`, `\<`, `[`, `\[`, `]`, `\]`, `#`, `\#`,
).Replace

// SLACK: an incoming-webhook body with Block Kit, https://api.slack.com/messaging/webhooks.

// Slack's documented Block Kit limits, and how many data fields a message shows (at most
// 50 blocks are allowed; a chat message with more than a few sections is unreadable).
const (
	slackTextMax        = 3000 // section text and the fallback text we send
	slackHeaderMax      = 150
	slackFieldMax       = 2000
	slackFieldsPerBlock = 10
	slackFieldsMax      = 30
)

type slackMessage struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string      `json:"type"`
	Text     *slackText  `json:"text,omitempty"`
	Fields   []slackText `json:"fields,omitempty"`
	Elements []slackText `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func slackPayload(e Event) slackMessage {
	summary := e.Name
	if e.Message != "" {
		summary += ": " + e.Message
	}
	blocks := []slackBlock{{Type: "header",
		Text: &slackText{Type: "plain_text", Text: truncate(e.Name, slackHeaderMax)}}}
	if e.Message != "" {
		blocks = append(blocks, slackBlock{Type: "section",
			Text: &slackText{Type: "mrkdwn", Text: truncate(slackEscape(e.Message), slackTextMax)}})
	}
	fields := eventFields(e.Data)
	more := ""
	if len(fields) > slackFieldsMax {
		more = fmt.Sprintf(" · +%d more fields", len(fields)-slackFieldsMax)
		fields = fields[:slackFieldsMax]
	}
	for len(fields) > 0 {
		n := min(len(fields), slackFieldsPerBlock)
		b := slackBlock{Type: "section"}
		for _, f := range fields[:n] {
			b.Fields = append(b.Fields, slackText{Type: "mrkdwn",
				Text: truncate("*"+slackEscape(f.key)+"*\n"+slackEscape(f.value), slackFieldMax)})
		}
		blocks = append(blocks, b)
		fields = fields[n:]
	}
	// <!date^…|fallback> shows the time in each reader's own time zone.
	context := fmt.Sprintf("<!date^%d^{date_short_pretty} {time_secs}|%s> · %s%s",
		e.Time.Unix(), e.Time.UTC().Format(time.RFC3339), slackEscape(footerText(e)), more)
	blocks = append(blocks, slackBlock{Type: "context",
		Elements: []slackText{{Type: "mrkdwn", Text: truncate(context, slackTextMax)}}})
	return slackMessage{
		Text:   truncate("Keyward: "+slackEscape(summary), slackTextMax),
		Blocks: blocks,
	}
}

// slackEscape escapes the three characters Slack's mrkdwn requires escaping; it also stops
// user text from forming <!channel> mentions or <url|links>.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// TELEGRAM: the Bot API sendMessage call, https://core.telegram.org/bots/api#sendmessage.

// telegramTextMax is sendMessage's limit on the text after entity parsing; the budget
// below counts visible characters and stays under it.
const (
	telegramTextMax    = 4096
	telegramMessageMax = 1500
	telegramValueMax   = 300
)

type telegramMessage struct {
	ChatID             string          `json:"chat_id"`
	Text               string          `json:"text"`
	ParseMode          string          `json:"parse_mode"`
	LinkPreviewOptions telegramPreview `json:"link_preview_options"`
}

// telegramPreview turns link previews off: a URL inside event data would otherwise make
// Telegram fetch it and attach a preview card.
type telegramPreview struct {
	IsDisabled bool `json:"is_disabled"`
}

func telegramPayload(rawURL string, e Event) (telegramMessage, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return telegramMessage{}, errors.New("invalid webhook URL")
	}
	// The URL is https://api.telegram.org/bot<token>/sendMessage?chat_id=<id>; the body
	// repeats chat_id because Telegram reads parameters from the JSON body.
	chatID := u.Query().Get("chat_id")
	if chatID == "" {
		return telegramMessage{}, errors.New("telegram webhook URL has no chat_id query parameter")
	}

	var b strings.Builder
	visible := 0
	write := func(raw string, bold bool) {
		visible += utf8.RuneCountInString(raw)
		if bold {
			b.WriteString("<b>" + htmlEscape(raw) + "</b>")
		} else {
			b.WriteString(htmlEscape(raw))
		}
	}
	write(e.Name, true)
	if e.Message != "" {
		write("\n"+truncate(e.Message, telegramMessageMax), false)
	}
	footer := "\n\n" + e.Time.UTC().Format(time.RFC3339) + " · " + footerText(e)
	budget := telegramTextMax - utf8.RuneCountInString(footer) - 32
	fields := eventFields(e.Data)
	if len(fields) > 0 {
		write("\n", false)
	}
	for i, f := range fields {
		key, value := truncate(f.key, 64), truncate(f.value, telegramValueMax)
		if visible+utf8.RuneCountInString(key)+utf8.RuneCountInString(value)+3 > budget {
			write(fmt.Sprintf("\n+%d more fields", len(fields)-i), false)
			break
		}
		write("\n", false)
		write(key, true)
		write(": "+value, false)
	}
	b.WriteString("<i>" + htmlEscape(footer) + "</i>")
	return telegramMessage{ChatID: chatID, Text: b.String(), ParseMode: "HTML",
		LinkPreviewOptions: telegramPreview{IsDisabled: true}}, nil
}

// htmlEscape escapes what Telegram's HTML parse mode requires: only &, < and > (and " for
// attributes) are special, and every other character must stay as it is.
var htmlEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace

// Shared helpers.

type field struct{ key, value string }

// eventFields returns the event data as display fields in key order, so messages are
// stable and tests deterministic.
func eventFields(data map[string]any) []field {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fs := make([]field, 0, len(keys))
	for _, k := range keys {
		fs = append(fs, field{k, displayValue(data[k])})
	}
	return fs
}

func displayValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case time.Time:
		return v.UTC().Format(time.RFC3339)
	case fmt.Stringer:
		return v.String()
	}
	if b, err := marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// footerText names the application and the delivery, so a message can be traced back.
func footerText(e Event) string {
	parts := []string{"Keyward"}
	if e.AppID != "" {
		parts = append(parts, "app "+e.AppID)
	}
	if e.ID != "" {
		parts = append(parts, "event "+e.ID)
	}
	return strings.Join(parts, " · ")
}

// truncate cuts s to at most n runes, marking the cut with an ellipsis. Platforms refuse
// over-long fields outright, so a long value must be shortened rather than sent.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
