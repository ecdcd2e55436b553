package gitops

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/clusterreader"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/engine"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/event"
	"github.com/fluxcd/cli-utils/pkg/kstatus/polling/statusreaders"
	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FluxResult is what Flux's health check reads of one object: a kstatus
// status (Current, InProgress, Failed, Terminating, NotFound, Unknown)
// and its message.
type FluxResult struct {
	Status  string
	Message string
}

// FluxStatus polls the live objects once with the poller engine of
// kustomize-controller's health checks, as polling.NewStatusPoller builds
// it for a custom resource: the caching cluster reader and the generic
// status reader, kstatus' status.Compute (the poller's other readers are
// for Deployments, StatefulSets and ReplicaSets; the polling package
// itself is not imported for the kubectl dependency of its factory
// constructor). It returns each object's result by "Kind/namespace/name".
func FluxStatus(ctx context.Context, reader client.Reader, mapper meta.RESTMapper, objs []*unstructured.Unstructured) (map[string]FluxResult, error) {
	ids := make(object.ObjMetadataSet, 0, len(objs))
	for _, o := range objs {
		ids = append(ids, object.UnstructuredToObjMetadata(o))
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	poller := &engine.PollerEngine{
		Reader:               reader,
		Mapper:               mapper,
		DefaultStatusReader:  statusreaders.NewGenericStatusReader(mapper, status.Compute),
		ClusterReaderFactory: engine.ClusterReaderFactoryFunc(clusterreader.NewCachingClusterReader),
	}
	events := poller.Poll(ctx, ids, engine.Options{PollInterval: time.Second})
	out := map[string]FluxResult{}
	var err error
	for e := range events { // read to the end: the poller blocks on each event
		switch {
		case e.Type == event.ErrorEvent && err == nil:
			err = e.Error
			cancel()
		case e.Type == event.ResourceUpdateEvent:
			id := e.Resource.Identifier
			out[fmt.Sprintf("%s/%s/%s", id.GroupKind.Kind, id.Namespace, id.Name)] = FluxResult{Status: e.Resource.Status.String(), Message: e.Resource.Message}
			if len(out) == len(ids) {
				cancel()
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if len(out) != len(ids) {
		return nil, fmt.Errorf("polled %d of %d objects: %w", len(out), len(ids), ctx.Err())
	}
	return out, nil
}
