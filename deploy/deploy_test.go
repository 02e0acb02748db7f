package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// job is the part of a Kubernetes Job the tests read.
type job struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct{ Name string }
	Spec       struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				RestartPolicy  string      `yaml:"restartPolicy"`
				InitContainers []container `yaml:"initContainers"`
				Containers     []container `yaml:"containers"`
				Volumes        []struct {
					Name string
					PVC  *struct {
						ClaimName string `yaml:"claimName"`
						ReadOnly  bool   `yaml:"readOnly"`
					} `yaml:"persistentVolumeClaim"`
				}
			}
		}
	}
}

type container struct {
	Name    string
	Image   string
	Command []string
	Args    []string
	Env     []struct{ Name, Value string }
	Mounts  []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

func (c container) line() string {
	return strings.Join(append(append([]string(nil), c.Command...), c.Args...), " ")
}

func (c container) env(name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func loadJob(t *testing.T, file string) job {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("kubernetes", file))
	if err != nil {
		t.Fatal(err)
	}
	var j job
	if err := yaml.Unmarshal(data, &j); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if j.APIVersion != "batch/v1" || j.Kind != "Job" || j.Metadata.Name == "" || j.Spec.Template.Spec.RestartPolicy != "Never" ||
		len(j.Spec.Template.Spec.Containers) != 1 || j.Spec.Template.Spec.Containers[0].Image == "" {
		t.Fatalf("%s: not a batch/v1 Job with one container and restartPolicy Never: %+v", file, j)
	}
	return j
}

// The Kubernetes manifests: populate the cache once for K shards, an Indexed Job of K
// completions passing $JOB_COMPLETION_INDEX/K to --shard against that cache mounted and read
// read-only, and a merge of the parts; K agrees everywhere.
func TestKubernetesIndexedJob(t *testing.T) {
	shards := loadJob(t, "shards-job.yaml")
	s := shards.Spec
	if s.CompletionMode != "Indexed" || s.Completions < 2 || s.Parallelism < 1 {
		t.Fatalf("shards: completionMode %q, completions %d, parallelism %d", s.CompletionMode, s.Completions, s.Parallelism)
	}
	c := s.Template.Spec.Containers[0]
	k, err := strconv.Atoi(c.env("K"))
	if err != nil || k != s.Completions {
		t.Errorf("shards: K=%q, completions %d: they must agree", c.env("K"), s.Completions)
	}
	for _, want := range []string{"widejit run", `--shard "$JOB_COMPLETION_INDEX/$K"`, "--out", "part-$JOB_COMPLETION_INDEX.safetensors"} {
		if !strings.Contains(c.line(), want) {
			t.Errorf("shards: the command lacks %q: %s", want, c.line())
		}
	}
	if c.env("WIDEJIT_CACHE_DIR") == "" {
		t.Error("shards: no WIDEJIT_CACHE_DIR")
	}
	roShared := false
	for _, v := range s.Template.Spec.Volumes {
		if v.PVC != nil && v.PVC.ClaimName == "widejit-kernel-cache" && v.PVC.ReadOnly {
			roShared = true
		}
	}
	roMount := false
	for _, m := range c.Mounts {
		roMount = roMount || m.Name == "shared-cache" && m.ReadOnly && m.MountPath == c.env("WIDEJIT_CACHE_DIR")
	}
	if !roShared || !roMount || c.env("WIDEJIT_CACHE_READ_ONLY") != "true" {
		t.Error("shards: the shared kernel cache is not mounted read-only at WIDEJIT_CACHE_DIR and read with WIDEJIT_CACHE_READ_ONLY=true")
	}

	pop := loadJob(t, "populate-job.yaml").Spec.Template.Spec.Containers[0].line()
	if !strings.Contains(pop, "widejit cache populate") || !strings.Contains(pop, "--shards "+strconv.Itoa(s.Completions)) || !strings.Contains(pop, "--cache-dir") {
		t.Errorf("populate: %s", pop)
	}
	merge := loadJob(t, "merge-job.yaml").Spec.Template.Spec.Containers[0].line()
	if !strings.Contains(merge, "widejit merge /out/part-*.safetensors --out /out/all.safetensors") {
		t.Errorf("merge: %s", merge)
	}
}

// The Slurm scripts pass bash -n, the array has K tasks, and each passes
// $SLURM_ARRAY_TASK_ID/K to --shard; submit.sh chains populate, the array and the merge.
func TestSlurmArray(t *testing.T) {
	sbatch, err := os.ReadFile("slurm/widejit-shards.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	submit, err := os.ReadFile("slurm/submit.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := string(sbatch)
	arr := regexp.MustCompile(`(?m)^#SBATCH --array=0-(\d+)$`).FindStringSubmatch(s)
	k := regexp.MustCompile(`(?m)^K=\$\{K:-(\d+)\}`).FindStringSubmatch(s)
	if arr == nil || k == nil {
		t.Fatalf("no #SBATCH --array=0-M or K default in the script")
	}
	last, _ := strconv.Atoi(arr[1])
	if kk, _ := strconv.Atoi(k[1]); kk != last+1 {
		t.Errorf("--array=0-%d runs %d tasks, K defaults to %d", last, last+1, kk)
	}
	for _, want := range []string{"SLURM_ARRAY_TASK_ID", `--shard "$I/$K"`, "--cache-dir", "widejit run", `--out "$OUT_DIR/part-$I.safetensors"`} {
		if !strings.Contains(s, want) {
			t.Errorf("sbatch script lacks %q", want)
		}
	}
	for _, want := range []string{"widejit cache populate", "--shards $K", "--array=0-$((K - 1))", "afterok", "widejit merge"} {
		if !strings.Contains(string(submit), want) {
			t.Errorf("submit.sh lacks %q", want)
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is missing: the Slurm scripts' syntax is not checked")
	}
	if regexp.MustCompile(`(?m)^#SBATCH --(gpus|gres)`).MatchString(s) {
		t.Error("the sbatch script requests GPUs itself: a CPU-only cluster rejects it (submit.sh adds --gpus for DEVICE=cuda)")
	}
	for _, f := range []string{"slurm/widejit-shards.sbatch", "slurm/submit.sh", "slurm/local-test.sh"} {
		if out, err := exec.Command(bash, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", f, err, out)
		}
	}
}

// The Slurm path end to end on a single-node Slurm started for the test (slurm/local-test.sh):
// populate, a 3-shard array and merge through submit.sh with DEVICE=cpu (no GPU requested),
// the merged tensors bit-identical to an unsharded run.
func TestSlurmLocal(t *testing.T) {
	for _, tool := range []string{"slurmctld", "slurmd", "munged", "mungekey", "sbatch", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: install Debian's slurm-wlm and munge (apt-get install slurm-wlm munge; .ci/setup does) to run the Slurm path", tool)
		}
	}
	if os.Geteuid() != 0 && exec.Command("sudo", "-n", "true").Run() != nil {
		t.Skip("the local Slurm needs root or passwordless sudo (slurmd runs each job as its user)")
	}
	if testing.Short() {
		t.Skip("-short: the local Slurm run is skipped")
	}
	bin := filepath.Join(t.TempDir(), "widejit")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/widejit").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "slurm/local-test.sh", bin)
	cmd.Env = append(os.Environ(), "WAIT=240")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "bit-identical to the unsharded run") {
		t.Fatalf("slurm/local-test.sh: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
