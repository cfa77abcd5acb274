#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/fiemap.h>
#include <linux/ioprio.h>
#include <stdio.h>
#include <liburing.h>
#include <blkid/blkid.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "CProVideo.h"

#define NEG_ERRNO(expr) ((expr) < 0 ? -errno : 0)

int pv_open_direct(const char *path, int flags, mode_t mode) {
    int fd = open(path, flags | O_DIRECT | O_CLOEXEC, mode);
    return fd < 0 ? -errno : fd;
}

int pv_fallocate(int fd, int keep_size, int64_t offset, int64_t length) {
    return NEG_ERRNO(fallocate(fd, keep_size ? FALLOC_FL_KEEP_SIZE : 0, offset, length));
}

/* XFS_IOC_EXCHANGE_RANGE (Linux 6.10+, fs/xfs/libxfs/xfs_fs.h), declared here because
 * Debian 12's headers predate it. */
struct pv_xfs_exchange_range {
    int32_t file1_fd;
    uint32_t pad;
    uint64_t file1_offset;
    uint64_t file2_offset;
    uint64_t length;
    uint64_t flags;
};
#define PV_XFS_IOC_EXCHANGE_RANGE _IOW('X', 129, struct pv_xfs_exchange_range)

int pv_exchange_range(int fd, int from_fd, int64_t from_offset, int64_t offset, int64_t length) {
    if (from_offset < 0 || offset < 0 || length < 0) return -EINVAL;
    struct pv_xfs_exchange_range args = {
        .file1_fd = from_fd, .file1_offset = (uint64_t)from_offset, .file2_offset = (uint64_t)offset,
        .length = (uint64_t)length,
    };
    return NEG_ERRNO(ioctl(fd, PV_XFS_IOC_EXCHANGE_RANGE, &args));
}

int pv_rename_noreplace(const char *from, const char *to) {
    return NEG_ERRNO(renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE));
}

int pv_link(const char *from, const char *to) {
    return NEG_ERRNO(linkat(AT_FDCWD, from, AT_FDCWD, to, AT_SYMLINK_FOLLOW));
}

int pv_ioprio_set_idle(void) {
    return NEG_ERRNO(syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0)));
}

int pv_sched_idle(void) {
    struct sched_param param = { .sched_priority = 0 };
    return NEG_ERRNO(sched_setscheduler(0, SCHED_IDLE, &param));
}

int pv_mutex_lock_until(pthread_mutex_t *mutex, uint64_t deadline) {
    struct timespec at = { .tv_sec = (time_t)(deadline / 1000000000u), .tv_nsec = (long)(deadline % 1000000000u) };
    return pthread_mutex_clocklock(mutex, CLOCK_MONOTONIC, &at);
}

int pv_eventfd(void) {
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return fd >= 0 ? fd : -errno;
}

int pv_fadvise_dontneed(int fd, int64_t offset, int64_t length) {
    return -posix_fadvise(fd, offset, length, POSIX_FADV_DONTNEED);
}

int64_t pv_copy_file_range(int fd_in, int64_t offset_in, int fd_out, int64_t offset_out, uint64_t length) {
    loff_t in = offset_in, out = offset_out;
    ssize_t copied = copy_file_range(fd_in, &in, fd_out, &out, length, 0);
    return copied < 0 ? -errno : copied;
}

int pv_set_nocow(int fd) {
    int flags = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) return -errno;
    flags |= FS_NOCOW_FL;
    return NEG_ERRNO(ioctl(fd, FS_IOC_SETFLAGS, &flags));
}

int pv_get_nocow(int fd) {
    int flags = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) return -errno;
    return (flags & FS_NOCOW_FL) != 0;
}

static int statx_facts(int dirfd, const char *path, int flags, pv_file_facts *out) {
    struct statx stx;
    memset(&stx, 0, sizeof stx);
    if (statx(dirfd, path, flags, STATX_BASIC_STATS | STATX_DIOALIGN | STATX_MNT_ID, &stx) < 0) return -errno;
    memset(out, 0, sizeof *out);
    if (stx.stx_mask & STATX_DIOALIGN) {
        out->dio_mem_align = stx.stx_dio_mem_align;
        out->dio_offset_align = stx.stx_dio_offset_align;
    }
    out->block_size = stx.stx_blksize;
    out->size = stx.stx_size;
    out->allocated_bytes = (uint64_t)stx.stx_blocks * 512;
    out->dev_major = stx.stx_dev_major;
    out->dev_minor = stx.stx_dev_minor;
    out->mount_id = (stx.stx_mask & STATX_MNT_ID) ? stx.stx_mnt_id : 0;
    out->rdev_major = stx.stx_rdev_major;
    out->rdev_minor = stx.stx_rdev_minor;
    out->mode = stx.stx_mode;
    out->uid = stx.stx_uid;
    out->gid = stx.stx_gid;
    out->ino = stx.stx_ino;
    out->nlink = stx.stx_nlink;
    return 0;
}

int pv_statx(const char *path, pv_file_facts *out) { return statx_facts(AT_FDCWD, path, 0, out); }

int pv_fstatx(int fd, pv_file_facts *out) { return statx_facts(fd, "", AT_EMPTY_PATH, out); }

/* One FS_IOC_FIEMAP of [start, start + length), data flushed first, into `map` (`size` bytes,
   room for `count` extents); 0 or -errno. */
static int fiemap_query(int fd, struct fiemap *map, size_t size, unsigned count, uint64_t start, uint64_t length) {
    memset(map, 0, size);
    map->fm_start = start;
    map->fm_length = length;
    map->fm_flags = FIEMAP_FLAG_SYNC;
    map->fm_extent_count = count;
    return ioctl(fd, FS_IOC_FIEMAP, map) < 0 ? -errno : 0;
}

int pv_extents(int fd, uint64_t below, uint64_t *mapped_bytes, uint64_t *end_of_last) {
    enum { batch = 128 };
    size_t size = sizeof(struct fiemap) + batch * sizeof(struct fiemap_extent);
    struct fiemap *map = calloc(1, size);
    if (!map) return -ENOMEM;
    uint64_t start = 0, mapped = 0, end = 0;
    for (;;) {
        int rc = fiemap_query(fd, map, size, batch, start, FIEMAP_MAX_OFFSET - start);
        if (rc < 0) { free(map); return rc; }
        if (map->fm_mapped_extents == 0) break;
        int last = 0;
        for (unsigned i = 0; i < map->fm_mapped_extents; i++) {
            struct fiemap_extent *x = &map->fm_extents[i];
            uint64_t x_end = x->fe_logical + x->fe_length;
            if (x->fe_logical < below) mapped += (x_end < below ? x_end : below) - x->fe_logical;
            if (x_end > end) end = x_end;
            if (x->fe_flags & FIEMAP_EXTENT_LAST) last = 1;
        }
        if (last) break;
        start = map->fm_extents[map->fm_mapped_extents - 1].fe_logical
              + map->fm_extents[map->fm_mapped_extents - 1].fe_length;
    }
    free(map);
    *mapped_bytes = mapped;
    *end_of_last = end;
    return 0;
}

int pv_unwritten_tail(int fd, uint64_t from, uint64_t to, uint64_t *start) {
    enum { batch = 128 };
    size_t size = sizeof(struct fiemap) + batch * sizeof(struct fiemap_extent);
    struct fiemap *map = calloc(1, size);
    if (!map) return -ENOMEM;
    /* `tail`: where the run of unwritten extents reaching `covered` began. */
    uint64_t tail = from, covered = from, next = from;
    while (next < to) {
        int rc = fiemap_query(fd, map, size, batch, next, to - next);
        if (rc < 0) { free(map); return rc; }
        if (map->fm_mapped_extents == 0) break;
        int last = 0;
        for (unsigned i = 0; i < map->fm_mapped_extents; i++) {
            struct fiemap_extent *x = &map->fm_extents[i];
            uint64_t x_start = x->fe_logical < from ? from : x->fe_logical;
            uint64_t x_end = x->fe_logical + x->fe_length > to ? to : x->fe_logical + x->fe_length;
            if (x_end <= x_start) continue;
            if (x_start > covered) tail = x_start;  /* a hole: nothing before it goes back */
            if (!(x->fe_flags & FIEMAP_EXTENT_UNWRITTEN) || (x->fe_flags & FIEMAP_EXTENT_SHARED)) tail = x_end;
            covered = x_end;
            if (x->fe_flags & FIEMAP_EXTENT_LAST) last = 1;
        }
        uint64_t reached = map->fm_extents[map->fm_mapped_extents - 1].fe_logical
                         + map->fm_extents[map->fm_mapped_extents - 1].fe_length;
        if (last || reached <= next) break;
        next = reached;
    }
    free(map);
    *start = covered < to ? to : tail;
    return 0;
}

int pv_statfs(const char *path, int64_t *fs_type, uint64_t *available_bytes, uint64_t *total_bytes) {
    struct statfs s;
    if (statfs(path, &s) < 0) return -errno;
    *fs_type = (int64_t)s.f_type;
    *available_bytes = (uint64_t)s.f_bavail * (uint64_t)s.f_bsize;
    *total_bytes = (uint64_t)s.f_blocks * (uint64_t)s.f_bsize;
    return 0;
}

int64_t pv_cached_bytes(int fd, int64_t offset, int64_t length) {
    long page = sysconf(_SC_PAGESIZE);
    void *map = mmap(NULL, (size_t)length, PROT_READ, MAP_SHARED, fd, offset);
    if (map == MAP_FAILED) return -errno;
    size_t pages = ((size_t)length + (size_t)page - 1) / (size_t)page;
    unsigned char *vec = calloc(pages, 1);
    if (!vec) { munmap(map, (size_t)length); return -ENOMEM; }
    int64_t cached = 0;
    int rc = mincore(map, (size_t)length, vec);
    if (rc == 0) {
        for (size_t i = 0; i < pages; i++) if (vec[i] & 1) cached += page;
    } else {
        cached = -errno;
    }
    free(vec);
    munmap(map, (size_t)length);
    return cached;
}

static int ofd(int fd, int cmd, short type, int64_t start, int64_t length, struct flock *out) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = length;
    fl.l_pid = 0; // required by F_OFD_* commands
    int rc;
    do { rc = fcntl(fd, cmd, &fl); } while (rc < 0 && errno == EINTR && cmd == F_OFD_SETLKW);
    if (rc < 0) return errno == EACCES ? -EAGAIN : -errno;
    if (out) *out = fl;
    return 0;
}

int pv_ofd_lock(int fd, int64_t start, int64_t length, int wait) {
    return ofd(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, F_WRLCK, start, length, NULL);
}

int pv_ofd_lock_shared(int fd, int64_t start, int64_t length) {
    return ofd(fd, F_OFD_SETLK, F_RDLCK, start, length, NULL);
}

int pv_ofd_unlock(int fd, int64_t start, int64_t length) {
    return ofd(fd, F_OFD_SETLK, F_UNLCK, start, length, NULL);
}

int pv_ofd_is_locked(int fd, int64_t start, int64_t length) {
    struct flock fl;
    int rc = ofd(fd, F_OFD_GETLK, F_WRLCK, start, length, &fl);
    if (rc < 0) return rc;
    return fl.l_type != F_UNLCK;
}

int pv_device_topology(const char *device_path, pv_topology *out) {
    memset(out, 0, sizeof *out);
    blkid_probe pr = blkid_new_probe_from_filename(device_path);
    if (!pr) return errno ? -errno : -ENODEV;
    blkid_topology tp = blkid_probe_get_topology(pr);
    if (!tp) { blkid_free_probe(pr); return -ENODEV; }
    out->logical_sector_size = blkid_topology_get_logical_sector_size(tp);
    out->physical_sector_size = blkid_topology_get_physical_sector_size(tp);
    out->minimum_io_size = blkid_topology_get_minimum_io_size(tp);
    out->optimal_io_size = blkid_topology_get_optimal_io_size(tp);
    blkid_free_probe(pr);
    return 0;
}

struct pv_sha256 { EVP_MD_CTX *ctx; };

/* Before any other use: no exit handler frees libcrypto's state while another thread of the
 * process (a host recorder's, a landing's still ending) uses or frees it (OPENSSL_init_crypto(3),
 * OPENSSL_INIT_NO_ATEXIT; openssl/openssl#6214). The kernel frees it all at exit anyway. */
static pthread_once_t pv_crypto_once = PTHREAD_ONCE_INIT;
static int pv_crypto_ready;
static void pv_crypto_init(void) {
    pv_crypto_ready = OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

pv_sha256 *pv_sha256_new(void) {
    pthread_once(&pv_crypto_once, pv_crypto_init);
    if (!pv_crypto_ready) return NULL;
    pv_sha256 *s = malloc(sizeof *s);
    if (!s) return NULL;
    s->ctx = EVP_MD_CTX_new();
    if (!s->ctx || !EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL)) {
        EVP_MD_CTX_free(s->ctx);
        free(s);
        return NULL;
    }
    return s;
}

void pv_sha256_update(pv_sha256 *s, const void *data, size_t length) {
    EVP_DigestUpdate(s->ctx, data, length);
}

void pv_sha256_finish(pv_sha256 *s, uint8_t *digest) {
    unsigned int n = 0;
    EVP_DigestFinal_ex(s->ctx, digest, &n);
    EVP_MD_CTX_free(s->ctx);
    free(s);
}

struct pv_ring { struct io_uring ring; };

pv_ring *pv_ring_create(unsigned entries, int *error) {
    pv_ring *r = calloc(1, sizeof *r);
    if (!r) { *error = -ENOMEM; return NULL; }
    int rc = io_uring_queue_init(entries, &r->ring, 0);
    if (rc < 0) { free(r); *error = rc; return NULL; }
    *error = 0;
    return r;
}

void pv_ring_destroy(pv_ring *r) {
    if (!r) return;
    io_uring_queue_exit(&r->ring);
    free(r);
}

int pv_ring_register_buffers(pv_ring *r, void *const *bases, const size_t *lengths, unsigned count) {
    struct iovec *iov = calloc(count, sizeof *iov);
    if (!iov) return -ENOMEM;
    for (unsigned i = 0; i < count; i++) { iov[i].iov_base = bases[i]; iov[i].iov_len = lengths[i]; }
    int rc = io_uring_register_buffers(&r->ring, iov, count);
    free(iov);
    return rc;
}

int pv_ring_prep_write(pv_ring *r, int fd, const void *buffer, unsigned length, int64_t offset,
                       int buffer_index, uint64_t user_data) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) return -EBUSY;
    if (buffer_index >= 0)
        io_uring_prep_write_fixed(sqe, fd, buffer, length, (__u64)offset, buffer_index);
    else
        io_uring_prep_write(sqe, fd, buffer, length, (__u64)offset);
    // Without IOSQE_ASYNC the kernel issues an O_DIRECT write inside io_uring_enter, on the
    // recorder's thread, and a busy disk blocks the submit (measured: up to 431 ms under a
    // noisy neighbour). Punting to io-wq keeps submission a queue operation.
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, user_data);
    return 0;
}

int pv_ring_prep_fdatasync(pv_ring *r, int fd, uint64_t user_data) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) return -EBUSY;
    io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, user_data);
    return 0;
}

int pv_ring_start_worker(pv_ring *r) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) return -EBUSY;
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    int rc = pv_ring_submit(r);
    if (rc < 0) return rc;
    struct io_uring_cqe *cqe = NULL;
    do { rc = io_uring_wait_cqe(&r->ring, &cqe); } while (rc == -EINTR);
    if (rc < 0) return rc;
    io_uring_cqe_seen(&r->ring, cqe);
    return 0;
}

int pv_ring_prep_cancel_all(pv_ring *r, uint64_t user_data) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);
    if (!sqe) return -EBUSY;
    io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
    io_uring_sqe_set_data64(sqe, user_data);
    return 0;
}

int pv_ring_submit(pv_ring *r) {
    int rc;
    do { rc = io_uring_submit(&r->ring); } while (rc == -EINTR);
    return rc;
}

static int take(pv_ring *r, struct io_uring_cqe *cqe, uint64_t *user_data, int32_t *result) {
    *user_data = io_uring_cqe_get_data64(cqe);
    *result = cqe->res;
    io_uring_cqe_seen(&r->ring, cqe);
    return 1;
}

int pv_ring_wait(pv_ring *r, int64_t timeout_ns, uint64_t *user_data, int32_t *result) {
    struct io_uring_cqe *cqe = NULL;
    int rc;
    if (timeout_ns < 0) {
        do { rc = io_uring_wait_cqe(&r->ring, &cqe); } while (rc == -EINTR);
    } else {
        struct __kernel_timespec ts = { .tv_sec = timeout_ns / 1000000000, .tv_nsec = timeout_ns % 1000000000 };
        rc = io_uring_wait_cqe_timeout(&r->ring, &cqe, &ts);
        if (rc == -ETIME || rc == -EINTR) return 0;
    }
    if (rc < 0) return rc;
    return take(r, cqe, user_data, result);
}

int pv_ring_peek(pv_ring *r, uint64_t *user_data, int32_t *result) {
    struct io_uring_cqe *cqe = NULL;
    if (io_uring_peek_cqe(&r->ring, &cqe) != 0 || !cqe) return 0;
    return take(r, cqe, user_data, result);
}

static volatile sig_atomic_t stop_requested = 0;

static void on_stop_signal(int signo) { (void)signo; stop_requested = 1; }

int pv_install_stop_signals(int restart) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGHUP, &sa, NULL) < 0)
        return -errno;
    // A parent may start us with these blocked (threads of libdispatch block signals, and
    // posix_spawn passes the mask on): unblock them, or a stop request would never arrive.
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGHUP);
    return sigprocmask(SIG_UNBLOCK, &stops, NULL) < 0 ? -errno : 0;
}

int pv_stop_requested(void) { return stop_requested; }

int pv_thread_fs_identity(uint32_t uid, uint32_t gid, const uint32_t *groups, int count) {
    if (syscall(SYS_setgroups, (size_t)count, groups) != 0) return -errno;
    syscall(SYS_setfsgid, gid);
    syscall(SYS_setfsuid, uid);
    // setfsuid and setfsgid report the previous value, not failure: read both back.
    if ((uint32_t)syscall(SYS_setfsuid, -1) != uid || (uint32_t)syscall(SYS_setfsgid, -1) != gid) return -EPERM;
    return 0;
}

#include <linux/openat2.h>

int pv_open_beneath(int dirfd, const char *path, int flags, mode_t mode) {
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS) {
        // Before Linux 5.6: the last component at least is never followed.
        fd = strstr(path, "..") ? (errno = EXDEV, -1) : openat(dirfd, path, flags | O_CLOEXEC | O_NOFOLLOW, mode);
    }
    return fd < 0 ? -errno : (int)fd;
}

int pv_renameat(int from_dir, const char *from, int to_dir, const char *to) {
    return NEG_ERRNO(renameat(from_dir, from, to_dir, to));
}

int pv_unlinkat(int dirfd, const char *name, int directory) {
    return NEG_ERRNO(unlinkat(dirfd, name, directory ? AT_REMOVEDIR : 0));
}

int pv_mkdirat(int dirfd, const char *name, mode_t mode) {
    return NEG_ERRNO(mkdirat(dirfd, name, mode));
}

int pv_statx_at(int dirfd, const char *name, pv_file_facts *out) {
    return statx_facts(dirfd, name, AT_SYMLINK_NOFOLLOW, out);
}

const int pv_O_DIRECT = O_DIRECT;
const int pv_O_TMPFILE = O_TMPFILE;
const int pv_O_PATH = O_PATH;

int pv_name_this_thread(const char *name) {
    char cut[16];
    snprintf(cut, sizeof cut, "%s", name);
    return -pthread_setname_np(pthread_self(), cut);
}
