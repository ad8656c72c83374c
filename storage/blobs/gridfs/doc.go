// Package gridfs is the MongoDB engine of blobs.Store: bytes live in a GridFS bucket
// (collections <bucket>.files and <bucket>.chunks, 255 KiB chunks), so every node of a
// cluster sees the same files. A blob is a GridFS file whose filename is the key, in the
// standard layout: any GridFS client can read it.
//
// The package writes and reads the chunks itself rather than through mongo-driver's
// GridFS streams, for memory: the driver's upload stream sends 16 MiB inserts and grew
// the heap by 167 MiB on a 1 GiB upload, and its download stream lets the server size
// the batches, which FerretDB 1.24 does not cap (see chunksPerInsert, chunksPerBatch).
// Both costs are now a few MiB whatever the file's size.
//
// GridFS stores a file as many documents, and the servers Keyward supports include
// FerretDB 1.24, which has no multi-document transactions. All-or-nothing Put is
// therefore built from single-document steps:
//
//  1. Put inserts the files document under a fresh id with metadata {state: "partial"}.
//     Open only ever considers "complete" files, so it is invisible, and it is the
//     trace Sweep follows if the process dies before step 3 or 4.
//  2. It streams the bytes into chunks of that id, hashing them on the way.
//  3. It takes the next version number from <bucket>.versions and sets the length and
//     metadata {state: "complete", version, sha256} in one update of the files document:
//     the one step that makes the new bytes visible, atomically.
//  4. It deletes the key's other complete files: every Put and Delete keeps only the
//     highest version, so readers never see a mix and concurrent Puts of one key agree on
//     the winner.
//
// On any error before step 3, Put deletes the chunks, then the files document, with a
// context detached from the caller's (which may be the cancelled one). What a crash
// leaves behind is removed by Sweep, which New runs at start-up for partial files older
// than a day.
//
// Deleting a file first marks it {state: "deleting"}, then deletes its chunks, then its
// files document, so a crash in between leaves a marked document for Sweep rather than
// unreachable chunks.
//
// Known limit: a download that is reading a file when a Put replaces it or Delete removes
// it can fail with a missing-chunk error (chunks are read lazily; MongoDB cursors do not
// read from a snapshot, FerretDB 1.24's happened to), where the fsblobs engine keeps
// serving the old bytes. It never reads short or mixed bytes: chunk numbers and sizes
// are checked.
package gridfs
