package triton

import "fmt"

func fmtSscanf(s string, line, col *int) (int, error) { return fmt.Sscanf(s, "%d:%d", line, col) }
