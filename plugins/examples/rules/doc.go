// Command rules is a readable rule-based strategy plugin, the one to copy when writing your
// own. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o rules.wasm ./plugins/examples/rules
//
// and try it with `widejit plugin check rules.wasm`.
package main
