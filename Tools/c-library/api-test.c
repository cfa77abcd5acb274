/*
 * Exercises every call of provideo.h from plain C, as a recorder would, and checks the results
 * byte for byte. Built and run by Tests/ProvideoTests/CLibraryTests.swift against an installed
 * libprovideo (pkg-config), so it also proves the install.
 *
 *   api-test POOL CAPACITY SCRATCH [LANDING]
 *
 * POOL: an idle pool of CAPACITY bytes (created by the test); SCRATCH: a directory for the
 * destinations; LANDING: a directory on another filesystem than the pool's (the landing
 * checks run only with it). Prints one line per failed check and "api-test: N checks passed"; exit 0 only
 * when every check passed.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <provideo.h>

static int checks, failures;

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        checks++;                                                                           \
        if (!(cond)) {                                                                      \
            failures++;                                                                     \
            fprintf(stderr, "FAILED line %d: %s: ", __LINE__, #cond);                       \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fprintf(stderr, "\n");                                                          \
        }                                                                                   \
    } while (0)

/* A call that must succeed; prints the library's message when it does not. */
#define OK(call)                                                                            \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        CHECK(rc_ == 0 && err.code == 0 && err.message[0] == 0, "%s -> %d %s", #call, rc_,  \
              err.message);                                                                 \
    } while (0)

/* A call that must fail with `code`, a message, and an err struct that agrees. */
#define FAILS(want, call)                                                                   \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        CHECK(rc_ == (want) && err.code == (want) && err.message[0] != 0,                   \
              "%s -> %d (want %d) %s", #call, rc_, (int)(want), err.message);               \
    } while (0)

static uint8_t pattern_byte(size_t i, unsigned seed) { return (uint8_t)((i * 2654435761u + seed) >> 13); }

static void fill_pattern(uint8_t *p, size_t n, size_t start, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = pattern_byte(start + i, seed);
}

/* Whether the file at `path` holds exactly `expected`. */
static int file_holds(const char *path, const uint8_t *expected, size_t length) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    uint8_t *got = malloc(length + 1);
    size_t n = fread(got, 1, length + 1, f);
    fclose(f);
    int same = n == length && memcmp(got, expected, length) == 0;
    free(got);
    return same;
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* The in-place fill: writes the frame's pattern where the library says, records the pieces. */
struct fill_context {
    size_t frame_start; /* the frame's offset in the recording */
    unsigned seed;
    size_t pieces, bytes, next_offset;
    int in_order;
};

static void fill_piece(void *context, void *piece, size_t size, size_t offset) {
    struct fill_context *c = context;
    c->in_order &= offset == c->next_offset;
    fill_pattern(piece, size, c->frame_start + offset, c->seed);
    c->pieces++;
    c->bytes += size;
    c->next_offset = offset + size;
}

/* Appends from two threads at once: the library serializes calls on one handle. */
struct thread_args {
    provideo_capture *capture;
    int failures;
};

static void *append_many(void *arg) {
    struct thread_args *a = arg;
    uint8_t frame[4096];
    memset(frame, 0x5A, sizeof frame);
    for (int i = 0; i < 200; i++) {
        provideo_error e;
        if (provideo_capture_append(a->capture, frame, sizeof frame, &e) != 0) a->failures++;
        if (provideo_capture_poll(a->capture, &e) != 0) a->failures++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s POOL CAPACITY SCRATCH [LANDING]\n", argv[0]);
        return 2;
    }
    const char *pool_path = argv[1];
    int64_t capacity = strtoll(argv[2], NULL, 10);
    const char *scratch = argv[3];
    char dest1[4096], dest2[4096], dest3[4096], bad_dest[4096];
    snprintf(dest1, sizeof dest1, "%s/take1.mov", scratch);
    snprintf(dest2, sizeof dest2, "%s/take2.mov", scratch);
    snprintf(dest3, sizeof dest3, "%s/take3.mov", scratch);
    snprintf(bad_dest, sizeof bad_dest, "%s/no-such-dir/take.mov", scratch);
    provideo_error err;

    /* ---- strerror and version: static strings for every code ---- */
    for (int code = 0; code >= PROVIDEO_E_BANDWIDTH_EXCEEDED; code--) {
        const char *text = provideo_strerror(code);
        CHECK(text && text[0], "strerror(%d)", code);
    }
    CHECK(strcmp(provideo_strerror(-999), "unknown error code") == 0, "%s", provideo_strerror(-999));
    CHECK(strcmp(provideo_strerror(PROVIDEO_E_BUSY), "the pool is busy") == 0, "%s", provideo_strerror(PROVIDEO_E_BUSY));
    char header_version[32];
    snprintf(header_version, sizeof header_version, "%d.%d.%d", PROVIDEO_VERSION_MAJOR, PROVIDEO_VERSION_MINOR,
             PROVIDEO_VERSION_PATCH);
    CHECK(strcmp(provideo_version(), header_version) == 0, "the library is %s, the header %s", provideo_version(),
          header_version);
/* This program calls what 1.1 added; the check places the header exactly at its own version. */
#if !PROVIDEO_CHECK_VERSION(1, 1, 0) || \
    PROVIDEO_CHECK_VERSION(PROVIDEO_VERSION_MAJOR, PROVIDEO_VERSION_MINOR, PROVIDEO_VERSION_PATCH + 1)
#error "PROVIDEO_CHECK_VERSION does not place this header at its own version, 1.1 or newer"
#endif
    CHECK(PROVIDEO_VERSION == PROVIDEO_VERSION_MAJOR * 10000 + PROVIDEO_VERSION_MINOR * 100 + PROVIDEO_VERSION_PATCH &&
              PROVIDEO_VERSION >= 10100 && PROVIDEO_CHECK_VERSION(1, 0, 0) && !PROVIDEO_CHECK_VERSION(2, 0, 0),
          "PROVIDEO_VERSION %d", PROVIDEO_VERSION);

    /* ---- is_supported: the scratch directory (pools live there), a missing one, tmpfs ---- */
    char reason[512], missing_dir[4096];
    memset(reason, 'X', sizeof reason);
    CHECK(provideo_is_supported(scratch, reason, sizeof reason) == 1 && reason[0] == 0, "%s: %s", scratch, reason);
    snprintf(missing_dir, sizeof missing_dir, "%s/no-such-dir", scratch);
    CHECK(provideo_is_supported(missing_dir, reason, sizeof reason) == 0 && strstr(reason, missing_dir) != NULL &&
              strstr(reason, "No such file or directory") != NULL,
          "missing: %s", reason);
    CHECK(provideo_is_supported(missing_dir, NULL, 0) == 0, "no reason buffer");
    CHECK(provideo_is_supported(NULL, reason, sizeof reason) == PROVIDEO_E_NULL_POINTER, "NULL dir");
    if (argc == 5) {
        CHECK(provideo_is_supported(argv[4], reason, sizeof reason) == 0 && strstr(reason, "tmpfs") != NULL &&
                  strstr(reason, "Put the pool on a disk filesystem") != NULL,
              "%s: %s", argv[4], reason);
        /* A short buffer: the reason's first len - 1 bytes, NUL-terminated, nothing written past it. */
        char full[512], cut[24];
        provideo_is_supported(argv[4], full, sizeof full);
        memset(cut, 'X', sizeof cut);
        CHECK(provideo_is_supported(argv[4], cut, 16) == 0 && strlen(cut) == 15 && strncmp(cut, full, 15) == 0 &&
                  cut[16] == 'X',
              "cut to 16: %.24s", cut);
    }

    /* ---- NULL, forged and wrong-kind handles, NULL pointers ---- */
    provideo_pool_status st;
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_get_status(NULL, &st, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_get_status((provideo_pool *)(uintptr_t)0x1234, &st, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_close(NULL, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_replenish(NULL, NULL, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_append(NULL, "x", 1, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_append_in_place(NULL, 1, fill_piece, NULL, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_write_at(NULL, 0, "x", 1, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_poll(NULL, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_finish(NULL, NULL, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_cancel(NULL, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_close(NULL, &err));
    provideo_capture_statistics stats;
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_get_statistics(NULL, &stats, &err));
    CHECK(provideo_capture_poll((provideo_capture *)(uintptr_t)0xdeadbeef0, NULL) == PROVIDEO_E_INVALID_HANDLE,
          "err may be NULL");
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_pool_open(pool_path, NULL, &err));

    /* ---- create, resize, measure (1.1) ---- */
    {
        FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_resize(NULL, 1 << 20, NULL, &err));
        FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_measure_bandwidth(NULL, NULL, &err));
        char made[4096];
        snprintf(made, sizeof made, "%s/made-from-c", scratch);
        provideo_pool *created = (provideo_pool *)(uintptr_t)1;
        FAILS(PROVIDEO_E_NULL_POINTER, provideo_pool_create(NULL, 8 << 20, NULL, &created, &err));
        FAILS(PROVIDEO_E_NULL_POINTER, provideo_pool_create(made, 8 << 20, NULL, NULL, &err));
        provideo_pool_create_options options;
        provideo_pool_create_options_init(&options);
        CHECK(options.size == sizeof options && options.measure_bandwidth == 1 && options.bandwidth == 0 &&
                  options.max_captures == 0 && options.zero_fill == 0 && options.group == NULL,
              "defaults: size %u measure %u", options.size, options.measure_bandwidth);
        provideo_pool_create_options unsized = options;
        unsized.size = 0;
        FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_pool_create(made, 8 << 20, &unsized, &created, &err));
        CHECK(created == NULL && strstr(err.message, "provideo_pool_create_options_init") != NULL, "%s", err.message);
        FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_pool_create(made, 0, &options, &created, &err));
        options.max_captures = -1;
        FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_pool_create(made, 8 << 20, &options, &created, &err));
        options.max_captures = 2;
        options.measure_bandwidth = 0;
        OK(provideo_pool_create(made, 8 << 20, &options, &created, &err));
        CHECK(created != NULL, "created pool handle");
        provideo_pool *again = NULL;
        FAILS(PROVIDEO_E_POOL_EXISTS, provideo_pool_create(made, 8 << 20, &options, &again, &err));
        CHECK(again == NULL, "out is NULL on failure");
        CHECK(strstr(err.message, "; remedy: provideo_pool_resize() or `provideo destroy`") != NULL,
              "the message names what deals with it: %s", err.message);
        provideo_pool_status made_status;
        OK(provideo_pool_get_status(created, &made_status, &err));
        CHECK(made_status.initial_capacity == 8 << 20 && made_status.remaining_capacity == 8 << 20,
              "created %" PRId64 " / %" PRId64, made_status.initial_capacity, made_status.remaining_capacity);
        int64_t resized = 0;
        FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_pool_resize(created, -1, &resized, &err));
        OK(provideo_pool_resize(created, 12 << 20, &resized, &err));
        OK(provideo_pool_get_status(created, &made_status, &err));
        CHECK(resized == 12 << 20 && made_status.initial_capacity == 12 << 20 && made_status.remaining_capacity == 12 << 20,
              "resized %" PRId64 ": %" PRId64 " / %" PRId64, resized, made_status.initial_capacity,
              made_status.remaining_capacity);
        provideo_bandwidth bandwidth;
        memset(&bandwidth, 0xff, sizeof bandwidth);
        OK(provideo_pool_measure_bandwidth(created, &bandwidth, &err));
        CHECK(bandwidth.sustained > 0 && bandwidth.burst > 0 && bandwidth.bytes >= 16 * (12 << 20) &&
                  bandwidth.seconds > 0 && bandwidth.settled == 0 && bandwidth.reserved == 0,
              "measured %" PRId64 " bit/s over %" PRId64 " bytes", bandwidth.sustained, bandwidth.bytes);
        OK(provideo_pool_resize(created, 2 << 20, NULL, &err));
        FAILS(PROVIDEO_E_NOT_ENOUGH_SPACE, provideo_pool_measure_bandwidth(created, NULL, &err));
        OK(provideo_pool_close(created, &err));
        /* A program built against a header whose options had only their first three fields
         * (size, zero_fill, max_captures): the library reads those and defaults the rest (it
         * must not read the caller's stack past `size`). The garbage after them is never read. */
        struct {
            uint32_t size;
            uint32_t zero_fill;
            int32_t max_captures;
            uint32_t garbage[8];
        } older;
        memset(&older, 0xA5, sizeof older);
        older.size = 3 * sizeof(uint32_t);
        older.zero_fill = 0;
        older.max_captures = 1;
        char old_made[4096];
        snprintf(old_made, sizeof old_made, "%s/made-from-c-older", scratch);
        OK(provideo_pool_create(old_made, 2 << 20, (const provideo_pool_create_options *)(const void *)&older, &created,
                                &err));
        OK(provideo_pool_close(created, &err));
        /* Defaults (NULL options): measured at create; too small to measure is no error. */
        char small[4096];
        snprintf(small, sizeof small, "%s/made-from-c-small", scratch);
        OK(provideo_pool_create(small, 2 << 20, NULL, &created, &err));
        OK(provideo_pool_close(created, &err));
    }

    /* ---- open ---- */
    provideo_pool *pool = (provideo_pool *)(uintptr_t)1;
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/no-pool-here", scratch);
    FAILS(PROVIDEO_E_POOL_NOT_FOUND, provideo_pool_open(missing, &pool, &err));
    CHECK(pool == NULL, "out is NULL on failure");
    CHECK(strstr(err.message, "; remedy: provideo_pool_create()") != NULL, "the message says how to create one: %s",
          err.message);
    OK(provideo_pool_open(pool_path, &pool, &err));
    CHECK(pool != NULL, "pool handle");

    /* ---- status ---- */
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_pool_get_status(pool, NULL, &err));
    OK(provideo_pool_get_status(pool, &st, &err));
    CHECK(st.initial_capacity == capacity, "initial %" PRId64, st.initial_capacity);
    CHECK(st.remaining_capacity == capacity, "remaining %" PRId64, st.remaining_capacity);
    CHECK(st.busy_reasons == 0, "busy %u", st.busy_reasons);
    CHECK(st.memory_alignment >= 512 && (st.memory_alignment & (st.memory_alignment - 1)) == 0, "memory alignment %u",
          st.memory_alignment);
    CHECK(st.offset_alignment >= 512, "offset alignment %u", st.offset_alignment);

    /* ---- options ---- */
    provideo_capture_options options;
    provideo_capture_options_init(&options);
    CHECK(options.bitrate == 880000000 && options.buffer_budget == 0 && options.durability_interval_ns == 1000000000u &&
              options.overrun_policy == PROVIDEO_OVERRUN_WAIT && options.overrun_wait_ns == 2000000000u &&
              options.landing == PROVIDEO_LANDING_AUTOMATIC,
          "defaults");
    provideo_capture_options_init(NULL); /* harmless */
    provideo_capture *capture = (provideo_capture *)(uintptr_t)1;
    options.bitrate = 0;
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_start(pool, dest1, &options, &capture, &err));
    CHECK(capture == NULL, "out is NULL on failure");
    options.bitrate = 80000000;
    options.overrun_policy = 7;
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_start(pool, dest1, &options, &capture, &err));
    options.overrun_policy = PROVIDEO_OVERRUN_WAIT;
    options.landing = 3;
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_start(pool, dest1, &options, &capture, &err));
    CHECK(strstr(err.message, "landing") != NULL, "%s", err.message);
    options.landing = PROVIDEO_LANDING_AUTOMATIC;
    options.overrun_wait_ns = 31000000000u;
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_start(pool, dest1, &options, &capture, &err));
    options.overrun_wait_ns = 2000000000u;
    options.buffer_budget = 8 << 20;
    options.durability_interval_ns = 100000000u;
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_start(pool, NULL, &options, &capture, &err));
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_start(pool, dest1, &options, NULL, &err));
    FAILS(PROVIDEO_E_INVALID_DESTINATION, provideo_capture_start(pool, bad_dest, &options, &capture, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_start(NULL, dest1, &options, &capture, &err));

    /* ---- a capture: copied and in-place frames, header patches ---- */
    OK(provideo_capture_start(pool, dest1, &options, &capture, &err));
    CHECK(capture != NULL, "capture handle");
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_get_status((provideo_pool *)capture, &st, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_poll((provideo_capture *)pool, &err));

    /* A second capture runs beside the first (a pool takes several at once) and a replenish
       proceeds; every process (and this one) sees `capturing`. Closing the unfinished second
       capture cancels it: no file. */
    provideo_capture *second = NULL;
    OK(provideo_capture_start(pool, dest2, NULL, &second, &err));
    CHECK(second != NULL, "a second capture");
    OK(provideo_pool_replenish(pool, NULL, &err));
    OK(provideo_pool_get_status(pool, &st, &err));
    CHECK(st.busy_reasons == PROVIDEO_BUSY_CAPTURING, "busy %u", st.busy_reasons);
    OK(provideo_capture_close(second, &err));
    CHECK(!exists(dest2), "the closed second capture left no file");

    size_t total = 1000 + (5u << 20) + 3 + (3u << 20) + 11 + 777 + 4096;
    uint8_t *expected = malloc(total);
    size_t length = 0;
    uint8_t frame[4096 + 777];

    fill_pattern(frame, 1000, 0, 1);
    memcpy(expected, frame, 1000);
    OK(provideo_capture_append(capture, frame, 1000, &err));
    length += 1000;

    /* In place: 5 MiB + 3 bytes, more than one 4 MiB write, so more than one piece. */
    struct fill_context fc = {.frame_start = length, .seed = 1, .in_order = 1};
    OK(provideo_capture_append_in_place(capture, (5u << 20) + 3, fill_piece, &fc, &err));
    CHECK(fc.bytes == (5u << 20) + 3 && fc.pieces >= 2 && fc.in_order, "pieces %zu bytes %zu", fc.pieces, fc.bytes);
    fill_pattern(expected + length, (5u << 20) + 3, length, 1);
    length += (5u << 20) + 3;
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_append_in_place(capture, 10, NULL, NULL, &err));
    struct fill_context empty = {.in_order = 1};
    OK(provideo_capture_append_in_place(capture, 0, fill_piece, &empty, &err));
    CHECK(empty.pieces == 0, "an empty frame calls no fill");

    /* In place in two steps: an "encoder" that learns the frame's size after writing it,
     * 3 MiB + 11 bytes written piece by piece, the frame's end marked on the last commit. */
    void *piece = NULL;
    size_t room = 0, frame_size = (3u << 20) + 11, written = 0;
    int pieces = 0;
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_append_commit(capture, 1, 1, &err)); /* nothing pending */
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_append_begin(capture, 0, &piece, &room, &err));
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_append_begin(capture, 10, NULL, &room, &err));
    while (written < frame_size) {
        OK(provideo_capture_append_begin(capture, frame_size - written, &piece, &room, &err));
        CHECK(piece != NULL && room > 0 && room <= frame_size - written, "room %zu", room);
        if (!piece || room == 0) break;
        if (pieces == 0) {
            /* While a piece is out the capture takes no other call, and no over-commit. */
            FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_append(capture, frame, 10, &err));
            FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_poll(capture, &err));
            uint8_t one;
            size_t one_read;
            FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_read(capture, 0, &one, 1, &one_read, &err));
            FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_append_commit(capture, room + 1, 0, &err));
            CHECK(provideo_capture_append_commit(capture, room + 1, 0, &err) != 0, "still refused");
            /* The same room again, then abandon it with a commit of 0 bytes. */
            void *again = NULL;
            size_t again_room = 0;
            OK(provideo_capture_append_begin(capture, frame_size - written, &again, &again_room, &err));
            CHECK(again == piece && again_room == room, "begin twice hands out the same room");
            OK(provideo_capture_append_commit(capture, 0, 0, &err));
            OK(provideo_capture_append_begin(capture, frame_size - written, &piece, &room, &err));
        }
        /* Write less than the room on the first piece: the size is known only after writing. */
        size_t n = pieces == 0 && room > 1000 ? room - 1000 : room;
        fill_pattern(piece, n, length + written, 4);
        OK(provideo_capture_append_commit(capture, n, written + n == frame_size, &err));
        written += n;
        pieces++;
    }
    CHECK(pieces >= 2, "the frame took %d pieces", pieces);
    fill_pattern(expected + length, frame_size, length, 4);
    length += frame_size;

    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_append(capture, NULL, 10, &err));
    OK(provideo_capture_append(capture, NULL, 0, &err));
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_append(capture, frame, (size_t)-5, &err));

    fill_pattern(frame, 777 + 4096, length, 2);
    memcpy(expected + length, frame, 777 + 4096);
    OK(provideo_capture_append(capture, frame, 777, &err));
    OK(provideo_capture_append(capture, frame + 777, 4096, &err));
    length += 777 + 4096;
    CHECK(length == total, "length bookkeeping");

    /* Patches: the start (on disk by now), across a buffer boundary, the last bytes (in memory). */
    const char header[] = "PATCHED-HEADER";
    OK(provideo_capture_write_at(capture, 0, header, sizeof header, &err));
    memcpy(expected, header, sizeof header);
    uint8_t across[100];
    memset(across, 0xA5, sizeof across);
    OK(provideo_capture_write_at(capture, (4 << 20) - 50, across, sizeof across, &err));
    memcpy(expected + (4 << 20) - 50, across, sizeof across);
    OK(provideo_capture_write_at(capture, (int64_t)length - 4, "TAIL", 4, &err));
    memcpy(expected + length - 4, "TAIL", 4);
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_write_at(capture, (int64_t)length - 2, "TAIL", 4, &err));
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_write_at(capture, -1, "x", 1, &err));
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_write_at(capture, 0, NULL, 4, &err));

    /* Read-back: every byte appended and patched, from disk and from the buffer being filled. */
    uint8_t *back = malloc(length + 100);
    size_t got = 1;
    OK(provideo_capture_read(capture, 0, back, length + 100, &got, &err));
    CHECK(got == length && memcmp(back, expected, length) == 0, "read back %zu of %zu bytes", got, length);
    OK(provideo_capture_read(capture, (int64_t)length - 10, back, 100, &got, &err));
    CHECK(got == 10 && memcmp(back, expected + length - 10, 10) == 0, "the last bytes: %zu", got);
    OK(provideo_capture_read(capture, (4 << 20) - 50, back, 100, &got, &err));
    CHECK(got == 100 && memcmp(back, across, 100) == 0, "a patch across a buffer boundary reads back");
    OK(provideo_capture_read(capture, (int64_t)length, back, 100, &got, &err));
    CHECK(got == 0, "at the end: %zu", got);
    OK(provideo_capture_read(capture, INT64_MAX, back, 100, &got, &err));
    CHECK(got == 0, "at INT64_MAX: %zu", got);
    OK(provideo_capture_read(capture, 0, NULL, 0, &got, &err));
    FAILS(PROVIDEO_E_INVALID_ARGUMENT, provideo_capture_read(capture, -1, back, 100, &got, &err));
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_read(capture, 0, back, 100, NULL, &err));
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_read(capture, 0, NULL, 100, &got, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_read(NULL, 0, back, 100, &got, &err));

    OK(provideo_capture_poll(capture, &err));
    FAILS(PROVIDEO_E_NULL_POINTER, provideo_capture_get_statistics(capture, NULL, &err));
    OK(provideo_capture_get_statistics(capture, &stats, &err));
    CHECK(stats.length == (int64_t)length && stats.bytes == (int64_t)length, "length %" PRId64, stats.length);
    CHECK(stats.frames == 7, "frames %" PRId64, stats.frames);
    CHECK(stats.patches == 3, "patches %" PRId64, stats.patches);
    CHECK(stats.remaining_capacity == capacity - (int64_t)length, "remaining %" PRId64, stats.remaining_capacity);
    CHECK(strcmp(stats.engine, "io_uring") == 0 || strcmp(stats.engine, "pwrite") == 0, "engine %s", stats.engine);
    CHECK(stats.append_latency_max_ns > 0, "latency");

    /* The live remaining capacity, as another process sees it (progress is published every 250 ms). */
    for (int i = 0; i < 100; i++) {
        OK(provideo_capture_poll(capture, &err));
        OK(provideo_pool_get_status(pool, &st, &err));
        if (st.remaining_capacity < capacity) break;
        usleep(50000);
    }
    CHECK(st.remaining_capacity < capacity, "remaining while capturing %" PRId64, st.remaining_capacity);

    provideo_recording recording;
    memset(&recording, 0x7F, sizeof recording);
    OK(provideo_capture_finish(capture, &recording, &err));
    CHECK(strcmp(recording.path, dest1) == 0, "path %s", recording.path);
    CHECK(recording.length == (int64_t)length, "length %" PRId64, recording.length);
    CHECK(file_holds(dest1, expected, length), "the recording holds every byte appended and patched");

    /* After finish: the handle answers, the capture does not take more. */
    FAILS(PROVIDEO_E_CAPTURE_CLOSED, provideo_capture_append(capture, frame, 10, &err));
    FAILS(PROVIDEO_E_CAPTURE_CLOSED, provideo_capture_finish(capture, NULL, &err));
    FAILS(PROVIDEO_E_CAPTURE_CLOSED, provideo_capture_read(capture, 0, back, 100, &got, &err));
    free(back);
    OK(provideo_capture_get_statistics(capture, &stats, &err));
    CHECK(stats.length == (int64_t)length && stats.commits >= 1, "statistics after finish");
    OK(provideo_capture_close(capture, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_close(capture, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_capture_append(capture, frame, 10, &err));

    OK(provideo_pool_get_status(pool, &st, &err));
    CHECK(st.busy_reasons == 0, "idle after finish, busy %u", st.busy_reasons);
    CHECK(st.remaining_capacity < capacity, "the recording took capacity");

    /* ---- replenish: the recording's share comes back from free space ---- */
    provideo_replenish_result replenished;
    OK(provideo_pool_replenish(pool, &replenished, &err));
    CHECK(replenished.added > 0 && replenished.missing == 0 && replenished.remaining_capacity == capacity,
          "added %" PRId64 " missing %" PRId64, replenished.added, replenished.missing);
    OK(provideo_pool_replenish(pool, &replenished, &err)); /* a full reserve: nothing to add */
    CHECK(replenished.added == 0 && replenished.remaining_capacity == capacity, "second replenish");

    /* ---- the destination exists: refused at start, left untouched ---- */
    FAILS(PROVIDEO_E_DESTINATION_EXISTS, provideo_capture_start(pool, dest1, &options, &capture, &err));
    CHECK(file_holds(dest1, expected, length), "the existing destination is untouched");

    /* ---- storage full: the frame is refused, the capture stays open; cancel gives it all back ---- */
    OK(provideo_capture_start(pool, dest2, &options, &capture, &err));
    uint8_t *mib = malloc(1 << 20);
    fill_pattern(mib, 1 << 20, 0, 3);
    int64_t accepted = 0, rc = 0;
    while ((rc = provideo_capture_append(capture, mib, 1 << 20, &err)) == 0) accepted += 1 << 20;
    CHECK(rc == PROVIDEO_E_STORAGE_FULL && strstr(err.message, "storage full") != NULL, "%" PRId64 " %s", rc,
          err.message);
    CHECK(accepted == capacity / (1 << 20) * (1 << 20), "accepted %" PRId64, accepted);
    OK(provideo_capture_append(capture, mib, (size_t)(capacity - accepted), &err)); /* the exact rest fits */
    OK(provideo_capture_poll(capture, &err));
    OK(provideo_capture_cancel(capture, &err));
    CHECK(!exists(dest2), "a cancelled capture leaves no file");
    FAILS(PROVIDEO_E_CAPTURE_CLOSED, provideo_capture_cancel(capture, &err));
    OK(provideo_capture_close(capture, &err));
    OK(provideo_pool_get_status(pool, &st, &err));
    CHECK(st.remaining_capacity == capacity && st.busy_reasons == 0, "capacity back after cancel: %" PRId64,
          st.remaining_capacity);

    /* ---- closing an unfinished capture cancels it ---- */
    OK(provideo_capture_start(pool, dest3, NULL, &capture, &err));
    OK(provideo_capture_append(capture, mib, 1 << 20, &err));
    OK(provideo_capture_close(capture, &err));
    CHECK(!exists(dest3), "closed unfinished: no file");
    OK(provideo_pool_get_status(pool, &st, &err));
    CHECK(st.remaining_capacity == capacity && st.busy_reasons == 0, "capacity back after close");

    /* ---- two threads on one capture: serialized, nothing lost ---- */
    OK(provideo_capture_start(pool, dest3, &options, &capture, &err));
    pthread_t threads[2];
    struct thread_args args[2] = {{capture, 0}, {capture, 0}};
    for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, append_many, &args[i]);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    CHECK(args[0].failures == 0 && args[1].failures == 0, "thread failures %d %d", args[0].failures, args[1].failures);
    OK(provideo_capture_finish(capture, &recording, &err));
    CHECK(recording.length == 2 * 200 * 4096, "threaded length %" PRId64, recording.length);
    OK(provideo_capture_close(capture, &err));

    /* ---- landing on another filesystem: in finish, or kept in the pool for `provideo land` ---- */
    if (argc == 5) {
        char landed[4096], waiting[4096];
        snprintf(landed, sizeof landed, "%s/landed-in-finish.mov", argv[4]);
        snprintf(waiting, sizeof waiting, "%s/lands-later.mov", argv[4]);
        fill_pattern(mib, 1 << 20, 0, 11);
        options.landing = PROVIDEO_LANDING_FINISH;
        OK(provideo_capture_start(pool, landed, &options, &capture, &err));
        OK(provideo_capture_append(capture, mib, 1 << 20, &err));
        OK(provideo_capture_finish(capture, &recording, &err));
        CHECK(strcmp(recording.path, landed) == 0 && file_holds(landed, mib, 1 << 20), "landed in finish: %s",
              recording.path);
        OK(provideo_capture_close(capture, &err));
        options.landing = PROVIDEO_LANDING_BACKGROUND;
        OK(provideo_capture_start(pool, waiting, &options, &capture, &err));
        OK(provideo_capture_append(capture, mib, 1 << 20, &err));
        OK(provideo_capture_finish(capture, &recording, &err));
        CHECK(strncmp(recording.path, pool_path, strlen(pool_path)) == 0 && !exists(waiting) &&
                  file_holds(recording.path, mib, 1 << 20),
              "waits in the pool: %s", recording.path);
        CHECK(recording.length == 1 << 20, "waiting length %" PRId64, recording.length);
        OK(provideo_capture_close(capture, &err));
        options.landing = PROVIDEO_LANDING_AUTOMATIC;
    }

    /* ---- close the pool; the handle is gone ---- */
    OK(provideo_pool_close(pool, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_close(pool, &err));
    FAILS(PROVIDEO_E_INVALID_HANDLE, provideo_pool_get_status(pool, &st, &err));

    /* ---- the default pool: PROVIDEO_POOL names it ---- */
    setenv("PROVIDEO_POOL", pool_path, 1);
    OK(provideo_pool_open(NULL, &pool, &err));
    OK(provideo_pool_get_status(pool, &st, &err));
    CHECK(st.initial_capacity == capacity, "default pool");
    OK(provideo_pool_close(pool, &err));

    free(expected);
    free(mib);
    printf("api-test: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
