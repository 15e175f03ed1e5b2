#!/usr/bin/env bash
# dev/gemm_bench.sh - build dev/gemm_bench.c against each CBLAS on this machine
# and run it for 1 and 2 threads, each library variant and env setting.
#
#   dev/gemm_bench.sh [bench|probes|all]      (default: all)
#
#   bench  : writes dev/gemm_results.csv
#            (library,env,threads,precision,op,batch,in,out,gflops)
#   probes : builds and runs the small env-timing probes used in
#            docs/notes/blas-choice.md, questions (a) and (b)
#
# Each library is linked by explicit path so the variants cannot clash
# (libopenblas.so.0 exists in both openblas-pthread/ and openblas-openmp/,
# and libblis.so.4 / libblas.so.3 are alternatives-managed symlinks).
# Runs are strictly sequential (2-core machine).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-all}
L=/usr/lib/x86_64-linux-gnu
OB_PTHREAD=$L/openblas-pthread/libopenblas.so.0
OB_OPENMP=$L/openblas-openmp/libopenblas.so.0
BLIS=$L/blis-openmp/libblis.so.4
BLIS_INC=/usr/include/x86_64-linux-gnu/blis-openmp
XSMM_LIBS="/usr/lib/libxsmmext.a /usr/lib/libxsmm.a -lpthread -lrt -ldl -lm"
CSV=dev/gemm_results.csv
BUILD=${GEMM_BENCH_BUILD:-$(mktemp -d /tmp/gemm_bench.XXXXXX)}
CFLAGS="-std=c11 -O2 -Wall -Wextra"

build_bench() {
    gcc $CFLAGS -DHAVE_OPENBLAS_INFO dev/gemm_bench.c "$OB_PTHREAD" -lm -o "$BUILD/gb_openblas_pthread"
    gcc $CFLAGS -DHAVE_OPENBLAS_INFO dev/gemm_bench.c "$OB_OPENMP" -lm -o "$BUILD/gb_openblas_openmp"
    gcc $CFLAGS -DHAVE_BLIS_INFO dev/gemm_bench.c "$BLIS" -lm -o "$BUILD/gb_blis"
    # libxsmm: Debian ships static libs only; libxsmm_?gemm_omp comes from libxsmmext.
    # No BLAS is linked: gemm_bench.c defines trapping sgemm_/dgemm_ so a fall-back is reported.
    gcc $CFLAGS -fopenmp -DUSE_LIBXSMM dev/gemm_bench.c $XSMM_LIBS -o "$BUILD/gb_libxsmm"
}

# run BIN LABEL ENVLABEL SET THREADS [env assignments / -u VAR ...]
run() {
    local bin=$1 label=$2 envlabel=$3 set=$4 t=$5
    shift 5
    env "$@" OMP_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$t" BLIS_NUM_THREADS="$t" \
        GEMM_BENCH_SET="$set" "$BUILD/$bin" "$label" "$envlabel" "$CSV"
}

bench() {
    build_bench
    echo "library,env,threads,precision,op,batch,in,out,gflops" > "$CSV"
    for t in 1 2; do
        run gb_openblas_pthread openblas-pthread CORETYPE=Haswell all "$t" OPENBLAS_CORETYPE=Haswell
        run gb_openblas_pthread openblas-pthread CORETYPE-unset all "$t" -u OPENBLAS_CORETYPE
        run gb_openblas_openmp openblas-openmp CORETYPE=Haswell key "$t" OPENBLAS_CORETYPE=Haswell
        run gb_openblas_openmp openblas-openmp CORETYPE-unset all "$t" -u OPENBLAS_CORETYPE
        # BLIS 0.9.0 parses BLIS_ARCH_TYPE with atoi(): names are NOT recognised
        # (every name -> 0 = skx).  Numeric ids: 0 skx, 3 haswell, 6 zen3, 7 zen2.
        run gb_blis blis-openmp ARCH-unset key "$t" -u BLIS_ARCH_TYPE
        run gb_blis blis-openmp ARCH=0-skx all "$t" BLIS_ARCH_TYPE=0
        run gb_blis blis-openmp ARCH=6-zen3 key "$t" BLIS_ARCH_TYPE=6
        run gb_blis blis-openmp ARCH=7-zen2 key "$t" BLIS_ARCH_TYPE=7
        run gb_blis blis-openmp ARCH=3-haswell key "$t" BLIS_ARCH_TYPE=3
        run gb_libxsmm libxsmm-1.17-omp default all "$t"
    done
}

probes() {
    local P=$BUILD/probes
    mkdir -p "$P"
    # (a) OpenBLAS: unsetenv("OPENBLAS_CORETYPE") in main / in .preinit_array
    cat > "$P/ob_probe.c" <<'EOF'
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
char *openblas_get_corename(void);
void cblas_sgemm(int, int, int, int, int, int, float, const float *, int, const float *, int,
                 float, float *, int);
#ifdef PREINIT
/* Runs before the constructors of shared libraries (ELF DT_PREINIT_ARRAY,
 * executables only). */
#ifndef PREINIT_EDIT_ENVP
static void early(int argc, char **argv, char **envp)
{
    (void)argc; (void)argv; (void)envp;
    unsetenv("OPENBLAS_CORETYPE"); /* libc's environ is not set up yet here */
}
#else
#include <string.h>
/* Remove the entry from the envp array itself (libc later sets environ = envp). */
static void early(int argc, char **argv, char **envp)
{
    (void)argc; (void)argv;
    char **w = envp;
    for (char **r = envp; *r; ++r)
        if (strncmp(*r, "OPENBLAS_CORETYPE=", 18)) *w++ = *r;
    *w = NULL;
}
#endif
__attribute__((section(".preinit_array"), used)) static void (*early_p)(int, char **, char **) = early;
#endif
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(void)
{
#ifndef PREINIT
    unsetenv("OPENBLAS_CORETYPE");
#endif
    int n = 1024;
    float *a = aligned_alloc(64, sizeof(float) * n * n), *b = aligned_alloc(64, sizeof(float) * n * n),
          *c = aligned_alloc(64, sizeof(float) * n * n);
    for (int i = 0; i < n * n; ++i) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; c[i] = 0; }
    const char *env = getenv("OPENBLAS_CORETYPE");
    printf("getenv after unset=%s corename=%s", env ? env : "(null)", openblas_get_corename());
    cblas_sgemm(101, 111, 111, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
    double best = 1e9;
    for (int r = 0; r < 7; ++r) {
        double t0 = now();
        for (int k = 0; k < 10; ++k) cblas_sgemm(101, 111, 111, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
        double t = (now() - t0) / 10;
        if (t < best) best = t;
    }
    printf(" sgemm1024(1 thread)=%.1f GFLOP/s\n", 2.0 * n * n * n / best * 1e-9);
    return 0;
}
EOF
    gcc $CFLAGS "$P/ob_probe.c" "$OB_PTHREAD" -o "$P/ob_main"
    gcc $CFLAGS -DPREINIT "$P/ob_probe.c" "$OB_PTHREAD" -o "$P/ob_preinit"
    gcc $CFLAGS -DPREINIT -DPREINIT_EDIT_ENVP "$P/ob_probe.c" "$OB_PTHREAD" -o "$P/ob_preinit_envp"
    export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1
    echo "== (a) OpenBLAS (pthread), unsetenv() at start of main"
    echo -n "  env OPENBLAS_CORETYPE=Haswell : "; OPENBLAS_CORETYPE=Haswell "$P/ob_main"
    echo -n "  env unset                     : "; env -u OPENBLAS_CORETYPE "$P/ob_main"
    echo "== (a') OpenBLAS, unsetenv() from the executable's .preinit_array"
    echo -n "  env OPENBLAS_CORETYPE=Haswell : "; OPENBLAS_CORETYPE=Haswell "$P/ob_preinit"
    echo -n "  env unset                     : "; env -u OPENBLAS_CORETYPE "$P/ob_preinit"
    echo "== (a'') OpenBLAS, .preinit_array function that deletes the entry from envp[] in place"
    echo -n "  env OPENBLAS_CORETYPE=Haswell : "; OPENBLAS_CORETYPE=Haswell "$P/ob_preinit_envp"

    # (b) BLIS: setenv("BLIS_ARCH_TYPE", ..., 0) at start of main
    cat > "$P/blis_probe.c" <<'EOF'
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <blis.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
/* argv[1]: value to setenv (no overwrite) at start of main, "-" for none.
 * argv[2]: "late" -> setenv only after a first BLIS call. */
int main(int argc, char **argv)
{
    const char *val = argc > 1 ? argv[1] : "skx";
    int late = argc > 2 && !strcmp(argv[2], "late");
    int n = 1024;
    float *a = aligned_alloc(64, sizeof(float) * n * n), *b = aligned_alloc(64, sizeof(float) * n * n),
          *c = aligned_alloc(64, sizeof(float) * n * n);
    for (int i = 0; i < n * n; ++i) { a[i] = (float)(i % 7) * 0.1f; b[i] = (float)(i % 5) * 0.1f; c[i] = 0; }
    if (late) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 8, 8, 8, 1.f, a, 8, b, 8, 0.f, c, 8);
    if (strcmp(val, "-")) setenv("BLIS_ARCH_TYPE", val, 0);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
    arch_t id = bli_arch_query_id(); /* only after BLIS is initialised (0.9.0 bug) */
    double best = 1e9;
    for (int r = 0; r < 5; ++r) {
        double t0 = now();
        for (int k = 0; k < 4; ++k)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a, n, b, n, 0.f, c, n);
        double t = (now() - t0) / 4;
        if (t < best) best = t;
    }
    printf("setenv(%s)%s -> arch=%d (%s) sgemm1024(1 thread)=%.1f GFLOP/s\n", val, late ? " after 1st call" : "",
           (int)id, bli_arch_string(id), 2.0 * n * n * n / best * 1e-9);
    return 0;
}
EOF
    gcc -std=c11 -O2 -w -I"$BLIS_INC" "$P/blis_probe.c" "$BLIS" -lm -o "$P/blis_probe"
    echo "== (b) BLIS 0.9.0, setenv(\"BLIS_ARCH_TYPE\", v, 0) at start of main (env var unset)"
    for v in - skx 0 zen3 6 3; do echo -n "  "; env -u BLIS_ARCH_TYPE "$P/blis_probe" "$v"; done
    echo -n "  "; env -u BLIS_ARCH_TYPE "$P/blis_probe" 0 late
    echo "== (b') BLIS: bli_arch_query_id() as the very first BLIS call with BLIS_ARCH_TYPE set"
    cat > "$P/blis_q.c" <<'EOF'
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <blis.h>
int main(void) { arch_t id = bli_arch_query_id(); printf("arch=%d %s\n", (int)id, bli_arch_string(id)); return 0; }
EOF
    gcc -std=c11 -O2 -w -I"$BLIS_INC" "$P/blis_q.c" "$BLIS" -lm -o "$P/blis_q"
    echo -n "  unset: "; env -u BLIS_ARCH_TYPE "$P/blis_q" 2>&1 || true
    echo -n "  =0   : "; BLIS_ARCH_TYPE=0 "$P/blis_q" 2>&1 | tr '\n' ' ' || true; echo
    echo "== (c) BLIS threads: OMP_NUM_THREADS=2 only vs BLIS_NUM_THREADS=2 only (BLIS_ARCH_TYPE=0)"
    echo -n "  OMP_NUM_THREADS=2 : "; env -u BLIS_NUM_THREADS OMP_NUM_THREADS=2 BLIS_ARCH_TYPE=0 "$P/blis_probe" - | sed 's/(1 thread)//'
    echo -n "  BLIS_NUM_THREADS=2: "; env -u OMP_NUM_THREADS BLIS_NUM_THREADS=2 BLIS_ARCH_TYPE=0 "$P/blis_probe" - | sed 's/(1 thread)//'
    echo -n "  neither (=1 expected): "; env -u OMP_NUM_THREADS -u BLIS_NUM_THREADS BLIS_ARCH_TYPE=0 "$P/blis_probe" - | sed 's/(1 thread)//'
}

case "$MODE" in
    bench) bench ;;
    probes) probes ;;
    all) probes; bench ;;
    *) echo "usage: $0 [bench|probes|all]" >&2; exit 2 ;;
esac
echo "build dir: $BUILD"
