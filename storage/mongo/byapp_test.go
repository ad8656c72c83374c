package mongo

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
)

// TestByAppReadsByIDAndChecksTheApp: a record read through a byApp filter (findOneRaw: by
// _id alone, the app checked in Go) is found under its own app only, with or without a
// projection, and a projection given is not changed; reads, updates, standings and parent
// checks of another app's record find nothing.
func TestByAppReadsByIDAndChecksTheApp(t *testing.T) {
	s := openFresh(t, testenv.MongoURI(t))
	ctx := t.Context()
	for _, id := range []string{"app-a", "app-b"} {
		if err := s.CreateApp(ctx, storage.App{ID: id, AccountID: "acc-1", Name: id, CreatedAt: storage.Now(), UpdatedAt: storage.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	u := storage.AppUser{ID: "u1", AppID: "app-a", Username: "ann", Enabled: true, CreatedAt: storage.Now(), UpdatedAt: storage.Now()}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	proj := bson.D{{Key: "username", Value: 1}}
	for _, p := range []bson.D{nil, proj} {
		raw, err := findOneRaw(ctx, s.users, byApp("app-a", "u1"), p)
		if err != nil {
			t.Fatalf("own app, projection %v: %v", p, err)
		}
		if name, _ := raw.Lookup("username").StringValueOK(); name != "ann" {
			t.Fatalf("own app, projection %v: username %q", p, name)
		}
		if _, err := findOneRaw(ctx, s.users, byApp("app-b", "u1"), p); !errors.Is(err, mongo.ErrNoDocuments) {
			t.Fatalf("another app, projection %v: %v, want no document", p, err)
		}
	}
	if len(proj) != 1 {
		t.Fatalf("the projection given was changed: %v", proj)
	}
	if _, err := s.GetUser(ctx, "app-b", "u1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetUser of another app's user: %v", err)
	}
	if _, err := s.UpdateUser(ctx, "app-b", "u1", func(x *storage.AppUser) error { x.Username = "stolen"; return nil }); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("UpdateUser of another app's user: %v", err)
	}
	if got, err := s.GetUserStandings(ctx, "app-b", []string{"u1"}); err != nil || len(got) != 0 {
		t.Fatalf("GetUserStandings of another app's user: %v, %v", got, err)
	}
	if got, err := s.GetUserStandings(ctx, "app-a", []string{"u1"}); err != nil || len(got) != 1 || got[0].Username != "ann" {
		t.Fatalf("GetUserStandings of its own user: %v, %v", got, err)
	}
	if ok, err := exists(ctx, s.users, byApp("app-b", "u1")); ok || err != nil {
		t.Fatalf("exists under another app: %v, %v", ok, err)
	}
	if got, err := s.GetUser(ctx, "app-a", "u1"); err != nil || got.Username != "ann" {
		t.Fatalf("GetUser after the refused update: %v, %v", got.Username, err)
	}
}
