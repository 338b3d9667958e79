#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One token of the gated delta rule (Qwen3.5's linear attention) for one head of n values, as
/// llama.cpp's CPU gated_delta_net computes it. `state` holds S transposed (state[j*n + i] =
/// S[i][j]); for each j: state_j *= decay; delta = (v[j] - state_j·k) * beta; state_j += k *
/// delta; out[j] = (state_j·q) * scale. The dot products take ggml_vec_dot_f32's order; the
/// portable and AVX2 paths (`isa`) give the same bits.
void hk_gated_delta_rule(int isa, float *state, const float *q, const float *k, const float *v, float decay, float beta,
                         float scale, float *out, int64_t n);

/// One token of Mamba-2's selective scan for one head of `dim` values, as llama.cpp's CPU
/// ssm_scan computes it. `state` holds the head's (dim, n) matrix, row i for value i; for each
/// i: row = row * dA + B * (x[i] * dt), one fused multiply-add over the rounded B * (x[i] * dt);
/// out[i] = row·C. `dt` is the head's time step after
/// softplus and `dA` its decay e^(dt·A). The vectorised part (the first n - n % 32 state values)
/// sums as ggml_vec_dot_f32 does, four 8-lane accumulators; the portable and AVX2 paths (`isa`)
/// give the same bits.
void hk_mamba2_scan(int isa, float *state, const float *x, const float *B, const float *C, float dt, float dA, float *out,
                    int64_t dim, int64_t n);

#ifdef __cplusplus
}
#endif
