// Package sdk is the Go SDK for widejit strategy plugin authors. A plugin is a Go main package
// that registers one function in init and is built for WebAssembly:
//
//	package main
//
//	import "github.com/widejit/widejit/plugins/sdk"
//
//	func init() { sdk.Register(choose) }
//
//	func choose(req sdk.Request) sdk.Response {
//		return sdk.Response{Ranking: []string{req.Candidates[0].ID}}
//	}
//
//	func main() {}
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o myplugin.wasm .
//
// The SDK provides the exports of ABI version 1 (memory, alloc, widejit_abi, choose) and the
// JSON plumbing; the plugin only ranks candidates. Register must be called from init: a
// c-shared module runs package initialisers but never main. A panic in the choose function
// ends the module; widejit reports the panic message and falls back to its heuristic.
//
// On platforms other than wasip1 the package builds without the exports, so a plugin's logic
// can be unit-tested with an ordinary `go test` by calling its choose function directly.
package sdk
