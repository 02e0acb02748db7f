package main

import "os"

func main() {
	os.Exit(executeInterruptible(os.Args[1:], os.Stdout, os.Stderr))
}
