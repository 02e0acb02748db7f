package templates

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"text/template"
)

//go:embed *.py
var files embed.FS

var (
	parseOnce sync.Once
	parsed    map[string]*template.Template
	parseErr  error
)

// funcs are helpers available inside every template.
var funcs = template.FuncMap{
	"join": strings.Join,
	// pyargs renders a parameter list fragment: "a, b, c," or "" for none.
	"pyargs": func(names []string) string {
		if len(names) == 0 {
			return ""
		}
		return strings.Join(names, ", ") + ","
	},
}

func load() {
	parsed = map[string]*template.Template{}
	entries, err := fs.Glob(files, "*.py")
	if err != nil {
		parseErr = err
		return
	}
	for _, name := range entries {
		text, err := files.ReadFile(name)
		if err != nil {
			parseErr = err
			return
		}
		t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(string(text))
		if err != nil {
			parseErr = fmt.Errorf("template %s: %w", name, err)
			return
		}
		parsed[name] = t
	}
}

// Names lists the embedded templates ("elementwise.py", ...), sorted.
func Names() []string {
	parseOnce.Do(load)
	names := make([]string, 0, len(parsed))
	for n := range parsed {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Text returns a template's raw text.
func Text(name string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("no kernel template %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return string(b), nil
}

// Render fills template name with data and returns the kernel text.
func Render(name string, data any) (string, error) {
	parseOnce.Do(load)
	if parseErr != nil {
		return "", parseErr
	}
	t, ok := parsed[name]
	if !ok {
		return "", fmt.Errorf("no kernel template %q (have %s)", name, strings.Join(Names(), ", "))
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("rendering %s: %w", name, err)
	}
	return tidy(buf.String()), nil
}

// tidy strips trailing spaces and collapses runs of blank lines, so rendered kernels read
// like hand-written ones whatever the template's conditionals left behind.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			blank++
			if blank > 2 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimLeft(strings.Join(out, "\n"), "\n")
}
