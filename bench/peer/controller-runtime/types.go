package main

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Lifecycle is the CR as a kubebuilder project types it (api/v1alpha1): the spec field the walk
// reads, and a conventional status. The Kind it is registered as is the API server's (see main).
type Lifecycle struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              LifecycleSpec   `json:"spec,omitempty"`
	Status            LifecycleStatus `json:"status,omitempty"`
}

type LifecycleSpec struct {
	DesiredState string `json:"desiredState,omitempty"`
}

type LifecycleStatus struct {
	Phase              string             `json:"phase,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type LifecycleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Lifecycle `json:"items"`
}

// The deep copies controller-gen would generate (zz_generated.deepcopy.go).

func (in *Lifecycle) DeepCopyInto(out *Lifecycle) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	in.Status.DeepCopyInto(&out.Status)
}

func (in *Lifecycle) DeepCopy() *Lifecycle {
	if in == nil {
		return nil
	}
	out := new(Lifecycle)
	in.DeepCopyInto(out)
	return out
}

func (in *Lifecycle) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}

func (in *LifecycleStatus) DeepCopyInto(out *LifecycleStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

func (in *LifecycleList) DeepCopyInto(out *LifecycleList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]Lifecycle, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

func (in *LifecycleList) DeepCopy() *LifecycleList {
	if in == nil {
		return nil
	}
	out := new(LifecycleList)
	in.DeepCopyInto(out)
	return out
}

func (in *LifecycleList) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}
