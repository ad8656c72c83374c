package server

import (
	"context"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
)

// OpenBlobs opens where the configured node keeps file bytes (GridFS next to a MongoDB
// store, <data dir>/files otherwise), for `keyward backup` and `export`.
func OpenBlobs(ctx context.Context, c Config, store storage.Store) (blobs.Store, error) {
	return openBlobs(ctx, c, store)
}
