// Package generated keeps what a template generates (random strings,
// UUIDs, keys, certificates, password hashes) for the life of a set: a
// render calls each generator through a Memo, which answers with the
// value an earlier render of the same set made for the same call, or
// calls the generator (crypto/rand: nothing a tenant can read predicts
// it) and records the new value. The caller keeps the values (the
// controller: in Secrets placed where the values end up, see package
// reconcile/valuestore) and gives them to every later render, so the
// same inputs give the same objects on every pass, after a restart, a
// drift repair or a shard move.
//
// A call is named by the template file being rendered (the unit: a file
// of templates/, of a subchart's, or the one a tpl runs in), the
// function, a digest of its arguments and how many such calls that file
// made before it: a change elsewhere, in another file or in values that
// do not reach the call, keeps the value; a call with other arguments (a
// certificate for another name, a longer password) is a new one.
//
// Invariants:
//   - Deterministic given Kept and the set's key: the same calls answer
//     the same values.
//   - A kept value is returned as the type the generator returns, so it
//     can be passed on (genSignedCert takes genCA's certificate).
//   - Keys are keyed digests (Key: HMAC-SHA256 with the set's secret
//     key): no argument (a password given to htpasswd, a key given to
//     encryptAES) is stored in them, and a reader of the keys cannot
//     test a guess of one offline. A value kept under its LegacyKey (a
//     bare SHA-256, as stores were written before) is found too and
//     recorded again under its Key, never made anew.
package generators
