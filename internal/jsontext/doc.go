// Package jsontext appends JSON text for the hot paths that write it by hand (a socket's
// session listing, a log entry's data) byte for byte as encoding/json would, without its
// reflection: strings and objects of string values.
package jsontext
