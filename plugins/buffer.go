package plugins

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
)

// boundedBuffer keeps the first limit bytes written to it and drops the rest, so a guest that
// floods stdout or stderr costs the host a fixed amount of memory.
type boundedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *boundedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// firstLine returns the line of text that contains marker, trimmed and shortened.
func firstLine(text, marker string) string {
	i := strings.Index(text, marker)
	if i < 0 {
		return ""
	}
	start := strings.LastIndexByte(text[:i], '\n') + 1
	line := text[start:]
	if end := strings.IndexByte(line, '\n'); end >= 0 {
		line = line[:end]
	}
	return Printable(strings.TrimSpace(line), 300)
}

// excerpt quotes the start of untrusted bytes for an error message.
func excerpt(b []byte) string {
	const show = 120
	s := strconv.Quote(strings.ToValidUTF8(string(b[:min(len(b), show)]), "?"))
	if len(b) > show {
		s += "..."
	}
	return s
}
