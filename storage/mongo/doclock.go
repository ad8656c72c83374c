package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// lockDoc takes the write lock of document id of coll, waiting (with backoff) while another
// writer holds it, and answers its release. It serialises the partial updates ($set) of
// documents that have no version to claim (an API key's use and edit, an owner session's
// touch and re-authentication): FerretDB 1.x runs every update, whatever its filter, as a
// read of the whole document followed by a write of the whole document by _id, so two
// updates of one document that run at once can put back what the other wrote. The lock is
// a claim document (takeClaim): inserting into the unique _id index is atomic on both
// servers. Every writer of such a document other than its insert and delete must hold it
// (see ATOMICITY.md). owner sweeps a lock left by a writer that died (deleteClaims); ""
// leaves it to be cleared as stale (claimLease) by the next writer.
func (s *Store) lockDoc(ctx context.Context, coll *mongo.Collection, id, owner string) (release func(), err error) {
	name := fmt.Sprintf("%s/%s#lock", coll.Name(), id)
	for attempt := 0; ; attempt++ {
		release, claimed, err := s.takeClaim(ctx, name, owner)
		if err != nil {
			return nil, err
		}
		if claimed {
			return release, nil
		}
		if err := backoff(ctx, attempt); err != nil {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
	}
}
