/* A C program using vramkit's C ABI as a CUDA program would, on the host
 * backend (VRAMKIT_BACKEND=host): it writes through the pointers it gets. */
#include <stdio.h>
#include <string.h>
#include "vramkit.h"

#define N 64

static int fail(const char *what) {
    char msg[512];
    vramkit_last_error(msg, sizeof msg);
    fprintf(stderr, "FAIL %s: %s\n", what, msg);
    return 1;
}

int main(void) {
    void *p[N];
    for (int i = 0; i < N; i++) {
        ssize_t size = 1000 + 4096 * i;
        p[i] = vramkit_malloc(size, 0, NULL);
        if (!p[i]) return fail("malloc");
        memset(p[i], i + 1, (size_t)size);
    }
    for (int i = 0; i < N; i++) {
        unsigned char *b = p[i];
        ssize_t size = 1000 + 4096 * i;
        if (b[0] != i + 1 || b[size - 1] != i + 1) {
            fprintf(stderr, "FAIL contents of %d\n", i);
            return 1;
        }
    }
    vramkit_stats s;
    if (vramkit_get_stats(0, &s) != 0) return fail("stats");
    if (s.live != N) { fprintf(stderr, "FAIL live %llu\n", (unsigned long long)s.live); return 1; }
    for (int i = 0; i < N; i++) vramkit_free(p[i], 1000 + 4096 * i, 0, NULL);
    if (vramkit_configure("budget=1MiB") != 0) return fail("configure");
    if (vramkit_malloc(2 << 20, 0, NULL) != NULL) { fprintf(stderr, "FAIL no refusal\n"); return 1; }
    if (vramkit_last_error_kind() != VRAMKIT_OVER_BUDGET) return fail("kind");
    char msg[1024];
    size_t n = vramkit_last_error(msg, sizeof msg);
    if (n == 0 || strstr(msg, "2097152") == NULL) return fail("message");
    char small[8];
    size_t whole = vramkit_summary(0, small, sizeof small);
    if (whole < sizeof small || strlen(small) != sizeof small - 1) return fail("summary");
    printf("ok %llu allocations, refusal: %s\n", (unsigned long long)s.allocations, msg);
    return 0;
}
