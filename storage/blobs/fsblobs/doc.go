// Package fsblobs is the local-folder engine of blobs.Store: the bytes of key K live in
// the file <root>/K@ (Keyward puts root at <data dir>/files).
//
// Layout and why:
//   - The "/"-separated segments of a key are folders, so DeletePrefix("app1/") removes
//     one folder's content without scanning the others.
//   - A blob's file name is its last segment plus "@", a character keys cannot contain:
//     a file name then never equals a folder name, and keys "a/b" and "a/b/c" coexist
//     (the file a/b@ next to the folder a/b).
//   - Put writes a temporary ".tmp-*" file in the destination folder, hashing while it
//     copies through a fixed 64 KiB buffer, fsyncs it and renames it onto the final name.
//     rename(2) within one folder is atomic, so readers see the old bytes or the new ones,
//     never a mix, and a reader that already opened the old file keeps reading it. Every
//     failure path removes the temporary file; New removes those a crash left behind.
//
// One process owns a root: New's clean-up of ".tmp-*" files would delete the uploads in
// progress of another process sharing the folder.
package fsblobs
