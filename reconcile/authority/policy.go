package authority

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Names of stencil's admission objects.
const (
	// PolicyName is the ValidatingAdmissionPolicy that checks every parent
	// (Compositions and the instances of published kinds).
	PolicyName = publish.AccessPolicyName
	// CompositionBindingName is the binding of PolicyName for Compositions.
	CompositionBindingName = "stencil-access"
	// ParamsName is the ConfigMap, in the controller's namespace, that the
	// policy reads: the default ServiceAccounts and the published kinds
	// (see params.go).
	ParamsName = "stencil-access"
	// LabelManagedBy marks the admission objects stencil keeps, with value
	// "stencil".
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// AnnotationKind, on a published kind's binding, is the kind's
	// CustomResourceDefinition name (plural.group) it checks.
	AnnotationKind = "stencil.dev/kind"
)

// maxKindKey bounds the CustomResourceDefinition name of a published
// kind: the policy's ConfigMap keys are "kind.<name>.serviceAccount" and
// the like, and a ConfigMap key is at most 253 characters.
const maxKindKey = 253 - len("kind.") - len(".serviceAccount")

// ownLabels and ownAnnotations are the metadata the controller writes on a
// parent (the ApplySet's): a change of them alone is not checked, and is
// not a change that admits a parent (see Digest).
var (
	ownLabels      = []string{applyset.LabelApplySetID}
	ownAnnotations = []string{applyset.AnnotationTooling, applyset.AnnotationGroupKinds, applyset.AnnotationNamespaces}
)

// celList is a CEL list literal of strings.
func celList(items []string) string {
	return "['" + strings.Join(items, "', '") + "']"
}

// metadataChanged is a CEL expression, true when the labels or the
// annotations named by field differ between the old and the new object,
// but the keys of own.
func metadataChanged(field string, own []string) string {
	r := strings.NewReplacer("$F", field, "$OWN", celList(own))
	return r.Replace(`object.metadata.?$F.orValue({}).exists(k, !(k in $OWN) && oldObject.metadata.?$F.orValue({})[?k] != optional.of(object.metadata.$F[k])) ||
oldObject.metadata.?$F.orValue({}).exists(k, !(k in $OWN) && !(k in object.metadata.?$F.orValue({})))`)
}

// changedCondition is the policy's match condition: a write of the
// status, a create, or an update that changes what a pass reads (the
// spec, the labels and the annotations but the ApplySet's own). The
// controller's updates of a parent (its finalizer, the ApplySet
// metadata) are not checked, so it can finish a deletion whatever the
// policy would say; the ApplySet's own keys change nothing a pass
// renders, prunes or deletes (it acts on its own record,
// status.inventory, see applyset.Recorded).
func changedCondition() string {
	return "request.?subResource.orValue('') == 'status' ||\n" +
		"request.operation == 'CREATE' ||\n" +
		"object.?spec != oldObject.?spec ||\n" +
		metadataChanged("labels", ownLabels) + " ||\n" +
		metadataChanged("annotations", ownAnnotations)
}

// dns1123Subdomain is the pattern of a ServiceAccount's name.
const dns1123Subdomain = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`

// policyVariables are the policy's variables. The ServiceAccount a parent
// is written as: a Composition's spec.serviceAccountName, an instance's
// annotation stencil.dev/service-account-name, else the default of the
// instance's Bundle (kind.<crd>.serviceAccount), else the default of the
// controller that serves the parent's shard (default[.<shard>]); "" is
// the controller itself or nobody (see the reconcile package).
func policyVariables() []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		{Name: "isStatus", Expression: "request.?subResource.orValue('') == 'status'"},
		{Name: "isComposition", Expression: "request.resource.group == 'stencil.dev' && request.resource.resource == 'compositions'"},
		{Name: "data", Expression: "params.?data.orValue({})"},
		{Name: "kindKey", Expression: "'kind.' + request.resource.resource + '.' + request.resource.group"},
		{Name: "shard", Expression: "object.metadata.?labels.orValue({})[?'stencil.dev/shard'].orValue('')"},
		{Name: "defaultKey", Expression: "variables.shard == '' ? 'default' : 'default.' + variables.shard"},
		{Name: "annotations", Expression: "object.metadata.?annotations.orValue({})"},
		{Name: "named", Expression: "variables.isComposition ? object.spec.?serviceAccountName.orValue('') : variables.annotations[?'stencil.dev/service-account-name'].orValue('')"},
		{Name: "kindDefault", Expression: "variables.isComposition ? '' : variables.data[?(variables.kindKey + '.serviceAccount')].orValue('')"},
		{Name: "serviceAccount", Expression: "variables.named != '' ? variables.named : variables.kindDefault != '' ? variables.kindDefault : variables.data[?variables.defaultKey].orValue('')"},
		{Name: "parent", Expression: "request.kind.kind + ' ' + request.namespace + '/' + request.name"},
	}
}

// statusWriter is the CEL test of the requester of a write of a
// parent's status: may it update the policy's parameters (the ConfigMap
// ParamsName of the controller's namespace, whichever that is)? Only
// stencil's controllers may (a Role of their namespace), and cluster
// admins: whoever may already decide what the policy checks, so no one
// is trusted more than the check itself trusts them. It holds for every
// shard's controller, whatever its ServiceAccount, with no list of names
// to keep.
const statusWriter = "authorizer.group('').resource('configmaps').namespace(params.metadata.namespace).name(params.metadata.name).check('update').allowed()"

// policyValidations are the policy's checks, in order. A write of the
// status is checked by the first alone; every other by the rest.
func policyValidations() []admissionregistrationv1.Validation {
	forbidden, invalid := ptr.To(metav1.StatusReasonForbidden), ptr.To(metav1.StatusReasonInvalid)
	return []admissionregistrationv1.Validation{{
		// The proof that the check passed reads the status (its record in
		// status.admission, an earlier stencil's conditions), and prune
		// and finalize act on status.inventory: no one but the controller
		// may write it, whatever RBAC grants.
		Expression: "!variables.isStatus || " + statusWriter,
		MessageExpression: "'user \"' + request.userInfo.username + '\" may not write the status of ' + variables.parent + " +
			"': only the stencil controller does (whoever may update ConfigMap ' + params.metadata.namespace + '/' + params.metadata.name + " +
			"', the parameters of the stencil admission policy)'",
		Reason: forbidden,
	}, {
		// An orphaned CRD, a Bundle being re-published or renamed: no
		// Bundle says what the instance would be.
		Expression:        "variables.isStatus || variables.isComposition || variables.data[?(variables.kindKey + '.bundle')].orValue('') != ''",
		MessageExpression: "'no Bundle publishes ' + request.kind.kind + '.' + request.kind.group + ': stencil serves no instance of it'",
		Reason:            forbidden,
	}, {
		Expression: "variables.isStatus || variables.named != '' || variables.kindDefault != '' || variables.data[?variables.defaultKey].hasValue()",
		MessageExpression: "'no stencil controller serves ' + (variables.shard == '' ? 'unsharded parents' : 'shard ' + variables.shard) + " +
			"' yet: which ServiceAccount ' + variables.parent + ' would be written as is not known (name one, or start the controller)'",
		Reason: forbidden,
	}, {
		Expression:        "variables.isStatus || request.operation == 'CREATE' || !has(oldObject.metadata.deletionTimestamp)",
		MessageExpression: "variables.parent + ' is being deleted: its spec, labels and annotations can no longer change (stencil finalizes it as it was when its deletion began)'",
		Reason:            forbidden,
	}, {
		Expression: "variables.isStatus || variables.isComposition || (" +
			"variables.annotations[?'stencil.dev/suspend'].orValue('true') in ['true', 'false'] && " +
			"variables.annotations[?'stencil.dev/prune'].orValue('true') in ['true', 'false'] && " +
			"variables.annotations[?'stencil.dev/deletion-policy'].orValue('Delete') in ['Delete', 'Orphan'] && " +
			"(!('stencil.dev/service-account-name' in variables.annotations) || " +
			"(size(variables.named) <= 253 && variables.named.matches('" + dns1123Subdomain + "'))))",
		Message: "annotations stencil.dev/suspend and stencil.dev/prune must be \"true\" or \"false\", stencil.dev/deletion-policy Delete or Orphan, " +
			"and stencil.dev/service-account-name the name of a ServiceAccount",
		Reason: invalid,
	}, {
		// Kubernetes' own test of the use of a ServiceAccount: the right
		// to impersonate it, or to create pods in its namespace (a pod
		// may run as any ServiceAccount of its namespace).
		Expression: "variables.isStatus || variables.serviceAccount == '' || " +
			"authorizer.group('').resource('serviceaccounts').namespace(request.namespace).name(variables.serviceAccount).check('impersonate').allowed() || " +
			"authorizer.group('').resource('pods').namespace(request.namespace).check('create').allowed()",
		MessageExpression: "'user \"' + request.userInfo.username + '\" may not use ServiceAccount ' + request.namespace + '/' + variables.serviceAccount + " +
			"': needs impersonate on serviceaccounts \"' + variables.serviceAccount + '\" or create on pods in ' + request.namespace",
		Reason: forbidden,
	}}
}

// Policy is stencil's ValidatingAdmissionPolicy. Its parameters are the
// ConfigMap ParamsName of the controller's namespace; its bindings say
// which kinds it checks (CompositionBinding, KindBinding). It fails
// closed: an expression that cannot be evaluated refuses.
func Policy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: PolicyName, Labels: map[string]string{LabelManagedBy: "stencil"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			// Every kind a binding may name: a binding narrows it to
			// Compositions or to one published kind.
			MatchConstraints: matchResources(rule("*", "*", "*/status")),
			MatchConditions:  []admissionregistrationv1.MatchCondition{{Name: "changes-what-stencil-reads", Expression: changedCondition()}},
			Variables:        policyVariables(),
			Validations:      policyValidations(),
		},
	}
}

// rule matches creates and updates of resources (a resource, or a
// resource/subresource) of group, any version.
func rule(group string, resources ...string) admissionregistrationv1.NamedRuleWithOperations {
	return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources,
			Scope: ptr.To(admissionregistrationv1.AllScopes)},
	}}
}

// matchResources matches rules, with every field the API server would
// default spelled out: a MatchResources is atomic, so an applier whose
// value lacks a default differs from the live object, and the next one
// conflicts with it (kubectl apply --server-side of the install manifest
// after the controller applied the same policy: the upgrade, issue 32).
func matchResources(rules ...admissionregistrationv1.NamedRuleWithOperations) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{
		ResourceRules:     rules,
		MatchPolicy:       ptr.To(admissionregistrationv1.Equivalent),
		NamespaceSelector: &metav1.LabelSelector{},
		ObjectSelector:    &metav1.LabelSelector{},
	}
}

// binding is a binding of the policy for resource of group and its
// status, reading the parameters of namespace; one whose parameters are
// missing refuses.
func binding(name, namespace, group, resource string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelManagedBy: "stencil"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: PolicyName,
			ParamRef: &admissionregistrationv1.ParamRef{Name: ParamsName, Namespace: namespace,
				ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			MatchResources:    matchResources(rule(group, resource, resource+"/status")),
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

// CompositionBinding is the binding of the policy for Compositions, its
// parameters in the controller's namespace.
func CompositionBinding(namespace string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return binding(CompositionBindingName, namespace, "stencil.dev", "compositions")
}

// KindBinding is the binding of the policy for the published kind gr,
// its parameters in the controller's namespace.
func KindBinding(namespace string, gr schema.GroupResource) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	b := binding(KindBindingName(gr), namespace, gr.Group, gr.Resource)
	b.Annotations = map[string]string{AnnotationKind: gr.String()}
	return b
}

// KindBindingName is the name of the published kind gr's binding:
// stencil-access.<plural>.<group>, or a digest of it when that is too
// long for a name (publish.AccessBindingName, which the kind's
// ClusterRole grants by name).
func KindBindingName(gr schema.GroupResource) string {
	return publish.AccessBindingName(gr)
}
