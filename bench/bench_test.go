package main

import (
	"fmt"
	"slices"
	"testing"

	"github.com/widejit/widejit/jit/cpu"
)

// BenchmarkZoo times one widejit plan execution per model, N and mode, for profiling:
//
//	go test ./bench -run '^$' -bench 'Zoo/mlp/n=100/wide' -cpuprofile /tmp/cpu.out
//	go tool pprof -top bench.test /tmp/cpu.out
func BenchmarkZoo(b *testing.B) {
	dev := cpu.NewDevice(0)
	defer dev.Close()
	for _, model := range zooModels {
		ns := []int{8}
		if slices.Max(zooDefaultNs[model]) >= 100 { // the cases cheap enough to sweep to 128
			ns = append(ns, 100)
		}
		for _, n := range ns {
			for _, mode := range []string{"wide", "sequential"} {
				b.Run(fmt.Sprintf("%s/n=%d/%s", model, n, mode), func(b *testing.B) {
					g, err := loadZooModel(model, n)
					if err != nil {
						b.Fatal(err)
					}
					inputs, err := g.GenerateInputs(0)
					if err != nil {
						b.Fatal(err)
					}
					p, err := newWidejitPlan(g, dev, mode, inputs)
					if err != nil {
						b.Fatal(err)
					}
					defer p.Close()
					if _, err := p.Time(1); err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					if _, err := p.Time(b.N); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}
