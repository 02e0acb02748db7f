package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/widejit/widejit/cache"
)

func cacheTestRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := execute(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// fillCacheDir stores three kernels and one decision through the cache package.
func fillCacheDir(t *testing.T, dir string) {
	t.Helper()
	s, err := cache.Open(dir, cache.Options{Warn: func(m string) { t.Errorf("warning: %s", m) }})
	if err != nil {
		t.Fatal(err)
	}
	for i, target := range []string{"sm_80", "sm_90", "sm_90"} {
		k, err := cache.NewKey(cache.KindKernel).Int("i", int64(i)).String("target", target).Key()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(k, &cache.Record{Name: "wide_mlp", Backend: "ptx", Target: target, Payload: bytes.Repeat([]byte("x"), 100*(i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	dk, _ := cache.NewKey(cache.KindDecision).String("autotune_key", "mlp").Key()
	if err := s.PutDecision(dk, "mlp", []byte(`{"strategy":"fused"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCacheStatsAndLs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	fillCacheDir(t, dir)
	code, out, errOut := cacheTestRun(t, "--cache-dir", dir, "cache", "stats", "--json")
	if code != 0 {
		t.Fatalf("stats exit %d: %s", code, errOut)
	}
	var st cache.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, out)
	}
	if st.Records != 4 || st.Dir != dir || len(st.Groups) != 3 {
		t.Fatalf("stats %+v", st)
	}
	want := map[string][2]int64{"kernel/sm_80": {1, 100}, "kernel/sm_90": {2, 500}, "decision/": {1, 20}}
	for _, g := range st.Groups {
		w, ok := want[g.Kind+"/"+g.Target]
		if !ok || int64(g.Count) != w[0] || g.PayloadBytes != w[1] {
			t.Errorf("group %+v, want %v", g, w)
		}
	}
	code, out, _ = cacheTestRun(t, "--cache-dir", dir, "cache", "stats")
	if code != 0 || !strings.Contains(out, "4 records") || !strings.Contains(out, "sm_90") {
		t.Fatalf("stats text:\n%s", out)
	}

	t.Setenv("WIDEJIT_CACHE_DIR", dir) // the environment works as well as the flag
	code, out, errOut = cacheTestRun(t, "cache", "ls", "--json")
	if code != 0 {
		t.Fatalf("ls exit %d: %s", code, errOut)
	}
	var ls struct {
		Dir     string        `json:"dir"`
		Entries []cache.Entry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls.Entries) != 4 || ls.Entries[0].Kind != "decision" || ls.Entries[1].Name != "wide_mlp" || ls.Entries[1].Target != "sm_80" || ls.Entries[1].Size != 100 {
		t.Fatalf("ls entries %+v", ls.Entries)
	}
	code, out, _ = cacheTestRun(t, "cache", "ls")
	if code != 0 || strings.Count(out, "wide_mlp") != 3 || !strings.Contains(out, "KIND") {
		t.Fatalf("ls text:\n%s", out)
	}
}

func TestCacheVerifyGCClear(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kc")
	fillCacheDir(t, dir)
	// Plant a record with a bad checksum straight into Badger, as damage from outside would.
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(dir, "kernels")).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	badKey := append([]byte("k/"), bytes.Repeat([]byte{7}, 32)...)
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(badKey, []byte("WJCR garbage")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "kernels", "widejit-files.json")) // the raw write invalidated it

	code, out, errOut := cacheTestRun(t, "--cache-dir", dir, "cache", "verify", "--json")
	if code != 1 {
		t.Fatalf("verify with a bad record: exit %d, want 1\n%s%s", code, out, errOut)
	}
	var rep cache.VerifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Checked != 5 || len(rep.Bad) != 1 || rep.Removed != 1 || !strings.HasPrefix(rep.Bad[0].Key, "k/0707") {
		t.Fatalf("verify report %+v", rep)
	}
	code, out, _ = cacheTestRun(t, "--cache-dir", dir, "cache", "verify")
	if code != 0 || !strings.Contains(out, "checked 4 records: 0 bad") {
		t.Fatalf("second verify: exit %d\n%s", code, out)
	}
	code, out, errOut = cacheTestRun(t, "--cache-dir", dir, "cache", "gc", "--json")
	if code != 0 || !strings.Contains(out, `"rounds"`) {
		t.Fatalf("gc: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cacheTestRun(t, "--cache-dir", dir, "cache", "clear")
	if code != 0 || !strings.Contains(out, "removed 4 records") {
		t.Fatalf("clear: exit %d\n%s", code, out)
	}
	code, out, _ = cacheTestRun(t, "--cache-dir", dir, "cache", "stats", "--json")
	if code != 0 || !strings.Contains(out, `"records": 0`) {
		t.Fatalf("stats after clear: exit %d\n%s", code, out)
	}
}

func TestCacheUsage(t *testing.T) {
	dir := t.TempDir()
	if code, _, _ := cacheTestRun(t, "--cache-dir", dir, "cache"); code != 2 {
		t.Errorf("bare `cache`: exit %d, want 2", code)
	}
	if code, _, _ := cacheTestRun(t, "--cache-dir", dir, "cache", "ls", "extra"); code != 2 {
		t.Errorf("`cache ls extra`: exit %d, want 2", code)
	}
}

// A maintenance command on a directory another process holds fails clearly (exit 1) rather
// than acting on an empty in-memory store.
func TestCacheBusyDir(t *testing.T) {
	dir := t.TempDir()
	holder, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	t.Setenv("WIDEJIT_CACHE_DIR", dir)
	old := cacheAdminLockWait
	cacheAdminLockWait = 50 * time.Millisecond
	defer func() { cacheAdminLockWait = old }()
	code, _, errOut := cacheTestRun(t, "cache", "clear")
	if code != 1 || !strings.Contains(errOut, "in use by another widejit process") {
		t.Fatalf("clear on a busy dir: exit %d\n%s", code, errOut)
	}
}
