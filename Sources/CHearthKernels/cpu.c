// Which instruction-set path this CPU can run.
#include "internal.h"

int hk_best_isa(void) {
#if HK_HAVE_AVX2 && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))
        return HK_ISA_AVX2;
#endif
    return HK_ISA_PORTABLE;
}

void hk_prefetch(const void *p, size_t bytes) {
    const char *c = (const char *)p;
    for (size_t i = 0; i < bytes; i += 64) __builtin_prefetch(c + i, 0, 2);
}
