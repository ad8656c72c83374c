package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// RevenueRow is the revenue of one day, product mapping and currency, in the currency's
// minor units as the store reported them (no conversion: one row per currency).
type RevenueRow struct {
	Day        string // YYYY-MM-DD, UTC
	ProductRef string
	Currency   string
	// Amount is paid plus renewed minus refunded.
	Amount   int64
	Orders   int // paid orders
	Renewals int
	Refunds  int
}

// revenueScanLimit bounds the order events one answer reads (200 per page).
const revenueScanLimit = 50 * storage.MaxPageSize

// Revenue sums the app's store sales over the last days (1 to 365, default 30) from the
// order events of the durable log (order.paid, order.renewed, order.refunded; written to
// the app's log by its consumer, so a sale shows a moment after its answer).
func (s *Service) Revenue(ctx context.Context, o apps.Owner, appID, days string) ([]RevenueRow, error) {
	n := 30
	if days != "" {
		v, err := strconv.Atoi(days)
		if err != nil || v < 1 || v > 365 {
			return nil, core.Invalid("days", "days must be between 1 and 365")
		}
		n = v
	}
	if _, err := s.apps.GetApp(ctx, o, appID); err != nil {
		return nil, err
	}
	start := s.now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -(n - 1))
	rows := map[[3]string]*RevenueRow{}
	for _, ev := range []events.Type{events.OrderPaid, events.OrderRenewed, events.OrderRefunded} {
		for off := 0; off < revenueScanLimit; off += storage.MaxPageSize {
			page, total, err := s.store.ListLogs(ctx, appID, storage.LogQuery{Event: string(ev), Start: start,
				Page: storage.Page{Limit: storage.MaxPageSize, Offset: off}})
			if err != nil {
				return nil, fmt.Errorf("analytics: revenue: %w", err)
			}
			for _, e := range page {
				addRevenue(rows, ev, e)
			}
			if off+len(page) >= total || len(page) == 0 {
				break
			}
		}
	}
	out := make([]RevenueRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Day != b.Day {
			return a.Day < b.Day
		}
		if a.ProductRef != b.ProductRef {
			return a.ProductRef < b.ProductRef
		}
		return a.Currency < b.Currency
	})
	return out, nil
}

func addRevenue(rows map[[3]string]*RevenueRow, ev events.Type, e storage.LogEntry) {
	var d struct {
		ProductRef    string `json:"productRef"`
		Currency      string `json:"currency"`
		Amount        int64  `json:"amount"`
		RenewalAmount int64  `json:"renewalAmount"`
		RefundAmount  int64  `json:"refundAmount"`
	}
	if json.Unmarshal([]byte(e.Data), &d) != nil {
		return
	}
	k := [3]string{e.CreatedAt.UTC().Format(time.DateOnly), d.ProductRef, d.Currency}
	r := rows[k]
	if r == nil {
		r = &RevenueRow{Day: k[0], ProductRef: k[1], Currency: k[2]}
		rows[k] = r
	}
	switch ev {
	case events.OrderPaid:
		r.Amount += d.Amount
		r.Orders++
	case events.OrderRenewed:
		r.Amount += d.RenewalAmount
		r.Renewals++
	case events.OrderRefunded:
		refund := d.RefundAmount
		if refund == 0 {
			refund = d.Amount
		}
		r.Amount -= refund
		r.Refunds++
	}
}
