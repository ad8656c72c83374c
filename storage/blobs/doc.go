// Package blobs defines where the bytes of uploaded files live: one small interface,
// Store, with two engines (storage/blobs/fsblobs on a local folder, storage/blobs/gridfs
// in MongoDB GridFS) and one conformance suite, storage/blobs/blobstest, that both pass
// unchanged and that is the written contract.
//
// File records (name, version, size, hash) live in the record store (package storage);
// this package only moves bytes. Keys are chosen by the caller, normally
// "<application id>/<file id>", so that deleting an application is DeletePrefix(appID+"/").
//
// Contract shared by the engines:
//   - Put streams: memory use does not grow with the blob's size, so a 1 GiB upload
//     costs a bounded buffer, not 1 GiB of RAM.
//   - Put is all or nothing: until it returns nil nothing new is visible under the key,
//     and after an error (failing reader, cancelled context, ErrTooLarge) the previous
//     content, if any, is intact and no partial bytes are left behind.
//   - Keys are validated by ValidKey and prefixes by ValidPrefix; a refused key answers
//     an error wrapping ErrInvalidKey before any I/O.
//   - A key may be a folder of another key ("a/b" and "a/b/c" can both exist).
package blobs
