package mongo

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var _ storage.ArchiveStore = (*Store)(nil)

// archiveColl reads one kind for the archive: every document of a collection in _id
// order, turned into its record as stored (no secret opened).
type archiveColl struct {
	coll   func(s *Store) *mongo.Collection
	sort   string
	record func(raw bson.Raw) (any, error)
}

// doc adapts a document type's conversion to its record.
func doc[D any, R any](conv func(D) R) func(bson.Raw) (any, error) {
	return func(raw bson.Raw) (any, error) {
		var d D
		if err := bson.Unmarshal(raw, &d); err != nil {
			return nil, err
		}
		return conv(d), nil
	}
}

func coll(name string) func(s *Store) *mongo.Collection {
	return func(s *Store) *mongo.Collection { return s.db.Collection(name) }
}

// archiveColls is every archived kind: one line per collection.
var archiveColls = map[string]archiveColl{
	storage.KindAccounts:         {coll(collAccounts), "_id", doc(accountDoc.account)},
	storage.KindAccountTokens:    {coll(collAccountTokens), "_id", doc(tokenDoc.token)},
	storage.KindAPIKeys:          {coll(collAPIKeys), "_id", doc(apiKeyDoc.key)},
	storage.KindRevocations:      {coll(collRevocations), "_id", doc(revocationDoc.record)},
	storage.KindApps:             {coll(collApps), "_id", doc(appDoc.app)},
	storage.KindUsers:            {coll(collUsers), "_id", doc(userDoc.user)},
	storage.KindLicenses:         {coll(collLicenses), "_id", doc(licenseDoc.license)},
	storage.KindDevices:          {coll(collDevices), "_id", doc(deviceDoc.device)},
	storage.KindAppTokens:        {coll(collTokens), "_id", doc(appTokenDoc.token)},
	storage.KindVariables:        {coll(collVariables), "_id", doc(variableDoc.variable)},
	storage.KindFiles:            {coll(collFiles), "_id", doc(fileDoc.file)},
	storage.KindRules:            {coll(collRules), "_id", doc(ruleDoc.rule)},
	storage.KindWSHooks:          {coll(collWSHooks), "_id", doc(wsHookDoc.wsHook)},
	storage.KindIntegrations:     {coll(collIntegrations), "_id", doc(integrationDoc.integration)},
	storage.KindDeliveries:       {coll(collDeliveries), "_id", doc(deliveryDoc.delivery)},
	storage.KindDeliveryHistory:  {coll(collHistory), "_id", doc(deliveryDoc.delivery)},
	storage.KindDeliveryAttempts: {coll(collAttempts), "_id", doc(attemptDoc.attempt)},
	storage.KindClientSessions:   {coll(collSessions), "_id", doc(clientSessionDoc.session)},
	storage.KindLogs:             {coll(collLogs), "_id", doc(logDoc.entry)},
	storage.KindLogPurges:        {coll(collLogPurges), "_id", doc(logPurgeDoc.purge)},
	storage.KindAudit:            {coll(collAudit), "_id", doc(auditDoc.entry)},
	storage.KindEvents:           {coll(collEvents), "_id", doc(eventDoc.record)},
	storage.KindEventCursors:     {coll(collEventCursors), "_id", doc(cursorDoc.record)},
	storage.KindOwnerSessions:    {coll(collOwnerSessions), "_id", doc(ownerSessionDoc.session)},
	storage.KindRecoveryCodes:    {coll(collRecoveryCodes), "_id", doc(recoveryCodeDoc.record)},
	storage.KindPasskeys:         {coll(collPasskeys), "_id", doc(passkeyDoc.passkey)},
	storage.KindStoreConnections: {coll(collStoreConnections), "_id", commerceRecord[storage.StoreConnection]},
	storage.KindStoreProducts:    {coll(collStoreProducts), "_id", commerceRecord[storage.StoreProduct]},
	storage.KindOrders:           {coll(collStoreOrders), "_id", commerceRecord[storage.Order]},
	storage.KindOrderEvents:      {coll(collStoreOrderEvents), "_id", commerceRecord[storage.OrderEvent]},
}

// commerceRecord turns a commerce document into its record as stored (a connection's
// secret stays sealed: no Sealer opens it here).
func commerceRecord[R any](raw bson.Raw) (any, error) {
	var d commerceDoc
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	return decodeCommerce[R](d)
}

func (d recoveryCodeDoc) record() storage.RecoveryCode {
	return storage.RecoveryCode{AccountID: d.AccountID, Hash: d.Hash, CreatedAt: fromDate(d.CreatedAt)}
}

func (d revocationDoc) record() storage.Revocation {
	return storage.Revocation{ID: d.JTI, ExpiresAt: fromDate(d.ExpiresAt)}
}

func (d cursorDoc) record() storage.EventCursor {
	return storage.EventCursor{Consumer: d.Consumer, Pos: d.Pos}
}

// ArchiveTables implements storage.ArchiveStore. GridFS's two collections hold the file
// bytes, which the archive carries as blobs.
func (s *Store) ArchiveTables() map[string]string {
	return map[string]string{
		collAccounts: storage.KindAccounts, collAccountTokens: storage.KindAccountTokens, collAPIKeys: storage.KindAPIKeys,
		collRevocations: storage.KindRevocations, collApps: storage.KindApps, collUsers: storage.KindUsers,
		collLicenses: storage.KindLicenses, collDevices: storage.KindDevices, collTokens: storage.KindAppTokens,
		collVariables: storage.KindVariables, collFiles: storage.KindFiles, collRules: storage.KindRules,
		collWSHooks: storage.KindWSHooks, collIntegrations: storage.KindIntegrations,
		collDeliveries: storage.KindDeliveries, collHistory: storage.KindDeliveryHistory, collAttempts: storage.KindDeliveryAttempts,
		collSessions: storage.KindClientSessions, collLogs: storage.KindLogs, collLogPurges: storage.KindLogPurges, collAudit: storage.KindAudit,
		collEvents: storage.KindEvents, collEventCursors: storage.KindEventCursors,
		collOwnerSessions: storage.KindOwnerSessions, collRecoveryCodes: storage.KindRecoveryCodes,
		collPasskeys: storage.KindPasskeys, collChallenges: "- ceremony challenges of a few minutes, begun again after a restore",
		collStoreConnections: storage.KindStoreConnections, collStoreProducts: storage.KindStoreProducts,
		collStoreOrders: storage.KindOrders, collStoreOrderEvents: storage.KindOrderEvents,
		collClaims:     "- update claims, removed once their update is done (see updateDoc)",
		collEventHeads: "- hints of the event log's head, never above the truth (see headDoc)",
		collAuditPending: "- audit entries staged before their change's write, appended to the chain once " +
			"it is made (see auditpending.go)",
		"files.files":  "- GridFS: file bytes, carried as blobs",
		"files.chunks": "- GridFS: file bytes, carried as blobs",
	}
}

// ArchiveRecords implements storage.ArchiveStore. FerretDB has no snapshot reads: each
// kind is read as the documents are at the moment the cursor reaches them.
func (s *Store) ArchiveRecords(ctx context.Context, kind string, emit func(any) error) error {
	a, ok := archiveColls[kind]
	if !ok {
		return fmt.Errorf("mongo: archive: unknown record kind %q", kind)
	}
	op := "archive " + kind
	cur, err := a.coll(s).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: a.sort, Value: 1}}).SetBatchSize(1000))
	if err != nil {
		return wrap(op, err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		rec, err := a.record(cur.Current)
		if err != nil {
			return wrap(op, err)
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	if err := cur.Err(); err != nil {
		return wrap(op, err)
	}
	return nil
}

// RestoreAudit implements storage.ArchiveStore: each entry goes in as AppendAudit would
// have stored it, its seq and hashes kept.
func (s *Store) RestoreAudit(ctx context.Context, entries []storage.AuditEntry) error {
	docs := make([]any, len(entries))
	for i, e := range entries {
		d := auditDoc{ID: e.ID, AccountID: e.AccountID, AppID: e.AppID, ActorType: e.ActorType,
			ActorID: e.ActorID, ActorName: e.ActorName, IP: e.IP, Method: e.Method, Route: e.Route, Path: e.Path,
			RecordType: e.RecordType, RecordID: e.RecordID, Status: e.Status, Before: e.Before, After: e.After,
			CreatedAt: storage.Truncate(e.CreatedAt), Seq: e.Seq, PrevHash: e.PrevHash, Hash: e.Hash}
		if e.Seq > 0 {
			d.ID, d.EntryID = chainID(e.AccountID, e.Seq), e.ID
		}
		docs[i] = d
	}
	return s.insertArchived(ctx, "restore audit", s.audit, docs)
}

// RestoreEvents implements storage.ArchiveStore: positions and seqs kept, and the head
// hints raised to them.
func (s *Store) RestoreEvents(ctx context.Context, evs []storage.EventRecord) error {
	if len(evs) == 0 {
		return nil
	}
	docs := make([]any, len(evs))
	for i, e := range evs {
		payload := e.Payload
		if payload == nil {
			payload = []byte{}
		}
		docs[i] = eventDoc{Pos: e.Pos, ID: e.ID, AppID: e.AppID, Seq: e.Seq, Type: e.Type, Payload: payload, At: storage.Truncate(e.At)}
	}
	if err := s.insertArchived(ctx, "restore events", s.events, docs); err != nil {
		return err
	}
	if err := s.raiseHeads(ctx, evs); err != nil {
		return wrap("restore events: heads", err)
	}
	return nil
}

// RestoreRecoveryCodes implements storage.ArchiveStore: the codes go in as they are, and
// are taken out again (ErrNotFound) when one of their accounts is missing.
func (s *Store) RestoreRecoveryCodes(ctx context.Context, codes []storage.RecoveryCode) error {
	if len(codes) == 0 {
		return nil
	}
	docs := make([]any, len(codes))
	ids := make([]string, len(codes))
	accounts := make([]string, len(codes))
	for i, c := range codes {
		ids[i], accounts[i] = c.AccountID+"|"+c.Hash, c.AccountID
		docs[i] = recoveryCodeDoc{ID: ids[i], AccountID: c.AccountID, Hash: c.Hash, CreatedAt: storage.Truncate(c.CreatedAt)}
	}
	accs := distinct(accounts)
	parent := parentRef{what: fmt.Sprintf("%d accounts", len(accs)), coll: s.accounts,
		filter: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: accs}}}}, want: int64(len(accs))}
	undo := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}
	return s.insertOwned(ctx, "restore recovery codes", s.recoveryCodes, docs, undo, []parentRef{parent})
}

func (s *Store) insertArchived(ctx context.Context, op string, c *mongo.Collection, docs []any) error {
	if len(docs) == 0 {
		return nil
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		return wrap(op, err)
	}
	return nil
}

// SchemaVersion implements storage.ArchiveStore. The MongoDB engine has no numbered
// schema: Open creates the indexes it needs, and documents gain fields with defaults.
func (s *Store) SchemaVersion(context.Context) (int, error) { return 0, nil }
