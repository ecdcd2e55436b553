package migration

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// pass is one pass of the migration of crd's instances to storage, for
// bundle, whose status.storage st becomes.
type pass struct {
	m       *Migrator
	bundle  *v1alpha1.Bundle
	crd     *apiextensionsv1.CustomResourceDefinition
	storage string
	st      v1alpha1.StorageStatus
	// written counts writtenIn over the items listed in this pass.
	written counts
}

// run migrates every instance (rewriteAll), then trims the CRD's
// status.storedVersions (Migrator.trim), recording progress in
// status.storage as it goes; an error leaves it as far as it got.
func (p *pass) run(ctx context.Context) error {
	p.st = p.resumed()
	p.st.Message = fmt.Sprintf("rewriting every instance in the storage version %s", p.storage)
	if err := p.save(ctx); err != nil {
		return err
	}
	done, err := p.rewriteAll(ctx)
	if err != nil {
		return p.failed(ctx, err)
	}
	if !done {
		return nil
	}
	ok, err := p.m.trim(ctx, p.crd.Name, p.storage, p.st.CRDGeneration)
	if err != nil {
		return p.failed(ctx, err)
	}
	if !ok {
		// The CRD changed since: its change brings a pass that starts over.
		return nil
	}
	now := metav1.Now().Rfc3339Copy()
	p.st.Phase, p.st.CompletionTime = v1alpha1.StorageMigrated, &now
	p.st.Message = migratedMessage(p.storage)
	p.warn()
	if err := p.save(ctx); err != nil {
		return err
	}
	p.m.recorder.Eventf(p.bundle, nil, "Normal", v1alpha1.ReasonStorageMigrated, "MigrateStorage",
		"%d instances of %s rewritten in %s; status.storedVersions of CustomResourceDefinition %s is [%s]",
		p.st.Migrated, p.crd.Spec.Names.Kind, p.storage, p.crd.Name, p.storage)
	return nil
}

// resumed is the status.storage a pass starts from: the migration
// recorded, if it is the one to the same storage version at the same CRD
// generation and not complete; else a new one.
func (p *pass) resumed() v1alpha1.StorageStatus {
	if st := p.bundle.Status.Storage; st != nil && st.Phase == v1alpha1.StorageMigrating &&
		st.TargetVersion == p.storage && st.CRDGeneration == p.crd.Generation && st.StartTime != nil {
		return *st.DeepCopy()
	}
	now := metav1.Now().Rfc3339Copy()
	return v1alpha1.StorageStatus{Phase: v1alpha1.StorageMigrating, TargetVersion: p.storage, CRDGeneration: p.crd.Generation, StartTime: &now}
}

// failed records err in status.storage.message and returns it; a pass
// stopped (the controller stopping, or losing its lead) records nothing
// more: the progress of the pages done is recorded already.
func (p *pass) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	p.st.Message = fmt.Sprintf("the migration to %s stopped after %d instances (it resumes after %q): %v", p.storage, p.st.Migrated, p.st.LastKey, err)
	if serr := p.save(ctx); serr != nil {
		ctrl.LoggerFrom(ctx).Error(serr, "record the storage migration's progress", "bundle", p.bundle.Name)
	}
	return err
}

// rewriteAll lists the instances in pages, in the storage version, and
// rewrites each after st.LastKey (rewrite), recording progress after each
// page. It returns done false when the test hook ended the pass.
func (p *pass) rewriteAll(ctx context.Context) (done bool, err error) {
	gvk := schema.GroupVersionKind{Group: p.crd.Spec.Group, Version: p.storage, Kind: listKind(p.crd)}
	cont := ""
	p.written, p.st.Listed = counts{}, 0
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		err := p.m.reader.List(ctx, list, client.Limit(p.m.opts.PageSize), client.Continue(cont))
		if apierrors.IsResourceExpired(err) && cont != "" {
			// The listing's snapshot is gone: list from the start again,
			// skipping what is done.
			cont, p.written, p.st.Listed = "", counts{}, 0
			continue
		}
		if err != nil {
			return false, fmt.Errorf("list the instances of %s in %s: %w", p.crd.Spec.Names.Kind, p.storage, err)
		}
		for i := range list.Items {
			if err := p.rewrite(ctx, &list.Items[i]); err != nil {
				return false, err
			}
		}
		p.st.WrittenIn = p.written.list()
		if err := p.save(ctx); err != nil {
			return false, err
		}
		if p.m.afterPage != nil && !p.m.afterPage(*p.st.DeepCopy()) {
			return false, nil
		}
		if cont = list.GetContinue(); cont == "" {
			return true, nil
		}
	}
}

// rewrite writes obj back as it was read, unless it is at or before
// st.LastKey (done before a restart). A Conflict (written since, so in
// the storage version) or NotFound (deleted) counts as done.
func (p *pass) rewrite(ctx context.Context, obj *unstructured.Unstructured) error {
	p.st.Listed++
	p.written.add(obj)
	key := keyOf(obj)
	if p.st.LastKey != "" && key <= p.st.LastKey {
		return nil
	}
	if err := p.m.limiter.Wait(ctx); err != nil {
		return err
	}
	err := p.m.client.Update(ctx, obj, client.FieldOwner(FieldManager))
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("rewrite %s %s in %s: %w", p.crd.Spec.Names.Kind, key, p.storage, err)
	}
	p.st.Migrated++
	p.st.LastKey = key
	return nil
}

// keyOf is obj's key in the order the API server lists: namespace/name,
// or its name when cluster-scoped.
func keyOf(obj client.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// listKind is the kind of a list of crd's instances.
func listKind(crd *apiextensionsv1.CustomResourceDefinition) string {
	if k := crd.Spec.Names.ListKind; k != "" {
		return k
	}
	return crd.Spec.Names.Kind + "List"
}

// migratedMessage says that every instance is stored in storage.
func migratedMessage(storage string) string {
	return fmt.Sprintf("every instance is stored in %s, the only entry of status.storedVersions", storage)
}
