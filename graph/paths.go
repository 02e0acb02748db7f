package graph

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// filePath resolves a path named by the graph file (its "weights") against the graph's
// directory. Unless allowOutside, the file must lie in that directory or below it: an
// absolute path, one that climbs out with "..", or one whose symbolic links lead out is
// refused, so that a graph from elsewhere cannot make widejit read (and report on) any file
// of the user's. It returns the absolute path, its links resolved when they were checked.
func filePath(graphFile, named string, allowOutside bool) (string, error) {
	dir := filepath.Dir(graphFile)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	p := named
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	if allowOutside {
		return p, nil
	}
	const allow = "the graph's files must lie in its directory; --allow-outside-paths (config allow_outside_paths) allows others"
	if filepath.IsAbs(named) {
		return "", fmt.Errorf("%q is an absolute path: %s", named, allow)
	}
	if rel := filepath.Clean(named); rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q leaves the graph's directory: %s", named, allow)
	}
	// symbolic links: compare where the path and the directory really are
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return p, nil // the directory cannot be resolved: opening the file reports it
	}
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(p); lerr != nil {
			return p, nil // missing: opening it says so
		}
		return "", fmt.Errorf("%q is a symbolic link to nowhere", named)
	}
	if err != nil {
		return p, nil
	}
	if rel, err := filepath.Rel(realDir, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q leads out of the graph's directory through a symbolic link (to %s): %s", named, real, allow)
	}
	return real, nil // what was checked: a link changed later is not followed out
}
