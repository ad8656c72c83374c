package httpapi

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/storage"
)

// pageOf reads limit (default 50, at most storage.MaxPageSize) and offset (default 0).
func pageOf(c *gin.Context) (storage.Page, error) {
	p := storage.Page{Limit: 50}
	if s, found := c.GetQuery("limit"); found {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > storage.MaxPageSize {
			return p, core.Invalid("limit", "limit must be an integer from 1 to %d", storage.MaxPageSize)
		}
		p.Limit = n
	}
	if s, found := c.GetQuery("offset"); found {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return p, core.Invalid("offset", "offset must be a non-negative integer")
		}
		p.Offset = n
	}
	return p, nil
}

// queryValue answers the first value of key in a raw query, as gin's c.Query (through
// url.ParseQuery) answers it, without building the query's map: a socket's upgrade reads
// its one parameter (token) this way. A value that needs no unescaping is a piece of raw.
// One difference: url.ParseQuery answers nothing for a query of over 10,000 parameters,
// where this still finds the key.
func queryValue(raw, key string) string {
	for raw != "" {
		var part string
		part, raw, _ = strings.Cut(raw, "&")
		if part == "" || strings.Contains(part, ";") {
			continue // url.ParseQuery skips both
		}
		k, v, _ := strings.Cut(part, "=")
		k, ok := unescapeQuery(k)
		if !ok || k != key {
			continue
		}
		if v, ok = unescapeQuery(v); ok {
			return v
		}
	}
	return ""
}

// unescapeQuery is url.QueryUnescape, which is called only when s has something to
// unescape; ok is false where it fails.
func unescapeQuery(s string) (string, bool) {
	if !strings.ContainsAny(s, "%+") {
		return s, true
	}
	u, err := url.QueryUnescape(s)
	return u, err == nil
}
