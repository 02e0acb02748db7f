package ptxemu

// Shared-memory bank conflicts, measured without a GPU: shared memory has 32 banks of 4-byte
// words, and the requests of one phase that reach the same bank at different words
// serialize; lanes reading the same word share it. A phase's degree is the most distinct
// words any bank serves: 1 is conflict-free, 4 takes four wavefronts. An ldmatrix phase is
// the 8 row addresses of one matrix (16 bytes each); a warp's store (st.shared) or cp.async
// of 16 bytes per lane runs in 4 phases of 8 lanes, of 8 bytes in 2 of 16, smaller in one.

// Banks counts the phases of a run by conflict degree.
type Banks struct {
	// Ldmatrix counts ldmatrix phases by degree: Ldmatrix[d] phases had degree d.
	Ldmatrix map[int]int
	// Stores and CpAsync count the phases of st.shared and of cp.async destinations.
	Stores, CpAsync map[int]int

	// the writes of the CTA running, by warp, instruction and the lane's count of it
	lanes map[writeKey][]laneWrite
	seen  map[*emuThread]map[*emuInstr]int
}

type writeKey struct {
	warp int
	in   *emuInstr
	n    int
}

type laneWrite struct {
	lane, bytes int
	addr        uint64
}

// write records a shared-memory write of t (nothing when b is nil).
func (b *Banks) write(t *emuThread, in *emuInstr, addr uint64, bytes int) {
	if b == nil {
		return
	}
	if b.seen[t] == nil {
		b.seen[t] = map[*emuInstr]int{}
	}
	k := writeKey{t.tid / 32, in, b.seen[t][in]}
	b.seen[t][in]++
	b.lanes[k] = append(b.lanes[k], laneWrite{t.tid % 32, bytes, addr})
}

// countWrites counts the phases of the CTA's writes, then forgets them.
func (b *Banks) countWrites() {
	if b == nil {
		return
	}
	for k, ws := range b.lanes {
		per := 32 // lanes per phase
		if n := ws[0].bytes; n > 4 {
			per = 32 * 4 / n
		}
		phases := map[int][]uint64{}
		for _, w := range ws {
			phases[w.lane/per] = append(phases[w.lane/per], w.addr)
		}
		count := b.Stores
		if k.in.op[0] == "cp" {
			count = b.CpAsync
		}
		for _, p := range phases {
			count[ConflictDegree(p, ws[0].bytes)]++
		}
	}
	b.lanes, b.seen = map[writeKey][]laneWrite{}, map[*emuThread]map[*emuInstr]int{}
}

// MaxLdmatrix is the worst degree of any ldmatrix phase (0 when there were none).
func (b *Banks) MaxLdmatrix() int {
	worst := 0
	for d := range b.Ldmatrix {
		worst = max(worst, d)
	}
	return worst
}

// ConflictDegree is the conflict degree of one phase whose requests access width bytes at
// each of addrs.
func ConflictDegree(addrs []uint64, width int) int {
	words := map[int]map[uint64]bool{}
	for _, a := range addrs {
		for w := a / 4; w <= (a+uint64(width)-1)/4; w++ {
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

// RunBanks is Run that also measures the bank conflicts of the run's ldmatrix phases and
// shared-memory writes.
func RunBanks(p *Program, mem *Memory, grid [3]int, params []uint64, sharedBytes int) (*Banks, error) {
	b := &Banks{Ldmatrix: map[int]int{}, Stores: map[int]int{}, CpAsync: map[int]int{}, lanes: map[writeKey][]laneWrite{}, seen: map[*emuThread]map[*emuInstr]int{}}
	if err := run(p, mem, grid, params, sharedBytes, b); err != nil {
		return nil, err
	}
	return b, nil
}
