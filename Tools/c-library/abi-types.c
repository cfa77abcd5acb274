/*
 * Every public type of provideo.h reachable from an exported function, so that abidw records
 * their layouts from this file's DWARF (the library's own functions are Swift, whose DWARF
 * libabigail does not read as C). Built against the 1.0.0 header once (abi/provideo-1.0.0.types.abi)
 * and against the current header by CLibraryTests.theABIGrowsOnly, then compared with abidiff:
 * a field moved, resized or removed is an incompatible change; a type or function added is not.
 *
 *   cc -g -shared -fPIC -I include -o abi-types.so abi-types.c && abidw abi-types.so
 */
#include <provideo.h>

/* The types of 1.0.0: their layouts never change within soname libprovideo.so.1. */
void provideo_abi_types_1_0(provideo_error *error, provideo_pool_status *status, provideo_capture_options *options,
                            provideo_replenish_result *replenished, provideo_capture_statistics *statistics,
                            provideo_recording *recording, provideo_fill_fn fill, provideo_code code,
                            provideo_pool **pool, provideo_capture **capture) {
    (void)error, (void)status, (void)options, (void)replenished, (void)statistics, (void)recording, (void)fill,
        (void)code, (void)pool, (void)capture;
}

#ifdef PROVIDEO_VERSION
/* The types 1.1 added. */
void provideo_abi_types_1_1(provideo_pool_create_options *create, provideo_bandwidth *bandwidth) {
    (void)create, (void)bandwidth;
}
#endif
