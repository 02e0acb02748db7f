package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/widejit/widejit/cache"
	"github.com/widejit/widejit/internal/engine"
)

// cacheWarner prints warnings (of the cache, the plugins, the engine) to stderr.
func cacheWarner(a *app) func(string) {
	return a.warn
}

// cacheAdminLockWait is how long maintenance commands wait for a busy directory.
var cacheAdminLockWait = cache.DefaultLockWait

func newCacheCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "cache",
		Short: "Inspect and maintain the kernel cache",
		Long: "Inspect and maintain the kernel cache (compiled kernels and tuning decisions).\n" +
			"The directory is --cache-dir, else WIDEJIT_CACHE_DIR, else $XDG_CACHE_HOME/widejit.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("cache: missing subcommand (stats, ls, verify, gc, clear)")
		},
	}
	c.AddCommand(
		cacheSub(a, "stats", "Count records and sizes by kind and target", false, runCacheStats),
		cacheSub(a, "ls", "List records (kind, name, target, size, created)", false, runCacheLs),
		cacheSub(a, "verify", "Check every record's checksum and every table; remove bad records (exit 1 if any; with --cache-read-only nothing is removed)", false, runCacheVerify),
		cacheSub(a, "gc", "Compact the tables and garbage-collect the value log (refused with --cache-read-only)", true, runCacheGC),
		cacheSub(a, "clear", "Remove every record (refused with --cache-read-only)", true, runCacheClear),
		newCachePopulateCmd(a),
	)
	return c
}

type cacheAction func(a *app, s *cache.Store, asJSON bool) error

// cacheSub makes a maintenance subcommand; one that writes is refused under
// --cache-read-only, one that only reads then writes nothing to the directory.
func cacheSub(a *app, name, short string, writes bool, run cacheAction) *cobra.Command {
	c := &cobra.Command{
		Use:   name,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, _ := cmd.Flags().GetBool("json")
			s, err := engine.OpenCacheForMaintenance(a.v.GetString("cache_dir"), cacheWarner(a), cacheAdminLockWait,
				a.v.GetBool("cache_read_only"), writes)
			if err != nil {
				return fmt.Errorf("cache %s: %w", name, err)
			}
			runErr := run(a, s, asJSON)
			if err := s.Close(); err != nil && runErr == nil {
				runErr = fmt.Errorf("closing the cache: %w", err)
			}
			return runErr
		},
	}
	c.Flags().Bool("json", false, "print JSON")
	return c
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runCacheStats(a *app, s *cache.Store, asJSON bool) error {
	st, err := s.Stats()
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(a.stdout, st)
	}
	fmt.Fprintf(a.stdout, "cache dir %s\n%d records, %s on disk (tables %s, value log %s); compiled plugins %s\n",
		st.Dir, st.Records, sizeText(st.DiskBytes), sizeText(st.LSMBytes), sizeText(st.VLogBytes), sizeText(st.WasmBytes))
	if st.Bad > 0 {
		fmt.Fprintf(a.stdout, "%d unreadable records removed\n", st.Bad)
	}
	if len(st.Groups) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tTARGET\tRECORDS\tPAYLOAD\tSTORED")
	for _, g := range st.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", g.Kind, orDash(g.Target), g.Count, sizeText(g.PayloadBytes), sizeText(g.StoredBytes))
	}
	return tw.Flush()
}

func runCacheLs(a *app, s *cache.Store, asJSON bool) error {
	ents, err := s.List()
	if err != nil {
		return err
	}
	if asJSON {
		if ents == nil {
			ents = []cache.Entry{}
		}
		return printJSON(a.stdout, struct {
			Dir     string        `json:"dir"`
			Entries []cache.Entry `json:"entries"`
		}{s.Dir(), ents})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tBACKEND\tTARGET\tSIZE\tCREATED\tKEY")
	for _, e := range ents {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Kind, orDash(e.Name), orDash(e.Backend), orDash(e.Target),
			sizeText(int64(e.Size)), e.Created.Local().Format(time.DateTime), e.Key[:min(len(e.Key), 14)])
	}
	return tw.Flush()
}

func runCacheVerify(a *app, s *cache.Store, asJSON bool) error {
	rep, err := s.Verify()
	if err != nil {
		return err
	}
	if asJSON {
		if err := printJSON(a.stdout, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "checked %d records: %d bad, %d removed; tables: %s\n", rep.Checked, len(rep.Bad), rep.Removed, rep.Tables)
		for _, b := range rep.Bad {
			fmt.Fprintf(a.stdout, "  %s: %s\n", b.Key, b.Reason)
		}
		writeWasmReport(a.stdout, rep.Wasm)
		for _, d := range rep.Damaged {
			fmt.Fprintf(a.stdout, "damaged copy set aside: %s\n", d)
		}
		for _, d := range rep.DamagedBeside {
			fmt.Fprintf(a.stdout, "damaged copy beside the directory (left by an older widejit, never removed automatically): %s\n", d)
		}
	}
	if len(rep.Bad) > 0 || rep.Tables != "ok" {
		return exitCodeError{code: 1, err: fmt.Errorf("cache verify found %d bad records (removed %d); tables: %s", len(rep.Bad), rep.Removed, rep.Tables)}
	}
	return nil
}

func runCacheGC(a *app, s *cache.Store, asJSON bool) error {
	rep, err := s.GC()
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(a.stdout, rep)
	}
	fmt.Fprintf(a.stdout, "value-log files rewritten: %d; %s -> %s on disk\n", rep.Rounds, sizeText(rep.BytesBefore), sizeText(rep.BytesAfter))
	for _, d := range rep.PrunedDamaged {
		fmt.Fprintf(a.stdout, "removed damaged copy: %s\n", d)
	}
	writeWasmReport(a.stdout, rep.Wasm)
	return nil
}

// writeWasmReport prints the check of the plugins' compilation cache.
func writeWasmReport(w io.Writer, r cache.WasmReport) {
	fmt.Fprintf(w, "plugin compilation cache %s: %d files, %s; %d bad, %d removed\n", r.Dir, r.Files, sizeText(r.Bytes), len(r.Bad), r.Removed)
	for _, b := range r.Bad {
		fmt.Fprintf(w, "  bad: %s\n", b)
	}
}

func runCacheClear(a *app, s *cache.Store, asJSON bool) error {
	rep, err := s.Clear()
	if err != nil {
		return err
	}
	if asJSON {
		if rep.Groups == nil {
			rep.Groups = []cache.Group{}
		}
		return printJSON(a.stdout, struct {
			Dir string `json:"dir"`
			cache.ClearReport
		}{s.Dir(), rep})
	}
	parts := make([]string, 0, len(rep.Groups))
	for _, g := range rep.Groups {
		parts = append(parts, fmt.Sprintf("%d %s/%s", g.Count, g.Kind, orDash(g.Target)))
	}
	detail := ""
	if len(parts) > 0 {
		detail = " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(a.stdout, "removed %d records%s and %d compiled plugins from %s\n", rep.Removed, detail, rep.WasmRemoved, s.Dir())
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sizeText prints a byte count in binary units.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), -1
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i])
}
