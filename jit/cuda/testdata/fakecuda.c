/* A fake libcuda.so.1 for tests on machines without a GPU: device memory is host memory,
 * and cuLaunchKernel "runs" the one kernel the test launches (add_kernel: out = x + y over n
 * fp32 values, parameters as the PTX backend's ABI lays them out), so the binding's argument
 * passing, memory copies, logs and error paths are exercised for real. Streams, events and
 * pinned memory are bound too, but run everything at once: the ordering of streams is tested
 * against the Go stub driver (stub.go), which queues and checks it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
static const uintptr_t CTX = 0x1234, MOD = 0x5678, FN = 0x9abc;
static uintptr_t current;
static char fname[256];
int fake_launches, fake_smem_attr;

CUresult cuInit(unsigned f) { return f == 0 ? 0 : 1; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == 218 ? "CUDA_ERROR_INVALID_PTX" : r == 500 ? "CUDA_ERROR_NOT_FOUND" : r == 201 ? "CUDA_ERROR_INVALID_CONTEXT" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) { *s = r == 218 ? "a PTX JIT compilation failed" : "fake error"; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int i) { if (i != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char *name, int n, int d) { strncpy(name, "Fake GPU", n); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
  switch (attr) {
  case 75: *v = 9; return 0;
  case 76: *v = 0; return 0;
  case 16: *v = 132; return 0;
  case 97: *v = 232448; return 0;
  }
  return 1;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int d) { *b = (size_t)80 << 30; return 0; }
CUresult cuDevicePrimaryCtxRetain(uintptr_t *c, int d) { *c = CTX; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxSetCurrent(uintptr_t c) { if (c != CTX) return 201; current = c; return 0; }
CUresult cuCtxSynchronize(void) { return current == CTX ? 0 : 201; }
CUresult cuModuleLoadDataEx(uintptr_t *m, const char *image, unsigned n, int *opts, void **vals) {
  char *errlog = 0; size_t errsize = 0; char *infolog = 0; size_t infosize = 0;
  for (unsigned i = 0; i < n; i++) {
    if (opts[i] == 5) errlog = vals[i];
    if (opts[i] == 6) errsize = (size_t)vals[i];
    if (opts[i] == 3) infolog = vals[i];
    if (opts[i] == 4) infosize = (size_t)vals[i];
  }
  if (infolog && infosize > 0) strncpy(infolog, "fake ptxas info: 10 registers", infosize);
  if (strstr(image, "bogus")) {
    if (errlog && errsize > 0) strncpy(errlog, "ptxas application ptx input, line 4; error: Unknown instruction 'bogus'", errsize);
    return 218;
  }
  if (!strstr(image, ".visible .entry")) return 218;
  *m = MOD;
  return 0;
}
CUresult cuModuleUnload(uintptr_t m) { return m == MOD ? 0 : 1; }
CUresult cuModuleGetFunction(uintptr_t *f, uintptr_t m, const char *name) {
  if (m != MOD) return 1;
  if (strcmp(name, "missing") == 0) return 500;
  strncpy(fname, name, sizeof fname - 1);
  *f = FN;
  return 0;
}
CUresult cuFuncSetAttribute(uintptr_t f, int attr, int v) { if (attr == 8) fake_smem_attr = v; return 0; }
CUresult cuLaunchKernel(uintptr_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned smem, uintptr_t stream, void **params, void **extra) {
  if (f != FN || current != CTX) return 1;
  fake_launches++;
  if (strcmp(fname, "add_kernel") == 0) {
    float *x = *(float **)params[0], *y = *(float **)params[1], *out = *(float **)params[2];
    unsigned n = *(unsigned *)params[3];
    if (bx == 0 || by != 1 || bz != 1 || gx == 0) return 1;
    for (unsigned i = 0; i < n; i++) out[i] = x[i] + y[i];
  }
  return 0;
}
CUresult cuMemAlloc_v2(uint64_t *p, size_t n) { *p = (uint64_t)(uintptr_t)malloc(n); return *p ? 0 : 2; }
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyDtoD_v2(uint64_t d, uint64_t s, size_t n) { memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyHtoDAsync_v2(uint64_t d, const void *s, size_t n, uintptr_t st) { return cuMemcpyHtoD_v2(d, s, n); }
CUresult cuMemcpyDtoHAsync_v2(void *d, uint64_t s, size_t n, uintptr_t st) { return cuMemcpyDtoH_v2(d, s, n); }
CUresult cuMemsetD8_v2(uint64_t d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return 0; }
/* Streams: distinct handles from 0x77 on; every call runs at once (no queue), so any order of
 * streams is a valid one. Events carry a stamp per record; elapsed time is 1.5 ms a stamp. */
static int streams;
static int valid_stream(uintptr_t s) { return s == 0 || (s >= 0x77 && s < 0x77 + (uintptr_t)streams); }
CUresult cuStreamCreate(uintptr_t *s, unsigned f) { if (f > 1) return 1; *s = 0x77 + streams++; return 0; }
CUresult cuStreamDestroy_v2(uintptr_t s) { return valid_stream(s) && s != 0 ? 0 : 1; }
CUresult cuStreamSynchronize(uintptr_t s) { return valid_stream(s) ? 0 : 1; }
static int events, stamp, stamps[4096];
static int valid_event(uintptr_t e) { return e > 0x100 && e <= 0x100 + (uintptr_t)events && events < 4096; }
CUresult cuEventCreate(uintptr_t *e, unsigned f) { if (f > 2) return 1; *e = 0x100 + ++events; return 0; }
CUresult cuEventRecord(uintptr_t e, uintptr_t s) {
  if (!valid_event(e) || !valid_stream(s)) return 1;
  stamps[e - 0x100] = ++stamp;
  return 0;
}
CUresult cuStreamWaitEvent(uintptr_t s, uintptr_t e, unsigned f) { return valid_stream(s) && valid_event(e) && f == 0 ? 0 : 1; }
CUresult cuEventSynchronize(uintptr_t e) { return valid_event(e) ? 0 : 1; }
CUresult cuEventElapsedTime(float *ms, uintptr_t a, uintptr_t b) {
  if (!valid_event(a) || !valid_event(b)) return 1;
  *ms = 1.5f * (float)(stamps[b - 0x100] - stamps[a - 0x100]);
  return 0;
}
CUresult cuEventDestroy_v2(uintptr_t e) { return valid_event(e) ? 0 : 1; }
int fake_pinned;
CUresult cuMemHostAlloc(void **p, size_t n, unsigned f) { *p = malloc(n); if (!*p) return 2; fake_pinned++; return 0; }
CUresult cuMemFreeHost(void *p) { free(p); fake_pinned--; return 0; }
