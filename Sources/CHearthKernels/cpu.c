// Which instruction-set path this CPU can run.
#include "internal.h"
#include <stdatomic.h>
#if HK_HAVE_AVX2
#include "avx2.h"
#endif

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

#if HK_HAVE_AVX2
static _Atomic int vnni_allowed = 1;

int hk_vnni_kind(void) {
    static _Atomic int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") ? HK_AVX512_VNNI
              : __builtin_cpu_supports("avxvnni") ? HK_AVX_VNNI : HK_NO_VNNI;
    }
    return vnni_allowed ? known : HK_NO_VNNI;
}

int hk_use_vnni(int allowed) {
    if (allowed >= 0) vnni_allowed = allowed;
    return hk_vnni_kind() != HK_NO_VNNI;
}
#else
int hk_use_vnni(int allowed) {
    (void)allowed;
    return 0;
}
#endif
