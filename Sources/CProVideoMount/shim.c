#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <syslog.h>
#include "CProVideoMount.h"

int pv_fuse_main(int argc, char **argv, const struct fuse_operations *operations, void *context) {
    return fuse_main(argc, argv, operations, context);
}

void pv_fuse_set_direct_io(struct fuse_file_info *info) { info->direct_io = 1; }
int pv_fuse_flags(const struct fuse_file_info *info) { return info->flags; }

uid_t pv_fuse_uid(void) { return fuse_get_context()->uid; }
gid_t pv_fuse_gid(void) { return fuse_get_context()->gid; }
pid_t pv_fuse_pid(void) { return fuse_get_context()->pid; }
mode_t pv_fuse_umask(void) { return fuse_get_context()->umask; }
void *pv_fuse_context(void) { return fuse_get_context()->private_data; }

int pv_fuse_fill(fuse_fill_dir_t filler, void *buffer, const char *name) {
    return filler(buffer, name, NULL, 0, 0);
}

int pv_rename(int directory, const char *from, const char *to, unsigned int flags) {
    return renameat2(directory, from, directory, to, flags) == 0 ? 0 : -errno;
}

void pv_syslog(const char *line) {
    openlog("provideo-mount", LOG_PID, LOG_DAEMON);
    syslog(LOG_NOTICE, "%s", line);
}
