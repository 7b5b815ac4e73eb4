// Package walk is what both of the bench's peer operators share, so that they differ only in the
// stack they are built on: their flags, the graph's routes and the step a reconcile takes along them,
// the sidecar calls that run a node's action, their counters, and the stdin protocol the bench drives
// them by ("synced" once the cache has listed; one JSON line per command: "mem" is the RSS after a GC
// and FreeOSMemory, "stats" the counters; exit when stdin closes).
package walk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options are the flags both peers take.
type Options struct {
	Kubeconfig, Namespace, Routes, SidecarURL, SidecarTokenFile string
	Resource                                                    schema.GroupVersionResource
	Workers                                                     int
	QPS                                                         float64
}

// ParseFlags reads the command line.
func ParseFlags() Options {
	var o Options
	// controller-runtime's config package defines --kubeconfig itself (for ctrl.GetConfig).
	if flag.Lookup("kubeconfig") == nil {
		flag.String("kubeconfig", "", "kubeconfig file")
	}
	flag.StringVar(&o.Resource.Group, "group", "okt.dev", "API group of the CRs")
	flag.StringVar(&o.Resource.Version, "version", "v1alpha1", "API version")
	flag.StringVar(&o.Resource.Resource, "resource", "databases", "plural resource name")
	flag.StringVar(&o.Namespace, "namespace", "default", "namespace to watch")
	flag.IntVar(&o.Workers, "workers", 64, "reconcile workers")
	flag.StringVar(&o.Routes, "routes", "", "JSON file of the graph's routes (see Routes)")
	flag.StringVar(&o.SidecarURL, "sidecar-url", "", "the sidecar to run actions on (empty: no action is run)")
	flag.StringVar(&o.SidecarTokenFile, "sidecar-token-file", "", "bearer token of the sidecar")
	flag.Float64Var(&o.QPS, "qps", -1, "client-side rate limit (client-go's default is 5; controller-runtime's is none, as here; <0: none)")
	flag.Parse()
	o.Kubeconfig = flag.Lookup("kubeconfig").Value.String()
	return o
}

// RESTConfig is the kubeconfig's, with the client-side rate limit of the flags.
func (o Options) RESTConfig(userAgent string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = float32(o.QPS)
	cfg.Burst = 1 << 20
	cfg.UserAgent = userAgent
	return cfg, nil
}

// Routes is the graph as the bench writes it: Next[desired][current] is the node to enter next.
type Routes struct {
	Graph   string                       `json:"graph"`
	Entry   string                       `json:"entry"`
	Next    map[string]map[string]string `json:"next"`
	Actions []string                     `json:"actions"`
}

// ReadRoutes reads the routes file the bench wrote.
func ReadRoutes(path string) (Routes, error) {
	var r Routes
	text, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(text, &r)
}

// Step is one status write of a walk: the phase to write, whether its node's action runs first, and
// the Ready condition (status, reason, message) that goes with it.
type Step struct {
	// Rest: the CR is at its desired node, Ready for its generation: nothing to write.
	Rest bool
	// Last: no write follows this one (the desired node reached, or unreachable).
	Last                   bool
	Phase                  string
	Action                 bool
	Ready, Reason, Message string
}

// Decide is the step from `phase` (the entry when empty) toward `desired`; `settled` says the status
// is Ready for the CR's generation.
func (r Routes) Decide(phase, desired string, settled bool) Step {
	if phase == "" {
		phase = r.Entry
	}
	if phase == desired {
		if settled {
			return Step{Rest: true}
		}
		return Step{Last: true, Phase: phase, Ready: "True", Reason: "Arrived", Message: "at " + phase}
	}
	next, ok := r.Next[desired][phase]
	if !ok {
		return Step{Last: true, Phase: phase, Ready: "False", Reason: "Unreachable", Message: fmt.Sprintf("%s cannot be reached from %s", desired, phase)}
	}
	step := Step{Last: next == desired, Phase: next, Action: r.hasAction(next), Ready: "False", Reason: "Progressing", Message: fmt.Sprintf("at %s, on the way to %s", next, desired)}
	if step.Last {
		step.Ready, step.Reason, step.Message = "True", "Arrived", "at "+next
	}
	return step
}

func (r Routes) hasAction(node string) bool {
	for _, a := range r.Actions {
		if a == node {
			return true
		}
	}
	return false
}

// OperationID names the action of entering `node` for one generation of one CR: a retry of the same
// step starts no second operation (the sidecar answers the one it has).
func OperationID(uid string, generation int64, node string) string {
	return fmt.Sprintf("peer-%s-%d-%s", uid, generation, node)
}

// Counters are what "stats" answers. ObjectWrites: the requests that created or updated an owned
// object (a refused one included), for a peer that makes objects.
type Counters struct {
	Reconciles, Updates, Conflicts, Errors, SidecarCalls, SkippedStale, ObjectWrites atomic.Int64
}

// Sidecar runs a node's action on the sidecar okt uses: PUT /v1/operations/{id}, then GET ?wait=
// until it has finished, so the sidecar sees the same calls per transition as with okt.
type Sidecar struct {
	url, token, graph string
	http              *http.Client
	calls             *atomic.Int64
}

// NewSidecar is nil when the flags name no sidecar (no action is run).
func NewSidecar(o Options, graph string, calls *atomic.Int64) (*Sidecar, error) {
	if o.SidecarURL == "" {
		return nil, nil
	}
	s := &Sidecar{
		url:   strings.TrimRight(o.SidecarURL, "/"),
		graph: graph,
		http:  &http.Client{Transport: &http.Transport{MaxIdleConns: o.Workers, MaxIdleConnsPerHost: o.Workers, IdleConnTimeout: 90 * time.Second}},
		calls: calls,
	}
	if o.SidecarTokenFile != "" {
		token, err := os.ReadFile(o.SidecarTokenFile)
		if err != nil {
			return nil, err
		}
		s.token = strings.TrimSpace(string(token))
	}
	return s, nil
}

// Run starts `node`'s action as operation `id` and long-polls until it ends; a nil Sidecar runs nothing.
func (s *Sidecar) Run(ctx context.Context, id, node string) error {
	if s == nil {
		return nil
	}
	body, _ := json.Marshal(map[string]string{"graph": s.graph, "node": node})
	phase, err := s.call(ctx, http.MethodPut, "/v1/operations/"+id, body)
	for err == nil && !terminal(phase) {
		phase, err = s.call(ctx, http.MethodGet, "/v1/operations/"+id+"?wait=20000", nil)
	}
	if err != nil {
		return err
	}
	if phase != "Succeeded" {
		return fmt.Errorf("operation %s ended %s", id, phase)
	}
	return nil
}

func (s *Sidecar) call(ctx context.Context, method, path string, body []byte) (string, error) {
	s.calls.Add(1)
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, reader)
	if err != nil {
		return "", err
	}
	req.Header.Set("authorization", "Bearer "+s.token)
	req.Header.Set("accept", "application/json")
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	res, err := s.http.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	text, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
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

// Serve says "synced", then answers the bench's commands on stdin until it closes, and exits at once
// (stopping the informers would log a "very short watch" for a peer that lived less than a second).
// `cached` counts the CRs the peer's cache holds.
func Serve(n *Counters, cached func() int) {
	fmt.Println("synced")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch strings.TrimSpace(in.Text()) {
		case "mem":
			count := cached()
			runtime.GC()
			debug.FreeOSMemory()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			printJSON(map[string]interface{}{"rss": rssBytes(), "heapInuse": ms.HeapInuse, "heapAlloc": ms.HeapAlloc, "cached": count})
		case "stats":
			printJSON(map[string]int64{
				"reconciles": n.Reconciles.Load(), "updates": n.Updates.Load(), "conflicts": n.Conflicts.Load(),
				"errors": n.Errors.Load(), "sidecarCalls": n.SidecarCalls.Load(), "skippedStale": n.SkippedStale.Load(),
				"objectWrites": n.ObjectWrites.Load(),
			})
		}
	}
	os.Exit(0)
}

func rssBytes() int64 {
	text, err := os.ReadFile("/proc/self/status")
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

func printJSON(v interface{}) {
	text, _ := json.Marshal(v)
	fmt.Println(string(text))
}

// Must ends the peer with `err` on stderr, naming the peer.
func Must(name string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
