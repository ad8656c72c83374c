package memory

import (
	"context"

	"github.com/keyward/keyward/cluster"
)

// GetValues implements cluster.Batches.
func (e *Engine) GetValues(ctx context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, _, ok, err := e.GetValue(ctx, k)
		if err != nil {
			return nil, err
		}
		if ok {
			out[i] = v
		}
	}
	return out, nil
}

// PutLeases implements cluster.Batches.
func (e *Engine) PutLeases(ctx context.Context, leases []cluster.Lease) error {
	for _, l := range leases {
		if l.Key != "" {
			if err := e.SetValue(ctx, l.Key, l.Value, l.TTL); err != nil {
				return err
			}
		}
		for _, set := range l.Sets {
			if err := e.AddMember(ctx, set, l.Member, l.TTL, 0); err != nil {
				return err
			}
		}
	}
	return nil
}
