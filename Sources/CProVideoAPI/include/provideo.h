/*
 * provideo.h — the C API of Pro Video Storage for Linux (libprovideo.so).
 *
 * A recorder opens a pool (a preallocated reserve on one filesystem), starts a capture into it,
 * appends frames (copied, or written in place into the capture's buffers), patches earlier
 * bytes (a muxer rewriting its header), then finishes (the recording moves to its
 * destination) or cancels. Docs/C-LIBRARY.md has the smallest complete recorder.
 *
 * Build:   cc rec.c $(pkg-config --cflags --libs provideo)
 *
 * ABI: the library's soname is libprovideo.so.1; it exports the provideo_* functions below
 * and nothing else (symbol version PROVIDEO_1; the functions 1.1 added, PROVIDEO_1.1). Its
 * major version changes only when the ABI breaks; a minor version adds functions.
 *
 * Units: sizes and offsets in bytes, bitrates in bits per second, times in nanoseconds.
 *
 * Errors: every function returning int returns 0 (PROVIDEO_OK) or a negative provideo_code.
 * Every such function takes a `provideo_error *err` last: caller-owned, may be NULL; when not
 * NULL it is always filled (code 0 and an empty message on success), with the code, the errno
 * of the system call that failed (0 if none) and a message that says what happened and what
 * to do. The library keeps no per-thread or global error state.
 *
 * Handles: `provideo_pool *` and `provideo_capture *` are opaque tokens, not addresses. A
 * token is never reused: a NULL, closed, forged or wrong-kind handle gives
 * PROVIDEO_E_INVALID_HANDLE, never a crash. Close every handle you opened exactly once
 * (closing twice gives PROVIDEO_E_INVALID_HANDLE).
 *
 * Threads: every call may come from any thread. Calls on one handle are serialized by the
 * library (a second thread waits for the first call to return), so a recorder may append from
 * its encoder thread and poll from a timer thread. Calls on different handles run in parallel.
 * The fill callback of provideo_capture_append_in_place runs on the calling thread, inside
 * the call; it must not call the library with the same capture.
 *
 * Blocking: see each function. Nothing waits on an unresponsive disk longer than 30 s (the
 * stall limit), after which the call fails with PROVIDEO_E_IO.
 */
#ifndef PROVIDEO_H
#define PROVIDEO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: stable values, never renumbered. */
typedef enum provideo_code {
    PROVIDEO_OK = 0,
    PROVIDEO_E_UNSUPPORTED = -1,          /* the filesystem or kernel cannot host a pool */
    PROVIDEO_E_POOL_NOT_FOUND = -2,       /* no pool at the path: `provideo create` one */
    PROVIDEO_E_POOL_EXISTS = -3,          /* a pool already exists at the path */
    PROVIDEO_E_BUSY = -4,                 /* resizing, or as many captures as the pool takes: later */
    PROVIDEO_E_NOT_ENOUGH_SPACE = -5,     /* the filesystem lacks the space (ENOSPC, EDQUOT) */
    PROVIDEO_E_STORAGE_FULL = -6,         /* the capture reached the end of the reserve: the
                                             frame was refused, the capture stays open */
    PROVIDEO_E_OVERRUN = -7,              /* every buffer in flight, the overrun policy gave up:
                                             the frame was refused, the capture stays open */
    PROVIDEO_E_DESTINATION_EXISTS = -8,   /* never overwritten */
    PROVIDEO_E_INVALID_DESTINATION = -9,  /* its directory is missing or not writable */
    PROVIDEO_E_PERMISSION_DENIED = -10,   /* EACCES/EPERM: the message names the group */
    PROVIDEO_E_CORRUPT_STATE = -11,       /* pool.json unreadable or from a newer version */
    PROVIDEO_E_INVALID_ARGUMENT = -12,    /* a bad size, offset, option or path */
    PROVIDEO_E_IO = -13,                  /* a read, write or flush failed (EIO, EROFS, …) */
    PROVIDEO_E_CAPTURE_CLOSED = -14,      /* the capture already finished, was cancelled, or failed */
    PROVIDEO_E_INVARIANT_VIOLATED = -15,  /* a defect in the library: the capture stopped */
    PROVIDEO_E_INVALID_HANDLE = -16,      /* NULL, closed, forged or wrong-kind handle */
    PROVIDEO_E_NULL_POINTER = -17,        /* a required pointer argument was NULL */
    PROVIDEO_E_INTERNAL = -18,            /* an unexpected error inside the library */
    PROVIDEO_E_BANDWIDTH_EXCEEDED = -19   /* the running captures and this one exceed the
                                             pool's admissible bandwidth: the message has the
                                             numbers */
} provideo_code;

/* Why a pool cannot start a capture now (bit flags of provideo_pool_status.busy_reasons). */
enum {
    PROVIDEO_BUSY_CAPTURING = 1 << 0,
    PROVIDEO_BUSY_REPLENISHING = 1 << 1,
    PROVIDEO_BUSY_ADJUSTING_CAPACITY = 1 << 2
};

/* What append does when every capture buffer is in flight (the disk is behind). */
enum {
    PROVIDEO_OVERRUN_WAIT = 0, /* wait up to overrun_wait_ns, then PROVIDEO_E_OVERRUN */
    PROVIDEO_OVERRUN_FAIL = 1  /* PROVIDEO_E_OVERRUN at once: the recorder drops the frame */
};

/* When a recording whose destination is on another filesystem than the pool is copied there
 * (Docs/LANDING.md). A destination on the pool's filesystem is always a rename in finish. */
enum {
    PROVIDEO_LANDING_AUTOMATIC = 0,  /* in the background for network and FUSE filesystems
                                        (GlusterFS, CephFS, NFS, SMB), in finish elsewhere */
    PROVIDEO_LANDING_FINISH = 1,     /* in provideo_capture_finish, which returns once the copy
                                        is verified and published */
    PROVIDEO_LANDING_BACKGROUND = 2  /* finish keeps the recording durable in the pool (its
                                        path there is returned); `provideo land` copies it */
};

/* Caller-owned error report; see "Errors" above. */
typedef struct provideo_error {
    int code;          /* a provideo_code */
    int sys_errno;     /* errno of the failed system call, 0 if none */
    char message[512]; /* NUL-terminated, UTF-8, truncated to fit */
} provideo_error;

typedef struct provideo_pool provideo_pool;
typedef struct provideo_capture provideo_capture;

typedef struct provideo_pool_status {
    int64_t initial_capacity;   /* bytes the administrator reserved; 0 if none */
    int64_t remaining_capacity; /* bytes captures can still use (live, every process) */
    uint32_t busy_reasons;      /* PROVIDEO_BUSY_* bits; 0 when idle */
    uint32_t memory_alignment;  /* direct I/O alignment of buffer addresses, bytes */
    uint32_t offset_alignment;  /* direct I/O alignment of file offsets and lengths, bytes */
    uint32_t reserved;          /* 0 */
} provideo_pool_status;

typedef struct provideo_capture_options {
    int64_t bitrate;                 /* expected bit/s; sizes the default buffers (> 0) */
    int64_t buffer_budget;           /* bytes of aligned buffers, allocated at start;
                                        0: three seconds at bitrate, 32 MiB … 1 GiB */
    uint64_t durability_interval_ns; /* how often the committed length is made durable;
                                        0 commits after every frame */
    int32_t overrun_policy;          /* PROVIDEO_OVERRUN_WAIT or PROVIDEO_OVERRUN_FAIL */
    uint32_t landing;                /* PROVIDEO_LANDING_AUTOMATIC, _FINISH or _BACKGROUND */
    uint64_t overrun_wait_ns;        /* for PROVIDEO_OVERRUN_WAIT; at most 30 s */
} provideo_capture_options;

/* Options of provideo_pool_create (since 1.1). Fill with provideo_pool_create_options_init,
 * then change fields: the library reads only the first `size` bytes, so a program built
 * against this header keeps working with a library whose options have grown. */
typedef struct provideo_pool_create_options {
    uint32_t size;              /* sizeof(provideo_pool_create_options); set by _init */
    uint32_t zero_fill;         /* 1: also write zeros over the reserve once (slow); default 0 */
    int32_t max_captures;       /* how many captures may run at once; 0 (default): no limit */
    uint32_t measure_bandwidth; /* 1 (default): when `bandwidth` is 0, measure the durable write
                                   bandwidth once the pool is made (20 s to 2 min of writes over
                                   the reserve) and admit captures against it, as
                                   `provideo create`; 0: no admission */
    int64_t bandwidth;          /* bit/s captures are admitted against; 0 (default): none given */
    const char *group;          /* the group whose members may use the pool (a name or a number);
                                   NULL (default): the caller's group */
} provideo_pool_create_options;

/* What provideo_pool_measure_bandwidth found (since 1.1). Rates in bits per second. */
typedef struct provideo_bandwidth {
    int64_t sustained;  /* the rate the device sustained: what captures are now admitted against */
    int64_t burst;      /* the first second's rate: the device's write cache */
    int64_t bytes;      /* bytes written to measure */
    double seconds;     /* seconds written, data syncs included */
    uint32_t settled;   /* 1 when two 10-s windows agreed within 10 %; 0 when the pool was too
                           small or the time ran out (the figure is the last window's) */
    uint32_t reserved;  /* 0 */
} provideo_bandwidth;

typedef struct provideo_replenish_result {
    int64_t added;              /* bytes added to the reserve */
    int64_t missing;            /* bytes still missing to reach initial_capacity */
    int64_t remaining_capacity; /* bytes, after the replenish */
} provideo_replenish_result;

typedef struct provideo_capture_statistics {
    int64_t length;                      /* bytes appended: the recording's length */
    int64_t committed_length;            /* bytes a crash cannot lose */
    int64_t remaining_capacity;          /* bytes the recording can still grow by */
    int64_t bytes;                       /* bytes accepted by append */
    int64_t frames;                      /* appends accepted */
    int64_t write_completions;
    int64_t short_writes_retried;
    int64_t overruns;                    /* appends that found every buffer in flight */
    int64_t overrun_failures;            /* appends refused with PROVIDEO_E_OVERRUN */
    int64_t patches;                     /* provideo_capture_write_at calls that patched */
    int64_t commits;                     /* durability commits completed */
    uint64_t append_latency_p50_ns;
    uint64_t append_latency_p99_ns;
    uint64_t append_latency_max_ns;
    char engine[16];                     /* "io_uring" or "pwrite", NUL-terminated */
} provideo_capture_statistics;

typedef struct provideo_recording {
    char path[4096]; /* where the recording is: the destination, or a place in the pool */
    int64_t length;  /* bytes */
} provideo_recording;

/* Fills one piece of an in-place frame: write all `size` bytes at `piece` (the capture's own
 * buffer; not aligned in general; do not keep the pointer). `offset` is the piece's position
 * in the frame. Pieces come in order and together make the whole frame. Cannot fail: produce
 * the frame first if producing can fail. */
typedef void (*provideo_fill_fn)(void *context, void *piece, size_t size, size_t offset);

/* A static, NUL-terminated English description of a provideo_code ("unknown error code" for
 * anything else). Never NULL, never freed. */
const char *provideo_strerror(int code);

/* The version of this header: a program built against it can check what it needs at compile
 * time; provideo_version() says what it runs against (the same numbers, "MAJOR.MINOR.PATCH",
 * for the library this header came with). */
#define PROVIDEO_VERSION_MAJOR 1
#define PROVIDEO_VERSION_MINOR 1
#define PROVIDEO_VERSION_PATCH 0

/* The header's version as one integer, MAJOR * 10000 + MINOR * 100 + PATCH (10100 for 1.1.0),
 * for `#if PROVIDEO_VERSION >= 10100`; and PROVIDEO_CHECK_VERSION(1, 1, 0), true when the
 * header is that version or newer (GLib's GLIB_CHECK_VERSION, as a compile-time test). */
#define PROVIDEO_VERSION (PROVIDEO_VERSION_MAJOR * 10000 + PROVIDEO_VERSION_MINOR * 100 + PROVIDEO_VERSION_PATCH)
#define PROVIDEO_CHECK_VERSION(major, minor, patch) (PROVIDEO_VERSION >= (major) * 10000 + (minor) * 100 + (patch))

/* The library version, e.g. "1.1.0"; static. */
const char *provideo_version(void);

/* Whether the filesystem and kernel at directory `dir` can host a pool (Apple's
 * `isSupported`): direct I/O really bypasses the page cache there and fallocate works. It
 * proves it: writes and flushes a 1 MiB probe file in `dir` with O_DIRECT (removed again) and
 * asks the kernel (mincore) how much of it was cached, so it needs write permission in `dir`
 * and takes a disk flush; check once before creating a pool, not per capture.
 * Returns 1 when it can; 0 when it cannot, with the reason in `reason` (e.g. tmpfs keeps
 * every file in memory, the filesystem refuses O_DIRECT, `dir` is missing or not writable):
 * NUL-terminated UTF-8, cut at a character boundary to at most len - 1 bytes; `reason` may be
 * NULL or `len` 0 (then nothing is written), and it is the empty string on 1.
 * PROVIDEO_E_NULL_POINTER when `dir` is NULL. */
int provideo_is_supported(const char *dir, char *reason, size_t len);

/* ---- Pools ------------------------------------------------------------------------------ */

/* Opens the pool at `path` (NULL: $PROVIDEO_POOL, else /var/lib/provideo) and repairs what a
 * killed process left. *out receives the handle (NULL on failure). May block while it salvages
 * a dead recorder's capture (a flush and a rename; a copy when its destination is on another
 * filesystem). Errors: POOL_NOT_FOUND, PERMISSION_DENIED, CORRUPT_STATE, INVALID_ARGUMENT. */
int provideo_pool_open(const char *path, provideo_pool **out, provideo_error *err);

/* Releases the handle. Captures started from it stay valid. */
int provideo_pool_close(provideo_pool *pool, provideo_error *err);

/* Capacity, busy reasons and alignment, as every process sees them now. Reads small files;
 * does not wait for captures. C has no status subscription: poll this (cheap: a fraction of a
 * millisecond, Docs/C-LIBRARY.md); a running capture publishes its progress at most every
 * 250 ms, so polling faster shows nothing new. */
int provideo_pool_get_status(provideo_pool *pool, provideo_pool_status *out, provideo_error *err);

/* Restores the reserve toward initial_capacity, best effort (fallocate: blocks for as long
 * as the filesystem takes). `out` may be NULL. Errors: BUSY, NOT_ENOUGH_SPACE (nothing added). */
int provideo_pool_replenish(provideo_pool *pool, provideo_replenish_result *out, provideo_error *err);

/* Fills *options with the defaults (since 1.1): no zero-fill, no capture limit, the bandwidth
 * measured, the caller's group, and `size`. */
void provideo_pool_create_options_init(provideo_pool_create_options *options);

/* Creates a pool at `path` (created if missing; its parent must exist) with a reserve of
 * `capacity` bytes (rounded up to the allocation unit), as `provideo create` (since 1.1).
 * `options` may be NULL (the defaults). *out receives the open handle (NULL on failure).
 * Blocks for the fallocate (seconds for terabytes), the zero-fill if asked (minutes), and the
 * bandwidth measurement unless skipped (20 s to 2 min; a reserve under 4 MiB is not measured
 * and admits every capture). Errors: POOL_EXISTS, UNSUPPORTED (the message says why),
 * INVALID_ARGUMENT (a capacity <= 0 or too large, max_captures < 0, bandwidth < 0, a size
 * field of 0, an unknown group), PERMISSION_DENIED, NOT_ENOUGH_SPACE, IO (a measurement that
 * failed after the pool was made: the pool is there without a bandwidth; open it and measure
 * again). */
int provideo_pool_create(const char *path, int64_t capacity, const provideo_pool_create_options *options,
                         provideo_pool **out, provideo_error *err);

/* Changes the pool's capacity to `capacity` bytes (rounded up to the allocation unit), as
 * `provideo resize` (since 1.1): a grow fallocates, a shrink cuts the reserve. *resized (may be
 * NULL) receives the new capacity. Blocks for the fallocate. Errors: BUSY (a capture, a
 * replenish or a measurement runs: no capture starts meanwhile), NOT_ENOUGH_SPACE (nothing
 * changed; the message says how much was missing), INVALID_ARGUMENT (a capacity <= 0 or too
 * large). */
int provideo_pool_resize(provideo_pool *pool, int64_t capacity, int64_t *resized, provideo_error *err);

/* Measures the pool's durable write bandwidth by writing its own reserve at a capture's
 * cadence, and admits captures against what it sustained, as `provideo measure-bandwidth`
 * (since 1.1). `out` may be NULL. Blocks 20 s to 2 min. Errors: BUSY (captures run),
 * NOT_ENOUGH_SPACE (the reserve is under one 4 MiB write: nothing recorded), IO. */
int provideo_pool_measure_bandwidth(provideo_pool *pool, provideo_bandwidth *out, provideo_error *err);

/* ---- Captures --------------------------------------------------------------------------- */

/* Fills *options with the defaults: 880 Mbit/s, default buffer budget, durability 1 s,
 * overrun policy WAIT for 2 s. */
void provideo_capture_options_init(provideo_capture_options *options);

/* Starts a capture that moves to `destination` on finish (checked now: its directory must
 * exist and be writable, the file must not exist). `options` NULL: the defaults. Allocates
 * every buffer now. Blocks for a few file creations and directory flushes.
 * Several captures may run in one pool at once, from one process or many.
 * Errors: BUSY (a resize, the pool's maximum of captures running, e.g. a pool created with
 * --max-captures 1, or another capture or a take waiting to land has this destination),
 * BANDWIDTH_EXCEEDED (the running captures' bitrates and this one's exceed
 * the pool's admissible bandwidth), NOT_ENOUGH_SPACE (no capacity left), DESTINATION_EXISTS,
 * INVALID_DESTINATION, INVALID_ARGUMENT, IO. */
int provideo_capture_start(provideo_pool *pool, const char *destination, const provideo_capture_options *options,
                           provideo_capture **out, provideo_error *err);

/* Appends one frame of `size` bytes (copied; `data` may be reused on return; NULL only when
 * size is 0). Returns without waiting for the disk while a buffer is free, else waits per the
 * overrun policy. A frame is accepted whole or not at all. Errors: STORAGE_FULL and OVERRUN
 * (the frame was refused, the capture stays open), the capture's first I/O error, CAPTURE_CLOSED. */
int provideo_capture_append(provideo_capture *capture, const void *data, size_t size, provideo_error *err);

/* Appends one frame of `size` bytes that `fill` writes straight into the capture's buffers
 * (zero copy: an encoder or a capture card writes where it is told). `fill` is called once per
 * piece (a piece ends at a buffer boundary, at most the write size, 4 MiB by default) and never
 * for a refused frame. Blocking and errors as provideo_capture_append. */
int provideo_capture_append_in_place(provideo_capture *capture, size_t size, provideo_fill_fn fill, void *context,
                                     provideo_error *err);

/* In-place append in two steps, for a producer that learns how much it wrote only after
 * writing (an encoder, a capture card): begin hands out `*piece`, up to `wanted` contiguous
 * bytes of the capture's own buffer (*size may be less: the buffer or the reserve ends sooner;
 * never 0 on success), the producer writes there, and commit counts the first `size` bytes
 * (0 … *size) as appended. `end_of_frame` non-zero marks the end of a frame at that point
 * (durability commits end on frame boundaries); a frame longer than one piece is several
 * begin/commit pairs, the last with end_of_frame. Zero copy.
 *
 * Ownership: *piece belongs to the capture; it is valid until the commit (or cancel/close)
 * and must not be used after. While a piece is out, every other call on the capture except
 * begin (which hands out the same room again), commit, get_statistics, cancel and close fails
 * with INVALID_ARGUMENT; commit 0 bytes to abandon the piece.
 * begin blocks only when no buffer is free (per the overrun policy); errors: STORAGE_FULL (the
 * reserve is used up), OVERRUN, INVALID_ARGUMENT (wanted 0), the capture's first error. */
int provideo_capture_append_begin(provideo_capture *capture, size_t wanted, void **piece, size_t *size,
                                  provideo_error *err);
int provideo_capture_append_commit(provideo_capture *capture, size_t size, int end_of_frame, provideo_error *err);

/* Rewrites `size` bytes at `offset` (a muxer patching its header); the range must be inside
 * what was appended. Waits for writes of that range in flight (bounded by the stall limit).
 * Errors: INVALID_ARGUMENT (outside [0, length)), the capture's first error, CAPTURE_CLOSED. */
int provideo_capture_write_at(provideo_capture *capture, int64_t offset, const void *data, size_t size,
                              provideo_error *err);

/* Reads `size` bytes of the recording back from `offset` into `buffer` (a muxer moving its
 * index to the front: FFmpeg's -movflags +faststart rereads what it wrote). *out_size receives
 * the bytes read: `size`, fewer at the end of the recording, 0 at or past it. The bytes are
 * what was appended and patched so far (those still in memory come from the capture's
 * buffer). Waits for writes in flight over the range, then reads the disk (bounded by the
 * stall limit). Errors: INVALID_ARGUMENT (a negative offset), NULL_POINTER, IO, the capture's
 * first error, CAPTURE_CLOSED (after finish or cancel: read the file). */
int provideo_capture_read(provideo_capture *capture, int64_t offset, void *buffer, size_t size, size_t *out_size,
                          provideo_error *err);

/* Processes finished writes and starts a due durability commit, without waiting. Call it at
 * least every durability interval (and every second) while the recorder waits for input. */
int provideo_capture_poll(provideo_capture *capture, provideo_error *err);

/* Writes the last bytes, flushes, moves the recording to its destination (a rename on the
 * pool's filesystem, else a verified copy: proportional to the length), returns the unused
 * reserve. Blocks until all that is done. `out` may be NULL. On DESTINATION_EXISTS the
 * recording is kept in the pool (`provideo list`). The handle stays open: close it. */
int provideo_capture_finish(provideo_capture *capture, provideo_recording *out, provideo_error *err);

/* Discards the recording and returns its capacity, once every write completed or was
 * cancelled (bounded by the stall limit). The handle stays open: close it. */
int provideo_capture_cancel(provideo_capture *capture, provideo_error *err);

/* What the capture did so far; cheap, no I/O. Works after finish and cancel too. */
int provideo_capture_get_statistics(provideo_capture *capture, provideo_capture_statistics *out,
                                    provideo_error *err);

/* Releases the handle; a capture neither finished nor cancelled is cancelled first (its
 * cancel error, if any, is returned, and the handle is released anyway). */
int provideo_capture_close(provideo_capture *capture, provideo_error *err);

#ifdef __cplusplus
}
#endif

#endif /* PROVIDEO_H */
