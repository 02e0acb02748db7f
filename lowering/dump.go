package lowering

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteDump writes every kernel of the plan as DIR/<fn>.py, the readable plan as
// DIR/plan.txt and the machine-readable plan as DIR/plan.json. It returns the files written.
func (p *Plan) WriteDump(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	write := func(name string, data []byte) error {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
		files = append(files, path)
		return nil
	}
	for _, k := range p.Kernels() {
		if err := write(k.Source.File, []byte(k.Source.Text)); err != nil {
			return files, err
		}
	}
	if err := write("plan.txt", []byte(p.String())); err != nil {
		return files, err
	}
	js, err := p.JSON()
	if err != nil {
		return files, fmt.Errorf("plan.json: %w", err)
	}
	if err := write("plan.json", append(js, '\n')); err != nil {
		return files, err
	}
	return files, nil
}
