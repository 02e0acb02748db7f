// Package abi holds the JSON schema that widejit and its strategy plugins exchange (ABI
// version 1), and the rules a plugin's answer must follow. It imports only the standard
// library, so the host (plugins), the guest SDK (plugins/sdk) and tools share one definition
// without pulling the WebAssembly runtime into a plugin.
//
// The exchange: the host writes a Request as JSON into the plugin's linear memory (through the
// plugin's alloc export), calls choose(ptr, len), and reads a Response as JSON from the
// (ptr << 32 | len) that choose returns.
package abi
