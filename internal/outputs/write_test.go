package outputs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An interrupted process removes the temporary file of a write in progress; that write then
// fails and leaves the file it would have replaced as it was, and no later write starts.
// (This test interrupts its own process's writes, so it cannot run in parallel with others.)
func TestRemoveTemporariesDuringWrite(t *testing.T) {
	defer func() {
		temporaries.Lock()
		temporaries.interrupted = false
		temporaries.Unlock()
	}()
	dir := t.TempDir()
	out := filepath.Join(dir, "out.safetensors")
	if err := os.WriteFile(out, []byte("the user's old outputs"), 0o644); err != nil {
		t.Fatal(err)
	}
	writing, resume := make(chan string), make(chan bool)
	done := make(chan error)
	go func() {
		done <- Write("--out", out, nil, func(w io.Writer) error {
			if _, err := w.Write([]byte("half of the new ")); err != nil {
				return err
			}
			writing <- w.(*os.File).Name()
			<-resume
			_, err := w.Write([]byte("outputs"))
			return err
		})
	}()
	tmp := <-writing
	if _, err := os.Stat(tmp); err != nil || !strings.HasPrefix(filepath.Base(tmp), ".out.safetensors.tmp-") {
		t.Fatalf("temporary file %s: %v", tmp, err)
	}
	if removed := RemoveTemporaries(); len(removed) != 1 || removed[0] != tmp {
		t.Fatalf("removed %q, want [%s]", removed, tmp)
	}
	close(resume)
	if err := <-done; !errors.Is(err, ErrInterrupted) {
		t.Fatalf("the interrupted write returned %v, want ErrInterrupted", err)
	}
	if got, _ := os.ReadFile(out); string(got) != "the user's old outputs" {
		t.Fatalf("the old file was changed: %q", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left in %s: %v", dir, ents)
	}
	err := Write("--out", filepath.Join(dir, "later.safetensors"), nil, func(w io.Writer) error { return nil })
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("a write after the interruption: %v, want ErrInterrupted", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("a write after the interruption left %v", ents)
	}
}
