// Package licensing owns what makes an application's answers and licenses verifiable
// without trusting the wire: the app's Ed25519 signing key (made, read, regenerated),
// and the offline license files signed with it. The signature formats themselves live in
// the importable packages pkg/signedresponse and pkg/licensefile, which client programs
// use to verify; this package only signs.
package licensing
