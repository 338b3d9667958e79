// AVX2 kernels for the 32-element block formats: Q4_0, Q5_0, Q8_0 against Q8_0 activations,
// Q4_1, Q5_1 against Q8_1 activations.
//
// Each weight block is unpacked to 32 int8 lanes and multiplied with the activation bytes by
// vpmaddubsw (unsigned x signed). matVec runs 4 rows at a time so they share each activation
// load and keep four independent FMA chains; matMul runs one row against up to 8 columns so
// they share each unpacked weight block.
#include <stdlib.h>
#include "avx2.h"
#if HK_HAVE_AVX2

// How far ahead matVec prefetches, in rows (about 6 KB of a 576-wide Q4_1 matrix). With weights
// streaming from memory it lifted Q4_1 and Q8_0 matVec 1.5-2x here; 32 or more rows was worse.
#define PREFETCH_ROWS 16

enum { W_Q4_0, W_Q4_1, W_Q5_0, W_Q5_1, W_Q8_0 };

HK_INLINE size_t weight_bytes(int kind) {
    switch (kind) {
    case W_Q4_0: return sizeof(hk_q4_0);
    case W_Q4_1: return sizeof(hk_q4_1);
    case W_Q5_0: return sizeof(hk_q5_0);
    case W_Q5_1: return sizeof(hk_q5_1);
    default: return sizeof(hk_q8_0);
    }
}

// Q4_1 and Q5_1 store unsigned quants plus a minimum, and pair with Q8_1 (which carries
// s = d * sum(q)); the others store signed quants and pair with Q8_0.
HK_INLINE int has_min(int kind) { return kind == W_Q4_1 || kind == W_Q5_1; }

// The block's quants as 32 int8 lanes: unsigned 0..31 for Q4_1/Q5_1, signed otherwise.
HK_INLINE HK_AVX2 __m256i weight_quants(int kind, const uint8_t *b) {
    switch (kind) {
    case W_Q4_0:
        return _mm256_sub_epi8(hk_nibbles(b + 2), _mm256_set1_epi8(8));
    case W_Q4_1:
        return hk_nibbles(b + 4);
    case W_Q5_0:
        // A clear fifth bit means q - 16 < 0: fill the high nibble with ones.
        return _mm256_or_si256(hk_nibbles(b + 6),
                               _mm256_andnot_si256(hk_bit_mask32(b + 2), _mm256_set1_epi8((char)0xF0)));
    case W_Q5_1:
        return _mm256_or_si256(hk_nibbles(b + 8),
                               _mm256_and_si256(hk_bit_mask32(b + 4), _mm256_set1_epi8(0x10)));
    default:
        return hk_load256(b + 2);
    }
}

// Signed quants of at most 5 bits (Q4_0, Q5_0).
HK_INLINE int small_signed(int kind) { return kind == W_Q4_0 || kind == W_Q5_0; }

HK_INLINE size_t act_bytes(int kind) { return has_min(kind) ? sizeof(hk_q8_1) : sizeof(hk_q8_0); }
HK_INLINE size_t act_quants(int kind) { return has_min(kind) ? 4 : 2; }

// The block's f16 scale in lane 0 and, for Q4_1/Q5_1 weights and Q8_1 activations, the f16
// at p + 2 (m or s) in lane 1.
HK_INLINE HK_AVX2 __m128 half_pair(int kind, const uint8_t *p) {
    int32_t v = 0;
    memcpy(&v, p, has_min(kind) ? 4 : 2);
    return _mm_cvtph_ps(_mm_cvtsi32_si128(v));
}

// Sum of x * y over one block as 8 float lanes.
HK_INLINE HK_AVX2 __m256 block_dot(int kind, __m256i x, __m256i ux, __m256i y) {
    // vpmaddubsw needs an unsigned left operand: for signed quants, |x| times y with x's sign.
    const __m256i p = has_min(kind) ? _mm256_maddubs_epi16(x, y) : _mm256_maddubs_epi16(ux, _mm256_sign_epi8(y, x));
    return hk_pairs_to_float(p);
}

// out[r] = dot(weight row r, a) for NR rows (1..4) that share every activation load: four
// independent FMA chains per block. Each sum is: for each block, (dx * dy) * sum(qx * qy)
// added into 8 lanes, plus (for Q4_1/Q5_1) mx * sy added in order; matMul below produces the
// same floats.
HK_INLINE HK_AVX2 void tile_rows(const int kind, const uint8_t *w, size_t row_bytes, const int NR,
                                 const uint8_t *a, int64_t nb, int prefetch, float *out) {
    const size_t wb = weight_bytes(kind), ab = act_bytes(kind), aq = act_quants(kind);
    __m256 acc[4];
    __m128 mins[4];
    for (int r = 0; r < NR; r++) {
        acc[r] = _mm256_setzero_ps();
        mins[r] = _mm_setzero_ps();
    }
    // With 4 rows, their 4 scales (and mins) are gathered by scalar loads into one vector and
    // converted and multiplied together: the same products, in fewer vector instructions.
    __m256 mins4 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *ablk = a + (size_t)b * ab;
        const __m256i y = hk_load256(ablk + aq);
        const __m256i uy = small_signed(kind) ? _mm256_sign_epi8(y, y) : y;
        const __m128 dsy = half_pair(kind, ablk);
        __m256 prod4 = _mm256_setzero_ps();
        if (NR == 4) {
            const uint8_t *w0 = w + (size_t)b * wb;
            if (has_min(kind)) {
                uint32_t h[4];
                for (int r = 0; r < 4; r++) memcpy(&h[r], w0 + (size_t)r * row_bytes, 4);
                const __m128i raw = _mm_set_epi64x((int64_t)((uint64_t)h[3] << 32 | h[2]), (int64_t)((uint64_t)h[1] << 32 | h[0]));
                // [d0 m0 d1 m1 d2 m2 d3 m3] * [dy sy dy sy ...]
                const __m256 dsy4 = _mm256_castpd_ps(_mm256_broadcastsd_pd(_mm_castps_pd(dsy)));
                prod4 = _mm256_mul_ps(_mm256_cvtph_ps(raw), dsy4);
                mins4 = _mm256_add_ps(mins4, prod4);
            } else {
                uint16_t h[4];
                for (int r = 0; r < 4; r++) memcpy(&h[r], w0 + (size_t)r * row_bytes, 2);
                const uint64_t packed = (uint64_t)h[3] << 48 | (uint64_t)h[2] << 32 | (uint64_t)h[1] << 16 | h[0];
                const __m128 d4 = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128((int64_t)packed)), _mm_broadcastss_ps(dsy));
                prod4 = _mm256_castps128_ps256(d4);
            }
        }
        for (int r = 0; r < NR; r++) {
            const uint8_t *wblk = w + (size_t)r * row_bytes + (size_t)b * wb;
            // Weights stream from memory (a model is larger than the caches) and hardware
            // prefetch keeps up with one stream, not four interleaved ones: fetch the bytes
            // PREFETCH_ROWS rows ahead in address order, one block per block consumed.
            if (prefetch)
                _mm_prefetch((const char *)(w + PREFETCH_ROWS * row_bytes + ((size_t)b * NR + r) * wb), _MM_HINT_T0);
            const __m256i x = weight_quants(kind, wblk);
            __m256 scale;
            if (NR == 4) {
                scale = _mm256_permutevar8x32_ps(prod4, _mm256_set1_epi32(has_min(kind) ? 2 * r : r));
            } else {
                const __m128 prod = _mm_mul_ps(half_pair(kind, wblk), dsy);  // dx * dy, mx * sy
                if (has_min(kind)) mins[r] = _mm_add_ps(mins[r], prod);
                scale = _mm256_broadcastss_ps(prod);
            }
            // Q4_0 and Q5_0 quants are never -128, so |y| times y's sign on x gives the products
            // |x| times x's sign on y does, with |y| shared by the rows.
            const __m256 dot = small_signed(kind) ? hk_pairs_to_float(_mm256_maddubs_epi16(uy, _mm256_sign_epi8(x, y)))
                                                  : block_dot(kind, x, has_min(kind) ? x : _mm256_sign_epi8(x, x), y);
            acc[r] = _mm256_fmadd_ps(scale, dot, acc[r]);
        }
    }
    float m4[8];
    _mm256_storeu_ps(m4, mins4);
    for (int r = 0; r < NR; r++) {
        float m = 0;
        if (has_min(kind)) m = NR == 4 ? m4[2 * r + 1] : _mm_cvtss_f32(_mm_shuffle_ps(mins[r], mins[r], 1));
        out[r] = hk_hsum(acc[r]) + m;
    }
}

// Lane c holds hk_hsum(acc[c]): the same additions of the same pairs in the same operand order,
// for 8 accumulators at once.
HK_INLINE HK_AVX2 __m256 hsum8(const __m256 *acc) {
    __m256 h[4], q[2];
    for (int i = 0; i < 4; i++)
        h[i] = _mm256_add_ps(_mm256_permute2f128_ps(acc[2 * i], acc[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(acc[2 * i], acc[2 * i + 1], 0x31));
    for (int i = 0; i < 2; i++)
        q[i] = _mm256_add_ps(_mm256_shuffle_ps(h[2 * i], h[2 * i + 1], 0x44),
                             _mm256_shuffle_ps(h[2 * i], h[2 * i + 1], 0xEE));
    // q[0] = [A0 A1 C0 C1 | B0 B1 D0 D1] for accumulators A..D, q[1] likewise for E..H; the sums
    // come out as [A C E G | B D F H].
    const __m256 s = _mm256_add_ps(_mm256_shuffle_ps(q[0], q[1], 0x88), _mm256_shuffle_ps(q[0], q[1], 0xDD));
    return _mm256_permutevar8x32_ps(s, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// matMul keeps each group of 8 columns' activation scales as floats, block by block: d for Q8_0,
// d and s interleaved for Q8_1.
HK_INLINE size_t scale_stride(int kind) { return has_min(kind) ? 16 : 8; }

// The weight block's f16 d broadcast to 8 floats (a broadcast f16 converts to a broadcast float
// with no shuffle); for Q4_1/Q5_1 [d m d m ...].
HK_INLINE HK_AVX2 __m256 weight_scales(const int kind, const uint8_t *p) {
    if (has_min(kind)) {
        int32_t v;
        memcpy(&v, p, 4);
        return _mm256_cvtph_ps(_mm_set1_epi32(v));
    }
    int16_t v;
    memcpy(&v, p, 2);
    return _mm256_cvtph_ps(_mm_set1_epi16(v));
}

// One weight row against a group's activation scales ds: scale[stride * b + (1 or 2) * c] =
// dx * dy of block b and column c, and scale[stride * nb + c] the sum of mx * sy over the blocks
// in order (Q4_1/Q5_1). One multiply per block covers 8 columns, where multiplying at each use
// took one per column.
HK_INLINE HK_AVX2 void row_scales(const int kind, const uint8_t *w, const float *ds, int64_t nb, float *scale) {
    const size_t wb = weight_bytes(kind);
    if (!has_min(kind)) {
        for (int64_t b = 0; b < nb; b++)
            _mm256_store_ps(scale + 8 * b,
                            _mm256_mul_ps(weight_scales(kind, w + (size_t)b * wb), _mm256_load_ps(ds + 8 * b)));
        return;
    }
    // [dx mx dx mx ...] times [dy0 sy0 dy1 sy1 ...] gives the scales and the mins' terms in one
    // multiply; the even lanes of lo and hi sum products nothing reads.
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256 dm = weight_scales(kind, w + (size_t)b * wb);
        const __m256 p0 = _mm256_mul_ps(dm, _mm256_load_ps(ds + 16 * b));
        const __m256 p1 = _mm256_mul_ps(dm, _mm256_load_ps(ds + 16 * b + 8));
        _mm256_store_ps(scale + 16 * b, p0);
        _mm256_store_ps(scale + 16 * b + 8, p1);
        lo = _mm256_add_ps(lo, p0);
        hi = _mm256_add_ps(hi, p1);
    }
    // The odd lanes, [c0 c1 c4 c5 | c2 c3 c6 c7], in column order.
    const __m256 m = _mm256_shuffle_ps(lo, hi, 0xDD);
    _mm256_store_ps(scale + 16 * nb, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(m), 0xD8)));
}

// out[c * out_stride + r] = dot(weight row r, column c) for rows r0..<r1 and NC columns (2..8)
// sharing each unpacked weight block. q holds the columns' quants, 8 * 32 bytes per block, and ds
// their scales (scale_stride floats per block); scale is room for stride * nb + 8 floats. xq,
// when not NULL, holds the rows' quants already unpacked (32 bytes per block, rows from r0).
// With `offset` (Q5_0 only), xq holds the quants plus 16, unsigned, and offset the columns'
// 16 * (sum of each 4 activations) in q's layout: the products then need no sign fix-up per
// column, and subtracting the offset gives the same integers.
HK_INLINE HK_AVX2 void tile_cols(const int kind, const uint8_t *w, size_t row_bytes, int64_t r0, int64_t r1,
                                 const uint8_t *q, const float *ds, const int NC, int64_t nb, float *scale,
                                 const uint8_t *xq, const uint8_t *offset, float *out, size_t out_stride) {
    const size_t wb = weight_bytes(kind), st = scale_stride(kind);
    const int cs = has_min(kind) ? 2 : 1;
    // Two columns are too few to pay for a pass over the scales: each block's scales are
    // multiplied where they are used.
    const int pass = NC > 2;
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *wr = w + (size_t)r * row_bytes;
        if (pass) row_scales(kind, wr, ds, nb, scale);
        __m256 acc[8], lo = _mm256_setzero_ps();
        for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *wblk = wr + (size_t)b * wb;
            __m256 vdx = _mm256_setzero_ps();
            if (!pass) {
                vdx = weight_scales(kind, wblk);
                if (has_min(kind)) {
                    lo = _mm256_add_ps(lo, _mm256_mul_ps(vdx, _mm256_load_ps(ds + 16 * b)));
                    vdx = _mm256_moveldup_ps(vdx);
                }
            }
            const __m256i x = xq ? _mm256_load_si256((const __m256i *)(xq + ((size_t)(r - r0) * nb + b) * 32))
                                 : weight_quants(kind, wblk);
            const __m256i ux = has_min(kind) || offset ? x : _mm256_sign_epi8(x, x);
            for (int c = 0; c < NC; c++) {
                const __m256i y = _mm256_load_si256((const __m256i *)(q + (size_t)b * 256 + 32 * c));
                const __m256 sc = pass ? _mm256_broadcast_ss(scale + st * b + cs * c)
                                       : _mm256_mul_ps(vdx, _mm256_broadcast_ss(ds + st * b + cs * c));
                __m256 dot;
                if (offset) {
                    const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ux, y), _mm256_set1_epi16(1));
                    dot = _mm256_cvtepi32_ps(_mm256_sub_epi32(p, _mm256_load_si256((const __m256i *)(offset + (size_t)b * 256 + 32 * c))));
                } else {
                    dot = block_dot(kind, x, ux, y);
                }
                acc[c] = _mm256_fmadd_ps(sc, dot, acc[c]);
            }
        }
        float m[8];
        _mm256_storeu_ps(m, pass ? _mm256_load_ps(scale + st * nb) : _mm256_shuffle_ps(lo, lo, 0xDD));
        if (NC == 8) {
            __m256 s = hsum8(acc);
            if (has_min(kind)) s = _mm256_add_ps(s, _mm256_loadu_ps(m));
            _mm256_storeu_ps(m, s);
            for (int c = 0; c < 8; c++) out[(size_t)c * out_stride + r] = m[c];
        } else {
            for (int c = 0; c < NC; c++)
                out[(size_t)c * out_stride + r] = hk_hsum(acc[c]) + (has_min(kind) ? m[c] : 0);
        }
    }
}

HK_INLINE HK_AVX2 void matvec(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows,
                              const void *a, int64_t n, float *out) {
    const int64_t nb = n / QK;
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const int pf = r + PREFETCH_ROWS + 4 <= rows;
        tile_rows(kind, w + (size_t)r * row_bytes, row_bytes, 4, a, nb, pf, out + r);
    }
    for (; r < rows; r++) tile_rows(kind, w + (size_t)r * row_bytes, row_bytes, 1, a, nb, 0, out + r);
}

// Rows are taken in chunks that stay in L1 while every group of 8 columns passes over them,
// so each weight byte comes from memory once per call. Each group's quants are first copied
// block by block into one aligned run: a 34- or 36-byte block's quants straddle cache lines
// about half the time, and a split load costs two.
HK_INLINE HK_AVX2 void matmul(const int kind, const uint8_t *w, size_t row_bytes, int64_t rows,
                              const uint8_t *a, size_t a_stride, int64_t cols, int64_t n,
                              float *out, size_t out_stride) {
    const int64_t nb = n / QK, groups = (cols + 7) / 8;
    const size_t ab = act_bytes(kind), aq = act_quants(kind), st = scale_stride(kind);
    const size_t group_bytes = (size_t)nb * (256 + 4 * st);
    const size_t need = (size_t)groups * group_bytes + (st * (size_t)nb + 8) * sizeof(float);
    _Alignas(32) uint8_t stack[16384];
    uint8_t *buf = need <= sizeof stack ? stack : aligned_alloc(32, (need + 31) & ~(size_t)31);
    if (!buf) {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cols; c++)
                tile_rows(kind, w + (size_t)r * row_bytes, row_bytes, 1, a + (size_t)c * a_stride, nb, 0,
                          out + (size_t)c * out_stride + r);
        return;
    }
    float *const scale = (float *)(buf + (size_t)groups * group_bytes);
    for (int64_t g = 0; g < groups; g++) {
        uint8_t *q = buf + (size_t)g * group_bytes;
        float *ds = (float *)(q + (size_t)nb * 256);
        for (int64_t b = 0; b < nb; b++)
            for (int c = 0; c < 8; c++) {
                const int64_t col = 8 * g + c;
                __m128 v = _mm_setzero_ps();
                if (col < cols) {
                    const uint8_t *blk = a + (size_t)col * a_stride + (size_t)b * ab;
                    v = half_pair(kind, blk);
                    _mm256_store_si256((__m256i *)(q + (size_t)b * 256 + 32 * c), hk_load256(blk + aq));
                }
                if (has_min(kind)) {
                    ds[st * b + 2 * c] = _mm_cvtss_f32(v);
                    ds[st * b + 2 * c + 1] = _mm_cvtss_f32(_mm_shuffle_ps(v, v, 1));
                } else {
                    ds[st * b + c] = _mm_cvtss_f32(v);
                }
            }
    }
    // Q5_0 and Q5_1 quants take a dozen instructions to unpack: with two or more groups of
    // columns, each chunk of rows is unpacked once into xq (kept within L1) instead of once per
    // group.
    int64_t chunk = 32;
    uint8_t *xq = NULL;
    _Alignas(32) uint8_t xq_stack[24576];
    if ((kind == W_Q5_0 || kind == W_Q5_1) && groups >= 2) {
        chunk = (int64_t)sizeof xq_stack / (nb * 32);
        if (chunk > 32) chunk = 32;
        if (chunk >= 4) xq = xq_stack;
        else chunk = 32;
    }
    uint8_t *offsets = NULL;
    if (xq && kind == W_Q5_0) offsets = aligned_alloc(32, (size_t)groups * (size_t)nb * 256);
    for (int64_t g = 0; offsets && g < groups; g++) {
        const uint8_t *q = buf + (size_t)g * group_bytes;
        for (int64_t b = 0; b < nb * 8; b++) {
            const __m256i y = _mm256_load_si256((const __m256i *)(q + 32 * b));
            const __m256i sum = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(16), y), _mm256_set1_epi16(1));
            _mm256_store_si256((__m256i *)(offsets + ((size_t)g * nb * 8 + b) * 32), sum);
        }
    }
    const __m256i bias = offsets ? _mm256_set1_epi8(16) : _mm256_setzero_si256();
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
        for (int64_t r = r0; xq && r < r1; r++)
            for (int64_t b = 0; b < nb; b++)
                _mm256_store_si256((__m256i *)(xq + ((size_t)(r - r0) * nb + b) * 32),
                                   _mm256_add_epi8(bias, weight_quants(kind, w + (size_t)r * row_bytes + (size_t)b * weight_bytes(kind))));
        for (int64_t g = 0; g < groups; g++) {
            const int64_t c = 8 * g, nc = cols - c < 8 ? cols - c : 8;
            const uint8_t *q = buf + (size_t)g * group_bytes;
            const float *ds = (const float *)(q + (size_t)nb * 256);
            const uint8_t *off = offsets ? offsets + (size_t)g * nb * 256 : NULL;
            float *o = out + (size_t)c * out_stride;
            switch (nc) {
            case 8: tile_cols(kind, w, row_bytes, r0, r1, q, ds, 8, nb, scale, xq, off, o, out_stride); break;
            case 7: tile_cols(kind, w, row_bytes, r0, r1, q, ds, 7, nb, scale, xq, off, o, out_stride); break;
            case 6: tile_cols(kind, w, row_bytes, r0, r1, q, ds, 6, nb, scale, xq, off, o, out_stride); break;
            case 5: tile_cols(kind, w, row_bytes, r0, r1, q, ds, 5, nb, scale, xq, off, o, out_stride); break;
            case 4: tile_cols(kind, w, row_bytes, r0, r1, q, ds, 4, nb, scale, xq, off, o, out_stride); break;
            case 3: tile_cols(kind, w, row_bytes, r0, r1, q, ds, 3, nb, scale, xq, off, o, out_stride); break;
            case 2: tile_cols(kind, w, row_bytes, r0, r1, q, ds, 2, nb, scale, xq, off, o, out_stride); break;
            default: {
                // A lone column goes 4 rows at a time, as matVec does: the same floats, sooner.
                const uint8_t *col = a + (size_t)c * a_stride;
                int64_t r = r0;
                for (; r + 4 <= r1; r += 4)
                    tile_rows(kind, w + (size_t)r * row_bytes, row_bytes, 4, col, nb, 0, o + r);
                for (; r < r1; r++) tile_rows(kind, w + (size_t)r * row_bytes, row_bytes, 1, col, nb, 0, o + r);
            }
            }
        }
    }
    free(offsets);
    if (buf != stack) free(buf);
}

#define HK_Q32_KERNELS(name, kind)                                                                \
    HK_AVX2 float hk_avx2_dot_##name(const void *w, const void *a, int64_t n) {                   \
        float out;                                                                                \
        tile_rows(kind, w, 0, 1, a, n / QK, 0, &out);                                             \
        return out;                                                                               \
    }                                                                                             \
    HK_AVX2 void hk_avx2_matvec_##name(const uint8_t *w, size_t rb, int64_t rows, const void *a,  \
                                       int64_t n, float *out) {                                   \
        matvec(kind, w, rb, rows, a, n, out);                                                     \
    }                                                                                             \
    HK_AVX2 void hk_avx2_matmul_##name(const uint8_t *w, size_t rb, int64_t rows,                 \
                                       const uint8_t *a, size_t as, int64_t cols, int64_t n,      \
                                       const int64_t *runs, int64_t n_runs, float *out, size_t os) { \
        (void)runs;                                                                               \
        (void)n_runs;                                                                             \
        matmul(kind, w, rb, rows, a, as, cols, n, out, os);                                       \
    }

HK_Q32_KERNELS(q4_0, W_Q4_0)
HK_Q32_KERNELS(q4_1, W_Q4_1)
HK_Q32_KERNELS(q5_0, W_Q5_0)
HK_Q32_KERNELS(q5_1, W_Q5_1)
HK_Q32_KERNELS(q8_0, W_Q8_0)

#endif
