package httpapi

import (
	"strconv"

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
