package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// serverURI returns $KEYWARD_TEST_MONGO_URI when set (the server started by
// deploy/testenv.sh), or starts an embedded FerretDB for the test.
func serverURI(t *testing.T) string {
	t.Helper()
	if uri := os.Getenv("KEYWARD_TEST_MONGO_URI"); uri != "" {
		return uri
	}

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Handler:   "sqlite",
		SQLiteURL: "file:" + t.TempDir() + "/",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return f.MongoDBURI()
}

// TestMongoDriverV2 checks that the mongo-driver v2 version used by Keyward
// can insert, find, create a unique index and see duplicate-key errors.
func TestMongoDriverV2(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	client, err := mongo.Connect(options.Client().ApplyURI(serverURI(t)).SetTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())

	if err := client.Ping(ctx, nil); err != nil {
		t.Fatalf("ping: %v", err)
	}

	db := client.Database("smoke_" + time.Now().Format("150405.000000")[7:])
	defer db.Drop(context.Background())
	coll := db.Collection("accounts")

	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "email", Value: 1}},
		Options: options.Index().SetUnique(true).SetName("email_unique"),
	}); err != nil {
		t.Fatalf("create unique index: %v", err)
	}

	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "a1"}, {Key: "email", Value: "a@example.com"}, {Key: "n", Value: 1}}); err != nil {
		t.Fatalf("insert: %v", err)
	}

	var got struct {
		ID    string `bson:"_id"`
		Email string `bson:"email"`
		N     int    `bson:"n"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "email", Value: "a@example.com"}}).Decode(&got); err != nil {
		t.Fatalf("find: %v", err)
	}
	if got.ID != "a1" || got.N != 1 {
		t.Fatalf("find returned %+v", got)
	}

	err = coll.FindOne(ctx, bson.D{{Key: "email", Value: "missing"}}).Err()
	if !errors.Is(err, mongo.ErrNoDocuments) {
		t.Fatalf("find missing: want ErrNoDocuments, got %v", err)
	}

	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "a2"}, {Key: "email", Value: "a@example.com"}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("second insert with same email: want duplicate-key error, got %v", err)
	}

	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "a1"}, {Key: "email", Value: "b@example.com"}})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("second insert with same _id: want duplicate-key error, got %v", err)
	}

	res := coll.FindOneAndUpdate(ctx,
		bson.D{{Key: "_id", Value: "a1"}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After))
	if err := res.Decode(&got); err != nil || got.N != 2 {
		t.Fatalf("findOneAndUpdate $inc: %+v, %v", got, err)
	}

	n, err := coll.CountDocuments(ctx, bson.D{})
	if err != nil || n != 1 {
		t.Fatalf("count: %d, %v", n, err)
	}
}
