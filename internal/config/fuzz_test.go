package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// FuzzConfigFile feeds arbitrary bytes as the config file: loading and checking it must
// never panic, and a file that passes the checks gives values the engine can use.
func FuzzConfigFile(f *testing.F) {
	f.Add([]byte("device: cpu\nthreads: 2\nlaunch_timeout: 30s\nmemory_limit_mib: 512\n"))
	f.Add([]byte("plugins: [a.wasm, b.wasm]\nplugin_deadline: 50ms\nplugin_memory_mib: 64\ncache_read_only: true\n"))
	f.Add([]byte("threads: -1\nmemory_limit_mib: -5\nlaunch_timeout: soon\nallow_outside_paths: maybe\n"))
	f.Add([]byte("device: cuda:0,cuda:1\nno_cache: yes\nunknown_key: 1\n"))
	f.Add([]byte("{{{{\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		flags := pflag.NewFlagSet("fuzz", pflag.ContinueOnError)
		flags.String("config", path, "")
		v := viper.New()
		if err := Load(v, flags, true); err != nil {
			return
		}
		c := Engine(v, nil, "fuzz", nil)
		if c.Threads < 0 || c.LaunchTimeout < 0 || c.MemoryLimit < -(1<<20) || c.PluginMemoryMiB <= 0 || c.PluginDeadline <= 0 {
			t.Fatalf("checked configuration gives unusable values: %+v", c)
		}
	})
}
