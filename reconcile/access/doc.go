// Package access answers what the controller and the ServiceAccounts of
// parents may do with member kinds, by access reviews whose answers it
// keeps for a while (Checker), and describes a refusal (DeniedError: the
// subject, the verb, the kind and how to grant it). The pass stalls with
// reason Forbidden on a DeniedError.
package access
