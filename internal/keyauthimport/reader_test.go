package keyauthimport

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func readAll(t testing.TB, dump string) ([]Row, error) {
	t.Helper()
	d := NewReader(strings.NewReader(dump))
	var rows []Row
	for range 100000 {
		r, err := d.Next()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
		rows = append(rows, r)
	}
	t.Fatal("the reader does not end")
	return nil, nil
}

const sampleDump = "-- MariaDB dump 10.19\n" +
	"/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n" +
	"DROP TABLE IF EXISTS `users`;\n" +
	"CREATE TABLE `users` (\n" +
	"  `id` int(11) NOT NULL AUTO_INCREMENT,\n" +
	"  `username` varchar(70) NOT NULL,\n" +
	"  `password` varchar(60) DEFAULT NULL COMMENT 'a, comment (with parens)',\n" +
	"  `flags` bit(8) NOT NULL DEFAULT b'0',\n" +
	"  `score` decimal(5,2) DEFAULT NULL,\n" +
	"  PRIMARY KEY (`id`),\n" +
	"  KEY `idx` (`username`,`id`)\n" +
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb3;\n" +
	"LOCK TABLES `users` WRITE;\n" +
	"INSERT INTO `users` VALUES (1,'ann','$2y$10$abc',b'101',-1.50),(2,'b\\'o\\\\b\\n','it''s',b'0',NULL),\n" +
	"(3,_binary 'x\\0y',0x4142,b'1',1e3);\n" +
	"INSERT INTO `users` (`username`,`id`) VALUES ('cid',4);\n" +
	"UNLOCK TABLES;\n" +
	"# a hash comment\n" +
	"INSERT INTO `other` (`a`) VALUES (\"dq \\\" x\");\n"

func TestReaderReadsMysqldump(t *testing.T) {
	rows, err := readAll(t, sampleDump)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5: %+v", len(rows), rows)
	}
	r := rows[0]
	if strings.Join(r.Columns, ",") != "id,username,password,flags,score" {
		t.Fatalf("columns %v", r.Columns)
	}
	if r.Text("password") != "$2y$10$abc" || r.Text("flags") != "101" || r.Text("score") != "-1.50" || r.Line != 14 {
		t.Fatalf("row 1: %+v", r)
	}
	if got := rows[1].Text("username"); got != "b'o\\b\n" {
		t.Fatalf("escapes: %q", got)
	}
	if rows[1].Text("password") != "it's" || !rows[1].Null("score") || rows[1].Null("password") {
		t.Fatalf("row 2: %+v", rows[1])
	}
	if rows[2].Text("username") != "x\x00y" || rows[2].Text("password") != "AB" || rows[2].Text("score") != "1e3" {
		t.Fatalf("row 3: %+v", rows[2])
	}
	if rows[3].Text("username") != "cid" || rows[3].Text("id") != "4" || len(rows[3].Columns) != 2 {
		t.Fatalf("row with a column list: %+v", rows[3])
	}
	if rows[4].Table != "other" || rows[4].Text("a") != `dq " x` {
		t.Fatalf("double-quoted: %+v", rows[4])
	}
}

func TestReaderRefusesBrokenDumps(t *testing.T) {
	for name, dump := range map[string]string{
		"unclosed string":     "INSERT INTO `t` (`a`) VALUES ('abc",
		"unknown table":       "INSERT INTO `t` VALUES (1);",
		"too few values":      "INSERT INTO `t` (`a`,`b`) VALUES (1);",
		"not a value":         "INSERT INTO `t` (`a`) VALUES (SELECT);",
		"unclosed comment":    "/* nothing ends",
		"ends inside insert":  "INSERT INTO `t` (`a`) VALUES (1),",
		"bad hex":             "INSERT INTO `t` (`a`) VALUES (0xZZ);",
		"unclosed create":     "CREATE TABLE `t` (`a` int",
		"row without parens":  "INSERT INTO `t` (`a`) VALUES 1;",
		"bit literal of twos": "INSERT INTO `t` (`a`) VALUES (b'2');",
	} {
		_, err := readAll(t, dump)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v, want a SyntaxError", name, err)
		}
	}
}

// quoteMySQL writes s as mysqldump does (mysql_real_escape_string).
func quoteMySQL(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "'", "\\'", "\"", "\\\"", "\x00", "\\0", "\n", "\\n", "\r", "\\r", "\x1a", "\\Z")
	return "'" + r.Replace(s) + "'"
}

// FuzzReader: no input makes the reader panic or loop, every row has one value per
// column, and a string written as mysqldump writes it reads back the same.
func FuzzReader(f *testing.F) {
	f.Add([]byte(sampleDump), "it's a \\ test\n\x00")
	f.Add([]byte("CREATE TABLE `t` (`a` int, `b` text);\nINSERT INTO `t` VALUES (1,'x'),(2,NULL);"), "")
	f.Add([]byte("INSERT INTO `t` (`a`) VALUES (-1),(+2),(0x),(X'4a'),(TRUE);"), "`")
	if dump, err := os.ReadFile("testdata/keyauth.sql"); err == nil {
		f.Add(dump, "")
	}
	f.Fuzz(func(t *testing.T, dump []byte, s string) {
		d := NewReader(strings.NewReader(string(dump)))
		for i := 0; ; i++ {
			if i > len(dump)+1 {
				t.Fatalf("more rows than bytes: the reader loops")
			}
			r, err := d.Next()
			if err != nil {
				break
			}
			if len(r.Values) != len(r.Columns) {
				t.Fatalf("a row with %d values for %d columns", len(r.Values), len(r.Columns))
			}
		}
		rows, err := readAll(t, "INSERT INTO `t` (`v`,`w`) VALUES ("+quoteMySQL(s)+",NULL);")
		if err != nil {
			t.Fatalf("a quoted string: %v", err)
		}
		if len(rows) != 1 || rows[0].Text("v") != s || !rows[0].Null("w") {
			t.Fatalf("%q read back as %+v", s, rows)
		}
	})
}
