// Package server is Keyward's composition root: it reads the configuration (flags and
// KEYWARD_* environment variables), picks the storage and cluster engines in one place,
// wires the core services to the HTTP edge, and runs and stops the whole in order
// (HTTP → sockets → mail → cluster engine → storage). With no configuration at all it runs
// the embedded default: SQLite under ./data, the memory cluster engine, a JWT secret kept
// in the data dir and mail written to ./data/outbox.
package server
