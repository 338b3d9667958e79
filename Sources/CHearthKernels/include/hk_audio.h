#pragma once
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Log-mel spectrogram frames as Whisper's feature extractor computes them, before its
/// normalization: for frame f of `samples` (n of them, already followed by whatever padding the
/// caller wants counted), the 400 samples centred on f * 160 (reflected at both ends), times a
/// periodic Hann window, through a 400-point FFT (double precision); the power of bins 0...200
/// through `filters` (n_mels rows of 201 weights) and log10 of each mel energy clamped below at
/// 1e-10. Writes frames f0..<f1 into out[m * out_stride + f] and returns the largest value
/// written (-inf when none).
float hk_log_mel_frames(const float *samples, int64_t n, const float *filters, int64_t n_mels,
                        int64_t f0, int64_t f1, float *out, int64_t out_stride);

#ifdef __cplusplus
}
#endif
