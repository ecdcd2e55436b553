// Package hooks runs the Helm hooks of a pass (Runner.Start, Run.Stages):
// stage by stage by weight and kind, each waited on until it succeeded; a
// hook of an earlier revision is replaced once it has finished, never cut
// short, and a hook is deleted by its policy only with a UID precondition.
// An existing object of a hook's name is replaced or deleted only when the
// ownership test (applyset.Owns) finds it a member of the set (its UID in
// the set's record: a hook stencil applied) or adoptable; anything else,
// an object merely labelled into the set included, stalls the parent
// (AdoptionRefused) and is left alone.
//
// The record of hooks run (status.hooks: revision, event and every hook
// that ran to an end) is written to the parent's status as soon as a hook
// ends (persist), before it is deleted or the pass stalls on it, so that a
// crash never runs a hook twice. It is the one status write besides the
// pass's own. Pending names the post- hooks that keep a parent from Ready.
package hooks
