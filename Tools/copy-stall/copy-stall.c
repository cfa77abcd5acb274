/* copy-stall: what copying frames costs on this machine with no storage involved.
 *
 * THREADS threads each copy a FRAME_MIB MiB frame every 1/FPS s into a ring of their own
 * (128 MiB, populated up front), for SECONDS s, and print each thread's copy time percentiles.
 * Run it beside `provideo-bench noise-writer FILE LIMIT` to see whether a page-cache writer
 * slows plain memcpy (it does on a VM whose balloon reports free pages to the host:
 * Docs/BENCHMARKS.md, "Copies stall while the host takes back free pages").
 *
 * usage: copy-stall [SECONDS [THREADS [FRAME_MIB [FPS [FIFO_PRIORITY]]]]]
 *        defaults 10 4 5 25 0 (0: the default scheduling policy)
 * Output, one line per thread:
 *   thread N: COUNT copies, p50 X p99 X p99.9 X max X ms, K over 4 ms
 * Exit status 0, 1 when a thread could not start or allocate, 2 for bad arguments. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { MAX_THREADS = 64 };
static const size_t ring_bytes = (size_t)128 << 20;
static int seconds = 10, threads = 4, frame_mib = 5, fps = 25, fifo_priority = 0;
static const unsigned char *source;
/* Each thread's line, printed by main in thread order once all have ended. */
static char report[MAX_THREADS][160];

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int ascending(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void *copy_frames(void *argument) {
    long id = (long)argument;
    size_t frame = (size_t)frame_mib << 20;
    int count = seconds * fps;
    uint64_t interval = 1000000000u / (uint64_t)fps;
    if (fifo_priority > 0) {
        struct sched_param parameter = { .sched_priority = fifo_priority };
        if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameter) != 0) {
            fprintf(stderr, "copy-stall: SCHED_FIFO %d needs root or RLIMIT_RTPRIO\n", fifo_priority);
            return (void *)1;
        }
    }
    unsigned char *ring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    uint64_t *took = calloc((size_t)count, sizeof *took);
    if (ring == MAP_FAILED || !took) {
        fprintf(stderr, "copy-stall: cannot allocate thread %ld's ring\n", id);
        return (void *)1;
    }
    /* Threads are spread over one interval, as independent sources would be. */
    uint64_t start = now_ns() + 20000000u + interval * (uint64_t)id / (uint64_t)threads;
    size_t offset = 0;
    int slow = 0;
    for (int i = 0; i < count; i++) {
        uint64_t due = start + (uint64_t)i * interval;
        struct timespec wake = { (time_t)(due / 1000000000u), (long)(due % 1000000000u) };
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, NULL);
        if (offset + frame > ring_bytes) offset = 0;
        uint64_t begin = now_ns();
        memcpy(ring + offset, source, frame);
        took[i] = now_ns() - begin;
        offset += frame;
        if (took[i] > 4000000u) slow++;
    }
    qsort(took, (size_t)count, sizeof *took, ascending);
    snprintf(report[id], sizeof report[id], "thread %ld: %d copies, p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms, %d over 4 ms\n", id, count,
           took[count / 2] / 1e6, took[(count * 99 + 99) / 100 - 1] / 1e6, took[(count * 999 + 999) / 1000 - 1] / 1e6,
           took[count - 1] / 1e6, slow);
    free(took);
    munmap(ring, ring_bytes);
    return NULL;
}

int main(int argc, char **argv) {
    int *settings[] = { &seconds, &threads, &frame_mib, &fps, &fifo_priority };
    for (int i = 1; i < argc; i++) {
        char *end;
        long value = strtol(argv[i], &end, 10);
        if (i > 5 || *end || value < (i == 5 ? 0 : 1) || value > (i == 5 ? 99 : i == 2 ? MAX_THREADS : 3600)) {
            fprintf(stderr, "copy-stall: bad argument '%s'\nusage: copy-stall [SECONDS [THREADS [FRAME_MIB [FPS [FIFO_PRIORITY]]]]]\n", argv[i]);
            return 2;
        }
        *settings[i - 1] = (int)value;
    }
    if ((size_t)frame_mib << 20 > ring_bytes) {
        fprintf(stderr, "copy-stall: a frame must fit the 128 MiB ring\n");
        return 2;
    }
    size_t frame = (size_t)frame_mib << 20;
    uint64_t *words = aligned_alloc(4096, frame);
    if (!words) return 1;
    uint64_t state = 0x9E3779B97F4A7C15u; /* xorshift: bytes no layer can compress or share */
    for (size_t i = 0; i < frame / 8; i++) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        words[i] = state;
    }
    source = (const unsigned char *)words;
    pthread_t running[MAX_THREADS];
    int failed = 0, started = 0;
    for (long i = 0; i < threads; i++, started++) {
        if (pthread_create(&running[i], NULL, copy_frames, (void *)i) != 0) {
            fprintf(stderr, "copy-stall: cannot start thread %ld\n", i);
            failed = 1;
            break;
        }
    }
    for (int i = 0; i < started; i++) {
        void *result = NULL;
        pthread_join(running[i], &result);
        failed |= result != NULL;
        fputs(report[i], stdout);
    }
    return failed ? 1 : 0;
}
