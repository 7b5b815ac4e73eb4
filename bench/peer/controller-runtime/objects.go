package main

// The objects walk (--objects): each CR makes three objects, as a kubebuilder reconciler makes them,
// with controllerutil.CreateOrUpdate and the CR as their controller (SetControllerReference): a
// headless Service named as the CR, a Secret <cr>-keys and a ConfigMap <cr>-config whose data names the node
// the CR enters. They are the objects of the bench's stack graph (bench/objects-graph.ts) with the
// same content, so the two operators make the same writes' worth of objects.

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// makeObjects makes (or updates, when they differ) the CR's three objects for `node`.
func (r *reconciler) makeObjects(ctx context.Context, cr *Lifecycle, node string) error {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: cr.Namespace} }
	service := &corev1.Service{ObjectMeta: meta(cr.Name)}
	secret := &corev1.Secret{ObjectMeta: meta(cr.Name + "-keys")}
	config := &corev1.ConfigMap{ObjectMeta: meta(cr.Name + "-config")}
	mutations := []struct {
		obj    client.Object
		mutate func()
	}{
		{service, func() {
			service.Spec.ClusterIP = corev1.ClusterIPNone
			service.Spec.Selector = map[string]string{"app": cr.Name}
			// Protocol and targetPort as the API server defaults them: else every reconcile would update.
			service.Spec.Ports = []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}}
		}},
		{secret, func() { secret.Data = map[string][]byte{"key": []byte("kept")} }},
		{config, func() { config.Data = map[string]string{"node": node} }},
	}
	for _, m := range mutations {
		done, err := controllerutil.CreateOrUpdate(ctx, r.Client, m.obj, func() error {
			m.mutate()
			return controllerutil.SetControllerReference(cr, m.obj, r.Scheme())
		})
		// A write was sent when the object was created or updated, or when the write was refused (the
		// Get, from the cache, does not fail); none when it already was as mutated.
		if err != nil || done != controllerutil.OperationResultNone {
			r.n.ObjectWrites.Add(1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
