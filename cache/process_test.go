package cache

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The concurrency tests run real processes: this test binary re-executed with
// helperEnv=<dir>:<worker id>, running only TestHelperProcess.
const helperEnv = "WIDEJIT_CACHE_TEST_WORKER"

const (
	sharedKeys   = 40
	workerRounds = 6
)

func sharedSize(i int) int { return 200 + 97*i }

// TestHelperProcess is a worker, not a test: it does nothing unless re-executed by
// runWorkers. Each round it opens the shared directory, checks every record it can read, puts
// the ones it misses, holds the directory briefly (as a compile would), and closes.
func TestHelperProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process for the multi-process tests")
	}
	i := strings.LastIndexByte(spec, ':')
	dir := spec[:i]
	id, _ := strconv.Atoi(spec[i+1:])
	for round := 0; round < workerRounds; round++ {
		s, err := Open(dir, Options{LockWait: 300 * time.Millisecond, Warn: func(m string) {
			fmt.Fprintf(os.Stderr, "worker %d: warning: %s\n", id, m)
		}})
		if err != nil {
			t.Fatalf("worker %d: open: %v", id, err)
		}
		fmt.Fprintf(os.Stderr, "worker %d round %d: mode %s\n", id, round, s.Mode())
		for j := 0; j < sharedKeys; j++ {
			k := (j + id*7 + round*3) % sharedKeys
			key := testKey(t, KindKernel, k)
			if r, ok := s.Get(key); ok {
				if !bytes.Equal(r.Payload, testPayload(k, sharedSize(k))) || r.Name != fmt.Sprint("kernel ", k) {
					t.Fatalf("worker %d: record %d has wrong bytes", id, k)
				}
				continue
			}
			if err := s.Put(key, &Record{Name: fmt.Sprint("kernel ", k), Target: "cpu", Payload: testPayload(k, sharedSize(k))}); err != nil {
				t.Fatalf("worker %d: put %d: %v", id, k, err)
			}
		}
		time.Sleep(time.Duration(10+id*5) * time.Millisecond)
		if err := s.Close(); err != nil {
			t.Fatalf("worker %d: close: %v", id, err)
		}
	}
}

func runWorkers(t *testing.T, n int) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	for id := 0; id < n; id++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d", helperEnv, dir, id))
			cmd.Stdout, cmd.Stderr = &outs[id], &outs[id]
			errs[id] = cmd.Run()
		}(id)
	}
	wg.Wait()
	notSaved := 0
	for id := 0; id < n; id++ {
		out := outs[id].String()
		if errs[id] != nil || !strings.Contains(out, "PASS") {
			t.Fatalf("worker %d failed (%v):\n%s", id, errs[id], out)
		}
		notSaved += strings.Count(out, "were not saved")
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "warning") {
				t.Log(l)
			}
		}
	}
	w := &warnings{}
	s := openT(t, dir, w, nil)
	defer s.Close()
	if s.Mode() != ModeReadWrite || s.MovedAside() != "" || len(w.all()) != 0 {
		t.Fatalf("store after the workers: mode %s, moved %q, warnings %q", s.Mode(), s.MovedAside(), w.all())
	}
	rep, err := s.Verify()
	if err != nil || len(rep.Bad) != 0 || rep.Tables != "ok" {
		t.Fatalf("verify after the workers: %+v, %v", rep, err)
	}
	present := 0
	for k := 0; k < sharedKeys; k++ {
		if r, ok := s.Get(testKey(t, KindKernel, k)); ok {
			present++
			if !bytes.Equal(r.Payload, testPayload(k, sharedSize(k))) {
				t.Fatalf("record %d has wrong bytes", k)
			}
		}
	}
	if present != sharedKeys && notSaved == 0 {
		t.Fatalf("%d of %d records persisted and no worker reported unsaved records", present, sharedKeys)
	}
	t.Logf("%d workers: %d/%d records persisted, %d unsaved-record warnings", n, present, sharedKeys, notSaved)
}

func TestTwoProcesses(t *testing.T)  { runWorkers(t, 2) }
func TestFourProcesses(t *testing.T) { runWorkers(t, 4) }
