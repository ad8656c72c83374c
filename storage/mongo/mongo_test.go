package mongo

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// sharedClients are the clients openFresh's stores share, one per URI, connected by the
// first openFresh on it and left connected for the rest of the test process: a store of
// its own connects and warms minPoolSize connections (64 under testenv.MongoURI), which
// cost about 0.4 CPU s per store in the test process and FerretDB, and the conformance
// suite opens a fresh store for each of its 200-odd subtests.
var sharedClients sync.Map // uri → func() (*mongo.Client, error)

func sharedClient(t testing.TB, uri string) *mongo.Client {
	t.Helper()
	v, _ := sharedClients.LoadOrStore(uri, sync.OnceValues(func() (*mongo.Client, error) {
		return Connect(context.Background(), uri)
	}))
	client, err := v.(func() (*mongo.Client, error))()
	if err != nil {
		t.Fatalf("connect the shared client: %v", err)
	}
	return client
}

// openFresh opens a store on a database of its own, dropped when the test ends. The store
// runs on the test process's client for uri (sharedClient); Open's connecting is tested
// by the tests that call it.
func openFresh(t testing.TB, uri string) *Store {
	t.Helper()
	return openOn(t, uri, sharedClient(t, uri))
}

// openOn opens a store on a database of its own, on client (connected to uri), dropped
// when the test ends.
func openOn(t testing.TB, uri string, client *mongo.Client) *Store {
	t.Helper()
	name := testenv.UniqueName("kwtest_")
	s, err := Open(t.Context(), Config{URI: uri, Database: name, Sealer: storagetest.TestSealer(t), Client: client})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.db.Drop(ctx); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	uri := testenv.MongoURI(t)
	storagetest.Run(t, func(t *testing.T) storage.Store { return openFresh(t, uri) })
}

func TestOpenIsIdempotent(t *testing.T) {
	uri := testenv.MongoURI(t)
	s := openFresh(t, uri)
	a := storage.Account{ID: "a1", Username: "Again", Email: "again@example.com", CreatedAt: storage.Now()}
	if err := s.CreateAccount(t.Context(), a); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	// A second Open on the same database re-creates the indexes without error and sees
	// the data; the unique indexes still hold.
	s2, err := Open(t.Context(), Config{URI: uri, Database: s.db.Name()})
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer s2.Close()
	if _, err := s2.GetAccountByUsername(t.Context(), "again"); err != nil {
		t.Errorf("GetAccountByUsername through the second store: %v", err)
	}
	dup := storage.Account{ID: "a2", Username: "AGAIN", Email: "other@example.com"}
	if err := s2.CreateAccount(t.Context(), dup); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("CreateAccount with a taken username after reopen: error = %v, want ErrConflict", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	// A port that was just free refuses connections at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()

	start := time.Now()
	_, err = Open(t.Context(), Config{URI: "mongodb://" + addr + "/"})
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Open of an unreachable server: error = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > openTimeout+2*time.Second {
		t.Errorf("Open took %v to fail, want about %v at most", d, openTimeout)
	}
}

func TestDatabaseName(t *testing.T) {
	cases := []struct {
		uri, configured, want string
	}{
		{"mongodb://127.0.0.1:27017", "", DefaultDatabase},
		{"mongodb://127.0.0.1:27017/", "", DefaultDatabase},
		{"mongodb://127.0.0.1:27017/?appName=x", "", DefaultDatabase},
		{"mongodb://127.0.0.1:27017/licensing", "", "licensing"},
		{"mongodb://u:p@a:1,b:2/licensing?replicaSet=rs0", "", "licensing"},
		{"mongodb://127.0.0.1:27017/licensing", "override", "override"},
	}
	for _, c := range cases {
		cs, err := connstring.ParseAndValidate(c.uri)
		if err != nil {
			t.Fatalf("parse %q: %v", c.uri, err)
		}
		if got := databaseName(Config{URI: c.uri, Database: c.configured}, cs); got != c.want {
			t.Errorf("databaseName(%q, %q) = %q, want %q", c.uri, c.configured, got, c.want)
		}
	}
}

func TestOpenInvalidURIHidesPassword(t *testing.T) {
	_, err := Open(t.Context(), Config{URI: "mongodb://user:s3cret@host:notaport/db"})
	if err == nil {
		t.Fatal("Open with an invalid URI succeeded")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error leaks the password: %v", err)
	}
}

// TestOutageFailsFast runs a FerretDB server of its own, stops it under an open store, and
// checks that calls then fail within about the server-selection timeout with an error
// wrapping ErrUnavailable, rather than hanging.
func TestOutageFailsFast(t *testing.T) {
	uri, cmd := testenv.StartFerretDB(t)
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}

	ctx := t.Context()
	s, err := Open(ctx, Config{URI: uri, Database: testenv.UniqueName("kwtest_")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.CreateAccount(ctx, storage.Account{ID: "a", Username: "a", Email: "a@a"}); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}

	stop()

	calls := map[string]func() error{
		"GetAccount": func() error { _, err := s.GetAccount(ctx, "a"); return err },
		"Ping":       func() error { return s.Ping(ctx) },
		"UpdateAccount": func() error {
			_, err := s.UpdateAccount(ctx, "a", func(*storage.Account) error { return nil })
			return err
		},
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Errorf("%s during the outage: error = %v, want ErrUnavailable", name, err)
		}
		if d := time.Since(start); d > serverSelectionTimeout+2*time.Second {
			t.Errorf("%s took %v to fail, want about %v at most", name, d, serverSelectionTimeout)
		}
	}
}

// TestUpdateAcrossRecreate: an updater whose account is deleted and created again under the
// same id between its read and its write must not write the old record's fields over the
// new one (version ABA). fn does the delete and re-create itself on its first call, which
// puts them exactly in that window.
func TestUpdateAcrossRecreate(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	old := storage.Account{ID: "same", Username: "old", Email: "old@example.com", Plan: "basic"}
	if err := s.CreateAccount(ctx, old); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	fresh := storage.Account{ID: "same", Username: "fresh", Email: "fresh@example.com", Plan: "basic"}

	calls := 0
	got, err := s.UpdateAccount(ctx, "same", func(a *storage.Account) error {
		calls++
		if calls == 1 {
			if err := s.DeleteAccount(ctx, "same"); err != nil {
				return err
			}
			if err := s.CreateAccount(ctx, fresh); err != nil {
				return err
			}
		}
		a.Plan = "pro"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateAccount: %v", err)
	}
	if calls != 2 {
		t.Errorf("fn called %d times, want 2 (once on each record)", calls)
	}
	stored, err := s.GetAccount(ctx, "same")
	if err != nil {
		t.Fatalf("GetAccount: %v", err)
	}
	if stored.Username != "fresh" || stored.Email != fresh.Email || stored.Plan != "pro" {
		t.Errorf("stored account = %q %q plan %q, want the re-created account with plan pro", stored.Username, stored.Email, stored.Plan)
	}
	if got.Username != stored.Username || got.Plan != stored.Plan {
		t.Errorf("UpdateAccount returned %q plan %q, stored is %q plan %q", got.Username, got.Plan, stored.Username, stored.Plan)
	}
}

// TestDeleteAppFinishesInterruptedDelete: without transactions DeleteApp is several steps.
// If one stopped after removing the app, the records left behind must go with the next
// DeleteApp (which answers ErrNotFound, the app being gone), together with the claims of
// updaters that died; another account's app must never be swept that way.
func TestDeleteAppFinishesInterruptedDelete(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	for _, a := range []storage.App{{ID: "gone", AccountID: "acc", Name: "gone"}, {ID: "theirs", AccountID: "other", Name: "theirs"}} {
		if err := s.CreateApp(ctx, a); err != nil {
			t.Fatalf("CreateApp: %v", err)
		}
		u := storage.AppUser{ID: a.ID + "-u", AppID: a.ID, Username: "u"}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
		if err := s.CreateDevice(ctx, storage.Device{ID: a.ID + "-d", AppID: a.ID, UserID: u.ID, HWID: "hw"}); err != nil {
			t.Fatalf("CreateDevice: %v", err)
		}
		if err := s.CreateLicenses(ctx, []storage.License{{ID: a.ID + "-l", AppID: a.ID, Key: "K"}}); err != nil {
			t.Fatalf("CreateLicenses: %v", err)
		}
		if err := s.CreateTokens(ctx, []storage.Token{{ID: a.ID + "-t", AppID: a.ID, Value: "v"}}); err != nil {
			t.Fatalf("CreateTokens: %v", err)
		}
		if err := s.CreateVariables(ctx, []storage.Variable{{ID: a.ID + "-v", AppID: a.ID, Scope: storage.ScopeUser, OwnerID: u.ID, Key: "k"}}); err != nil {
			t.Fatalf("CreateVariables: %v", err)
		}
		if err := s.CreateFile(ctx, storage.File{ID: a.ID + "-f", AppID: a.ID, Name: "f"}); err != nil {
			t.Fatalf("CreateFile: %v", err)
		}
		if err := s.CreateRules(ctx, []storage.Rule{{ID: a.ID + "-r", AppID: a.ID, Type: "ip", Action: "blacklist", Value: "v"}}); err != nil {
			t.Fatalf("CreateRules: %v", err)
		}
		if err := s.InsertLogs(ctx, []storage.LogEntry{{ID: a.ID + "-log", AppID: a.ID, Event: "e", CreatedAt: storage.Now()}}); err != nil {
			t.Fatalf("InsertLogs: %v", err)
		}
		if err := s.CreateIntegration(ctx, storage.Integration{ID: a.ID + "-i", AppID: a.ID, Name: "i", Kind: "CUSTOM"}); err != nil {
			t.Fatalf("CreateIntegration: %v", err)
		}
		if err := s.CreateDeliveries(ctx, []storage.Delivery{{ID: a.ID + "-dl", AppID: a.ID, IntegrationID: a.ID + "-i",
			State: storage.DeliveryPending}, {ID: a.ID + "-done", AppID: a.ID, IntegrationID: a.ID + "-i",
			State: storage.DeliveryDelivered}}); err != nil {
			t.Fatalf("CreateDeliveries: %v", err)
		}
		if err := s.AddDeliveryAttempt(ctx, storage.DeliveryAttempt{ID: a.ID + "-a", AppID: a.ID, IntegrationID: a.ID + "-i",
			DeliveryID: a.ID + "-dl", Attempt: 1}); err != nil {
			t.Fatalf("AddDeliveryAttempt: %v", err)
		}
		if err := s.SaveClientSessions(ctx, []storage.ClientSession{{TokenHash: a.ID + "-s", AppID: a.ID, UserID: u.ID,
			ExpiresAt: storage.Now().Add(time.Hour)}}); err != nil {
			t.Fatalf("SaveClientSessions: %v", err)
		}
		if err := s.CreateWSHook(ctx, storage.WSHook{ID: a.ID + "-h", AppID: a.ID, Name: "h", Event: "e"}); err != nil {
			t.Fatalf("CreateWSHook: %v", err)
		}
		sc := storage.StoreConnection{ID: a.ID + "-sc", AppID: a.ID, Provider: "stripe", Name: "s", ReceiverID: a.ID + "-rcv", Secret: "whsec"}
		if err := s.CreateStoreConnection(ctx, sc); err != nil {
			t.Fatalf("CreateStoreConnection: %v", err)
		}
		if _, err := s.PutStoreProduct(ctx, storage.StoreProduct{ID: a.ID + "-sp", AppID: a.ID, ConnectionID: sc.ID, ProductID: "p"}); err != nil {
			t.Fatalf("PutStoreProduct: %v", err)
		}
		if err := s.CreateOrder(ctx, storage.Order{ID: a.ID + "-o", AppID: a.ID, ConnectionID: sc.ID, OrderID: "o1"}); err != nil {
			t.Fatalf("CreateOrder: %v", err)
		}
		if err := s.AddOrderEvent(ctx, storage.OrderEvent{ID: a.ID + "-oe", AppID: a.ID, ConnectionID: sc.ID, OrderRef: a.ID + "-o", EventID: "e1"}); err != nil {
			t.Fatalf("AddOrderEvent: %v", err)
		}
		// A claim an updater of the app's user left behind when it died.
		if _, err := s.claims.InsertOne(ctx, claimDoc{ID: "users/" + u.ID + "#7", Owner: a.ID, At: storage.Now()}); err != nil {
			t.Fatalf("insert claim: %v", err)
		}
	}
	// The first step of a DeleteApp that then stopped.
	if _, err := s.apps.DeleteOne(ctx, ownedApp("acc", "gone")); err != nil {
		t.Fatalf("delete app document: %v", err)
	}

	// Another account asking for "theirs" gets ErrNotFound and sweeps nothing of it.
	if err := s.DeleteApp(ctx, "acc", "theirs"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeleteApp of another account's app: error = %v, want ErrNotFound", err)
	}
	if err := s.DeleteApp(ctx, "acc", "gone"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeleteApp of an app already gone: error = %v, want ErrNotFound", err)
	}
	for _, c := range []struct {
		app  string
		want int64
	}{{"gone", 0}, {"theirs", 1}} {
		for _, coll := range append(s.appRecordColls(), s.claims) {
			field := "appId"
			if coll == s.claims {
				field = "owner"
			}
			n, err := coll.CountDocuments(ctx, bson.D{{Key: field, Value: c.app}})
			if err != nil {
				t.Fatalf("count %s: %v", coll.Name(), err)
			}
			if n != c.want {
				t.Errorf("%s of app %q after DeleteApp: %d documents, want %d", coll.Name(), c.app, n, c.want)
			}
		}
	}
}

func TestSealing(t *testing.T) {
	uri := testenv.MongoURI(t)
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	storagetest.RunSealing(t, storagetest.SealingHarness{
		NewLocation: func(t *testing.T) string {
			name := testenv.UniqueName("kwtest_")
			t.Cleanup(func() { _ = client.Database(name).Drop(context.Background()) })
			return name
		},
		Open: func(t *testing.T, where string, sealer storage.Sealer) (storage.Store, error) {
			return Open(t.Context(), Config{URI: uri, Database: where, Sealer: sealer})
		},
		Raw: func(t *testing.T, where string) []byte {
			db := client.Database(where)
			names, err := db.ListCollectionNames(t.Context(), bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			var raw []byte
			for _, n := range names {
				cur, err := db.Collection(n).Find(t.Context(), bson.D{})
				if err != nil {
					t.Fatal(err)
				}
				for cur.Next(t.Context()) {
					raw = append(raw, cur.Current...)
				}
				if err := cur.Err(); err != nil {
					t.Fatal(err)
				}
				_ = cur.Close(t.Context())
			}
			return raw
		},
	})
}
