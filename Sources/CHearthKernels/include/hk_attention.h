#pragma once
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The order of one of attention's sums. Each network is checked against a reference whose
/// sums run in one order, and floats added in another order give other bits; so the order is a
/// parameter, not a property of the kernel.
typedef enum {
    /// llama.cpp's pass of one token (ggml_vec_dot_f16): 32 slots, term i into slot i mod 32,
    /// reduced by GGML_F32x8_REDUCE; a product over dimensions adds the terms past the last
    /// whole 32 in double, a sum over positions puts position p in slot p mod 32 of the whole
    /// cache (`first` + t).
    HK_SUM_LLAMA_ONE = 0,
    /// llama.cpp's pass of several tokens (tinyBLAS): 8 lanes, term i into lane i mod 8 (over
    /// positions, of the whole cache), reduced in hk_hsum's order.
    HK_SUM_LLAMA_MANY = 1,
    /// 8 lanes over the whole multiples of 8, reduced in hk_hsum's order, then the other terms
    /// one by one.
    HK_SUM_LANES8 = 2,
    /// As HK_SUM_LANES8 with the lanes reduced pairwise: ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
    HK_SUM_LANES8_PAIRS = 3,
    /// One chain of fused multiply-adds, in order.
    HK_SUM_SERIAL = 4,
    /// hk_dot_f32 over dimensions, hk_axpy_f32 over positions (float keys and values only).
    HK_SUM_VECTOR = 5,
} hk_sum_order;

/// How the scores become weights.
typedef enum {
    /// hk_softmax_f32, then each weight rounded through half precision, as llama.cpp multiplies
    /// a half-precision V cache by weights converted to its type.
    HK_SOFTMAX_LLAMA = 0,
    /// e^(s - max) by hk_exp_approx, summed in `total`'s order, then normalised as `normalise` says.
    HK_SOFTMAX_APPROX = 1,
    /// e^(s - max) by expf, summed in `total`'s order, then normalised as `normalise` says.
    HK_SOFTMAX_EXP = 2,
} hk_softmax_kind;

/// Where the division by the sum of the exponentials happens (HK_SOFTMAX_APPROX and _EXP).
typedef enum {
    /// Each weight is multiplied by 1 / sum before the values.
    HK_NORMALISE_WEIGHTS = 0,
    /// Each weight is divided by the sum as the values are added; the scores keep the exponentials.
    HK_NORMALISE_EACH = 1,
    /// Each output is divided by the sum; the scores keep the exponentials.
    HK_NORMALISE_OUTPUT = 2,
} hk_normalise;

/// The orders of one attention's sums.
typedef struct {
    hk_sum_order scores;     ///< q·k over a head's dimensions
    hk_softmax_kind softmax;
    hk_sum_order total;      ///< the exponentials' sum: HK_SUM_SERIAL (fused adds not involved) or HK_SUM_LANES8
    hk_normalise normalise;
    hk_sum_order values;     ///< Σ weight · value over positions
} hk_attention_order;

/// One attention: `n_queries` rows of `n_heads` query heads, every head of every row over the
/// same key/value head: out = Σₜ softmaxₜ(scale · q·kₜ) vₜ, with a soft cap on the scaled
/// scores when softcap > 0 (s → tanh(s / softcap) · softcap).
///
/// Which positions a row sees is the mode: all `n_pos` of them (an encoder's padded-free
/// batch of one sequence, or cross-attention over an encoder's output), or, when `causal`, the
/// first n_pos − n_queries + 1 + i for row i (a decoder over its KV cache, the rows being the
/// cache's last n_queries positions).
typedef struct {
    const float *q;          ///< head h of row i at q + i * q_stride + h * head_dim
    int64_t q_stride;
    int64_t n_queries;
    int64_t n_heads;
    int64_t head_dim;        ///< at most 512 when kv_half
    /// Keys and values, floats or (kv_half) IEEE halves. By rows, position t's at
    /// k + t * kv_stride; transposed (kv_transposed), element d of position t at
    /// k[d * n_pos + t], likewise the values.
    const void *k, *v;
    int kv_half;
    int kv_transposed;
    int64_t kv_stride;
    int64_t n_pos;
    int causal;
    /// The absolute position of position 0, for the llama.cpp orders, whose slots count
    /// positions of the whole cache (a sliding window starts past 0).
    int64_t first;
    float scale;
    float softcap;
    /// One learned score a query head (head h of a row at sinks[h]) that takes part in the
    /// softmax but weighs no value (HK_SOFTMAX_LLAMA only), or NULL.
    const float *sinks;
    hk_attention_order order;
    /// n_pos floats for each of up to four heads (min(n_heads, 4) · n_pos). With one head and
    /// HK_NORMALISE_EACH or _OUTPUT, left holding the last row's exponentials.
    float *scores;
    float *out;              ///< head h of row i at out + i * out_stride + h * head_dim
    int64_t out_stride;
} hk_attention;

/// Runs `a` on instruction-set path isa; both paths give the same bits, except that
/// HK_SUM_VECTOR is the path's own hk_dot_f32 and hk_axpy_f32. An order the layout cannot
/// take (HK_SUM_VECTOR over half or transposed rows) leaves NaN in the output.
void hk_attention_run(int isa, const hk_attention *a);

/// Converts n floats to IEEE half precision (round to nearest even) on instruction-set path isa.
void hk_f32_to_f16_row(int isa, const float *x, uint16_t *y, int64_t n);

/// Attention for one query head over positions 0..<n_pos of a half-precision KV cache: a
/// decoder's, in llama.cpp's orders (`single`: the pass evaluates one token).
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
/// hold min(n_heads, 4) * n_pos floats. sinks, when not NULL, holds each head's attention sink
/// (hk_softmax_f32's).
void hk_attention_heads_f16(int isa, const float *q, int64_t n_heads, const uint16_t *k, const uint16_t *v,
                            int64_t stride, int64_t n_pos, int64_t head_dim, float scale, float softcap, int single,
                            int64_t first, const float *sinks, float *scores, float *out);

/// Converts one row of n floats to a KV cache type: HK_F16 (1); HK_Q8_0 (8) as llama.cpp's
/// quantize_row_q8_0 and HK_Q4_0 (2) as its quantize_row_q4_0_ref, n a multiple of 32.
/// Returns 0, or -1 for another type or length.
int hk_kv_store_row(int isa, uint32_t type, const float *x, void *dst, int64_t n);

/// hk_attention_heads_f16 over a cache whose keys are of k_type and values of v_type (HK_F16,
/// HK_Q8_0 or HK_Q4_0), position t's key at k + t * k_row_bytes, its value at v + t *
/// v_row_bytes. Both half: exactly hk_attention_heads_f16. Otherwise as llama.cpp's products
/// take the types: quantized keys against the query quantized to Q8_0, half keys in the
/// half-precision orders; weights rounded through half precision for half values, and a
/// quantized value row dequantized and added with one fused multiply-add per dimension,
/// position after position. head_dim is at most 512 (a multiple of 32 for a quantized type);
/// scores must hold min(n_heads, 4) * n_pos floats; sinks as hk_attention_heads_f16's.
void hk_attention_heads_kv(int isa, const float *q, int64_t n_heads, const void *k, uint32_t k_type, size_t k_row_bytes,
                           const void *v, uint32_t v_type, size_t v_row_bytes, int64_t n_pos, int64_t head_dim,
                           float scale, float softcap, int single, int64_t first, const float *sinks, float *scores,
                           float *out);

#ifdef __cplusplus
}
#endif
