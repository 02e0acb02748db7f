//go:build !amd64

package cpu

const packStripsAsm = false

func packStripsAVX(dst *float32, stride int, src *float32, lds, rows, strips, w, ahead int) {
	panic("packStripsAVX needs amd64")
}
