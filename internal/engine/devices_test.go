package engine

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseDevices(t *testing.T) {
	for spec, want := range map[string]string{
		"": "[auto]", "auto": "[auto]", "cpu": "[cpu]", "cuda": "[cuda]",
		"cuda:3": "[cuda:3]", "cuda:0,cuda:1": "[cuda:0 cuda:1]", "cpu:0, cpu:1,cpu:2": "[cpu:0 cpu:1 cpu:2]",
	} {
		got, err := ParseDevices(spec)
		if err != nil || fmt.Sprint(got) != want {
			t.Errorf("%q: %v %v, want %s", spec, got, err, want)
		}
	}
	for spec, want := range map[string]string{
		"tpu": "no such backend", "tpu:all": "no such backend", "cuda:": "integer >= 0", "cuda:-1": "integer >= 0", "cpu:0,cuda:0": "mixes cpu and cuda",
		"cuda:1,cuda:1": "cuda:1 is listed twice", "auto:0": "no such backend", "cpu,cpu": "is not a device",
	} {
		if _, err := ParseDevices(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}
}
