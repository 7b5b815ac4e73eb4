// okt-cr-peer: the e2e bench's peer as kubebuilder users write one, on controller-runtime: a manager
// whose cache watches the CRs of one namespace, a controller `For()` the typed CR with N concurrent
// reconciles, and a reconciler that reads the CR from the cache, takes one step of the walk (the
// node's action on the sidecar first, if it has one), writes it with r.Status().Update and returns:
// the watch event of its own write brings the CR back for the next step. A 409 (the cache older than
// the server) is counted and dropped: the watch brings the newer object too. Its status is the
// client-go peer's (phase + observedGeneration + conditions [Ready], meta.SetStatusCondition).
// With --objects it also makes three objects per CR (objects.go) and Owns() their kinds.
//
// The walk, the sidecar calls and the stdin protocol are the walk package's (../walk).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"okt.dev/bench-peer/walk"
)

const name = "okt-cr-peer"

// Read by walk.ParseFlags with the shared flags.
var withObjects = flag.Bool("objects", false, "make a Service, a Secret and a ConfigMap per CR (CreateOrUpdate) and watch them (Owns)")

type reconciler struct {
	client.Client
	routes  walk.Routes
	sidecar *walk.Sidecar
	n       *walk.Counters
	objects bool
}

func main() {
	o := walk.ParseFlags()
	routes, err := walk.ReadRoutes(o.Routes)
	walk.Must(name, err)
	// Errors only (a failed reconcile), on stderr.
	ctrl.SetLogger(zap.New(zap.Level(zapcore.ErrorLevel)))
	cfg, err := o.RESTConfig(name)
	walk.Must(name, err)
	scheme, err := schemeFor(cfg, o)
	walk.Must(name, err)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{o.Namespace: {}}},
	})
	walk.Must(name, err)

	var n walk.Counters
	sidecar, err := walk.NewSidecar(o, routes.Graph, &n.SidecarCalls)
	walk.Must(name, err)
	r := &reconciler{Client: mgr.GetClient(), routes: routes, sidecar: sidecar, n: &n, objects: *withObjects}
	builder := ctrl.NewControllerManagedBy(mgr).
		For(&Lifecycle{}).
		Named("lifecycle").
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers})
	if r.objects {
		builder = builder.Owns(&corev1.Service{}).Owns(&corev1.Secret{}).Owns(&corev1.ConfigMap{})
	}
	walk.Must(name, builder.Complete(r))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Created before the manager starts, so that WaitForCacheSync waits for its list.
	_, err = mgr.GetCache().GetInformer(ctx, &Lifecycle{}, cache.BlockUntilSynced(false))
	walk.Must(name, err)
	go func() { walk.Must(name, mgr.Start(ctx)) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		walk.Must(name, fmt.Errorf("the cache never synced"))
	}
	walk.Serve(&n, func() int {
		var list LifecycleList
		if err := mgr.GetCache().List(ctx, &list); err != nil {
			return -1
		}
		return len(list.Items)
	})
}

// schemeFor registers Lifecycle as the Kind the API server serves the flags' resource as, and the core kinds of the objects.
func schemeFor(cfg *rest.Config, o walk.Options) (*runtime.Scheme, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	gvk, err := mapper.KindFor(o.Resource)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gvk, &Lifecycle{})
	scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &LifecycleList{})
	metav1.AddToGroupVersion(scheme, gvk.GroupVersion())
	return scheme, corev1.AddToScheme(scheme)
}

// Reconcile takes one step of the CR's walk and writes it.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.n.Reconciles.Add(1)
	var cr Lifecycle
	if err := r.Get(ctx, req.NamespacedName, &cr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ready := meta.FindStatusCondition(cr.Status.Conditions, "Ready")
	settled := cr.Status.ObservedGeneration == cr.Generation && ready != nil && ready.Status == metav1.ConditionTrue
	step := r.routes.Decide(cr.Status.Phase, cr.Spec.DesiredState, settled)
	if r.objects {
		// Every reconcile makes the objects of the node the CR is at, or enters (level-based, as
		// kubebuilder reconcilers are): an owned object deleted or changed is put back.
		node := step.Phase
		if step.Rest {
			node = cr.Status.Phase
		}
		if err := r.makeObjects(ctx, &cr, node); err != nil {
			r.n.Errors.Add(1)
			return ctrl.Result{}, err
		}
	}
	if step.Rest {
		return ctrl.Result{}, nil
	}
	if step.Action {
		if err := r.sidecar.Run(ctx, walk.OperationID(string(cr.UID), cr.Generation, step.Phase), step.Phase); err != nil {
			r.n.Errors.Add(1)
			return ctrl.Result{}, err
		}
	}
	cr.Status.Phase = step.Phase
	cr.Status.ObservedGeneration = cr.Generation
	meta.SetStatusCondition(&cr.Status.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionStatus(step.Ready), Reason: step.Reason, Message: step.Message, ObservedGeneration: cr.Generation,
	})
	if err := r.Status().Update(ctx, &cr); err != nil {
		if apierrors.IsConflict(err) {
			r.n.Conflicts.Add(1)
			return ctrl.Result{}, nil
		}
		r.n.Errors.Add(1)
		return ctrl.Result{}, err
	}
	r.n.Updates.Add(1)
	if cr.Status.Phase != step.Phase {
		// The CRD's status schema pruned status.phase: the peer would walk from the entry forever.
		fmt.Fprintf(os.Stderr, "%s: the API server dropped status.phase of %s (the CRD's status schema does not keep it)\n", name, req.NamespacedName)
		os.Exit(2)
	}
	return ctrl.Result{}, nil
}
