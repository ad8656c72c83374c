package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/storage"
)

var (
	_ storage.IntegrationStore = (*Store)(nil)
	_ storage.DeliveryStore    = (*Store)(nil)
)

// integrationCols is the column order of scanIntegration.
const integrationCols = `id, app_id, name, kind, url, events, enabled, secret, consecutive_failures,
	disabled_reason, created_at, updated_at`

// integrationSet assigns every mutable column, in the order of integrationSetArgs.
const integrationSet = `name = ?, kind = ?, url = ?, events = ?, enabled = ?, secret = ?,
	consecutive_failures = ?, disabled_reason = ?, updated_at = ?`

func integrationSetArgs(i storage.Integration) ([]any, error) {
	events, err := encodeEvents(i.Events)
	if err != nil {
		return nil, err
	}
	return []any{i.Name, i.Kind, i.URL, events, i.Enabled, i.Secret, i.ConsecutiveFailures,
		i.DisabledReason, toMillis(i.UpdatedAt)}, nil
}

// encodeEvents stores the event names as a JSON array, "[]" for none.
func encodeEvents(events []string) (string, error) {
	if len(events) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(events)
	if err != nil {
		return "", fmt.Errorf("encode events: %w", err)
	}
	return string(b), nil
}

// eventsCol scans the JSON events column into *e; no events read back as nil.
type eventsCol struct{ e *[]string }

func (c eventsCol) Scan(v any) error {
	var raw []byte
	switch x := v.(type) {
	case string:
		raw = []byte(x)
	case []byte:
		raw = x
	default:
		return fmt.Errorf("events column holds %T, want TEXT", v)
	}
	var events []string
	if err := json.Unmarshal(raw, &events); err != nil {
		return fmt.Errorf("decode events: %w", err)
	}
	if len(events) == 0 {
		events = nil
	}
	*c.e = events
	return nil
}

// scanIntegration reads a row and opens its sealed secret.
func (s *Store) scanIntegration(row scanner) (storage.Integration, error) {
	i, err := scanStoredIntegration(row)
	if err != nil {
		return storage.Integration{}, err
	}
	if err := storage.OpenIntegration(s.sealer, &i); err != nil {
		return storage.Integration{}, err
	}
	return i, nil
}

// scanStoredIntegration reads a row as stored (secret sealed).
func scanStoredIntegration(row scanner) (storage.Integration, error) {
	var i storage.Integration
	err := row.Scan(&i.ID, &i.AppID, &i.Name, &i.Kind, &i.URL, eventsCol{&i.Events}, &i.Enabled, &i.Secret,
		&i.ConsecutiveFailures, &i.DisabledReason, timeCol{&i.CreatedAt}, timeCol{&i.UpdatedAt})
	return i, err
}

// CreateIntegration inserts i; the foreign key answers ErrNotFound when the app does not
// exist, the primary key ErrConflict on a taken id.
func (s *Store) CreateIntegration(ctx context.Context, i storage.Integration) error {
	const op = "create integration"
	if err := storage.SealIntegration(s.sealer, &i); err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	set, err := integrationSetArgs(i)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return s.insertAll(ctx, op, `INSERT INTO integrations (id, app_id, created_at,
	name, kind, url, events, enabled, secret, consecutive_failures, disabled_reason, updated_at)
VALUES (`+placeholders(12)+`)`, [][]any{append([]any{i.ID, i.AppID, toMillis(i.CreatedAt)}, set...)})
}

// GetIntegration reads the app's integration by id.
func (s *Store) GetIntegration(ctx context.Context, appID, id string) (storage.Integration, error) {
	i, err := s.scanIntegration(s.r.QueryRowContext(ctx, `SELECT `+integrationCols+` FROM integrations WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return storage.Integration{}, wrap("get integration", err)
	}
	return i, nil
}

// ListIntegrations answers every integration of the app, oldest first.
func (s *Store) ListIntegrations(ctx context.Context, appID string) ([]storage.Integration, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+integrationCols+` FROM integrations WHERE app_id = ? ORDER BY `+orderBy("created_at", false), appID)
	if err != nil {
		return nil, wrap("list integrations", err)
	}
	out, err := scanAll(rows, s.scanIntegration)
	if err != nil {
		return nil, wrap("list integrations", err)
	}
	return out, nil
}

// UpdateIntegration applies fn to the app's integration in one write transaction (see
// updateRecord). The id, the app and the creation time are kept.
func (s *Store) UpdateIntegration(ctx context.Context, appID, id string, fn func(*storage.Integration) error) (storage.Integration, error) {
	return updateRecord(ctx, s, "update integration",
		func(tx *sql.Tx) (storage.Integration, error) {
			return s.scanIntegration(tx.QueryRowContext(ctx, `SELECT `+integrationCols+` FROM integrations WHERE app_id = ? AND id = ?`, appID, id))
		},
		fn,
		func(cur storage.Integration, next *storage.Integration) {
			next.ID, next.AppID, next.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			next.UpdatedAt = storage.Truncate(next.UpdatedAt)
			if len(next.Events) == 0 {
				next.Events = nil // as it reads back
			}
		},
		func(tx *sql.Tx, next storage.Integration) error {
			if err := storage.SealIntegration(s.sealer, &next); err != nil {
				return err
			}
			set, err := integrationSetArgs(next)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `UPDATE integrations SET `+integrationSet+` WHERE id = ?`, append(set, next.ID)...)
			return err
		})
}

// DeleteIntegration removes the app's integration with its deliveries and their attempts,
// in one transaction.
func (s *Store) DeleteIntegration(ctx context.Context, appID, id string) error {
	const op = "delete integration"
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		n, err := execCount(ctx, tx, `DELETE FROM integrations WHERE app_id = ? AND id = ?`, appID, id)
		if err != nil {
			return wrap(op, err)
		}
		if n == 0 {
			return wrap(op, sql.ErrNoRows)
		}
		for _, table := range []string{"webhook_attempts", "webhook_deliveries", "webhook_history"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE app_id = ? AND integration_id = ?`, appID, id); err != nil {
				return wrap(op+": "+table, err)
			}
		}
		return nil
	})
}

// deliveryCols is the column order of scanDelivery.
const deliveryCols = `id, app_id, integration_id, event_id, event, payload, state, attempts, next_attempt_at,
	lease_owner, lease_until, last_error, created_at, updated_at, sent`

func scanDelivery(row scanner) (storage.Delivery, error) {
	var d storage.Delivery
	err := row.Scan(&d.ID, &d.AppID, &d.IntegrationID, &d.EventID, &d.Event, &d.Payload, &d.State, &d.Attempts,
		timeCol{&d.NextAttemptAt}, &d.LeaseOwner, timeCol{&d.LeaseUntil}, &d.LastError,
		timeCol{&d.CreatedAt}, timeCol{&d.UpdatedAt}, &d.Sent)
	if len(d.Payload) == 0 {
		d.Payload = nil // an empty payload reads back as nil, as it was most likely given
	}
	if len(d.Sent) == 0 {
		d.Sent = nil // nothing sent yet
	}
	return d, err
}

// payloadArg is the column value of a payload: never NULL.
func payloadArg(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return p
}

// finished reports whether a delivery in state belongs to the history.
func finished(state string) bool {
	return state == storage.DeliveryDelivered || state == storage.DeliveryFailed
}

// deliveryTable answers the table a delivery in state is kept in, and the other one.
func deliveryTable(state string) (table, other string) {
	if finished(state) {
		return "webhook_history", "webhook_deliveries"
	}
	return "webhook_deliveries", "webhook_history"
}

// insertDeliverySQL inserts a delivery into table unless other holds its id: ids are
// unique across the queue and the history (a dispatcher's retry of an event whose
// delivery already finished must meet ErrConflict, not queue it again). table's primary
// key answers a taken id there.
func insertDeliverySQL(table, other string) string {
	return `INSERT INTO ` + table + ` (` + deliveryCols + `)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15
WHERE NOT EXISTS (SELECT 1 FROM ` + other + ` WHERE id = ?1)`
}

// insertDelivery runs a statement of insertDeliverySQL for d.
func insertDelivery(ctx context.Context, stmt *sql.Stmt, op string, d storage.Delivery) error {
	res, err := stmt.ExecContext(ctx, d.ID, d.AppID, d.IntegrationID, d.EventID, d.Event, payloadArg(d.Payload), d.State, d.Attempts,
		toMillis(d.NextAttemptAt), d.LeaseOwner, toMillis(d.LeaseUntil), d.LastError,
		toMillis(d.CreatedAt), toMillis(d.UpdatedAt), payloadArg(d.Sent))
	if err != nil {
		return wrap(op, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return wrap(op, err)
	} else if n == 0 {
		return fmt.Errorf("sqlite: %s: delivery %s: %w", op, d.ID, storage.ErrConflict)
	}
	return nil
}

// CreateDeliveries inserts every delivery in one transaction, all or none: pending ones
// into the queue, finished ones into the history, each with a statement prepared once.
// There is no parent check: a delivery of an integration deleted meanwhile is removed by
// ClaimDeliveries.
func (s *Store) CreateDeliveries(ctx context.Context, ds []storage.Delivery) error {
	const op = "create deliveries"
	if len(ds) == 0 {
		return nil
	}
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		stmts := map[string]*sql.Stmt{}
		defer func() {
			for _, st := range stmts {
				st.Close()
			}
		}()
		for i, d := range ds {
			table, other := deliveryTable(d.State)
			st, ok := stmts[table]
			if !ok {
				var err error
				if st, err = tx.PrepareContext(ctx, insertDeliverySQL(table, other)); err != nil {
					return wrap(op, err)
				}
				stmts[table] = st
			}
			if err := insertDelivery(ctx, st, fmt.Sprintf("%s: record %d", op, i), d); err != nil {
				return err
			}
		}
		return nil
	})
}

// dueDeliveries selects the claimable deliveries (see ClaimDeliveries) with whether their
// integration exists. A lease_until of 0 is no lease, whatever now is.
const dueDeliveries = `SELECT ` + deliveryCols + `,
	EXISTS (SELECT 1 FROM integrations i WHERE i.id = d.integration_id AND i.app_id = d.app_id)
FROM webhook_deliveries d
WHERE state = ?1 AND next_attempt_at <= ?2 AND (lease_until = 0 OR lease_until <= ?2)
ORDER BY next_attempt_at, id LIMIT ?3`

// ClaimDeliveries leases up to n due deliveries to owner in one write transaction: select
// the due ones, oldest first, and write the lease. The single writer serialises claimers,
// in this process and others, so no delivery is answered twice while leased. Due
// deliveries whose integration is gone are deleted on the way and not counted.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, n int) ([]storage.Delivery, error) {
	const op = "claim deliveries"
	if n <= 0 {
		return nil, nil
	}
	if lease < time.Millisecond {
		// A lease ending at now (at the stored precision) would leave the delivery claimable.
		return nil, fmt.Errorf("sqlite: %s: lease %v is shorter than a millisecond", op, lease)
	}
	now = storage.Truncate(now)
	until := storage.Truncate(now.Add(lease))
	var out []storage.Delivery
	err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		// Each round claims or deletes every row it reads, and claimed rows are no longer
		// due, so rounds only repeat while orphans took places in the batch.
		for len(out) < n {
			rows, err := tx.QueryContext(ctx, dueDeliveries, storage.DeliveryPending, toMillis(now), n-len(out))
			if err != nil {
				return wrap(op, err)
			}
			var orphans []string
			var claimed []storage.Delivery
			err = func() error {
				defer rows.Close()
				for rows.Next() {
					var alive bool
					d, err := scanDelivery(rowWithExtra{rows, &alive})
					if err != nil {
						return err
					}
					if alive {
						claimed = append(claimed, d)
					} else {
						orphans = append(orphans, d.ID)
					}
				}
				return rows.Err()
			}()
			if err != nil {
				return wrap(op, err)
			}
			if len(claimed)+len(orphans) == 0 {
				return nil
			}
			for _, id := range orphans {
				if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE id = ?`, id); err != nil {
					return wrap(op+": remove orphan", err)
				}
			}
			for i := range claimed {
				d := &claimed[i]
				if _, err := tx.ExecContext(ctx, `UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ? WHERE id = ?`,
					owner, toMillis(until), d.ID); err != nil {
					return wrap(op, err)
				}
				d.LeaseOwner, d.LeaseUntil = owner, until
			}
			out = append(out, claimed...)
			if len(orphans) == 0 {
				return nil // fewer due than asked, or the batch is full
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// rowWithExtra scans a row holding scanDelivery's columns followed by one boolean.
type rowWithExtra struct {
	rows  *sql.Rows
	extra *bool
}

func (r rowWithExtra) Scan(dest ...any) error {
	return r.rows.Scan(append(dest, r.extra)...)
}

// UpdateDelivery applies fn to the delivery, in the queue or in the history, in one
// write transaction (see updateRecord). What the delivery is — id, app, integration,
// event and payload — and its creation time are kept. A delivery fn finishes moves from
// the queue to the history, one fn makes pending moves back, in the same transaction:
// SQLite never shows it in both or in neither.
func (s *Store) UpdateDelivery(ctx context.Context, id string, fn func(*storage.Delivery) error) (storage.Delivery, error) {
	const op = "update delivery"
	var from string // the table the delivery was read from
	return updateRecord(ctx, s, op,
		func(tx *sql.Tx) (storage.Delivery, error) {
			for _, table := range []string{"webhook_deliveries", "webhook_history"} {
				d, err := scanDelivery(tx.QueryRowContext(ctx, `SELECT `+deliveryCols+` FROM `+table+` WHERE id = ?`, id))
				if !errors.Is(err, sql.ErrNoRows) {
					from = table
					return d, err
				}
			}
			return storage.Delivery{}, sql.ErrNoRows
		},
		fn,
		func(cur storage.Delivery, next *storage.Delivery) {
			next.ID, next.AppID, next.IntegrationID, next.CreatedAt = cur.ID, cur.AppID, cur.IntegrationID, cur.CreatedAt
			next.EventID, next.Event, next.Payload = cur.EventID, cur.Event, cur.Payload
			next.NextAttemptAt = storage.Truncate(next.NextAttemptAt)
			next.LeaseUntil = storage.Truncate(next.LeaseUntil)
			next.UpdatedAt = storage.Truncate(next.UpdatedAt)
		},
		func(tx *sql.Tx, next storage.Delivery) error {
			to, other := deliveryTable(next.State)
			if to != from {
				if _, err := tx.ExecContext(ctx, `DELETE FROM `+other+` WHERE id = ?`, next.ID); err != nil {
					return err
				}
				st, err := tx.PrepareContext(ctx, insertDeliverySQL(to, other))
				if err != nil {
					return err
				}
				defer st.Close()
				return insertDelivery(ctx, st, op, next)
			}
			_, err := tx.ExecContext(ctx, `UPDATE `+to+` SET state = ?, attempts = ?, next_attempt_at = ?,
	lease_owner = ?, lease_until = ?, last_error = ?, updated_at = ?, sent = ? WHERE id = ?`,
				next.State, next.Attempts, toMillis(next.NextAttemptAt), next.LeaseOwner, toMillis(next.LeaseUntil),
				next.LastError, toMillis(next.UpdatedAt), payloadArg(next.Sent), next.ID)
			return err
		})
}

// MoveFinishedDeliveries moves up to n finished deliveries from the queue to the history
// in one transaction. Migration 33 moved every one an older version left, and this
// engine never leaves one behind, so it finds none; it is here for the contract.
func (s *Store) MoveFinishedDeliveries(ctx context.Context, n int) (int, error) {
	const op = "move finished deliveries"
	if n <= 0 {
		return 0, nil
	}
	var moved int
	err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		const pick = `SELECT id FROM webhook_deliveries WHERE state IN (?1, ?2) LIMIT ?3`
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO webhook_history (`+deliveryCols+`)
SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id IN (`+pick+`)`,
			storage.DeliveryDelivered, storage.DeliveryFailed, n); err != nil {
			return wrap(op, err)
		}
		var err error
		moved, err = execCount(ctx, tx, `DELETE FROM webhook_deliveries WHERE id IN (`+pick+`)`,
			storage.DeliveryDelivered, storage.DeliveryFailed, n)
		if err != nil {
			return wrap(op, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return moved, nil
}

// attemptCols is the column order of scanAttempt.
const attemptCols = `id, app_id, integration_id, delivery_id, event, attempt, success, status_code, latency_ms,
	error, response, created_at`

func scanAttempt(row scanner) (storage.DeliveryAttempt, error) {
	var (
		a         storage.DeliveryAttempt
		latencyMs int64
	)
	err := row.Scan(&a.ID, &a.AppID, &a.IntegrationID, &a.DeliveryID, &a.Event, &a.Attempt, &a.Success, &a.StatusCode,
		&latencyMs, &a.Error, &a.Response, timeCol{&a.CreatedAt})
	a.Latency = time.Duration(latencyMs) * time.Millisecond
	return a, err
}

// AddDeliveryAttempt records a; the latency is kept in whole milliseconds.
func (s *Store) AddDeliveryAttempt(ctx context.Context, a storage.DeliveryAttempt) error {
	return s.insertAll(ctx, "add delivery attempt", `INSERT INTO webhook_attempts (`+attemptCols+`) VALUES (`+placeholders(12)+`)`,
		[][]any{{a.ID, a.AppID, a.IntegrationID, a.DeliveryID, a.Event, a.Attempt, a.Success, a.StatusCode,
			a.Latency.Milliseconds(), a.Error, a.Response, toMillis(a.CreatedAt)}})
}

// ListDeliveryAttempts answers one page of the integration's attempts, newest first, and
// the total, in one snapshot.
func (s *Store) ListDeliveryAttempts(ctx context.Context, appID, integrationID string, p storage.Page) ([]storage.DeliveryAttempt, int, error) {
	var w where
	w.add("app_id = ?", appID)
	w.add("integration_id = ?", integrationID)
	return listPage(ctx, s, "list delivery attempts", "webhook_attempts", attemptCols, w, orderBy("created_at", true), p, scanAttempt)
}

// PurgeDeliveries removes the finished deliveries (the history) updated before before and
// the attempts created before it, in one transaction.
func (s *Store) PurgeDeliveries(ctx context.Context, before time.Time) (int, error) {
	const op = "purge deliveries"
	var n int
	err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		var err error
		n, err = execCount(ctx, tx, `DELETE FROM webhook_history WHERE updated_at < ?`, toMillis(before))
		if err != nil {
			return wrap(op, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_attempts WHERE created_at < ?`, toMillis(before)); err != nil {
			return wrap(op+": attempts", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// IntegrationsOverHistory answers the integrations whose history holds more than moreThan
// finished deliveries, counted from the (app_id, integration_id, updated_at, id) index
// alone (migration 37).
func (s *Store) IntegrationsOverHistory(ctx context.Context, moreThan int) ([]storage.IntegrationRef, error) {
	return s.integrationsOver(ctx, "integrations over history", "webhook_history", moreThan)
}

// integrationsOver answers the integrations having more than moreThan rows in table,
// grouped on its leading (app_id, integration_id) index columns.
func (s *Store) integrationsOver(ctx context.Context, op, table string, moreThan int) ([]storage.IntegrationRef, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT app_id, integration_id FROM `+table+`
GROUP BY app_id, integration_id HAVING count(*) > ? ORDER BY app_id, integration_id`, max(moreThan, 0))
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := scanAll(rows, func(row scanner) (storage.IntegrationRef, error) {
		var r storage.IntegrationRef
		return r, row.Scan(&r.AppID, &r.IntegrationID)
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// TrimDeliveries removes up to n of the integration's finished deliveries beyond its
// newest keep, the newest of them first, in one statement (its own transaction, so the
// writer is free again between the caller's batches): it walks the (app_id,
// integration_id, updated_at, id) index (migration 37) from the newest, past keep, and
// takes the next n (EXPLAIN QUERY PLAN: no sort). The queue (webhook_deliveries) is
// another table: pending deliveries are never touched.
func (s *Store) TrimDeliveries(ctx context.Context, appID, integrationID string, keep, n int) (int, error) {
	return s.trimNewest(ctx, "trim deliveries", "webhook_history", "updated_at", appID, integrationID, keep, n)
}

// trimNewest deletes, in one statement, up to n rows of table belonging to the
// integration that come after its newest keep by col (then id), the newest of them first.
func (s *Store) trimNewest(ctx context.Context, op, table, col, appID, integrationID string, keep, n int) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	deleted, err := execCount(ctx, s.w, `DELETE FROM `+table+` WHERE rowid IN (
	SELECT rowid FROM `+table+` WHERE app_id = ? AND integration_id = ?
	ORDER BY `+orderBy(col, true)+` LIMIT ? OFFSET ?)`, appID, integrationID, n, max(keep, 0))
	if err != nil {
		return deleted, wrap(op, err)
	}
	return deleted, nil
}

// IntegrationsOverAttempts answers the integrations having more than moreThan attempts,
// counted from the (app_id, integration_id, created_at, id) index alone.
func (s *Store) IntegrationsOverAttempts(ctx context.Context, moreThan int) ([]storage.IntegrationRef, error) {
	return s.integrationsOver(ctx, "integrations over attempts", "webhook_attempts", moreThan)
}

// TrimDeliveryAttempts removes up to n of the integration's attempts beyond its newest
// keep, the newest of them first, in one statement, as TrimDeliveries does for the
// history, from the (app_id, integration_id, created_at, id) index.
func (s *Store) TrimDeliveryAttempts(ctx context.Context, appID, integrationID string, keep, n int) (int, error) {
	return s.trimNewest(ctx, "trim delivery attempts", "webhook_attempts", "created_at", appID, integrationID, keep, n)
}
