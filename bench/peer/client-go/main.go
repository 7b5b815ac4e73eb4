// okt-peer: the e2e bench's hand-tuned peer, from client-go alone: a dynamic informer on the CRs of
// one namespace, a rate-limited work queue, N workers, and one status update (PUT /status) per
// transition, with a conventional status: phase + observedGeneration + conditions [Ready]. Unlike the
// controller-runtime peer (../controller-runtime) it walks each CR all the way in one reconcile, from
// the object each update returns, and skips a cached copy older than its own last write, so a stale
// cache costs it no 409 (okt too works from its cache plus what it wrote itself).
//
// The walk, the sidecar calls and the stdin protocol are the walk package's (../walk).
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"okt.dev/bench-peer/walk"
)

const name = "okt-peer"

type peer struct {
	client  dynamic.ResourceInterface
	indexer cache.Indexer
	queue   workqueue.TypedRateLimitingInterface[string]
	routes  walk.Routes
	sidecar *walk.Sidecar
	// The resourceVersion of each CR's status as this process last wrote it.
	written sync.Map
	n       walk.Counters
}

func main() {
	o := walk.ParseFlags()
	routes, err := walk.ReadRoutes(o.Routes)
	walk.Must(name, err)
	cfg, err := o.RESTConfig(name)
	walk.Must(name, err)
	dyn, err := dynamic.NewForConfig(cfg)
	walk.Must(name, err)

	p := &peer{
		client: dyn.Resource(o.Resource).Namespace(o.Namespace),
		queue:  workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](), workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		routes: routes,
	}
	p.sidecar, err = walk.NewSidecar(o, routes.Graph, &p.n.SidecarCalls)
	walk.Must(name, err)

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, o.Namespace, nil)
	informer := factory.ForResource(o.Resource).Informer()
	enqueue := func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.queue.Add(key)
		}
	}
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	walk.Must(name, err)
	p.indexer = informer.GetIndexer()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		walk.Must(name, fmt.Errorf("the informer never synced"))
	}
	for i := 0; i < o.Workers; i++ {
		go func() {
			for p.processNext(ctx) {
			}
		}()
	}
	walk.Serve(&p.n, func() int { return len(p.indexer.ListKeys()) })
}

func (p *peer) processNext(ctx context.Context) bool {
	key, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(key)
	p.n.Reconciles.Add(1)
	if err := p.reconcile(ctx, key); err != nil {
		if apierrors.IsConflict(err) {
			p.n.Conflicts.Add(1)
		} else {
			p.n.Errors.Add(1)
			fmt.Fprintf(os.Stderr, "%s: %s: %v\n", name, key, err)
		}
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// reconcile walks one CR toward spec.desiredState, one status update per transition, from the
// object each update returns (no read in between).
func (p *peer) reconcile(ctx context.Context, key string) error {
	obj, exists, err := p.indexer.GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		p.written.Delete(key)
		return nil
	}
	u := obj.(*unstructured.Unstructured)
	if last, ok := p.written.Load(key); ok && olderThan(u.GetResourceVersion(), last.(string)) {
		p.n.SkippedStale.Add(1)
		return nil
	}
	u = u.DeepCopy()
	for {
		desired, _, _ := unstructured.NestedString(u.Object, "spec", "desiredState")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		step := p.routes.Decide(phase, desired, observed == u.GetGeneration() && readyStatus(u) == "True")
		if step.Rest {
			return nil
		}
		if step.Action {
			if err := p.sidecar.Run(ctx, walk.OperationID(string(u.GetUID()), u.GetGeneration(), step.Phase), step.Phase); err != nil {
				return err
			}
		}
		updated, err := p.write(ctx, key, u, step)
		if err != nil || step.Last {
			return err
		}
		u = updated.DeepCopy()
	}
}

// write sets phase, observedGeneration and the Ready condition, and updates /status once.
func (p *peer) write(ctx context.Context, key string, u *unstructured.Unstructured, step walk.Step) (*unstructured.Unstructured, error) {
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	if status == nil {
		status = map[string]interface{}{}
	}
	generation := u.GetGeneration()
	status["phase"] = step.Phase
	status["observedGeneration"] = generation
	status["conditions"] = setCondition(status["conditions"], map[string]interface{}{
		"type": "Ready", "status": step.Ready, "reason": step.Reason, "message": step.Message, "observedGeneration": generation,
	})
	u.Object["status"] = status
	updated, err := p.client.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	p.n.Updates.Add(1)
	if got, _, _ := unstructured.NestedString(updated.Object, "status", "phase"); got != step.Phase {
		// The CRD's status schema pruned status.phase: the peer would walk from the entry forever.
		fmt.Fprintf(os.Stderr, "%s: the API server dropped status.phase of %s (the CRD's status schema does not keep it)\n", name, key)
		os.Exit(2)
	}
	p.written.Store(key, updated.GetResourceVersion())
	return updated, nil
}

// setCondition replaces the condition of the same type, keeping lastTransitionTime when its status
// did not change: apimachinery's meta.SetStatusCondition on an unstructured status.
func setCondition(existing interface{}, c map[string]interface{}) []interface{} {
	now := time.Now().UTC().Format(time.RFC3339)
	list, _ := existing.([]interface{})
	out := make([]interface{}, 0, len(list)+1)
	replaced := false
	for _, item := range list {
		old, ok := item.(map[string]interface{})
		if ok && old["type"] == c["type"] {
			c["lastTransitionTime"] = now
			if old["status"] == c["status"] && old["lastTransitionTime"] != nil {
				c["lastTransitionTime"] = old["lastTransitionTime"]
			}
			out = append(out, c)
			replaced = true
			continue
		}
		out = append(out, item)
	}
	if !replaced {
		c["lastTransitionTime"] = now
		out = append(out, c)
	}
	return out
}

func readyStatus(u *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, item := range conditions {
		if c, ok := item.(map[string]interface{}); ok && c["type"] == "Ready" {
			s, _ := c["status"].(string)
			return s
		}
	}
	return ""
}

// olderThan compares resourceVersions as etcd revisions (opaque to clients in general, integers here).
func olderThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}
