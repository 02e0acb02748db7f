package ptxemu

// Shared-memory bank conflicts, measured without a GPU: shared memory has 32 banks of 4-byte
// words, and the requests of one phase (the 8 row addresses of one ldmatrix matrix, 16
// bytes each) that reach the same bank at different words serialize; lanes reading the same
// word share it. A phase's degree is the most distinct words any bank serves: 1 is
// conflict-free, 4 takes four wavefronts.

// Banks counts the phases of a run by conflict degree.
type Banks struct {
	// Ldmatrix counts ldmatrix phases by degree: Ldmatrix[d] phases had degree d.
	Ldmatrix map[int]int
}

// MaxLdmatrix is the worst degree of any ldmatrix phase (0 when there were none).
func (b *Banks) MaxLdmatrix() int {
	worst := 0
	for d := range b.Ldmatrix {
		worst = max(worst, d)
	}
	return worst
}

// ConflictDegree is the conflict degree of one phase whose requests read width bytes (a
// multiple of 4) at each of addrs.
func ConflictDegree(addrs []uint64, width int) int {
	words := map[int]map[uint64]bool{}
	for _, a := range addrs {
		for w := a / 4; w < (a+uint64(width))/4; w++ {
			bank := int(w % 32)
			if words[bank] == nil {
				words[bank] = map[uint64]bool{}
			}
			words[bank][w] = true
		}
	}
	worst := 0
	for _, ws := range words {
		worst = max(worst, len(ws))
	}
	return worst
}

// RunBanks is Run that also measures the bank conflicts of the run's ldmatrix phases.
func RunBanks(p *Program, mem *Memory, grid [3]int, params []uint64, sharedBytes int) (*Banks, error) {
	b := &Banks{Ldmatrix: map[int]int{}}
	if err := run(p, mem, grid, params, sharedBytes, b); err != nil {
		return nil, err
	}
	return b, nil
}
