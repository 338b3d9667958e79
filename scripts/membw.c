/*
 * Streaming read bandwidth of this machine, for docs/PERFORMANCE.md: each thread sums its
 * share of a buffer far larger than the caches, and the best of several passes is printed in
 * GB/s (10^9 bytes a second), for 1 thread and for the thread count given.
 *
 *   cc -O3 -march=native -pthread scripts/membw.c -o /tmp/membw && /tmp/membw 2
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BUFFER_BYTES = 1 << 30, PASSES = 12, MAX_THREADS = 64 };

typedef struct {
    const uint64_t *start;
    size_t count;
    uint64_t sum;
    pthread_barrier_t *barrier;
} Share;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t sum_words(const uint64_t *words, size_t count) {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (size_t i = 0; i + 4 <= count; i += 4) {
        a += words[i];
        b += words[i + 1];
        c += words[i + 2];
        d += words[i + 3];
    }
    return a ^ b ^ c ^ d;
}

static void *read_share(void *argument) {
    Share *share = argument;
    pthread_barrier_wait(share->barrier);
    share->sum = sum_words(share->start, share->count);
    pthread_barrier_wait(share->barrier);
    return NULL;
}

/* Best streaming read rate with `threads` threads, in GB/s. */
static double measure(const uint64_t *words, size_t count, int threads) {
    double best = 0;
    uint64_t check = 0;
    for (int pass = 0; pass < PASSES; pass++) {
        pthread_barrier_t barrier;
        pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
        pthread_t ids[MAX_THREADS];
        Share shares[MAX_THREADS];
        size_t per = count / (size_t)threads;
        for (int t = 0; t < threads; t++) {
            shares[t] = (Share){words + per * (size_t)t, per, 0, &barrier};
            pthread_create(&ids[t], NULL, read_share, &shares[t]);
        }
        pthread_barrier_wait(&barrier);
        double start = now();
        pthread_barrier_wait(&barrier);
        double seconds = now() - start;
        for (int t = 0; t < threads; t++) {
            pthread_join(ids[t], NULL);
            check ^= shares[t].sum;
        }
        pthread_barrier_destroy(&barrier);
        double rate = (double)(per * (size_t)threads * sizeof(uint64_t)) / seconds / 1e9;
        if (rate > best) best = rate;
    }
    if (check == 42) fprintf(stderr, " ");
    return best;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "usage: %s [THREADS 1-%d]\n", argv[0], MAX_THREADS);
        return 2;
    }
    size_t count = BUFFER_BYTES / sizeof(uint64_t);
    uint64_t *words = aligned_alloc(64, BUFFER_BYTES);
    if (!words) {
        fprintf(stderr, "membw: cannot allocate %d MiB\n", BUFFER_BYTES >> 20);
        return 1;
    }
    for (size_t i = 0; i < count; i++) words[i] = i * 0x9E3779B97F4A7C15ull;
    printf("read bandwidth, 1 thread: %.1f GB/s\n", measure(words, count, 1));
    if (threads > 1) printf("read bandwidth, %d threads: %.1f GB/s\n", threads, measure(words, count, threads));
    free(words);
    return 0;
}
