// Package parents reads the parents a command is given in a -f file
// ("-" is stdin): every Composition and every instance of a kind a Bundle
// publishes, in file order, as Documents. It only reads: which Bundle a
// Document renders is found by package session (Session.Resolve), with
// or without a cluster.
//
// Invariants: empty documents and documents of only comments are
// skipped; a document without apiVersion, kind or metadata.name, or one
// of stencil's other kinds (a Bundle, a BundleRevision), is an error
// naming the document's number; a Composition is read strictly (an
// unknown field is an error); a parent without a namespace gets the
// command's (-n, or the kubeconfig's). Describe names a parent the same
// way in every command's messages ("AppService team-a/web").
//
//	docs, err := parents.Read("shop.yaml", os.Stdin, "default")
//	for _, d := range docs {
//		fmt.Println(d.Describe()) // Composition default/shop
//	}
package parents
