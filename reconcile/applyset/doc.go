// Package applyset is the KEP-3659 ApplySet as stencil keeps it, with no
// client: the parent (Parent, a Composition or an Instance of a published
// kind), its id (ID, kubectl's formula), the labels and annotations
// kubectl reads, and the Inventory the parent records (the group-kinds and
// namespaces where members may be), parsed and formatted as kubectl does.
package applyset
