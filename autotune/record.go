package autotune

import (
	"encoding/json"
	"fmt"
	"io"
)

// recordFormat versions the JSON of a Record.
const recordFormat = 1

// Record is what the store keeps for one decision: the problem, the candidate set, the winner
// and how it was chosen. Records of measurements are also the training data of the
// decision-tree plugin (WriteTimings, autotune/cmd/fittree).
type Record struct {
	Format     int         `json:"format"`
	Key        string      `json:"key"`
	Problem    Problem     `json:"problem"`
	Candidates []Candidate `json:"candidates"`
	Winner     string      `json:"winner"`
	// Source is "measured" or SourcePlugin(name).
	Source  string   `json:"source"`
	Note    string   `json:"note,omitempty"`
	Ranking []string `json:"ranking"`
	Timings []Timing `json:"timings,omitempty"`
}

const sourceMeasured = "measured"

// Decision is the decision the record holds, as a reused one.
func (r Record) Decision() Decision {
	src := r.Source
	if src == sourceMeasured {
		src = SourceRecorded
	}
	return Decision{
		CandidateID: r.Winner,
		Source:      src,
		Reused:      true,
		Note:        r.Note,
		Ranking:     append([]string(nil), r.Ranking...),
		Timings:     append([]Timing(nil), r.Timings...),
		Key:         r.Key,
	}
}

// decodeRecord parses a stored record and checks that it answers key for candidates.
func decodeRecord(data []byte, key string, candidates []Candidate) (Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("not a decision record: %v", err)
	}
	return r, checkRecord(r, key, candidates)
}

// checkRecord reports why r is not a usable answer for key and candidates.
func checkRecord(r Record, key string, candidates []Candidate) error {
	if r.Format != recordFormat {
		return fmt.Errorf("record format %d, this widejit reads %d", r.Format, recordFormat)
	}
	if r.Key != key {
		return fmt.Errorf("record is for key %q", r.Key)
	}
	known := make(map[string]bool, len(candidates))
	for _, c := range candidates {
		known[c.ID] = true
	}
	if len(r.Ranking) == 0 || r.Ranking[0] != r.Winner {
		return fmt.Errorf("record's ranking %v does not start with its winner %q", r.Ranking, r.Winner)
	}
	for _, id := range r.Ranking {
		if !known[id] {
			return fmt.Errorf("record names candidate %q, which is not among the candidates", id)
		}
	}
	return nil
}

// timingsFile is the export format of measured records.
type timingsFile struct {
	Format  string   `json:"format"`
	Comment string   `json:"comment,omitempty"`
	Records []Record `json:"records"`
}

const timingsFormat = "widejit-timings/1"

// WriteTimings writes measured records as a timings file, the input of
// `go run ./autotune/cmd/fittree`. Records that are not measurements are skipped.
func WriteTimings(w io.Writer, records []Record, comment string) error {
	f := timingsFile{Format: timingsFormat, Comment: comment, Records: []Record{}}
	for _, r := range records {
		if r.Source == sourceMeasured {
			f.Records = append(f.Records, r)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}

// ReadTimings reads a timings file written by WriteTimings.
func ReadTimings(r io.Reader) ([]Record, error) {
	var f timingsFile
	dec := json.NewDecoder(r)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("timings file: %v", err)
	}
	if f.Format != timingsFormat {
		return nil, fmt.Errorf("timings file: format %q, want %q", f.Format, timingsFormat)
	}
	for i := range f.Records {
		f.Records[i].Problem.Device = f.Records[i].Problem.Device.Legacy()
		rec := f.Records[i]
		if rec.Source != sourceMeasured {
			return nil, fmt.Errorf("timings file: records[%d]: source %q, want %q", i, rec.Source, sourceMeasured)
		}
		if want := Key(rec.Problem, rec.Candidates); rec.Key != want {
			return nil, fmt.Errorf("timings file: records[%d]: key %q does not match its problem and candidates (%q)", i, rec.Key, want)
		}
		if err := checkRecord(rec, rec.Key, rec.Candidates); err != nil {
			return nil, fmt.Errorf("timings file: records[%d]: %v", i, err)
		}
	}
	return f.Records, nil
}
