//go:build wasip1

// Command hostile is a test plugin that misbehaves on request: the first op of the request's
// op chain selects the behaviour. It bypasses the SDK to control the raw ABI. Build with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o hostile.wasm ./plugins/testdata/hostile
//
// and -ldflags "-X main.abiVersion=2" for a plugin that speaks another ABI version.
package main

import (
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/widejit/widejit/plugins/abi"
)

var abiVersion = "1"

var (
	pinned   = map[uint32][]byte{}
	keep     [][]byte
	response []byte
	calls    int
)

//go:wasmexport alloc
func alloc(size uint32) uint32 {
	buf := make([]byte, max(size, 1))
	ptr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	pinned[ptr] = buf
	return ptr
}

//go:wasmexport widejit_abi
func widejitABI() int32 {
	v, _ := strconv.Atoi(abiVersion)
	return int32(v)
}

//go:wasmexport choose
func choose(ptr, size uint32) uint64 {
	calls++
	var req abi.Request
	if err := json.Unmarshal(pinned[ptr][:size], &req); err != nil {
		panic(err)
	}
	delete(pinned, ptr)
	ids := make([]string, len(req.Candidates))
	for i, c := range req.Candidates {
		ids[len(ids)-1-i] = c.ID
	}
	resp := abi.Response{Ranking: ids, Note: fmt.Sprintf("calls=%d", calls)}
	switch req.OpChain[0] {
	case "ok":
	case "partial":
		resp.Ranking = ids[:1]
	case "loop":
		for {
			calls++
		}
	case "membomb":
		for {
			keep = append(keep, make([]byte, 4<<20))
		}
	case "garbage":
		return out([]byte("ranking: fused, batched {{"))
	case "huge":
		return uint64(0)<<32 | 500<<20
	case "outside":
		return uint64(0xfff00000)<<32 | 4096
	case "panic":
		panic("hostile plugin: deliberate panic")
	case "escape":
		// a note that would retitle the terminal, colour it and flood it
		resp.Note = "\x1b]0;pwned\x07\x1b[31mred\u202e" + strings.Repeat("x", 100000)
	case "escapepanic":
		panic("\x1b[2J\x1b[Hcleared")
	case "exit":
		os.Exit(3)
	case "unknown":
		resp.Ranking = []string{"no-such-candidate"}
	case "duplicate":
		resp.Ranking = []string{ids[0], ids[0]}
	case "empty":
		resp.Ranking = nil
	case "probe":
		// Report what the sandbox lets the guest see.
		_, dirErr := os.ReadDir("/")
		_, fileErr := os.ReadFile("/etc/hostname")
		random := make([]byte, 8)
		crand.Read(random)
		probe, _ := json.Marshal(map[string]any{
			"args":     len(os.Args),
			"env":      os.Environ(),
			"readdir":  dirErr != nil,
			"readfile": fileErr != nil,
			"year":     time.Now().Year(),
			"random":   fmt.Sprintf("%x", random),
		})
		resp.Note = string(probe)
	case "flood":
		chunk := make([]byte, 1<<16)
		for i := 0; i < 160; i++ {
			os.Stderr.Write(chunk)
		}
	default:
		panic("hostile plugin: unknown behaviour " + req.OpChain[0])
	}
	b, _ := json.Marshal(resp)
	return out(b)
}

func out(b []byte) uint64 {
	response = b
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | uint64(len(b))
}

func main() {}
