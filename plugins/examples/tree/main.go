package main

import (
	"strings"

	"github.com/widejit/widejit/plugins/sdk"
	"github.com/widejit/widejit/plugins/treefit"
)

//go:generate go run ../../../autotune/cmd/fittree -in timings.json -out tree_gen.go

func init() { sdk.Register(choose) }

func choose(req sdk.Request) sdk.Response {
	prefer := predictStrategies(treefit.Features(req))
	return sdk.Response{
		Ranking: sdk.RankByStrategy(req.Candidates, prefer...),
		Note:    "decision tree prefers " + strings.Join(prefer, ", "),
	}
}

func main() {}
