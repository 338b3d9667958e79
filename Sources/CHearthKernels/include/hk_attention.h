#pragma once
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Converts n floats to IEEE half precision (round to nearest even) on instruction-set path isa.
void hk_f32_to_f16_row(int isa, const float *x, uint16_t *y, int64_t n);

/// Attention for one query head over positions 0..<n_pos of a half-precision KV cache.
/// Key and value of position t for this head start at k + t*stride and v + t*stride.
/// The query is rounded to half precision first, as the keys are. `single` chooses the order
/// of summation llama.cpp uses when a pass evaluates one token (1) or several (0). With
/// softcap > 0 each scaled score s becomes tanh(s * (1 / softcap)) * softcap, as llama.cpp's
/// graph caps a score whose scale has been applied to the queries (scale 1 here). `first` is
/// the absolute position of the first of the n_pos positions (after a sliding window's start):
/// each position's value is summed into the slot of its absolute position, as llama.cpp's
/// attention row spans the whole cache.
/// head_dim is at most 512; scores must hold n_pos floats; out receives head_dim floats.
void hk_attention_head_f16(int isa, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                           int64_t n_pos, int64_t head_dim, float scale, float softcap, int single, int64_t first,
                           float *scores, float *out);

/// hk_attention_head_f16 for n_heads consecutive query heads (q and out hold head_dim floats
/// per head) that share one key/value head: each key and value row is read once for all of
/// them, and each head's result is exactly what hk_attention_head_f16 gives it. scores must
/// hold min(n_heads, 4) * n_pos floats.
void hk_attention_heads_f16(int isa, const float *q, int64_t n_heads, const uint16_t *k, const uint16_t *v,
                            int64_t stride, int64_t n_pos, int64_t head_dim, float scale, float softcap, int single,
                            int64_t first, float *scores, float *out);

#ifdef __cplusplus
}
#endif
