// okt-peer: the e2e bench's peer baseline. An operator built the way kubebuilder users build theirs,
// from client-go alone (the Debian `kubernetes` source tree has no controller-runtime): a dynamic
// informer on the CRs of one namespace, a rate-limited work queue, N workers, and one status update
// (PUT /status, as controller-runtime's r.Status().Update does) per transition, with a conventional
// status: phase + observedGeneration + conditions [Ready].
//
// It walks each CR from status.phase (the graph's entry when there is none) toward spec.desiredState
// along the routes the bench passes (the same planner okt uses, written out as JSON), and before
// entering a node with an action it runs that action on the same sidecar okt uses (PUT
// /v1/operations/{id}, then GET ?wait= until it has finished), so the API server and the sidecar see
// the same calls per transition as with okt.
//
// Protocol with the bench: "synced" on stdout once the informer has listed; one JSON line on stdout
// per command read on stdin ("mem": RSS after a GC and FreeOSMemory; "stats": counters); exits when
// stdin closes.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/ioutil"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

// Routes is the graph as the bench writes it: next[desired][current] is the node to enter next.
type Routes struct {
	Graph   string                       `json:"graph"`
	Entry   string                       `json:"entry"`
	Next    map[string]map[string]string `json:"next"`
	Actions []string                     `json:"actions"`
}

type counters struct {
	reconciles, updates, conflicts, errors, sidecarCalls, skippedStale int64
}

type peer struct {
	client     dynamic.ResourceInterface
	indexer    cache.Indexer
	queue      workqueue.RateLimitingInterface
	routes     Routes
	hasAction  map[string]bool
	sidecarURL string
	token      string
	http       *http.Client
	// The resourceVersion of each CR's status as this process last wrote it: a cached copy older than
	// it is skipped (the watch brings the newer one), so a stale cache costs no 409 (okt too works from
	// its cache plus what it wrote itself).
	written sync.Map
	n       counters
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	group := flag.String("group", "okt.dev", "API group of the CRs")
	version := flag.String("version", "v1alpha1", "API version")
	resource := flag.String("resource", "databases", "plural resource name")
	namespace := flag.String("namespace", "default", "namespace to watch")
	workers := flag.Int("workers", 64, "reconcile workers")
	routesFile := flag.String("routes", "", "JSON file of the graph's routes (see Routes)")
	sidecarURL := flag.String("sidecar-url", "", "the sidecar to run actions on (empty: no action is run)")
	tokenFile := flag.String("sidecar-token-file", "", "bearer token of the sidecar")
	qps := flag.Float64("qps", -1, "client-side rate limit (client-go's default is 5, controller-runtime's 20; <0: none)")
	flag.Parse()

	var routes Routes
	must(readJSON(*routesFile, &routes))
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	must(err)
	cfg.QPS = float32(*qps)
	cfg.Burst = 1 << 20
	cfg.UserAgent = "okt-peer"
	dyn, err := dynamic.NewForConfig(cfg)
	must(err)
	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}

	p := &peer{
		client:     dyn.Resource(gvr).Namespace(*namespace),
		queue:      workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "okt-peer"),
		routes:     routes,
		hasAction:  map[string]bool{},
		sidecarURL: strings.TrimRight(*sidecarURL, "/"),
		http:       &http.Client{Transport: &http.Transport{MaxIdleConns: *workers, MaxIdleConnsPerHost: *workers, IdleConnTimeout: 90 * time.Second}},
	}
	for _, node := range routes.Actions {
		p.hasAction[node] = true
	}
	if *tokenFile != "" {
		token, err := ioutil.ReadFile(*tokenFile)
		must(err)
		p.token = strings.TrimSpace(string(token))
	}

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, *namespace, nil)
	informer := factory.ForResource(gvr).Informer()
	enqueue := func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			p.queue.Add(key)
		}
	}
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	p.indexer = informer.GetIndexer()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		fmt.Fprintln(os.Stderr, "okt-peer: the informer never synced")
		os.Exit(1)
	}
	for i := 0; i < *workers; i++ {
		go func() {
			for p.processNext(ctx) {
			}
		}()
	}
	fmt.Println("synced")

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch strings.TrimSpace(in.Text()) {
		case "mem":
			runtime.GC()
			debug.FreeOSMemory()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			printJSON(map[string]interface{}{"rss": rssBytes(), "heapInuse": ms.HeapInuse, "heapAlloc": ms.HeapAlloc, "cached": len(p.indexer.ListKeys())})
		case "stats":
			printJSON(map[string]int64{
				"reconciles": atomic.LoadInt64(&p.n.reconciles), "updates": atomic.LoadInt64(&p.n.updates),
				"conflicts": atomic.LoadInt64(&p.n.conflicts), "errors": atomic.LoadInt64(&p.n.errors),
				"sidecarCalls": atomic.LoadInt64(&p.n.sidecarCalls), "skippedStale": atomic.LoadInt64(&p.n.skippedStale),
			})
		}
	}
	// Stdin closed: the bench is done with it (or gone). Exit at once, without stopping the informer
	// (which would log a "very short watch" for a peer that lived less than a second).
	os.Exit(0)
}

func (p *peer) processNext(ctx context.Context) bool {
	item, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(item)
	key := item.(string)
	atomic.AddInt64(&p.n.reconciles, 1)
	if err := p.reconcile(ctx, key); err != nil {
		if apierrors.IsConflict(err) {
			atomic.AddInt64(&p.n.conflicts, 1)
		} else {
			atomic.AddInt64(&p.n.errors, 1)
			fmt.Fprintf(os.Stderr, "okt-peer: %s: %v\n", key, err)
		}
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(item)
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
		atomic.AddInt64(&p.n.skippedStale, 1)
		return nil
	}
	u = u.DeepCopy()
	for {
		desired, _, _ := unstructured.NestedString(u.Object, "spec", "desiredState")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if phase == "" {
			phase = p.routes.Entry
		}
		generation := u.GetGeneration()
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		next := phase
		if phase == desired {
			if observed == generation && readyStatus(u) == "True" {
				return nil
			}
		} else {
			hop, ok := p.routes.Next[desired][phase]
			if !ok {
				_, err := p.write(ctx, key, u, phase, generation, "False", "Unreachable", fmt.Sprintf("%s cannot be reached from %s", desired, phase))
				return err
			}
			next = hop
			if p.hasAction[next] {
				if err := p.runAction(ctx, fmt.Sprintf("peer-%s-%d-%s", u.GetUID(), generation, next), next); err != nil {
					return err
				}
			}
		}
		ready, reason, message := "False", "Progressing", fmt.Sprintf("at %s, on the way to %s", next, desired)
		if next == desired {
			ready, reason, message = "True", "Arrived", fmt.Sprintf("at %s", next)
		}
		updated, err := p.write(ctx, key, u, next, generation, ready, reason, message)
		if err != nil || next == desired {
			return err
		}
		u = updated.DeepCopy()
	}
}

// write sets phase, observedGeneration and the Ready condition, and updates /status once.
func (p *peer) write(ctx context.Context, key string, u *unstructured.Unstructured, phase string, generation int64, ready, reason, message string) (*unstructured.Unstructured, error) {
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	if status == nil {
		status = map[string]interface{}{}
	}
	status["phase"] = phase
	status["observedGeneration"] = generation
	status["conditions"] = setCondition(status["conditions"], map[string]interface{}{
		"type": "Ready", "status": ready, "reason": reason, "message": message, "observedGeneration": generation,
	})
	u.Object["status"] = status
	updated, err := p.client.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	atomic.AddInt64(&p.n.updates, 1)
	if got, _, _ := unstructured.NestedString(updated.Object, "status", "phase"); got != phase {
		// The CRD's status schema pruned status.phase: the peer would walk from the entry forever.
		fmt.Fprintf(os.Stderr, "okt-peer: the API server dropped status.phase of %s (the CRD's status schema does not keep it)\n", key)
		os.Exit(2)
	}
	p.written.Store(key, updated.GetResourceVersion())
	return updated, nil
}

// setCondition replaces the condition of the same type, keeping lastTransitionTime when its status
// did not change (as apimachinery's meta.SetStatusCondition does).
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

// runAction starts the node's action as operation id on the sidecar and long-polls until it ends.
func (p *peer) runAction(ctx context.Context, id, node string) error {
	if p.sidecarURL == "" {
		return nil
	}
	body, _ := json.Marshal(map[string]string{"graph": p.routes.Graph, "node": node})
	phase, err := p.sidecarCall(ctx, http.MethodPut, "/v1/operations/"+id, body)
	for err == nil && !terminal(phase) {
		phase, err = p.sidecarCall(ctx, http.MethodGet, "/v1/operations/"+id+"?wait=20000", nil)
	}
	if err != nil {
		return err
	}
	if phase != "Succeeded" {
		return fmt.Errorf("operation %s ended %s", id, phase)
	}
	return nil
}

func (p *peer) sidecarCall(ctx context.Context, method, path string, body []byte) (string, error) {
	atomic.AddInt64(&p.n.sidecarCalls, 1)
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.sidecarURL+path, reader)
	if err != nil {
		return "", err
	}
	req.Header.Set("authorization", "Bearer "+p.token)
	req.Header.Set("accept", "application/json")
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	res, err := p.http.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	text, err := ioutil.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, text)
	}
	var op struct {
		Phase string `json:"phase"`
	}
	if err := json.Unmarshal(text, &op); err != nil {
		return "", err
	}
	return op.Phase, nil
}

func terminal(phase string) bool {
	return phase == "Succeeded" || phase == "Failed" || phase == "Cancelled"
}

// olderThan compares resourceVersions as etcd revisions (opaque to clients in general, integers here).
func olderThan(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

func rssBytes() int64 {
	text, err := ioutil.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			fields := strings.Fields(line)
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return -1
}

func readJSON(path string, into interface{}) error {
	text, err := ioutil.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(text, into)
}

func printJSON(v interface{}) {
	text, _ := json.Marshal(v)
	fmt.Println(string(text))
}

func must(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "okt-peer: %v\n", err)
		os.Exit(1)
	}
}
