// AVX2 dot products of the 256-element super-block formats with Q8_K activations.
//
// Quants are unpacked to unsigned bytes and multiplied with the activations by vpmaddubsw;
// per-sub-block scales are applied with vpmaddwd, so a whole super-block sums in int32
// before one float multiply. Offsets (Q4_K/Q5_K mins, Q6_K's -32) come from the activation
// block sums (bsums) instead of the quants.
#include "avx2.h"
#if HK_HAVE_AVX2

#define HK_VNNI512 __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")))

// The eight 6-bit scales and eight 6-bit mins of a Q4_K/Q5_K block as int16 lanes, scales in
// the low 8 lanes of `sc` (repeated in both 128-bit halves) and mins in `mn`.
//   scale j < 4: low 6 bits of byte j;      scale j >= 4: low nibble of byte j + 4, top bits of byte j - 4
//   min   j < 4: low 6 bits of byte j + 4;  min   j >= 4: high nibble of byte j + 4, top bits of byte j
HK_INLINE HK_AVX2 void scales_mins(const uint8_t *packed, __m256i *sc, __m128i *mn) {
    uint32_t b[3];
    memcpy(b, packed, 12);
    const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
    const uint32_t sc_lo = b[0] & low6, mn_lo = b[1] & low6;
    const uint32_t sc_hi = (b[2] & low4) | (((b[0] >> 6) & low2) << 4);
    const uint32_t mn_hi = ((b[2] >> 4) & low4) | (((b[1] >> 6) & low2) << 4);
    const __m128i s8 = _mm_set_epi32(0, 0, (int)sc_hi, (int)sc_lo), m8 = _mm_set_epi32(0, 0, (int)mn_hi, (int)mn_lo);
    *sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(s8));
    *mn = _mm_cvtepu8_epi16(m8);
}

// Sum over sub-blocks j of min j times the sum of its 32 activations (two 16-element bsums).
HK_INLINE HK_AVX2 int mins_dot(__m128i mn, const int16_t *bsums) {
    const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)bsums),
                                         _mm_loadu_si128((const __m128i *)(bsums + 8)));
    __m128i v = _mm_madd_epi16(pairs, mn);
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4E));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xB1));
    return _mm_cvtsi128_si32(v);
}

// Lane j: min 2j times the sum of its 32 activations plus min 2j + 1 times the sum of its.
HK_INLINE HK_AVX2 __m128i mins_pairs(__m128i mn, const int16_t *bsums) {
    const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)bsums),
                                         _mm_loadu_si128((const __m128i *)(bsums + 8)));
    return _mm_madd_epi16(pairs, mn);
}

// int16 lane j of `sc` broadcast to all 16 lanes.
HK_INLINE HK_AVX2 __m256i spread16(__m256i sc, int j) {
    return _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)(0x0100 * (2 * j + 1) + 2 * j)));
}

// The lane sums of four vectors: lane c of the result is the sum of the lanes of v[c].
HK_INLINE HK_AVX2 __m128i hsum4_i32(const __m256i *v) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// Where the float rounding happens in a super-block dot product. The integer sums are exact in
// every order; what differs is which partial sums become floats and how they are accumulated.
// llama.cpp's x86 CPU backend uses one of these per weight type and batch size, and the outputs
// match it bit for bit only in the same order.
enum {
    // Eight int32 lanes per super-block, each scaled into its own float lane; the lanes are
    // added at the end (ggml_vec_dot_q*_K_q8_K).
    K_LANES,
    // One integer per super-block (scales and mins apart), each accumulated with one fused
    // multiply-add: the repacked Q4_K kernel for a single column (ggml_gemv_q4_K_8x8_q8_K).
    K_BLOCKS,
    // One integer per 64 elements: the repacked Q4_K kernel for columns in fours
    // (ggml_gemm_q4_K_8x8_q8_K). Needs NC == 4.
    K_PAIRS,
    // One integer per super-block (and one for the mins), scaled by the weight scale (the mins
    // fused in with dmin) and then fused with the activation scale: the tiled kernel llama.cpp
    // uses for K-quant batches of 8 or more that are not repacked.
    K_TILED,
};

// Q4_K and Q5_K (five = 1) row against NC columns (1..4): out[c * out_stride].
// Orders: K_LANES, K_BLOCKS, K_PAIRS, K_TILED.
HK_INLINE HK_AVX2 void q45k_cols(const int five, const int order, const uint8_t *w, const uint8_t *const *a,
                                 const int NC, int64_t nb, float *out, size_t out_stride) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    const size_t wb = five ? sizeof(hk_q5_K) : sizeof(hk_q4_K);
    __m256 acc[4];
    float acc_s[4], acc_min[4];
    __m128 acc4 = _mm_setzero_ps(), acc_min4 = _mm_setzero_ps(), acc_m[4];
    for (int c = 0; c < NC; c++) {
        acc[c] = _mm256_setzero_ps();
        acc_m[c] = _mm_setzero_ps();
        acc_s[c] = 0;
        acc_min[c] = 0;
    }
    for (int64_t i = 0; i < nb; i++) {
        const hk_q4_K *x4 = (const hk_q4_K *)(w + (size_t)i * wb);
        const hk_q5_K *x5 = (const hk_q5_K *)x4;
        const hk_q8_K *y[4];
        for (int c = 0; c < NC; c++) y[c] = (const hk_q8_K *)a[c] + i;
        __m256i sc;
        __m128i mn;
        scales_mins(x4->scales, &sc, &mn);
        const float d = hk_half(&x4->d), dmin = hk_half(&x4->dmin);
        __m128 dd4 = _mm_setzero_ps();
        if (order == K_PAIRS) dd4 = _mm_mul_ps(_mm_set1_ps(d), _mm_setr_ps(y[0]->d, y[1]->d, y[2]->d, y[3]->d));
        const uint8_t *qs = five ? x5->qs : x4->qs;
        // Bit 2j of qh[l] is the fifth bit of element 64j + l, bit 2j+1 that of 64j + 32 + l;
        // shifting right by 2 per chunk brings them to bits 0 and 1.
        __m256i h = five ? hk_load256(x5->qh) : _mm256_setzero_si256();
        __m256i sumi[4];
        for (int c = 0; c < NC; c++) sumi[c] = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i q = hk_load256(qs + 32 * j);
            __m256i lo = _mm256_and_si256(q, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
            if (five) {
                lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(h, 4), bit4));
                hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(h, 3), bit4));
                h = _mm256_srli_epi16(h, 2);
            }
            const __m256i s0 = spread16(sc, 2 * j), s1 = spread16(sc, 2 * j + 1);
            __m256i part[4];
            for (int c = 0; c < NC; c++) {
                const __m256i p0 = _mm256_maddubs_epi16(lo, hk_load256(y[c]->qs + 64 * j));
                const __m256i p1 = _mm256_maddubs_epi16(hi, hk_load256(y[c]->qs + 64 * j + 32));
                part[c] = _mm256_add_epi32(_mm256_madd_epi16(p0, s0), _mm256_madd_epi16(p1, s1));
                if (order != K_PAIRS) sumi[c] = _mm256_add_epi32(sumi[c], part[c]);
            }
            if (order == K_PAIRS) acc4 = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_i32(part)), dd4, acc4);
        }
        if (order == K_PAIRS) {
            // Min terms per 64 elements too: lane j of mins_pairs is the pair 2j, 2j + 1.
            __m128 m[4];
            for (int c = 0; c < 4; c++) m[c] = _mm_castsi128_ps(mins_pairs(mn, y[c]->bsums));
            _MM_TRANSPOSE4_PS(m[0], m[1], m[2], m[3]);
            const __m128 dm4 = _mm_mul_ps(_mm_set1_ps(dmin), _mm_setr_ps(y[0]->d, y[1]->d, y[2]->d, y[3]->d));
            for (int j = 0; j < 4; j++) acc_min4 = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_castps_si128(m[j])), dm4, acc_min4);
            continue;
        }
        for (int c = 0; c < NC; c++) {
            const float dy = y[c]->d;
            if (order == K_BLOCKS) {
                acc_s[c] = hk_fma((float)hk_hsum_i32(sumi[c]), d * dy, acc_s[c]);
                acc_min[c] = hk_fma((float)mins_dot(mn, y[c]->bsums), dmin * dy, acc_min[c]);
            } else if (order == K_TILED) {
                const float r = d * (float)hk_hsum_i32(sumi[c]);
                acc_s[c] = hk_fma(hk_fma(-dmin, (float)mins_dot(mn, y[c]->bsums), r), dy, acc_s[c]);
            } else {
                acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dy * d), _mm256_cvtepi32_ps(sumi[c]), acc[c]);
                // Q4_K's lanes keep the mins in four lanes of pairs, with -dmin (as
                // ggml_vec_dot_q4_K_q8_K does); Q5_K's take one sum a super-block.
                if (five) acc_min[c] = hk_fma(dy * dmin, (float)mins_dot(mn, y[c]->bsums), acc_min[c]);
                else acc_m[c] = _mm_fmadd_ps(_mm_set1_ps(-dy * dmin), _mm_cvtepi32_ps(mins_pairs(mn, y[c]->bsums)), acc_m[c]);
            }
        }
    }
    if (order == K_PAIRS) {
        float s[4], m[4];
        _mm_storeu_ps(s, acc4);
        _mm_storeu_ps(m, acc_min4);
        for (int c = 0; c < 4; c++) out[(size_t)c * out_stride] = s[c] - m[c];
        return;
    }
    for (int c = 0; c < NC; c++) {
        if (order == K_LANES && !five) {
            __m128 m = _mm_add_ps(acc_m[c], _mm_movehl_ps(acc_m[c], acc_m[c]));
            m = _mm_add_ss(m, _mm_movehdup_ps(m));
            out[(size_t)c * out_stride] = hk_hsum(acc[c]) + _mm_cvtss_f32(m);
            continue;
        }
        out[(size_t)c * out_stride] = order == K_TILED ? acc_s[c]
                                    : order == K_BLOCKS ? acc_s[c] - acc_min[c] : hk_hsum(acc[c]) - acc_min[c];
    }
}

// Q6_K row against NC columns (1..4). Orders: K_LANES, K_TILED.
HK_INLINE HK_AVX2 void q6k_cols(const int order, const uint8_t *w, const uint8_t *const *a, const int NC,
                                int64_t nb, float *out, size_t out_stride) {
    // Spread int16 scale pair k of a 128-bit lane: scale 2k over the low lane, 2k+1 the high.
    const __m256i pick[4] = {
        _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3),
        _mm256_setr_epi8(4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7),
        _mm256_setr_epi8(8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11),
        _mm256_setr_epi8(12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15),
    };
    __m256 acc[4];
    float acc_s[4];
    for (int c = 0; c < NC; c++) {
        acc[c] = _mm256_setzero_ps();
        acc_s[c] = 0;
    }
    for (int64_t i = 0; i < nb; i++) {
        const hk_q6_K *x = (const hk_q6_K *)w + i;
        const hk_q8_K *y[4];
        for (int c = 0; c < NC; c++) y[c] = (const hk_q8_K *)a[c] + i;
        __m256i sumi[4];
        for (int c = 0; c < NC; c++) sumi[c] = _mm256_setzero_si256();
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = x->ql + 64 * half, *qh = x->qh + 32 * half;
            const __m128i sc8 = _mm_loadl_epi64((const __m128i *)(x->scales + 8 * half));
            const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(sc8));
            __m256i q[4];
            hk_q6k_unpack(ql, qh, q);
            for (int k = 0; k < 4; k++) {
                const __m256i scale = _mm256_shuffle_epi8(sc16, pick[k]);
                for (int c = 0; c < NC; c++) {
                    const __m256i p = _mm256_maddubs_epi16(q[k], hk_load256(y[c]->qs + 128 * half + 32 * k));
                    sumi[c] = _mm256_add_epi32(sumi[c], _mm256_madd_epi16(p, scale));
                }
            }
        }
        const float dx = hk_half(&x->d);
        const __m256i sc_all = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
        for (int c = 0; c < NC; c++) {
            // The -32 of every quant: lane k takes 32 * (scale * sum of 16 activations) of the
            // groups 2k and 2k + 1, and is subtracted lane by lane before the lanes become floats.
            const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc_all, hk_load256(y[c]->bsums)), 5);
            const __m256i lanes = _mm256_sub_epi32(sumi[c], offset);
            if (order == K_TILED) {
                acc_s[c] = hk_fma(dx * (float)hk_hsum_i32(lanes), y[c]->d, acc_s[c]);
            } else {
                acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(y[c]->d * dx), _mm256_cvtepi32_ps(lanes), acc[c]);
            }
        }
    }
    for (int c = 0; c < NC; c++) out[(size_t)c * out_stride] = order == K_TILED ? acc_s[c] : hk_hsum(acc[c]);
}

// K_Q4P: Q4_K rows llama.cpp does not repack (a row count that is not a multiple of 8), summed
// as Q5_K's are: the lanes of ggml_vec_dot_q4_K_q8_K, the tiled kernel from 8 columns on.
enum { K_Q4, K_Q5, K_Q6, K_Q4P };

HK_INLINE HK_AVX2 void k_cols(const int kind, const int order, const uint8_t *w, const uint8_t *const *a,
                              const int NC, int64_t nb, float *out, size_t out_stride) {
    if (kind == K_Q6) q6k_cols(order, w, a, NC, nb, out, out_stride);
    else q45k_cols(kind == K_Q5, order, w, a, NC, nb, out, out_stride);
}

// One row against NC columns in `order`, each branch with its order and NC fixed at compile time.
HK_INLINE HK_AVX2 void k_cols_o(const int kind, const int order, const int NC, const uint8_t *w,
                                const uint8_t *const *a, int64_t nb, float *out, size_t out_stride) {
#define HK_K_NC(ORDER)                                                                            \
    switch (NC) {                                                                                 \
    case 4: k_cols(kind, ORDER, w, a, 4, nb, out, out_stride); break;                             \
    case 3: k_cols(kind, ORDER, w, a, 3, nb, out, out_stride); break;                             \
    case 2: k_cols(kind, ORDER, w, a, 2, nb, out, out_stride); break;                             \
    default: k_cols(kind, ORDER, w, a, 1, nb, out, out_stride); break;                            \
    }
    switch (order) {
    case K_BLOCKS: HK_K_NC(K_BLOCKS) break;
    case K_PAIRS: k_cols(kind, K_PAIRS, w, a, 4, nb, out, out_stride); break;
    case K_TILED: HK_K_NC(K_TILED) break;
    default: HK_K_NC(K_LANES) break;
    }
#undef HK_K_NC
}

// The order of a lone dot product (and so of a matrix-vector product): Q4_K is repacked on
// AVX2 (block_q4_Kx8) and a single column takes the gemv order; Q5_K and Q6_K take
// ggml_vec_dot_q*_K_q8_K's lanes.
HK_INLINE int k_single_order(const int kind) { return kind == K_Q4 ? K_BLOCKS : K_LANES; }

// Up to 4 adjacent columns summed in one order.
typedef struct { int64_t first; int nc; int order; } k_group;

HK_INLINE void k_add_column(k_group *g, int64_t *ng, int64_t col, int order) {
    k_group *last = *ng > 0 ? &g[*ng - 1] : NULL;
    if (last && order != K_PAIRS && last->order == order && last->nc < 4 && last->first + last->nc == col) {
        last->nc++;
        return;
    }
    g[(*ng)++] = (k_group){col, 1, order};
}

// Splits the columns into groups that share an order. Each run (the rows of one sequence in a
// forward pass) is summed as llama.cpp sums a batch of that many columns, whatever other runs
// share the call:
//   Q4_K: full groups of 4 columns of the run take the gemm order, the remaining run % 4 the
//         gemv order;
//   Q5_K and Q6_K: a run of 8 or more takes the tiled kernel, a shorter one the lanes of
//         ggml_vec_dot_q*_K_q8_K.
// Columns of the same order next to each other share a group even across runs, so a pass of
// many one-row sequences still unpacks each weight block once per 4 columns.
static int64_t k_groups(const int kind, const int64_t cols, const int64_t *runs, const int64_t n_runs, k_group *g) {
    int64_t ng = 0, col = 0;
    for (int64_t i = 0; i < (runs ? n_runs : 1); i++) {
        const int64_t len = runs ? runs[i] : cols;
        if (kind == K_Q4) {
            const int64_t full = len / 4 * 4;
            for (int64_t j = 0; j < full; j += 4) g[ng++] = (k_group){col + j, 4, K_PAIRS};
            for (int64_t j = full; j < len; j++) k_add_column(g, &ng, col + j, K_BLOCKS);
        } else {
            const int order = len >= 8 ? K_TILED : K_LANES;
            for (int64_t j = 0; j < len; j++) k_add_column(g, &ng, col + j, order);
        }
        col += len;
    }
    return ng;
}

// Q4_K rows eight at a time, interleaved so that a vector holds 4 quant bytes of each of the
// eight rows: one broadcast activation word then multiplies all eight rows, and each row's
// integer sums stay in its own int32 lane, so no horizontal additions are needed before the
// float chains. The lanes' integers and floats are those of K_PAIRS row by row: per 64
// elements, fma(float(sum), d * dy, acc) for the quants and likewise for the mins, then s - m.
//
// Per super-block, the packed layout of eight rows (X8_BLOCK bytes):
//   qs   [4 chunks][8 words][8 rows] uint32: row r's qs[32 chunk + 4 word ...]
//   sc   [8 sub-blocks][8 rows] int16 pairs: the sub-block's scale twice
//   mn   [4 chunks][8 rows] int16 pairs: the mins of sub-blocks 2 chunk and 2 chunk + 1
//   d    [8 rows] float, dmin [8 rows] float
#define X8_QS 0
#define X8_SC 1024
#define X8_MN (X8_SC + 256)
#define X8_D (X8_MN + 128)
#define X8_DMIN (X8_D + 32)
#define X8_BLOCK (X8_DMIN + 32)

// Row r's share of eight packed Q4_K or Q5_K rows: its eight 6-bit scales (each twice, as the
// int16 pairs the multiply-add wants), its eight mins, and its two float scales, each in lane r.
static HK_AVX2 void pack_scales8(const uint8_t *scales, const void *d, const void *dmin, int r, uint8_t *sc_out,
                         uint8_t *mn_out, uint8_t *d_out, uint8_t *dmin_out) {
    int16_t mn[8];
    for (int j = 0; j < 8; j++) {
        uint8_t s, m;
        hk_scale_min_k4(j, scales, &s, &m);
        const int16_t pair[2] = {s, s};
        memcpy(sc_out + 32 * j + 4 * r, pair, 4);
        mn[j] = m;
    }
    for (int j = 0; j < 4; j++) memcpy(mn_out + 32 * j + 4 * r, mn + 2 * j, 4);
    const float df = hk_half(d), dminf = hk_half(dmin);
    memcpy(d_out + 4 * r, &df, 4);
    memcpy(dmin_out + 4 * r, &dminf, 4);
}

// Rows w (eight of row_bytes each), nb super-blocks, into dst (nb * X8_BLOCK bytes).
static HK_AVX2 void q4k_pack8(const uint8_t *w, size_t row_bytes, int64_t nb, uint8_t *dst) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *blk = dst + (size_t)i * X8_BLOCK;
        for (int r = 0; r < 8; r++) {
            const hk_q4_K *x = (const hk_q4_K *)(w + (size_t)r * row_bytes) + i;
            for (int k = 0; k < 32; k++) memcpy(blk + X8_QS + 32 * k + 4 * r, x->qs + 4 * k, 4);
            pack_scales8(x->scales, &x->d, &x->dmin, r, blk + X8_SC, blk + X8_MN, blk + X8_D, blk + X8_DMIN);
        }
    }
}

// Eight packed rows against four columns: out[c * out_stride + r].
static HK_AVX2 void q4k_x8_cols4(const uint8_t *packed, const uint8_t *const *a, int64_t nb, float *out,
                                 size_t out_stride) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc[4], acc_min[4];
    for (int c = 0; c < 4; c++) {
        acc[c] = _mm256_setzero_ps();
        acc_min[c] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = packed + (size_t)i * X8_BLOCK;
        const hk_q8_K *y[4];
        for (int c = 0; c < 4; c++) y[c] = (const hk_q8_K *)a[c] + i;
        const __m256 d = _mm256_load_ps((const float *)(blk + X8_D));
        for (int j = 0; j < 4; j++) {
            const uint8_t *q = blk + X8_QS + 256 * j;
            __m256i lo16[4], hi16[4];
            // Sums of at most 8 products of pairs stay within int16: 8 * 2 * 15 * 128 < 32768.
            for (int c = 0; c < 4; c++) lo16[c] = hi16[c] = _mm256_setzero_si256();
            for (int k = 0; k < 8; k++) {
                const __m256i v8 = _mm256_load_si256((const __m256i *)(q + 32 * k));
                const __m256i lo = _mm256_and_si256(v8, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v8, 4), low4);
                for (int c = 0; c < 4; c++) {
                    int32_t v0, v1;
                    memcpy(&v0, y[c]->qs + 64 * j + 4 * k, 4);
                    memcpy(&v1, y[c]->qs + 64 * j + 32 + 4 * k, 4);
                    lo16[c] = _mm256_add_epi16(lo16[c], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(v0)));
                    hi16[c] = _mm256_add_epi16(hi16[c], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(v1)));
                }
            }
            const __m256i sc_lo = _mm256_load_si256((const __m256i *)(blk + X8_SC + 64 * j));
            const __m256i sc_hi = _mm256_load_si256((const __m256i *)(blk + X8_SC + 64 * j + 32));
            for (int c = 0; c < 4; c++) {
                const __m256i part = _mm256_add_epi32(_mm256_madd_epi16(lo16[c], sc_lo), _mm256_madd_epi16(hi16[c], sc_hi));
                acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(part), _mm256_mul_ps(d, _mm256_set1_ps(y[c]->d)), acc[c]);
            }
        }
    }
    // The mins: lane r of chunk j is min 2j times the sum of its 32 activations plus min 2j + 1
    // times the sum of its.
    for (int c = 0; c < 4; c++) {
        for (int64_t i = 0; i < nb; i++) {
            const uint8_t *blk = packed + (size_t)i * X8_BLOCK;
            const hk_q8_K *y = (const hk_q8_K *)a[c] + i;
            const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y->bsums),
                                                 _mm_loadu_si128((const __m128i *)(y->bsums + 8)));
            const __m256i p = _mm256_broadcastsi128_si256(pairs);
            const __m256 dm = _mm256_mul_ps(_mm256_load_ps((const float *)(blk + X8_DMIN)), _mm256_set1_ps(y->d));
            __m256i pj[4];
            pj[0] = _mm256_shuffle_epi32(p, 0x00);
            pj[1] = _mm256_shuffle_epi32(p, 0x55);
            pj[2] = _mm256_shuffle_epi32(p, 0xAA);
            pj[3] = _mm256_shuffle_epi32(p, 0xFF);
            for (int j = 0; j < 4; j++) {
                const __m256i m = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(blk + X8_MN + 32 * j)), pj[j]);
                acc_min[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m), dm, acc_min[c]);
            }
        }
        _mm256_storeu_ps(out + (size_t)c * out_stride, _mm256_sub_ps(acc[c], acc_min[c]));
    }
}

// With AVX-512 VNNI, Q4_K rows sixteen at a time in the same interleaved form (a 512-bit vector
// holds 4 quant bytes of each of sixteen rows), multiplied by vpdpbusd: each sub-block's 32
// products become one int32 per row, and the scales come in with an int32 multiply. The
// integers and the float chains are those of q4k_x8_cols4, row by row.
//
// Per super-block, the packed layout of sixteen rows (X16_BLOCK bytes):
//   qs   [4 chunks][8 words][16 rows] uint32
//   sc   [8 sub-blocks][16 rows] int32
//   mn   [4 chunks][16 rows] int16 pairs: the mins of sub-blocks 2 chunk and 2 chunk + 1
//   d    [16 rows] float, dmin [16 rows] float
#define X16_QS 0
#define X16_SC 2048
#define X16_MN (X16_SC + 512)
#define X16_D (X16_MN + 256)
#define X16_DMIN (X16_D + 64)
#define X16_BLOCK (X16_DMIN + 64)

static HK_AVX2 void q4k_pack16(const uint8_t *w, size_t row_bytes, int64_t nb, uint8_t *dst) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *blk = dst + (size_t)i * X16_BLOCK;
        for (int r = 0; r < 16; r++) {
            const hk_q4_K *x = (const hk_q4_K *)(w + (size_t)r * row_bytes) + i;
            for (int k = 0; k < 32; k++) memcpy(blk + X16_QS + 64 * k + 4 * r, x->qs + 4 * k, 4);
            int16_t mn[8];
            for (int j = 0; j < 8; j++) {
                uint8_t s, m;
                hk_scale_min_k4(j, x->scales, &s, &m);
                const int32_t s32 = s;
                memcpy(blk + X16_SC + 64 * j + 4 * r, &s32, 4);
                mn[j] = m;
            }
            for (int j = 0; j < 4; j++) memcpy(blk + X16_MN + 64 * j + 4 * r, mn + 2 * j, 4);
            const float d = hk_half(&x->d), dmin = hk_half(&x->dmin);
            memcpy(blk + X16_D + 4 * r, &d, 4);
            memcpy(blk + X16_DMIN + 4 * r, &dmin, 4);
        }
    }
}

HK_INLINE HK_VNNI512 __m512i bcast4_512(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

// Sixteen packed rows against four columns: out[c * out_stride + r].
static HK_VNNI512 void q4k_x16_cols4(const uint8_t *packed, const uint8_t *const *a, int64_t nb, float *out,
                                     size_t out_stride) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512 acc[4], acc_min[4];
    for (int c = 0; c < 4; c++) {
        acc[c] = _mm512_setzero_ps();
        acc_min[c] = _mm512_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = packed + (size_t)i * X16_BLOCK;
        const hk_q8_K *y[4];
        for (int c = 0; c < 4; c++) y[c] = (const hk_q8_K *)a[c] + i;
        const __m512 d = _mm512_load_ps((const float *)(blk + X16_D));
        for (int j = 0; j < 4; j++) {
            const uint8_t *q = blk + X16_QS + 512 * j;
            __m512i lo[4], hi[4];
            for (int c = 0; c < 4; c++) lo[c] = hi[c] = _mm512_setzero_si512();
            for (int k = 0; k < 8; k++) {
                const __m512i v8 = _mm512_load_si512((const void *)(q + 64 * k));
                const __m512i l = _mm512_and_si512(v8, low4), h = _mm512_and_si512(_mm512_srli_epi16(v8, 4), low4);
                for (int c = 0; c < 4; c++) {
                    lo[c] = _mm512_dpbusd_epi32(lo[c], l, bcast4_512(y[c]->qs + 64 * j + 4 * k));
                    hi[c] = _mm512_dpbusd_epi32(hi[c], h, bcast4_512(y[c]->qs + 64 * j + 32 + 4 * k));
                }
            }
            const __m512i sc_lo = _mm512_load_si512((const void *)(blk + X16_SC + 128 * j));
            const __m512i sc_hi = _mm512_load_si512((const void *)(blk + X16_SC + 128 * j + 64));
            for (int c = 0; c < 4; c++) {
                const __m512i part = _mm512_add_epi32(_mm512_mullo_epi32(lo[c], sc_lo), _mm512_mullo_epi32(hi[c], sc_hi));
                acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(part), _mm512_mul_ps(d, _mm512_set1_ps(y[c]->d)), acc[c]);
            }
        }
        // The mins: lane r of chunk j is min 2j times the sum of its 32 activations plus min
        // 2j + 1 times the sum of its.
        const __m512 dmin = _mm512_load_ps((const float *)(blk + X16_DMIN));
        for (int c = 0; c < 4; c++) {
            int16_t pairs[8];
            for (int l = 0; l < 8; l++) pairs[l] = (int16_t)(y[c]->bsums[2 * l] + y[c]->bsums[2 * l + 1]);
            const __m512 dm = _mm512_mul_ps(dmin, _mm512_set1_ps(y[c]->d));
            for (int j = 0; j < 4; j++) {
                const __m512i m = _mm512_madd_epi16(_mm512_load_si512((const void *)(blk + X16_MN + 64 * j)),
                                                    bcast4_512(pairs + 2 * j));
                acc_min[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m), dm, acc_min[c]);
            }
        }
    }
    for (int c = 0; c < 4; c++) _mm512_storeu_ps(out + (size_t)c * out_stride, _mm512_sub_ps(acc[c], acc_min[c]));
}

// Q6_K rows eight at a time, in the same interleaved form with the 6-bit quants unpacked to
// bytes: lane r of every integer is row r's. A row's integer per super-block and its float
// chain are K_TILED's: acc = fma(d * float(sum), dy, acc), where the sum takes the -32 of every
// quant through the activation block sums.
//
// Per super-block, the packed layout of eight rows (X6_BLOCK bytes):
//   q    [64 words][8 rows] uint32: row r's quants 4 word ... 4 word + 3, each 0..63
//   sc   [16 sub-blocks][8 rows] int16 pairs: the sub-block's scale twice
//   sp   [8 pairs][8 rows] int16 pairs: the scales of sub-blocks 2 pair and 2 pair + 1
//   d    [8 rows] float
#define X6_Q 0
#define X6_SC 2048
#define X6_SP (X6_SC + 512)
#define X6_D (X6_SP + 256)
#define X6_BLOCK (X6_D + 32)

// A Q6_K block's 256 quants as bytes 0..63, in the block's element order.
static void q6k_bytes(const hk_q6_K *x, uint8_t q[QK_K]) {
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = x->ql + 64 * h, *qh = x->qh + 32 * h;
        for (int l = 0; l < 32; l++) {
            q[128 * h + l] = (uint8_t)((ql[l] & 0xF) | ((qh[l] & 3) << 4));
            q[128 * h + 32 + l] = (uint8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
            q[128 * h + 64 + l] = (uint8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
            q[128 * h + 96 + l] = (uint8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
    }
}

static HK_AVX2 void q6k_pack8(const uint8_t *w, size_t row_bytes, int64_t nb, uint8_t *dst) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *blk = dst + (size_t)i * X6_BLOCK;
        for (int r = 0; r < 8; r++) {
            const hk_q6_K *x = (const hk_q6_K *)(w + (size_t)r * row_bytes) + i;
            uint8_t q[QK_K];
            q6k_bytes(x, q);
            for (int k = 0; k < 64; k++) memcpy(blk + X6_Q + 32 * k + 4 * r, q + 4 * k, 4);
            for (int k = 0; k < 16; k++) {
                const int16_t pair[2] = {x->scales[k], x->scales[k]};
                memcpy(blk + X6_SC + 32 * k + 4 * r, pair, 4);
            }
            for (int k = 0; k < 8; k++) {
                const int16_t pair[2] = {x->scales[2 * k], x->scales[2 * k + 1]};
                memcpy(blk + X6_SP + 32 * k + 4 * r, pair, 4);
            }
            const float d = hk_half(&x->d);
            memcpy(blk + X6_D + 4 * r, &d, 4);
        }
    }
}

// Eight packed Q6_K rows against NC columns (1..4) in the K_TILED order: out[c * out_stride + r].
HK_INLINE HK_AVX2 void q6k_x8_cols(const uint8_t *packed, const uint8_t *const *a, const int NC, int64_t nb,
                                   float *out, size_t out_stride) {
    __m256 acc[4];
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = packed + (size_t)i * X6_BLOCK;
        const hk_q8_K *y[4];
        for (int c = 0; c < NC; c++) y[c] = (const hk_q8_K *)a[c] + i;
        __m256i sum[4];
        for (int c = 0; c < NC; c++) {
            // The offsets: 32 times each scale times the sum of its 16 activations, pairs of
            // sub-blocks at a time.
            __m256i off = _mm256_setzero_si256();
            for (int k = 0; k < 8; k++) {
                int32_t v;
                memcpy(&v, y[c]->bsums + 2 * k, 4);
                off = _mm256_add_epi32(off, _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(blk + X6_SP + 32 * k)),
                                                              _mm256_set1_epi32(v)));
            }
            sum[c] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(off, 5));
        }
        // Two words of products stay within int16: 2 * 2 * 63 * 128 < 32768.
        for (int k = 0; k < 32; k++) {
            const __m256i q0 = _mm256_load_si256((const __m256i *)(blk + X6_Q + 64 * k));
            const __m256i q1 = _mm256_load_si256((const __m256i *)(blk + X6_Q + 64 * k + 32));
            const __m256i sc = _mm256_load_si256((const __m256i *)(blk + X6_SC + 32 * (k / 2)));
            for (int c = 0; c < NC; c++) {
                int32_t v0, v1;
                memcpy(&v0, y[c]->qs + 8 * k, 4);
                memcpy(&v1, y[c]->qs + 8 * k + 4, 4);
                const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(q0, _mm256_set1_epi32(v0)),
                                                   _mm256_maddubs_epi16(q1, _mm256_set1_epi32(v1)));
                sum[c] = _mm256_add_epi32(sum[c], _mm256_madd_epi16(p, sc));
            }
        }
        const __m256 d = _mm256_load_ps((const float *)(blk + X6_D));
        for (int c = 0; c < NC; c++)
            acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(sum[c])), _mm256_set1_ps(y[c]->d), acc[c]);
    }
    for (int c = 0; c < NC; c++) _mm256_storeu_ps(out + (size_t)c * out_stride, acc[c]);
}

static HK_AVX2 void q6k_x8(const uint8_t *packed, const uint8_t *const *a, const int NC, int64_t nb, float *out,
                           size_t out_stride) {
    switch (NC) {
    case 4: q6k_x8_cols(packed, a, 4, nb, out, out_stride); break;
    case 3: q6k_x8_cols(packed, a, 3, nb, out, out_stride); break;
    case 2: q6k_x8_cols(packed, a, 2, nb, out, out_stride); break;
    default: q6k_x8_cols(packed, a, 1, nb, out, out_stride); break;
    }
}

// With AVX-512 VNNI, Q6_K rows sixteen at a time, quants unpacked to bytes as in q6k_pack8:
// vpdpbusd gives each sub-block's 16 products as one int32 per row, and its scale comes in with
// an int32 multiply. The integers and the float chains are those of q6k_x8_cols, row by row.
//
// Per super-block, the packed layout of sixteen rows (X16Q6_BLOCK bytes):
//   q    [64 words][16 rows] uint32: row r's quants 4 word ... 4 word + 3, each 0..63
//   sc   [16 sub-blocks][16 rows] int32
//   sp   [8 pairs][16 rows] int16 pairs: the scales of sub-blocks 2 pair and 2 pair + 1
//   d    [16 rows] float
#define X16Q6_Q 0
#define X16Q6_SC 4096
#define X16Q6_SP (X16Q6_SC + 1024)
#define X16Q6_D (X16Q6_SP + 512)
#define X16Q6_BLOCK (X16Q6_D + 64)

static HK_AVX2 void q6k_pack16(const uint8_t *w, size_t row_bytes, int64_t nb, uint8_t *dst) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *blk = dst + (size_t)i * X16Q6_BLOCK;
        for (int r = 0; r < 16; r++) {
            const hk_q6_K *x = (const hk_q6_K *)(w + (size_t)r * row_bytes) + i;
            uint8_t q[QK_K];
            q6k_bytes(x, q);
            for (int k = 0; k < 64; k++) memcpy(blk + X16Q6_Q + 64 * k + 4 * r, q + 4 * k, 4);
            for (int k = 0; k < 16; k++) {
                const int32_t s = x->scales[k];
                memcpy(blk + X16Q6_SC + 64 * k + 4 * r, &s, 4);
            }
            for (int k = 0; k < 8; k++) {
                const int16_t pair[2] = {x->scales[2 * k], x->scales[2 * k + 1]};
                memcpy(blk + X16Q6_SP + 64 * k + 4 * r, pair, 4);
            }
            const float d = hk_half(&x->d);
            memcpy(blk + X16Q6_D + 4 * r, &d, 4);
        }
    }
}

// Sixteen packed Q6_K rows against NC columns (1..4) in the K_TILED order.
HK_INLINE HK_VNNI512 void q6k_x16_cols(const uint8_t *packed, const uint8_t *const *a, const int NC, int64_t nb,
                                       float *out, size_t out_stride) {
    __m512 acc[4];
    for (int c = 0; c < NC; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = packed + (size_t)i * X16Q6_BLOCK;
        const hk_q8_K *y[4];
        __m512i sum[4];
        for (int c = 0; c < NC; c++) {
            y[c] = (const hk_q8_K *)a[c] + i;
            // The -32 of every quant, as in q6k_x8_cols.
            __m512i off = _mm512_setzero_si512();
            for (int k = 0; k < 8; k++)
                off = _mm512_add_epi32(off, _mm512_madd_epi16(_mm512_load_si512((const void *)(blk + X16Q6_SP + 64 * k)),
                                                              bcast4_512(y[c]->bsums + 2 * k)));
            sum[c] = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(off, 5));
        }
        for (int s = 0; s < 16; s++) {
            const uint8_t *q = blk + X16Q6_Q + 256 * s;
            const __m512i q0 = _mm512_load_si512((const void *)q), q1 = _mm512_load_si512((const void *)(q + 64));
            const __m512i q2 = _mm512_load_si512((const void *)(q + 128)), q3 = _mm512_load_si512((const void *)(q + 192));
            const __m512i sc = _mm512_load_si512((const void *)(blk + X16Q6_SC + 64 * s));
            for (int c = 0; c < NC; c++) {
                const int8_t *ys = y[c]->qs + 16 * s;
                const __m512i p01 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q0, bcast4_512(ys)), q1,
                                                        bcast4_512(ys + 4));
                const __m512i p = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(p01, q2, bcast4_512(ys + 8)), q3, bcast4_512(ys + 12));
                sum[c] = _mm512_add_epi32(sum[c], _mm512_mullo_epi32(p, sc));
            }
        }
        const __m512 d = _mm512_load_ps((const float *)(blk + X16Q6_D));
        for (int c = 0; c < NC; c++)
            acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(sum[c])), _mm512_set1_ps(y[c]->d), acc[c]);
    }
    for (int c = 0; c < NC; c++) _mm512_storeu_ps(out + (size_t)c * out_stride, acc[c]);
}

static HK_VNNI512 void q6k_x16(const uint8_t *packed, const uint8_t *const *a, const int NC, int64_t nb, float *out,
                               size_t out_stride) {
    switch (NC) {
    case 4: q6k_x16_cols(packed, a, 4, nb, out, out_stride); break;
    case 3: q6k_x16_cols(packed, a, 3, nb, out, out_stride); break;
    case 2: q6k_x16_cols(packed, a, 2, nb, out, out_stride); break;
    default: q6k_x16_cols(packed, a, 1, nb, out, out_stride); break;
    }
}

// Q5_K rows eight at a time, quants unpacked to bytes, in the K_TILED order:
// acc = fma(fma(-dmin, float(mins), d * float(sum)), dy, acc).
//
// Per super-block, the packed layout of eight rows (X5_BLOCK bytes):
//   q    [64 words][8 rows] uint32: row r's quants 4 word ... 4 word + 3, each 0..31
//   sc   [8 sub-blocks][8 rows] int16 pairs: the sub-block's scale twice
//   mn   [4 pairs][8 rows] int16 pairs: the mins of sub-blocks 2 pair and 2 pair + 1
//   d    [8 rows] float, dmin [8 rows] float
#define X5_Q 0
#define X5_SC 2048
#define X5_MN (X5_SC + 256)
#define X5_D (X5_MN + 128)
#define X5_DMIN (X5_D + 32)
#define X5_BLOCK (X5_DMIN + 32)

// A Q5_K block's 256 quants as bytes 0..31, in the block's element order: chunk j of 64 is
// the low nibbles of qs[32 j ...] with bit 2j of qh, then the high nibbles with bit 2j + 1.
static void q5k_bytes(const hk_q5_K *x, uint8_t q[QK_K]) {
    for (int j = 0; j < 4; j++)
        for (int l = 0; l < 32; l++) {
            q[64 * j + l] = (uint8_t)((x->qs[32 * j + l] & 0xF) | (((x->qh[l] >> (2 * j)) & 1) << 4));
            q[64 * j + 32 + l] = (uint8_t)((x->qs[32 * j + l] >> 4) | (((x->qh[l] >> (2 * j + 1)) & 1) << 4));
        }
}

static HK_AVX2 void q5k_pack8(const uint8_t *w, size_t row_bytes, int64_t nb, uint8_t *dst) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *blk = dst + (size_t)i * X5_BLOCK;
        for (int r = 0; r < 8; r++) {
            const hk_q5_K *x = (const hk_q5_K *)(w + (size_t)r * row_bytes) + i;
            uint8_t q[QK_K];
            q5k_bytes(x, q);
            for (int k = 0; k < 64; k++) memcpy(blk + X5_Q + 32 * k + 4 * r, q + 4 * k, 4);
            pack_scales8(x->scales, &x->d, &x->dmin, r, blk + X5_SC, blk + X5_MN, blk + X5_D, blk + X5_DMIN);
        }
    }
}

// Eight packed Q5_K rows against NC columns (1..4) in the K_TILED order.
HK_INLINE HK_AVX2 void q5k_x8_cols(const uint8_t *packed, const uint8_t *const *a, const int NC, int64_t nb,
                                   float *out, size_t out_stride) {
    __m256 acc[4];
    for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = packed + (size_t)i * X5_BLOCK;
        const hk_q8_K *y[4];
        __m256i sum[4];
        for (int c = 0; c < NC; c++) {
            y[c] = (const hk_q8_K *)a[c] + i;
            sum[c] = _mm256_setzero_si256();
        }
        // Four words of products stay within int16: 4 * 2 * 31 * 128 < 32768.
        for (int k = 0; k < 16; k++) {
            const __m256i q0 = _mm256_load_si256((const __m256i *)(blk + X5_Q + 128 * k));
            const __m256i q1 = _mm256_load_si256((const __m256i *)(blk + X5_Q + 128 * k + 32));
            const __m256i q2 = _mm256_load_si256((const __m256i *)(blk + X5_Q + 128 * k + 64));
            const __m256i q3 = _mm256_load_si256((const __m256i *)(blk + X5_Q + 128 * k + 96));
            const __m256i sc = _mm256_load_si256((const __m256i *)(blk + X5_SC + 32 * (k / 2)));
            for (int c = 0; c < NC; c++) {
                int32_t v[4];
                memcpy(v, y[c]->qs + 16 * k, 16);
                const __m256i p = _mm256_add_epi16(
                    _mm256_add_epi16(_mm256_maddubs_epi16(q0, _mm256_set1_epi32(v[0])),
                                     _mm256_maddubs_epi16(q1, _mm256_set1_epi32(v[1]))),
                    _mm256_add_epi16(_mm256_maddubs_epi16(q2, _mm256_set1_epi32(v[2])),
                                     _mm256_maddubs_epi16(q3, _mm256_set1_epi32(v[3]))));
                sum[c] = _mm256_add_epi32(sum[c], _mm256_madd_epi16(p, sc));
            }
        }
        const __m256 d = _mm256_load_ps((const float *)(blk + X5_D));
        const __m256 dmin = _mm256_load_ps((const float *)(blk + X5_DMIN));
        for (int c = 0; c < NC; c++) {
            const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128((const __m128i *)y[c]->bsums),
                                                 _mm_loadu_si128((const __m128i *)(y[c]->bsums + 8)));
            const __m256i p = _mm256_broadcastsi128_si256(pairs);
            __m256i m = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(blk + X5_MN)), _mm256_shuffle_epi32(p, 0x00));
            m = _mm256_add_epi32(m, _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(blk + X5_MN + 32)), _mm256_shuffle_epi32(p, 0x55)));
            m = _mm256_add_epi32(m, _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(blk + X5_MN + 64)), _mm256_shuffle_epi32(p, 0xAA)));
            m = _mm256_add_epi32(m, _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(blk + X5_MN + 96)), _mm256_shuffle_epi32(p, 0xFF)));
            const __m256 t = _mm256_fnmadd_ps(dmin, _mm256_cvtepi32_ps(m), _mm256_mul_ps(d, _mm256_cvtepi32_ps(sum[c])));
            acc[c] = _mm256_fmadd_ps(t, _mm256_set1_ps(y[c]->d), acc[c]);
        }
    }
    for (int c = 0; c < NC; c++) _mm256_storeu_ps(out + (size_t)c * out_stride, acc[c]);
}

static HK_AVX2 void q5k_x8(const uint8_t *packed, const uint8_t *const *a, const int NC, int64_t nb, float *out,
                           size_t out_stride) {
    switch (NC) {
    case 4: q5k_x8_cols(packed, a, 4, nb, out, out_stride); break;
    case 3: q5k_x8_cols(packed, a, 3, nb, out, out_stride); break;
    case 2: q5k_x8_cols(packed, a, 2, nb, out, out_stride); break;
    default: q5k_x8_cols(packed, a, 1, nb, out, out_stride); break;
    }
}

// With AVX-512 VNNI, Q5_K rows sixteen at a time, quants unpacked to bytes as in q5k_pack8:
// vpdpbusd gives each sub-block's 32 products as one int32 per row, and its scale comes in with
// an int32 multiply. The integers and the float chains are those of q5k_x8_cols, row by row.
//
// Per super-block, the packed layout of sixteen rows (X16Q5_BLOCK bytes):
//   q    [64 words][16 rows] uint32: row r's quants 4 word ... 4 word + 3, each 0..31
//   sc   [8 sub-blocks][16 rows] int32
//   mn   [4 pairs][16 rows] int16 pairs: the mins of sub-blocks 2 pair and 2 pair + 1
//   d    [16 rows] float, dmin [16 rows] float
#define X16Q5_Q 0
#define X16Q5_SC 4096
#define X16Q5_MN (X16Q5_SC + 512)
#define X16Q5_D (X16Q5_MN + 256)
#define X16Q5_DMIN (X16Q5_D + 64)
#define X16Q5_BLOCK (X16Q5_DMIN + 64)

static HK_AVX2 void q5k_pack16(const uint8_t *w, size_t row_bytes, int64_t nb, uint8_t *dst) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *blk = dst + (size_t)i * X16Q5_BLOCK;
        for (int r = 0; r < 16; r++) {
            const hk_q5_K *x = (const hk_q5_K *)(w + (size_t)r * row_bytes) + i;
            uint8_t q[QK_K];
            q5k_bytes(x, q);
            for (int k = 0; k < 64; k++) memcpy(blk + X16Q5_Q + 64 * k + 4 * r, q + 4 * k, 4);
            int16_t mn[8];
            for (int j = 0; j < 8; j++) {
                uint8_t s, m;
                hk_scale_min_k4(j, x->scales, &s, &m);
                const int32_t s32 = s;
                memcpy(blk + X16Q5_SC + 64 * j + 4 * r, &s32, 4);
                mn[j] = m;
            }
            for (int j = 0; j < 4; j++) memcpy(blk + X16Q5_MN + 64 * j + 4 * r, mn + 2 * j, 4);
            const float d = hk_half(&x->d), dmin = hk_half(&x->dmin);
            memcpy(blk + X16Q5_D + 4 * r, &d, 4);
            memcpy(blk + X16Q5_DMIN + 4 * r, &dmin, 4);
        }
    }
}

// Sixteen packed Q5_K rows against NC columns (1..4) in the K_TILED order.
HK_INLINE HK_VNNI512 void q5k_x16_cols(const uint8_t *packed, const uint8_t *const *a, const int NC, int64_t nb,
                                       float *out, size_t out_stride) {
    __m512 acc[4];
    for (int c = 0; c < NC; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = packed + (size_t)i * X16Q5_BLOCK;
        const hk_q8_K *y[4];
        __m512i sum[4];
        for (int c = 0; c < NC; c++) {
            y[c] = (const hk_q8_K *)a[c] + i;
            sum[c] = _mm512_setzero_si512();
        }
        for (int s = 0; s < 8; s++) {
            const uint8_t *q = blk + X16Q5_Q + 512 * s;
            const __m512i sc = _mm512_load_si512((const void *)(blk + X16Q5_SC + 64 * s));
            __m512i p0[4], p1[4];
            for (int c = 0; c < NC; c++) p0[c] = p1[c] = _mm512_setzero_si512();
            for (int k = 0; k < 8; k += 2) {
                const __m512i q0 = _mm512_load_si512((const void *)(q + 64 * k));
                const __m512i q1 = _mm512_load_si512((const void *)(q + 64 * k + 64));
                for (int c = 0; c < NC; c++) {
                    const int8_t *ys = y[c]->qs + 32 * s + 4 * k;
                    p0[c] = _mm512_dpbusd_epi32(p0[c], q0, bcast4_512(ys));
                    p1[c] = _mm512_dpbusd_epi32(p1[c], q1, bcast4_512(ys + 4));
                }
            }
            for (int c = 0; c < NC; c++)
                sum[c] = _mm512_add_epi32(sum[c], _mm512_mullo_epi32(_mm512_add_epi32(p0[c], p1[c]), sc));
        }
        const __m512 d = _mm512_load_ps((const float *)(blk + X16Q5_D));
        const __m512 dmin = _mm512_load_ps((const float *)(blk + X16Q5_DMIN));
        for (int c = 0; c < NC; c++) {
            int16_t pairs[8];
            for (int l = 0; l < 8; l++) pairs[l] = (int16_t)(y[c]->bsums[2 * l] + y[c]->bsums[2 * l + 1]);
            __m512i m = _mm512_setzero_si512();
            for (int j = 0; j < 4; j++)
                m = _mm512_add_epi32(m, _mm512_madd_epi16(_mm512_load_si512((const void *)(blk + X16Q5_MN + 64 * j)),
                                                          bcast4_512(pairs + 2 * j)));
            const __m512 t = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(m), _mm512_mul_ps(d, _mm512_cvtepi32_ps(sum[c])));
            acc[c] = _mm512_fmadd_ps(t, _mm512_set1_ps(y[c]->d), acc[c]);
        }
    }
    for (int c = 0; c < NC; c++) _mm512_storeu_ps(out + (size_t)c * out_stride, acc[c]);
}

static HK_VNNI512 void q5k_x16(const uint8_t *packed, const uint8_t *const *a, const int NC, int64_t nb, float *out,
                               size_t out_stride) {
    switch (NC) {
    case 4: q5k_x16_cols(packed, a, 4, nb, out, out_stride); break;
    case 3: q5k_x16_cols(packed, a, 3, nb, out, out_stride); break;
    case 2: q5k_x16_cols(packed, a, 2, nb, out, out_stride); break;
    default: q5k_x16_cols(packed, a, 1, nb, out, out_stride); break;
    }
}

// Rows in chunks that stay in L1 while each group of columns passes over them.
HK_INLINE HK_AVX2 void k_matmul(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows,
                                const uint8_t *a, size_t a_stride, int64_t cols, int64_t n,
                                const int64_t *runs, int64_t n_runs, float *out, size_t out_stride) {
    int64_t total = 0;
    for (int64_t i = 0; runs && i < n_runs; i++) total += runs[i] > 0 ? runs[i] : 0;
    if (runs && total != cols) runs = NULL;  // malformed runs: the whole call is one run
    k_group stack[256];
    k_group *groups = cols <= 256 ? stack : malloc((size_t)cols * sizeof(k_group));
    if (!groups) {
        for (int64_t c = 0; c < cols; c++) {
            const uint8_t *ap[1] = {a + (size_t)c * a_stride};
            for (int64_t r = 0; r < rows; r++)
                k_cols_o(kind, k_single_order(kind), 1, w + (size_t)r * row_bytes, ap, n / QK_K,
                         out + (size_t)c * out_stride + r, 0);
        }
        return;
    }
    const int64_t ng = k_groups(kind, cols, runs, n_runs, groups);
    const int64_t nb = n / QK_K;
    // Eight rows packed once per call serve every group of columns in the order the packed
    // kernels sum in: K_PAIRS for Q4_K, K_TILED for Q5_K and Q6_K.
    const int packed_order = kind == K_Q4 ? K_PAIRS : kind == K_Q4P ? -1 : K_TILED;
    int64_t packable = 0;
    for (int64_t gi = 0; gi < ng; gi++) packable += groups[gi].order == packed_order;
    const size_t block_bytes = kind == K_Q4 ? X8_BLOCK : kind == K_Q5 ? X5_BLOCK : X6_BLOCK;
    // With AVX-512 VNNI, rows go sixteen at a time while at least sixteen are left.
    const int x16_ok = rows >= 16 && hk_vnni_kind() == HK_AVX512_VNNI;
    const size_t block16 = kind == K_Q4 ? X16_BLOCK : kind == K_Q5 ? X16Q5_BLOCK : X16Q6_BLOCK;
    _Alignas(64) uint8_t packed_stack[8 * X6_BLOCK];
    uint8_t *packed = NULL;
    if (rows >= 8 && packable > 0) {
        const size_t need = (size_t)nb * (x16_ok ? block16 : block_bytes);
        packed = need <= sizeof packed_stack ? packed_stack : aligned_alloc(64, (need + 63) / 64 * 64);
    }
    const int64_t chunk = packed ? 8 : 16;
    for (int64_t r0 = 0, step; r0 < rows; r0 += step) {
        const int x16 = packed && x16_ok && rows - r0 >= 16;
        step = x16 ? 16 : chunk;
        const int64_t r1 = r0 + step < rows ? r0 + step : rows;
        const int x8 = packed && !x16 && r1 - r0 == 8;
        if (x16 && kind == K_Q4) q4k_pack16(w + (size_t)r0 * row_bytes, row_bytes, nb, packed);
        if (x16 && kind == K_Q5) q5k_pack16(w + (size_t)r0 * row_bytes, row_bytes, nb, packed);
        if (x16 && kind == K_Q6) q6k_pack16(w + (size_t)r0 * row_bytes, row_bytes, nb, packed);
        if (x8 && kind == K_Q4) q4k_pack8(w + (size_t)r0 * row_bytes, row_bytes, nb, packed);
        if (x8 && kind == K_Q5) q5k_pack8(w + (size_t)r0 * row_bytes, row_bytes, nb, packed);
        if (x8 && kind == K_Q6) q6k_pack8(w + (size_t)r0 * row_bytes, row_bytes, nb, packed);
        for (int64_t gi = 0; gi < ng; gi++) {
            const k_group g = groups[gi];
            const uint8_t *ap[4];
            for (int i = 0; i < 4; i++) ap[i] = a + (size_t)(g.first + (i < g.nc ? i : 0)) * a_stride;
            float *o = out + (size_t)g.first * out_stride;
            if (x16 && g.order == packed_order) {
                if (kind == K_Q4) q4k_x16_cols4(packed, ap, nb, o + r0, out_stride);
                else if (kind == K_Q5) q5k_x16(packed, ap, g.nc, nb, o + r0, out_stride);
                else q6k_x16(packed, ap, g.nc, nb, o + r0, out_stride);
                continue;
            }
            if (x8 && g.order == packed_order) {
                if (kind == K_Q4) q4k_x8_cols4(packed, ap, nb, o + r0, out_stride);
                else if (kind == K_Q5) q5k_x8(packed, ap, g.nc, nb, o + r0, out_stride);
                else q6k_x8(packed, ap, g.nc, nb, o + r0, out_stride);
                continue;
            }
            for (int64_t r = r0; r < r1; r++)
                k_cols_o(kind, g.order, g.nc, w + (size_t)r * row_bytes, ap, nb, o + r, out_stride);
        }
    }
    if (packed != packed_stack) free(packed);
    if (groups != stack) free(groups);
}

#define HK_K_KERNELS(name, kind)                                                                  \
    HK_AVX2 float hk_avx2_dot_##name(const void *w, const void *a, int64_t n) {                   \
        const uint8_t *cols[1] = {a};                                                             \
        float out;                                                                                \
        k_cols_o(kind, k_single_order(kind), 1, w, cols, n / QK_K, &out, 0);                      \
        return out;                                                                               \
    }                                                                                             \
    HK_AVX2 void hk_avx2_matmul_##name(const uint8_t *w, size_t rb, int64_t rows,                 \
                                       const uint8_t *a, size_t as, int64_t cols, int64_t n,      \
                                       const int64_t *runs, int64_t n_runs, float *out, size_t os) { \
        k_matmul(kind, w, rb, rows, a, as, cols, n, runs, n_runs, out, os);                       \
    }

HK_K_KERNELS(q4_K, K_Q4)
HK_K_KERNELS(q4_K_plain, K_Q4P)
HK_K_KERNELS(q5_K, K_Q5)
HK_K_KERNELS(q6_K, K_Q6)

// ---- Q4_K rows interleaved at load (HK_Q4_K_X16P, laid out as internal.h says) -----------------

// The sixteen rows' eight scales (sc) and eight mins (mn) of one super-block, as int32 lanes.
HK_INLINE HK_VNNI512 void xp_scales(const uint8_t *blk, __m512i sc[8], __m512i mn[8]) {
    __m128i b[12];
    for (int i = 0; i < 12; i++) b[i] = _mm_loadu_si128((const __m128i *)(blk + XP_SCALES + 16 * i));
    const __m128i low6 = _mm_set1_epi8(0x3F), low4 = _mm_set1_epi8(0x0F), top2 = _mm_set1_epi8(0x30);
    for (int j = 0; j < 4; j++) {
        sc[j] = _mm512_cvtepu8_epi32(_mm_and_si128(b[j], low6));
        mn[j] = _mm512_cvtepu8_epi32(_mm_and_si128(b[j + 4], low6));
        // (byte >> 6) << 4 is (byte >> 2) & 0x30, whatever comes in from the next byte.
        sc[j + 4] = _mm512_cvtepu8_epi32(
            _mm_or_si128(_mm_and_si128(b[j + 8], low4), _mm_and_si128(_mm_srli_epi16(b[j], 2), top2)));
        mn[j + 4] = _mm512_cvtepu8_epi32(_mm_or_si128(_mm_and_si128(_mm_srli_epi16(b[j + 8], 4), low4),
                                                      _mm_and_si128(_mm_srli_epi16(b[j + 4], 2), top2)));
    }
}

// One group of sixteen interleaved rows against one column in the K_BLOCKS order (the gemv
// order of a lone dot product): out[r] for r = 0..15.
static HK_VNNI512 void xp_column(const uint8_t *group, const hk_q8_K *y, int64_t nb, float *out) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512 acc = _mm512_setzero_ps(), acc_min = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++, y++) {
        const uint8_t *blk = group + (size_t)i * XP_BLOCK;
        __m512i sc[8], mn[8];
        xp_scales(blk, sc, mn);
        __m512i sumi = _mm512_setzero_si512(), mins = _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            const uint8_t *q = blk + XP_QS + 512 * j;
            __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
            for (int k = 0; k < 8; k++) {
                const __m512i v8 = _mm512_loadu_si512((const void *)(q + 64 * k));
                lo = _mm512_dpbusd_epi32(lo, _mm512_and_si512(v8, low4), bcast4_512(y->qs + 64 * j + 4 * k));
                hi = _mm512_dpbusd_epi32(hi, _mm512_and_si512(_mm512_srli_epi16(v8, 4), low4),
                                         bcast4_512(y->qs + 64 * j + 32 + 4 * k));
            }
            sumi = _mm512_add_epi32(sumi, _mm512_add_epi32(_mm512_mullo_epi32(lo, sc[2 * j]), _mm512_mullo_epi32(hi, sc[2 * j + 1])));
        }
        for (int l = 0; l < 8; l++)
            mins = _mm512_add_epi32(mins, _mm512_mullo_epi32(mn[l], _mm512_set1_epi32(y->bsums[2 * l] + y->bsums[2 * l + 1])));
        const __m512 dy = _mm512_set1_ps(y->d);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + XP_D)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + XP_DMIN)));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_mul_ps(d, dy), acc);
        acc_min = _mm512_fmadd_ps(_mm512_cvtepi32_ps(mins), _mm512_mul_ps(dmin, dy), acc_min);
    }
    _mm512_storeu_ps(out, _mm512_sub_ps(acc, acc_min));
}

// A group's super-blocks in q4k_pack16's layout, for the columns that go in fours.
static HK_VNNI512 void xp_unpack16(const uint8_t *group, int64_t nb, uint8_t *dst) {
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = group + (size_t)i * XP_BLOCK;
        uint8_t *out = dst + (size_t)i * X16_BLOCK;
        memcpy(out + X16_QS, blk + XP_QS, 2048);
        __m512i sc[8], mn[8];
        xp_scales(blk, sc, mn);
        for (int j = 0; j < 8; j++) _mm512_store_si512((void *)(out + X16_SC + 64 * j), sc[j]);
        // The mins as int16 pairs: mins 2j and 2j + 1 of each row in one int32 lane.
        for (int j = 0; j < 4; j++)
            _mm512_store_si512((void *)(out + X16_MN + 64 * j), _mm512_or_si512(mn[2 * j], _mm512_slli_epi32(mn[2 * j + 1], 16)));
        _mm512_store_ps((float *)(out + X16_D), _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + XP_D))));
        _mm512_store_ps((float *)(out + X16_DMIN), _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + XP_DMIN))));
    }
}



// ---- Q6_K rows interleaved at load (HK_Q6_K_X16P, laid out as internal.h says) -----------------

// Scale i of a group's super-block as int32 lanes (sixteen rows).
HK_INLINE HK_VNNI512 __m512i x6p_scale(const uint8_t *blk, int i) {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + X6P_SCALES + 16 * i)));
}

// Two int32 lanes' low halves as one lane's int16 pair: a below, b above.
HK_INLINE HK_VNNI512 __m512i pair16(__m512i a, __m512i b) {
    return _mm512_or_si512(_mm512_and_si512(a, _mm512_set1_epi32(0xFFFF)), _mm512_slli_epi32(b, 16));
}

// Half h's 6-bit quants of word l of each 32-quant chunk k (quants 128h + 32k + 4l ... + 3 of
// sixteen rows), k = 0..3, as unsigned bytes.
HK_INLINE HK_VNNI512 void x6p_quants(const uint8_t *blk, int h, int l, __m512i q[4]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    const uint8_t *words = blk + X6P_WORDS(h, l);
    const __m512i a = _mm512_loadu_si512((const void *)words), b = _mm512_loadu_si512((const void *)(words + 64));
    const __m512i hb = _mm512_loadu_si512((const void *)(words + 128));
    q[0] = _mm512_or_si512(_mm512_and_si512(a, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 4), bits45));
    q[1] = _mm512_or_si512(_mm512_and_si512(b, low4), _mm512_and_si512(_mm512_slli_epi16(hb, 2), bits45));
    q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), low4), _mm512_and_si512(hb, bits45));
    q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b, 4), low4),
                           _mm512_and_si512(_mm512_srli_epi16(hb, 2), bits45));
}

// One group of sixteen interleaved rows against one column in the K_LANES order of
// ggml_vec_dot_q6_K_q8_K: lane l of a row's eight takes bytes 4l..4l+3 of every 32-quant chunk,
// each chunk's four times the scale of its sub-block, less 32 times the scales of sub-blocks
// 2l and 2l + 1 times their activation sums; out[r] for r = 0..15.
static HK_VNNI512 void x6p_column(const uint8_t *group, const hk_q8_K *y, int64_t nb, float *out) {
    __m512 acc[8];
    for (int l = 0; l < 8; l++) acc[l] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++, y++) {
        const uint8_t *blk = group + (size_t)i * X6P_BLOCK;
        __m512i lanes[8];
        // Lanes 0..3 take the even sub-blocks' scales, lanes 4..7 the odd ones'.
        for (int odd = 0; odd < 2; odd++) {
            __m512i scale[8];
            for (int m = 0; m < 8; m++) {
                const __m512i v = x6p_scale(blk, 2 * m + odd);
                scale[m] = pair16(v, v);
            }
            for (int l = 4 * odd; l < 4 * odd + 4; l++) {
                int32_t pair;
                memcpy(&pair, y->bsums + 2 * l, 4);
                const __m512i off = _mm512_madd_epi16(pair16(x6p_scale(blk, 2 * l), x6p_scale(blk, 2 * l + 1)), _mm512_set1_epi32(pair));
                __m512i lane = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(off, 5));
                for (int h = 0; h < 2; h++) {
                    __m512i q[4];
                    x6p_quants(blk, h, l, q);
                    for (int k = 0; k < 4; k++) {
                        const __m512i p = _mm512_maddubs_epi16(q[k], bcast4_512(y->qs + 128 * h + 32 * k + 4 * l));
                        lane = _mm512_add_epi32(lane, _mm512_madd_epi16(p, scale[4 * h + k]));
                    }
                }
                lanes[l] = lane;
            }
        }
        const __m512 dx = _mm512_mul_ps(_mm512_set1_ps(y->d), _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + X6P_D))));
        for (int l = 0; l < 8; l++) acc[l] = _mm512_fmadd_ps(dx, _mm512_cvtepi32_ps(lanes[l]), acc[l]);
    }
    const __m512 even = _mm512_add_ps(_mm512_add_ps(acc[0], acc[4]), _mm512_add_ps(acc[2], acc[6]));
    const __m512 odd = _mm512_add_ps(_mm512_add_ps(acc[1], acc[5]), _mm512_add_ps(acc[3], acc[7]));
    _mm512_storeu_ps(out, _mm512_add_ps(even, odd));
}

// A group's super-blocks in q6k_pack16's layout, for runs that take the tiled order.
static HK_VNNI512 void x6p_unpack16(const uint8_t *group, int64_t nb, uint8_t *dst) {
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = group + (size_t)i * X6P_BLOCK;
        uint8_t *out = dst + (size_t)i * X16Q6_BLOCK;
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 8; l++) {
                __m512i q[4];
                x6p_quants(blk, h, l, q);
                for (int k = 0; k < 4; k++) _mm512_store_si512((void *)(out + X16Q6_Q + 64 * (32 * h + 8 * k + l)), q[k]);
            }
        for (int k = 0; k < 16; k++) _mm512_store_si512((void *)(out + X16Q6_SC + 64 * k), x6p_scale(blk, k));
        for (int k = 0; k < 8; k++)
            _mm512_store_si512((void *)(out + X16Q6_SP + 64 * k), pair16(x6p_scale(blk, 2 * k), x6p_scale(blk, 2 * k + 1)));
        _mm512_store_ps((float *)(out + X16Q6_D), _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(blk + X6P_D))));
    }
}


// ---- both interleaved K-quant layouts ------------------------------------------------------------

// Sixteen interleaved rows (kind K_Q4 or K_Q6) against one column in a lone dot product's order.
HK_INLINE HK_VNNI512 void x16p_column(const int kind, const uint8_t *group, const hk_q8_K *y, int64_t nb, float *out) {
    if (kind == K_Q4) xp_column(group, y, nb, out);
    else x6p_column(group, y, nb, out);
}

HK_INLINE HK_VNNI512 void x16p_matvec(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows, const void *a,
                                      int64_t n, float *out) {
    const int64_t nb = n / QK_K;
    for (int64_t g = 0; g < rows / 16; g++) x16p_column(kind, w + (size_t)g * 16 * row_bytes, a, nb, out + 16 * g);
}

// Groups of sixteen rows against every group of columns: the groups in the packed kernels' order
// (Q4_K's columns in fours, Q6_K's runs of 8 or more) through the rows unpacked once a group, the
// others one column at a time from the interleaved rows.
HK_INLINE HK_VNNI512 void x16p_matmul(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows, const uint8_t *a,
                                      size_t a_stride, int64_t cols, int64_t n, const int64_t *runs, int64_t n_runs,
                                      float *out, size_t out_stride) {
    int64_t total = 0;
    for (int64_t i = 0; runs && i < n_runs; i++) total += runs[i] > 0 ? runs[i] : 0;
    if (runs && total != cols) runs = NULL;
    const int64_t nb = n / QK_K;
    const int packed_order = kind == K_Q4 ? K_PAIRS : K_TILED;
    k_group *groups = malloc((size_t)cols * sizeof(k_group));
    uint8_t *unpacked = aligned_alloc(64, (size_t)nb * (kind == K_Q4 ? X16_BLOCK : X16Q6_BLOCK));
    if (groups && unpacked) {
        const int64_t ng = k_groups(kind, cols, runs, n_runs, groups);
        for (int64_t g = 0; g < rows / 16; g++) {
            const uint8_t *group = w + (size_t)g * 16 * row_bytes;
            int unpacked_once = 0;
            for (int64_t gi = 0; gi < ng; gi++) {
                const k_group cg = groups[gi];
                float *o = out + (size_t)cg.first * out_stride + 16 * g;
                if (cg.order == packed_order) {
                    if (!unpacked_once) {
                        if (kind == K_Q4) xp_unpack16(group, nb, unpacked);
                        else x6p_unpack16(group, nb, unpacked);
                    }
                    unpacked_once = 1;
                    const uint8_t *ap[4];
                    for (int i = 0; i < 4; i++) ap[i] = a + (size_t)(cg.first + (i < cg.nc ? i : 0)) * a_stride;
                    if (kind == K_Q4) q4k_x16_cols4(unpacked, ap, nb, o, out_stride);
                    else q6k_x16(unpacked, ap, cg.nc, nb, o, out_stride);
                    continue;
                }
                float col[16];
                for (int i = 0; i < cg.nc; i++) {
                    x16p_column(kind, group, (const hk_q8_K *)(a + (size_t)(cg.first + i) * a_stride), nb, col);
                    memcpy(o + (size_t)i * out_stride, col, sizeof col);
                }
            }
        }
    }
    free(groups);
    free(unpacked);
}

#define HK_X16P_KERNELS(name, kind)                                                                        \
    static HK_VNNI512 void matvec_##name(const uint8_t *w, size_t rb, int64_t rows, const void *a, int64_t n,  \
                                         float *out) {                                                      \
        x16p_matvec(kind, w, rb, rows, a, n, out);                                                          \
    }                                                                                                       \
    static HK_VNNI512 void matmul_##name(const uint8_t *w, size_t rb, int64_t rows, const uint8_t *a,       \
                                         size_t as, int64_t cols, int64_t n, const int64_t *runs,           \
                                         int64_t n_runs, float *out, size_t os) {                           \
        x16p_matmul(kind, w, rb, rows, a, as, cols, n, runs, n_runs, out, os);                              \
    }                                                                                                       \
    HK_AVX2 void hk_avx2_matvec_##name(const uint8_t *w, size_t rb, int64_t rows, const void *a, int64_t n, \
                                       float *out) {                                                        \
        matvec_##name(w, rb, rows, a, n, out);                                                              \
    }                                                                                                       \
    HK_AVX2 void hk_avx2_matmul_##name(const uint8_t *w, size_t rb, int64_t rows, const uint8_t *a,         \
                                       size_t as, int64_t cols, int64_t n, const int64_t *runs,             \
                                       int64_t n_runs, float *out, size_t os) {                             \
        matmul_##name(w, rb, rows, a, as, cols, n, runs, n_runs, out, os);                                  \
    }

HK_X16P_KERNELS(q4_Kx16p, K_Q4)
HK_X16P_KERNELS(q6_Kx16p, K_Q6)

#endif
