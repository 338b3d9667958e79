// Log-mel spectrogram frames (Whisper's front end): reflect-padded 400-sample frames, a periodic
// Hann window, a 400-point mixed-radix FFT in double precision, mel filters and log10.
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include "internal.h"

#define N_FFT 400
#define HOP 160
#define BINS (N_FFT / 2 + 1)

typedef struct { double re, im; } cplx;

// exp(-2 pi i k / N_FFT) for k < N_FFT, and the Hann window, computed once.
static cplx twiddles[N_FFT];
static float window[N_FFT];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void make_tables(void) {
    for (int k = 0; k < N_FFT; k++) {
        const double angle = -2.0 * M_PI * k / N_FFT;
        twiddles[k].re = cos(angle);
        twiddles[k].im = sin(angle);
        // numpy's hanning(N + 1)[:-1], as float32.
        window[k] = (float)(0.5 - 0.5 * cos(2.0 * M_PI * k / N_FFT));
    }
}

// 400 = 5 * 5 * 4 * 4.
static const int factors[] = {5, 5, 4, 4, 1};

// out[0..<n] = DFT of in[0], in[stride], ... (n of them), n the product of `f`.
static void fft(const cplx *in, cplx *out, int n, int stride, const int *f) {
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    const int p = f[0], m = n / p;
    for (int q = 0; q < p; q++) fft(in + q * stride, out + q * m, m, stride * p, f + 1);
    const int step = N_FFT / n;
    cplx t[5];
    for (int k = 0; k < m; k++) {
        for (int q = 0; q < p; q++) t[q] = out[q * m + k];
        for (int u = 0; u < p; u++) {
            const int j = k + u * m;
            double re = 0, im = 0;
            for (int q = 0; q < p; q++) {
                const cplx w = twiddles[(long)q * j % n * step];
                re += t[q].re * w.re - t[q].im * w.im;
                im += t[q].re * w.im + t[q].im * w.re;
            }
            out[j].re = re;
            out[j].im = im;
        }
    }
}

// numpy's "reflect" padding: the edge sample is not repeated.
static int64_t reflect(int64_t i, int64_t n) {
    if (n == 1) return 0;
    const int64_t period = 2 * (n - 1);
    i %= period;
    if (i < 0) i += period;
    return i < n ? i : period - i;
}

float hk_log_mel_frames(const float *samples, int64_t n, const float *filters, int64_t n_mels,
                        int64_t f0, int64_t f1, float *out, int64_t out_stride) {
    pthread_once(&tables_once, make_tables);
    float largest = -INFINITY;
    if (n <= 0) return largest;
    cplx frame[N_FFT], spectrum[N_FFT];
    double power[BINS];
    for (int64_t f = f0; f < f1; f++) {
        const int64_t start = f * HOP - N_FFT / 2;
        for (int i = 0; i < N_FFT; i++) {
            const int64_t s = start + i;
            const float x = samples[s >= 0 && s < n ? s : reflect(s, n)];
            frame[i].re = (double)(x * window[i]);
            frame[i].im = 0;
        }
        fft(frame, spectrum, N_FFT, 1, factors);
        for (int b = 0; b < BINS; b++)
            power[b] = spectrum[b].re * spectrum[b].re + spectrum[b].im * spectrum[b].im;
        for (int64_t m = 0; m < n_mels; m++) {
            const float *row = filters + m * BINS;
            double energy = 0;
            for (int b = 0; b < BINS; b++) energy += row[b] * power[b];
            const float value = (float)log10(energy > 1e-10 ? energy : 1e-10);
            out[m * out_stride + f] = value;
            if (value > largest) largest = value;
        }
    }
    return largest;
}
