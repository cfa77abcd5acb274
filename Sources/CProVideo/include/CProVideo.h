// Thin C layer under ProVideoStorage. Every function returns 0 (or a count) on success and
// -errno on failure, like liburing, so Swift turns the result into a typed error in one place.
// The header includes no liburing or kernel header: those stay in the .c file, which keeps
// Swift's Glibc module out of liburing's _GNU_SOURCE redefinitions.
#ifndef CPROVIDEO_H
#define CPROVIDEO_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <pthread.h>

// MARK: Files

/// open(2) with O_DIRECT added to `flags`.
int pv_open_direct(const char *path, int flags, mode_t mode);
/// fallocate(2). `keep_size` adds FALLOC_FL_KEEP_SIZE.
int pv_fallocate(int fd, int keep_size, int64_t offset, int64_t length);
/// XFS_IOC_EXCHANGE_RANGE on `fd`: swaps the extents of `fd`'s [offset, offset + length) with
/// `from_fd`'s [from_offset, from_offset + length) (XFS made with `-i exchange=1`, Linux 6.10+;
/// elsewhere -ENOTTY or -EOPNOTSUPP). Both ranges must lie within each file's size. 0 or -errno.
int pv_exchange_range(int fd, int from_fd, int64_t from_offset, int64_t offset, int64_t length);
/// renameat2(2) with RENAME_NOREPLACE.
int pv_rename_noreplace(const char *from, const char *to);
/// linkat(2) with AT_SYMLINK_FOLLOW: a second name for `from`, so `/proc/self/fd/N` names the
/// open file itself; -EEXIST when `to` exists (it is never replaced).
int pv_link(const char *from, const char *to);
/// ioprio_set(2) on the calling thread (IOPRIO_WHO_PROCESS, 0 = this thread) with the idle
/// class: its I/O is served only when the disk has nothing else to do (BFQ, mq-deadline).
int pv_ioprio_set_idle(void);
/// sched_setscheduler(2) SCHED_IDLE on the calling thread: it runs only when a CPU has nothing
/// else to run.
int pv_sched_idle(void);
/// pthread_mutex_clocklock(3) on CLOCK_MONOTONIC until `deadline` (nanoseconds): 0 once held,
/// ETIMEDOUT when the deadline passed first (glibc 2.30+; pthread_mutex_timedlock(3) waits on
/// the wall clock, which a clock step moves).
int pv_mutex_lock_until(pthread_mutex_t *mutex, uint64_t deadline);
/// eventfd(2) with EFD_CLOEXEC | EFD_NONBLOCK and a count of 0: a descriptor, or -errno.
int pv_eventfd(void);
/// posix_fadvise(2) POSIX_FADV_DONTNEED on [offset, offset+length): drops clean cached pages.
int pv_fadvise_dontneed(int fd, int64_t offset, int64_t length);
/// copy_file_range(2) between explicit offsets; returns bytes copied or -errno.
int64_t pv_copy_file_range(int fd_in, int64_t offset_in, int fd_out, int64_t offset_out, uint64_t length);
/// Sets FS_NOCOW_FL (like `chattr +C`) through FS_IOC_SETFLAGS. -ENOTTY/-EOPNOTSUPP where
/// the filesystem has no such flag.
int pv_set_nocow(int fd);
/// 1 when FS_NOCOW_FL is set, 0 when clear, -errno when the flag cannot be read.
int pv_get_nocow(int fd);

/// What statx(2) reports for direct I/O and allocation.
typedef struct {
    uint32_t dio_mem_align;     // STATX_DIOALIGN: 0 when the filesystem does not report it
    uint32_t dio_offset_align;
    uint32_t block_size;        // stx_blksize
    uint64_t size;              // stx_size
    uint64_t allocated_bytes;   // stx_blocks * 512
    uint32_t dev_major;
    uint32_t dev_minor;
    uint64_t mount_id;          // STATX_MNT_ID: field 1 of /proc/self/mountinfo
    uint32_t rdev_major;        // for a block device node: the device it stands for
    uint32_t rdev_minor;
    uint32_t mode;
    uint32_t uid;
    uint32_t gid;
    uint64_t ino;               // with dev_major/dev_minor: which file this is
    uint32_t nlink;             // hard links to it
} pv_file_facts;
int pv_statx(const char *path, pv_file_facts *out);
/// statx(2) on an open file (AT_EMPTY_PATH).
int pv_fstatx(int fd, pv_file_facts *out);
/// statx(2) on `name` in `dirfd` without following a symbolic link (AT_SYMLINK_NOFOLLOW).
int pv_statx_at(int dirfd, const char *name, pv_file_facts *out);

/// O_DIRECT and O_PATH, which need _GNU_SOURCE and so do not reach Swift from <fcntl.h>.
extern const int pv_O_DIRECT;
/// O_TMPFILE: an unnamed regular file in the directory opened, gone when closed.
extern const int pv_O_TMPFILE;
extern const int pv_O_PATH;
/// openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
/// RESOLVE_NO_XDEV: `path` stays below `dirfd`, on its mount, and no component may be a
/// symbolic link (ELOOP, EXDEV otherwise). O_CLOEXEC is added. fd or -errno.
int pv_open_beneath(int dirfd, const char *path, int flags, mode_t mode);
/// renameat(2).
int pv_renameat(int from_dir, const char *from, int to_dir, const char *to);
/// unlinkat(2) (`directory`: AT_REMOVEDIR); mkdirat(2).
int pv_unlinkat(int dirfd, const char *name, int directory);
int pv_mkdirat(int dirfd, const char *name, mode_t mode);

/// The file's extents (FIEMAP ioctl): bytes mapped at offsets below `below` and the end of
/// the last extent (including extents past end of file, e.g. from FALLOC_FL_KEEP_SIZE). Unlike
/// st_blocks these exclude metadata such as ext4's extent index blocks.
int pv_extents(int fd, uint64_t below, uint64_t *mapped_bytes, uint64_t *end_of_last);
/// FIEMAP of [from, to): `start` is where the run of unwritten, unshared extents that ends at `to`
/// begins (`to` when the range ends written or in a hole): bytes past it were never written.
int pv_unwritten_tail(int fd, uint64_t from, uint64_t to, uint64_t *start);

/// statfs(2) f_type, free bytes for unprivileged users (f_bavail * f_bsize), total bytes.
int pv_statfs(const char *path, int64_t *fs_type, uint64_t *available_bytes, uint64_t *total_bytes);

/// Number of the `length` bytes at `offset` of `fd` that sit in the page cache (mmap + mincore).
int64_t pv_cached_bytes(int fd, int64_t offset, int64_t length);

// MARK: OFD locks (fcntl F_OFD_SETLK / F_OFD_GETLK, Linux 3.15)

/// Takes a write lock on [start, start+length). `wait` blocks (F_OFD_SETLKW).
/// -EAGAIN when another open file description holds a conflicting lock and `wait` is 0.
int pv_ofd_lock(int fd, int64_t start, int64_t length, int wait);
// A shared (read) OFD lock: many open file descriptions may hold one range at once; it
// conflicts only with an exclusive lock (and F_OFD_GETLK with F_WRLCK sees it).
int pv_ofd_lock_shared(int fd, int64_t start, int64_t length);
int pv_ofd_unlock(int fd, int64_t start, int64_t length);
/// 1 when another open file description holds a lock on the range, 0 when it is free.
int pv_ofd_is_locked(int fd, int64_t start, int64_t length);

/// Sets the calling thread's filesystem identity (fsuid, fsgid, supplementary groups) and no
/// other thread's: raw setfsuid(2), setfsgid(2) and setgroups(2) system calls, since glibc's
/// setgroups changes every thread of the process. Returns 0, or -errno (EPERM: not root).
int pv_thread_fs_identity(uint32_t uid, uint32_t gid, const uint32_t *groups, int count);

// MARK: Device topology (libblkid)

typedef struct {
    uint64_t logical_sector_size;
    uint64_t physical_sector_size;
    uint64_t minimum_io_size;
    uint64_t optimal_io_size;
} pv_topology;
/// Reads the topology of the block device at `device_path`.
int pv_device_topology(const char *device_path, pv_topology *out);

// MARK: SHA-256 (libcrypto)

typedef struct pv_sha256 pv_sha256;
/// NULL when libcrypto cannot be initialised or a context allocated.
pv_sha256 *pv_sha256_new(void);
void pv_sha256_update(pv_sha256 *ctx, const void *data, size_t length);
/// Writes 32 bytes to `digest` and frees `ctx`.
void pv_sha256_finish(pv_sha256 *ctx, uint8_t *digest);

// MARK: io_uring (liburing)

typedef struct pv_ring pv_ring;
/// io_uring_queue_init with `entries` SQEs. NULL and `*error` = -errno when setup fails
/// (EPERM: kernel.io_uring_disabled, ENOSYS/EPERM: seccomp, ENOMEM: memlock).
pv_ring *pv_ring_create(unsigned entries, int *error);
void pv_ring_destroy(pv_ring *ring);
/// io_uring_register_buffers; the buffers are then addressed by index in pv_ring_prep_write.
int pv_ring_register_buffers(pv_ring *ring, void *const *bases, const size_t *lengths, unsigned count);
/// Queues a write. `buffer_index` >= 0 uses IORING_OP_WRITE_FIXED on a registered buffer.
int pv_ring_prep_write(pv_ring *ring, int fd, const void *buffer, unsigned length, int64_t offset,
                       int buffer_index, uint64_t user_data);
/// Queues IORING_OP_FSYNC with IORING_FSYNC_DATASYNC (fdatasync).
int pv_ring_prep_fdatasync(pv_ring *ring, int fd, uint64_t user_data);
/// Starts the ring's io-wq worker: one IORING_OP_NOP with IOSQE_ASYNC, submitted and reaped.
/// The kernel creates the worker in the submitting thread (task work on return from
/// io_uring_enter), measured at 5.2 ms here: paid at capture start, not on the first frame.
/// 0, or -errno.
int pv_ring_start_worker(pv_ring *ring);
/// Queues IORING_OP_ASYNC_CANCEL with IORING_ASYNC_CANCEL_ANY: every request not yet running
/// completes with -ECANCELED; a write already issued to the device completes as usual.
int pv_ring_prep_cancel_all(pv_ring *ring, uint64_t user_data);
/// io_uring_submit: number of SQEs submitted or -errno.
int pv_ring_submit(pv_ring *ring);
/// Waits for one CQE (at most `timeout_ns`, negative = forever), consumes it.
/// Returns 1 with the completion, 0 on timeout, -errno on failure.
int pv_ring_wait(pv_ring *ring, int64_t timeout_ns, uint64_t *user_data, int32_t *result);
/// Takes one CQE if one is ready. 1 with the completion, 0 when none is ready.
int pv_ring_peek(pv_ring *ring, uint64_t *user_data, int32_t *result);

// MARK: Threads

/// pthread_setname_np(3) on the calling thread: `name` cut to the kernel's 15 bytes.
int pv_name_this_thread(const char *name);

// MARK: Signals

/// Installs SIGINT, SIGTERM and SIGHUP (a dropped SSH session) handlers that only set a flag, and
/// unblocks them: a recorder then finishes its capture cleanly. `restart` 0: no SA_RESTART, so a
/// blocking read returns EINTR (`provideo record`); 1: SA_RESTART (callers whose reads must not
/// see EINTR, such as Foundation's pipe reads).
int pv_install_stop_signals(int restart);
/// 1 once SIGINT or SIGTERM arrived.
int pv_stop_requested(void);

#endif
