// Package filecrypt owns the layered encryption of client file downloads
// (POST /api/client/file), byte for byte as the official SwiftAuth client SDKs undo it
// (shared/spec/CLIENT-SDKS.md §5). Nothing here is a design choice of ours: the key
// schedule, the layer order, the RNG and its constants are what eleven SDKs already
// decrypt, so any change breaks programs that are deployed and cannot be updated.
//
// # Key schedule and layers
//
// With S the application secret, T the session token and N the nonce bytes:
//
//	master = HMAC-SHA256(S, T + "|" + lowercase-hex(N))
//	K_aes  = SHA-256(master ‖ 0x01)
//	K_shuf = SHA-256(master ‖ 0x02)
//	K_xor  = SHA-256(master ‖ 0x03)
//
// [Encrypt] then applies, in this order: (1) compression ([Zlib] or [RawDeflate]);
// (2) AES-256-GCM with K_aes, a fresh random 12-byte IV and no AAD, laid out
// IV ‖ ciphertext ‖ tag, so never shorter than 28 bytes; (3) a Fisher–Yates shuffle of
// the whole buffer driven by a 64-bit LCG seeded from K_shuf; (4) XOR with K_xor
// repeated. The caller sends the result as the raw body with the headers
// "X-File-Encrypted: 1" and "X-File-Nonce: " + [NonceHex](N), and only then: an error
// reply must never carry those headers (the SDKs would try to decrypt it).
//
// # Formats (§5.4, an inference, not an SDK fact)
//
// One output cannot satisfy every SDK. Ten decrypting SDKs inflate a zlib stream
// (RFC 1950); Swift uses Apple's Compression ".zlib", which is raw DEFLATE (RFC 1951);
// Lua refuses encrypted files. No SDK says who it is, and only the User-Agent tells
// them apart (library defaults: "LuaSocket …" for Lua, "… CFNetwork/… Darwin/…" for
// Swift's URLSession). [FormatFor] therefore picks [Plain] for apps with encryption
// off and for LuaSocket, [RawDeflate] for CFNetwork/Darwin, and [Zlib] for everyone
// else, an empty User-Agent included (Node, C#, Rust and PHP send none). Faking a
// User-Agent gains nothing: a session exists only after its client sent S at init,
// so whoever holds the token can already derive every key; a wrong guess only costs
// the client a body it cannot read.
//
// # The secret is never stored
//
// Keyward keeps only SHA-256(S) (the init check compares it), yet the key schedule
// starts with an HMAC keyed by S. At init, once the check has passed, the session
// keeps a [SecretKey] instead of S: the two SHA-256 midstates of HMAC after the key
// block (S padded, or hashed then padded, to 64 bytes, XOR ipad and XOR opad) has
// been absorbed, as produced by the standard library digest's MarshalBinary. From
// them HMAC(S, m) is computed for any m exactly as crypto/hmac would.
//
// What the midstates allow: computing HMACs keyed by S, hence the file keys of any
// session of that application, for any token and nonce. They are therefore as
// sensitive as the download keys themselves and stay server side (session store
// only, never logged: [SecretKey.String] is redacted). What they do not allow:
// recovering S (that is a preimage of the SHA-256 compression function), or passing
// the init check, which compares SHA-256(S) and needs S itself. Guessing a weak S
// offline against a midstate is no easier than guessing it against the stored
// SHA-256(S), which already exists.
//
// # Memory
//
// The shuffle spans the whole encrypted buffer, so an encrypted download cannot be
// streamed: [Encrypt] builds it in memory (about the file size for the plaintext plus
// the compressed size for the output). Callers must cap the size of files they
// serve encrypted. Everything in the package is safe for concurrent use.
package filecrypt
