// Package blobstest is the conformance suite of blobs.Store: Run exercises one engine
// through the interface only, and every engine's tests call it, so the engines cannot
// drift apart. It also holds the 1 GiB memory check (RunBig) that the engines run on
// demand, and a deterministic data generator (Data) so that large blobs are produced on
// the fly and never held in memory.
//
// Engine-specific leftovers (temporary files, orphan GridFS chunks) are not visible
// through the interface; engines check them in a t.Cleanup registered by their newStore
// function, which then runs after every case of the suite.
package blobstest
