// Command event-recorder is the Kubernetes Events baseline of the pipeline benchmark
// (bench/pipeline/events-baseline.ts): it emits one Warning Event per fault read on stdin
// through client-go's own EventRecorder, as a device plugin or node-problem-detector does, so
// the baseline shows the real EventCorrelator (spam filter, aggregation, count bumps) rather
// than a re-implementation of it.
//
// Input, one JSON object a line:  {"node":"n1","device":"npu3","reason":"LinkDown","message":"..."}
// Output, one JSON object a line:
//
//	{"start":{"clientGo":"v0.34.4","go":"go1.24.4"}}   first, the versions built in
//	{"i":0,"emittedAt":1712345678901}            after each Eventf (unix ms)
//	{"write":"create","node":"n1",...}           each write the correlator let through to the API
//
// Each node gets its own broadcaster, recorder and API client, as each node runs its own
// device plugin: the correlator's state and the client's rate limit are per node, not shared
// by the fleet. The correlator keeps client-go's defaults (record.CorrelatorOptions{}): spam
// filter burst 25 per source+object refilled 1 per 300 s, aggregation of more than 10 similar
// events (same source, object, type, reason; different message) within 600 s, LRU caches of
// 4096 keys; the client keeps client-go's QPS 5, burst 10.
//
// On stdin EOF it waits until every node's recorder has handled all it was given, then shuts
// the broadcasters down and exits. Shutdown alone would not do: it cancels the recording
// goroutine, dropping whatever is still queued. A marker event per node, swallowed by the
// sink, shows that the node's queue has drained (one goroutine handles a node's events in order).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
)

// flushReason marks the per-node marker event, which never reaches the API.
const flushReason = "NpuFaultRecorderFlushMarker"

type fault struct {
	Node    string `json:"node"`
	Device  string `json:"device"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type started struct {
	Start struct {
		ClientGo string `json:"clientGo"`
		Go       string `json:"go"`
	} `json:"start"`
}

// buildVersions names the client-go and Go this binary was built with.
func buildVersions() started {
	var s started
	s.Start.ClientGo = "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		s.Start.Go = info.GoVersion
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/client-go" {
				s.Start.ClientGo = dep.Version
			}
		}
	}
	return s
}

type emitted struct {
	I         int   `json:"i"`
	EmittedAt int64 `json:"emittedAt"`
}

// write is one request the correlator let through to the API for a node.
type write struct {
	Write   string `json:"write"` // create | patch | update
	Node    string `json:"node"`
	Name    string `json:"name"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Count   int32  `json:"count"`
	At      int64  `json:"at"`
	Error   string `json:"error,omitempty"`
}

// lines writes JSON lines from several goroutines without interleaving them.
type lines struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (l *lines) put(v any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.enc.Encode(v); err != nil {
		fmt.Fprintf(os.Stderr, "error: stdout: %v\n", err)
		os.Exit(1)
	}
}

// reportingSink passes writes to the API and reports each; it swallows the flush marker.
type reportingSink struct {
	inner   record.EventSink
	node    string
	out     *lines
	flushed chan struct{}
}

func (s *reportingSink) marker(event *v1.Event) bool {
	if event.Reason != flushReason {
		return false
	}
	close(s.flushed)
	return true
}

func (s *reportingSink) report(kind string, event *v1.Event, err error) {
	w := write{Write: kind, Node: s.node, Name: event.Name, Reason: event.Reason, Message: event.Message,
		Count: event.Count, At: time.Now().UnixMilli()}
	if err != nil {
		w.Error = err.Error()
	}
	s.out.put(w)
}

func (s *reportingSink) Create(event *v1.Event) (*v1.Event, error) {
	if s.marker(event) {
		return event, nil
	}
	created, err := s.inner.Create(event)
	s.report("create", event, err)
	return created, err
}

func (s *reportingSink) Update(event *v1.Event) (*v1.Event, error) {
	updated, err := s.inner.Update(event)
	s.report("update", event, err)
	return updated, err
}

func (s *reportingSink) Patch(event *v1.Event, data []byte) (*v1.Event, error) {
	patched, err := s.inner.Patch(event, data)
	s.report("patch", event, err)
	return patched, err
}

// nodeRecorder is what one node's device plugin would hold.
type nodeRecorder struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	sink        *reportingSink
}

func nodeRef(name string) *v1.ObjectReference {
	// As the kubelet and node-problem-detector refer to their node: the UID is the node name.
	return &v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

func newNodeRecorder(config *rest.Config, scheme *runtime.Scheme, component, node string, out *lines) (*nodeRecorder, error) {
	client, err := typedcorev1.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return nil, err
	}
	sink := &reportingSink{inner: &typedcorev1.EventSinkImpl{Interface: client.Events("")}, node: node, out: out,
		flushed: make(chan struct{})}
	broadcaster := record.NewBroadcaster() // default CorrelatorOptions
	broadcaster.StartRecordingToSink(sink)
	recorder := broadcaster.NewRecorder(scheme, v1.EventSource{Component: component, Host: node})
	return &nodeRecorder{broadcaster: broadcaster, recorder: recorder, sink: sink}, nil
}

func parseFault(line []byte) (fault, error) {
	var f fault
	if err := json.Unmarshal(line, &f); err != nil {
		return f, fmt.Errorf("input line is not a JSON object: %v", err)
	}
	switch {
	case f.Node == "":
		return f, errors.New("input line: node is missing")
	case f.Device == "":
		return f, errors.New("input line: device is missing")
	case f.Reason == "":
		return f, errors.New("input line: reason is missing")
	}
	if f.Message == "" {
		f.Message = fmt.Sprintf("%s: %s", f.Device, f.Reason)
	}
	return f, nil
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig the recorder writes Events with (required)")
	component := flag.String("component", "npu-device-plugin", "the Events' source component")
	flushTimeout := flag.Duration("flush-timeout", 2*time.Minute, "how long to wait at EOF for queued events")
	flag.Parse()
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %v", *kubeconfig, err)
	}
	config.UserAgent = *component + " (npu-fault events baseline)"
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		return err
	}
	out := &lines{enc: json.NewEncoder(os.Stdout)}
	out.put(buildVersions())

	recorders := map[string]*nodeRecorder{}
	var order []string
	input := bufio.NewScanner(os.Stdin)
	input.Buffer(make([]byte, 64*1024), 1024*1024)
	for i := 0; input.Scan(); i++ {
		f, err := parseFault(input.Bytes())
		if err != nil {
			return fmt.Errorf("line %d: %v", i+1, err)
		}
		r := recorders[f.Node]
		if r == nil {
			if r, err = newNodeRecorder(config, scheme, *component, f.Node, out); err != nil {
				return err
			}
			recorders[f.Node] = r
			order = append(order, f.Node)
		}
		r.recorder.Eventf(nodeRef(f.Node), v1.EventTypeWarning, f.Reason, "%s", f.Message)
		out.put(emitted{I: i, EmittedAt: time.Now().UnixMilli()})
	}
	if err := input.Err(); err != nil {
		return fmt.Errorf("stdin: %v", err)
	}

	// A fresh object per node for the marker: its own spam bucket and aggregation key, so the
	// correlator never holds it back.
	deadline := time.After(*flushTimeout)
	for _, node := range order {
		r := recorders[node]
		r.recorder.Eventf(nodeRef(node+".flush-marker"), v1.EventTypeNormal, flushReason, "end of input")
	}
	var unflushed []string
	for _, node := range order {
		select {
		case <-recorders[node].sink.flushed:
		case <-deadline:
			unflushed = append(unflushed, node)
		}
	}
	for _, node := range order {
		recorders[node].broadcaster.Shutdown()
	}
	if len(unflushed) > 0 {
		return fmt.Errorf("events of %d node(s) still queued after --flush-timeout %s (first: %s)", len(unflushed), *flushTimeout, unflushed[0])
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}
