#ifndef CPROVIDEOMOUNT_H
#define CPROVIDEOMOUNT_H

/* libfuse 3's high-level API (Debian's libfuse3-dev), for `provideo mount`. */
#define FUSE_USE_VERSION 31
#include <fuse3/fuse.h>
#include <sys/statvfs.h>

/* Runs the filesystem until it is unmounted: fuse_main(3) (a macro Swift cannot call). */
int pv_fuse_main(int argc, char **argv, const struct fuse_operations *operations, void *context);

/* fuse_file_info's bitfields, which Swift does not import as settable. */
void pv_fuse_set_direct_io(struct fuse_file_info *info);
int pv_fuse_flags(const struct fuse_file_info *info);

/* The requesting process's identity and the filesystem's context. */
uid_t pv_fuse_uid(void);
gid_t pv_fuse_gid(void);
pid_t pv_fuse_pid(void);
mode_t pv_fuse_umask(void);
void *pv_fuse_context(void);

/* Calls a readdir filler (a C function pointer) for one name. */
int pv_fuse_fill(fuse_fill_dir_t filler, void *buffer, const char *name);

/* renameat2(2) within one directory (flags: RENAME_NOREPLACE = 1, RENAME_EXCHANGE = 2);
   -errno on failure. */
int pv_rename(int directory, const char *from, const char *to, unsigned int flags);

/* syslog(3) of one line at LOG_NOTICE, as "provideo-mount" (a daemon's stderr is /dev/null). */
void pv_syslog(const char *line);

#endif
