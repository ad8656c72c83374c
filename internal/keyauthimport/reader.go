package keyauthimport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Bounds of the reader, so that a hostile or broken dump costs bounded memory.
const (
	// MaxValueBytes is the longest value (a string literal) a dump may hold.
	MaxValueBytes = 16 << 20
	// MaxColumns is the most columns of a table or values of a row.
	MaxColumns = 4096
	// maxWordBytes bounds identifiers and bare words (numbers, keywords).
	maxWordBytes = 1024
)

// Value is one value of a row: NULL, or its text (numbers as written in the dump, string
// literals unescaped, hex literals decoded, bit literals as their binary digits).
type Value struct {
	Null bool
	Text string
}

// Row is one row of an INSERT, with the column names of its table in order.
type Row struct {
	Table   string
	Columns []string
	Values  []Value
	// Line is the line of the dump the row starts on, for messages.
	Line int
}

// Get answers the value of the column, and whether the row has that column.
func (r Row) Get(col string) (Value, bool) {
	for i, c := range r.Columns {
		if c == col && i < len(r.Values) {
			return r.Values[i], true
		}
	}
	return Value{}, false
}

// Text answers the column's text, "" when it is NULL or missing.
func (r Row) Text(col string) string {
	v, _ := r.Get(col)
	return v.Text
}

// Null reports whether the column is NULL or missing.
func (r Row) Null(col string) bool {
	v, ok := r.Get(col)
	return !ok || v.Null
}

// Reader reads the rows of a mysqldump file in order. It understands what mysqldump
// writes: comments (--, #, /* */ including /*!40101 ... */ conditional ones), CREATE TABLE
// (to learn the column order), INSERT/REPLACE [IGNORE] INTO `t` [(cols)] VALUES (...),...;
// and skips every other statement.
type Reader struct {
	in     *bufio.Reader
	line   int
	tables map[string][]string
	// Within an INSERT: its table and columns, between rows.
	insTable string
	insCols  []string
	inInsert bool
	peeked   *token
}

// NewReader reads a dump from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{in: bufio.NewReaderSize(r, 64<<10), line: 1, tables: map[string][]string{}}
}

// Columns answers the columns of a table whose CREATE TABLE was read, in order.
func (d *Reader) Columns(table string) []string { return d.tables[table] }

type tokenKind int

const (
	tokEOF    tokenKind = iota
	tokWord             // bare word: keyword, number, NULL
	tokIdent            // `quoted identifier`
	tokString           // 'string' or "string", unescaped
	tokPunct            // one of ( ) , ; and any other single character
)

type token struct {
	kind tokenKind
	text string
	line int
}

// SyntaxError is a dump the reader cannot follow, with the line it was found on.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("dump line %d: %s", e.Line, e.Msg) }

func (d *Reader) errf(line int, format string, args ...any) error {
	return &SyntaxError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Next answers the next row of the dump; io.EOF after the last.
func (d *Reader) Next() (Row, error) {
	for {
		if d.inInsert {
			row, more, err := d.nextRow()
			if err != nil {
				return Row{}, err
			}
			if !more {
				d.inInsert = false
			}
			if row != nil {
				return *row, nil
			}
			continue
		}
		t, err := d.token()
		if err != nil {
			return Row{}, err
		}
		switch {
		case t.kind == tokEOF:
			return Row{}, io.EOF
		case t.kind == tokPunct && t.text == ";":
			continue
		case isWord(t, "CREATE"):
			if err := d.createStatement(); err != nil {
				return Row{}, err
			}
		case isWord(t, "INSERT") || isWord(t, "REPLACE"):
			if err := d.insertHead(t.line); err != nil {
				return Row{}, err
			}
		default:
			if err := d.skipStatement(); err != nil {
				return Row{}, err
			}
		}
	}
}

func isWord(t token, w string) bool { return t.kind == tokWord && strings.EqualFold(t.text, w) }

// skipStatement reads up to and including the next ';' outside strings.
func (d *Reader) skipStatement() error {
	for {
		t, err := d.token()
		if err != nil {
			return err
		}
		if t.kind == tokEOF || (t.kind == tokPunct && t.text == ";") {
			return nil
		}
	}
}

// createStatement reads CREATE ... : a CREATE TABLE records its columns; others are skipped.
func (d *Reader) createStatement() error {
	t, err := d.token()
	if err != nil {
		return err
	}
	for isWord(t, "TEMPORARY") || isWord(t, "OR") || isWord(t, "REPLACE") {
		if t, err = d.token(); err != nil {
			return err
		}
	}
	if !isWord(t, "TABLE") {
		return d.skipStatement()
	}
	name, err := d.tableName()
	if err != nil {
		return err
	}
	open, err := d.token()
	if err != nil {
		return err
	}
	if open.kind != tokPunct || open.text != "(" {
		return d.skipStatement() // CREATE TABLE ... LIKE / AS SELECT: no columns to learn
	}
	var cols []string
	depth, start := 1, true
	for depth > 0 {
		t, err := d.token()
		if err != nil {
			return err
		}
		switch {
		case t.kind == tokEOF:
			return d.errf(t.line, "CREATE TABLE `%s` is not closed", name)
		case t.kind == tokPunct && t.text == "(":
			depth++
		case t.kind == tokPunct && t.text == ")":
			depth--
		case t.kind == tokPunct && t.text == "," && depth == 1:
			start = true
			continue
		case start && depth == 1 && (t.kind == tokIdent || (t.kind == tokWord && !isKeyDefinition(t.text))):
			if len(cols) >= MaxColumns {
				return d.errf(t.line, "CREATE TABLE `%s` has more than %d columns", name, MaxColumns)
			}
			cols = append(cols, t.text)
		}
		start = false
	}
	d.tables[name] = cols
	return d.skipStatement()
}

// isKeyDefinition reports whether a word opens an index or constraint of CREATE TABLE
// rather than a column.
func isKeyDefinition(w string) bool {
	switch strings.ToUpper(w) {
	case "PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK", "PERIOD", "SYSTEM":
		return true
	}
	return false
}

// tableName reads a table name, possibly qualified (`db`.`t`): the last part is answered.
func (d *Reader) tableName() (string, error) {
	t, err := d.token()
	if err != nil {
		return "", err
	}
	for isWord(t, "IF") || isWord(t, "NOT") || isWord(t, "EXISTS") {
		if t, err = d.token(); err != nil {
			return "", err
		}
	}
	if t.kind != tokIdent && t.kind != tokWord {
		return "", d.errf(t.line, "a table name was expected")
	}
	name := t.text
	for {
		n, err := d.peek()
		if err != nil {
			return "", err
		}
		if n.kind == tokPunct && n.text == "." {
			d.peeked = nil
			t, err := d.token()
			if err != nil {
				return "", err
			}
			if t.kind != tokIdent && t.kind != tokWord {
				return "", d.errf(t.line, "a table name was expected after '.'")
			}
			name = t.text
			continue
		}
		return name, nil
	}
}

// insertHead reads INSERT [LOW_PRIORITY|DELAYED|HIGH_PRIORITY] [IGNORE] INTO `t` [(cols)]
// VALUES, leaving the reader before the first row.
func (d *Reader) insertHead(line int) error {
	var t token
	var err error
	for {
		if t, err = d.token(); err != nil {
			return err
		}
		if isWord(t, "INTO") {
			break
		}
		if t.kind != tokWord {
			return d.errf(t.line, "INSERT without INTO")
		}
	}
	name, err := d.tableName()
	if err != nil {
		return err
	}
	cols := d.tables[name]
	t, err = d.token()
	if err != nil {
		return err
	}
	if t.kind == tokPunct && t.text == "(" {
		cols = nil
		for {
			c, err := d.token()
			if err != nil {
				return err
			}
			if c.kind != tokIdent && c.kind != tokWord {
				return d.errf(c.line, "a column name was expected in the column list of `%s`", name)
			}
			if len(cols) >= MaxColumns {
				return d.errf(c.line, "INSERT into `%s` names more than %d columns", name, MaxColumns)
			}
			cols = append(cols, c.text)
			sep, err := d.token()
			if err != nil {
				return err
			}
			if sep.kind == tokPunct && sep.text == ")" {
				break
			}
			if sep.kind != tokPunct || sep.text != "," {
				return d.errf(sep.line, "',' or ')' was expected in the column list of `%s`", name)
			}
		}
		if t, err = d.token(); err != nil {
			return err
		}
	}
	if !isWord(t, "VALUES") && !isWord(t, "VALUE") {
		// INSERT ... SELECT or ... SET: not what mysqldump writes; skip it.
		return d.skipStatement()
	}
	if cols == nil {
		return d.errf(line, "INSERT into `%s` comes before its CREATE TABLE and names no columns", name)
	}
	d.insTable, d.insCols, d.inInsert = name, cols, true
	return nil
}

// nextRow reads one parenthesised row of the current INSERT and what follows it: more is
// false after the statement's end. A row is nil when the statement ended without one
// (ON DUPLICATE KEY UPDATE ... after the last row).
func (d *Reader) nextRow() (*Row, bool, error) {
	t, err := d.token()
	if err != nil {
		return nil, false, err
	}
	if t.kind == tokEOF {
		return nil, false, d.errf(t.line, "the dump ends inside an INSERT into `%s`", d.insTable)
	}
	if t.kind != tokPunct || t.text != "(" {
		if t.kind == tokPunct && t.text == ";" {
			return nil, false, nil
		}
		return nil, false, d.errf(t.line, "'(' was expected before a row of `%s`", d.insTable)
	}
	row := &Row{Table: d.insTable, Columns: d.insCols, Line: t.line}
	for {
		v, err := d.value()
		if err != nil {
			return nil, false, err
		}
		if len(row.Values) >= MaxColumns {
			return nil, false, d.errf(t.line, "a row of `%s` has more than %d values", d.insTable, MaxColumns)
		}
		row.Values = append(row.Values, v)
		sep, err := d.token()
		if err != nil {
			return nil, false, err
		}
		if sep.kind == tokPunct && sep.text == ")" {
			break
		}
		if sep.kind != tokPunct || sep.text != "," {
			return nil, false, d.errf(sep.line, "',' or ')' was expected in a row of `%s`", d.insTable)
		}
	}
	if len(row.Values) != len(row.Columns) {
		return nil, false, d.errf(row.Line, "a row of `%s` has %d values for %d columns", d.insTable, len(row.Values), len(row.Columns))
	}
	sep, err := d.token()
	if err != nil {
		return nil, false, err
	}
	switch {
	case sep.kind == tokPunct && sep.text == ",":
		return row, true, nil
	case sep.kind == tokPunct && sep.text == ";", sep.kind == tokEOF:
		return row, false, nil
	case sep.kind == tokWord:
		return row, false, d.skipStatement() // ON DUPLICATE KEY UPDATE ...
	}
	return nil, false, d.errf(sep.line, "',' or ';' was expected after a row of `%s`", d.insTable)
}

// value reads one value of a row: NULL, a number, a string (with an optional _charset
// introducer), a hex (0x.., X'..') or bit (b'..') literal, or a signed number.
func (d *Reader) value() (Value, error) {
	t, err := d.token()
	if err != nil {
		return Value{}, err
	}
	switch t.kind {
	case tokString:
		return Value{Text: t.text}, nil
	case tokWord:
		w := t.text
		switch {
		case strings.EqualFold(w, "NULL"):
			return Value{Null: true}, nil
		case strings.HasPrefix(w, "_"): // _binary 'x', _utf8mb4 'x'
			s, err := d.token()
			if err != nil {
				return Value{}, err
			}
			if s.kind != tokString {
				return Value{}, d.errf(s.line, "a string was expected after %s", w)
			}
			return Value{Text: s.text}, nil
		case (w == "b" || w == "B" || w == "x" || w == "X"):
			s, err := d.token()
			if err != nil {
				return Value{}, err
			}
			if s.kind != tokString {
				return Value{}, d.errf(s.line, "a quoted literal was expected after %s", w)
			}
			if w == "b" || w == "B" {
				if strings.Trim(s.text, "01") != "" {
					return Value{}, d.errf(s.line, "a bit literal holds a character other than 0 and 1")
				}
				return Value{Text: s.text}, nil
			}
			b, ok := decodeHex(s.text)
			if !ok {
				return Value{}, d.errf(s.line, "a bad hex literal")
			}
			return Value{Text: b}, nil
		case len(w) > 2 && (w[:2] == "0x" || w[:2] == "0X"):
			b, ok := decodeHex(w[2:])
			if !ok {
				return Value{}, d.errf(t.line, "a bad hex literal %q", w)
			}
			return Value{Text: b}, nil
		case isNumber(w):
			return Value{Text: w}, nil
		case strings.EqualFold(w, "TRUE"):
			return Value{Text: "1"}, nil
		case strings.EqualFold(w, "FALSE"):
			return Value{Text: "0"}, nil
		}
		return Value{}, d.errf(t.line, "a value was expected, not %q", w)
	case tokPunct:
		if t.text == "-" || t.text == "+" {
			n, err := d.token()
			if err != nil {
				return Value{}, err
			}
			if n.kind == tokWord && isNumber(n.text) {
				if t.text == "-" {
					return Value{Text: "-" + n.text}, nil
				}
				return Value{Text: n.text}, nil
			}
		}
	}
	return Value{}, d.errf(t.line, "a value was expected")
}

func isNumber(w string) bool {
	digits := 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' || c == 'e' || c == 'E' || ((c == '-' || c == '+') && i > 0 && (w[i-1] == 'e' || w[i-1] == 'E')):
		default:
			return false
		}
	}
	return digits > 0
}

func decodeHex(h string) (string, bool) {
	if len(h)%2 == 1 {
		h = "0" + h
	}
	b := make([]byte, len(h)/2)
	for i := range b {
		hi, ok1 := hexDigit(h[2*i])
		lo, ok2 := hexDigit(h[2*i+1])
		if !ok1 || !ok2 {
			return "", false
		}
		b[i] = hi<<4 | lo
	}
	return string(b), true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func (d *Reader) peek() (token, error) {
	if d.peeked == nil {
		t, err := d.scan()
		if err != nil {
			return token{}, err
		}
		d.peeked = &t
	}
	return *d.peeked, nil
}

func (d *Reader) token() (token, error) {
	if d.peeked != nil {
		t := *d.peeked
		d.peeked = nil
		return t, nil
	}
	return d.scan()
}

func (d *Reader) readByte() (byte, error) {
	c, err := d.in.ReadByte()
	if err == nil && c == '\n' {
		d.line++
	}
	return c, err
}

func (d *Reader) unread(c byte) {
	_ = d.in.UnreadByte()
	if c == '\n' {
		d.line--
	}
}

// scan reads the next token, skipping white space and comments.
func (d *Reader) scan() (token, error) {
	for {
		c, err := d.readByte()
		if errors.Is(err, io.EOF) {
			return token{kind: tokEOF, line: d.line}, nil
		}
		if err != nil {
			return token{}, fmt.Errorf("read dump: %w", err)
		}
		line := d.line
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			continue
		case c == '#':
			if err := d.skipLine(); err != nil {
				return token{}, err
			}
			continue
		case c == '-':
			n, err := d.readByte()
			if err == nil && n == '-' {
				// "-- " comment (mysqldump writes "--" lines too).
				if err := d.skipLine(); err != nil {
					return token{}, err
				}
				continue
			}
			if err == nil {
				d.unread(n)
			}
			return token{kind: tokPunct, text: "-", line: line}, nil
		case c == '/':
			n, err := d.readByte()
			if err == nil && n == '*' {
				if err := d.skipBlockComment(line); err != nil {
					return token{}, err
				}
				continue
			}
			if err == nil {
				d.unread(n)
			}
			return token{kind: tokPunct, text: "/", line: line}, nil
		case c == '`':
			s, err := d.quoted('`', line, maxWordBytes)
			return token{kind: tokIdent, text: s, line: line}, err
		case c == '\'' || c == '"':
			s, err := d.quoted(c, line, MaxValueBytes)
			return token{kind: tokString, text: s, line: line}, err
		case isWordByte(c):
			var b strings.Builder
			b.WriteByte(c)
			for {
				n, err := d.readByte()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return token{}, fmt.Errorf("read dump: %w", err)
				}
				if !isWordByte(n) {
					d.unread(n)
					break
				}
				if b.Len() >= maxWordBytes {
					return token{}, d.errf(line, "a word longer than %d bytes", maxWordBytes)
				}
				b.WriteByte(n)
			}
			return token{kind: tokWord, text: b.String(), line: line}, nil
		default:
			return token{kind: tokPunct, text: string(c), line: line}, nil
		}
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '$' || c >= 0x80
}

func (d *Reader) skipLine() error {
	for {
		c, err := d.readByte()
		if errors.Is(err, io.EOF) || c == '\n' {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read dump: %w", err)
		}
	}
}

// skipBlockComment skips to the end of a /* */ comment. mysqldump's /*!40101 SET ... */
// comments hold session settings only: none of them matters to the rows.
func (d *Reader) skipBlockComment(line int) error {
	star := false
	for {
		c, err := d.readByte()
		if errors.Is(err, io.EOF) {
			return d.errf(line, "a /* comment is not closed")
		}
		if err != nil {
			return fmt.Errorf("read dump: %w", err)
		}
		if star && c == '/' {
			return nil
		}
		star = c == '*'
	}
}

// quoted reads the rest of a literal opened by q: a doubled quote stands for one, and in
// strings (not identifiers) a backslash escapes as MySQL's string escapes say.
func (d *Reader) quoted(q byte, line, limit int) (string, error) {
	var b strings.Builder
	for {
		c, err := d.readByte()
		if errors.Is(err, io.EOF) {
			return "", d.errf(line, "a %c-quoted literal is not closed", q)
		}
		if err != nil {
			return "", fmt.Errorf("read dump: %w", err)
		}
		if b.Len() >= limit {
			return "", d.errf(line, "a literal longer than %d bytes", limit)
		}
		switch {
		case c == q:
			n, err := d.readByte()
			if err == nil && n == q {
				b.WriteByte(q)
				continue
			}
			if err == nil {
				d.unread(n)
			}
			return b.String(), nil
		case c == '\\' && q != '`':
			n, err := d.readByte()
			if err != nil {
				return "", d.errf(line, "a %c-quoted literal is not closed", q)
			}
			b.WriteString(unescape(n))
		default:
			b.WriteByte(c)
		}
	}
}

// unescape answers what MySQL reads for a backslash followed by c: \0 \b \n \r \t \Z are
// control characters, \% and \_ keep their backslash (they only matter to LIKE), and any
// other character stands for itself.
func unescape(c byte) string {
	switch c {
	case '0':
		return "\x00"
	case 'b':
		return "\b"
	case 'n':
		return "\n"
	case 'r':
		return "\r"
	case 't':
		return "\t"
	case 'Z':
		return "\x1a"
	case '%', '_':
		return "\\" + string(c)
	}
	return string(c)
}
