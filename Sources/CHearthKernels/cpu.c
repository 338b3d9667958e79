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
