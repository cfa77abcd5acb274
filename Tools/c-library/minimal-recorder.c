/*
 * The smallest complete recorder on libprovideo (Docs/C-LIBRARY.md shows it): records its
 * standard input into a pool, one read = one frame, and moves it to DEST. Given CAPACITY_BYTES,
 * it creates the pool when there is none.
 *
 *   cc minimal-recorder.c $(pkg-config --cflags --libs provideo) -o minimal-recorder
 *   some-encoder | ./minimal-recorder /srv/pool /media/take1.mov 68719476736
 */
#include <provideo.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: %s POOL DEST [CAPACITY_BYTES] < stream\n", argv[0]);
        return 2;
    }
    provideo_error err;               /* caller-owned: code, errno, message */
    provideo_pool *pool = NULL;
    provideo_capture *capture = NULL;
    provideo_capture_options options;
    provideo_capture_options_init(&options);
    options.bitrate = 880000000;      /* bit/s: ProRes 422 HQ 2160p29.97 */

    int rc = provideo_pool_open(argv[1], &pool, &err);
    if (rc == PROVIDEO_E_POOL_NOT_FOUND && argc == 4) /* first run: make it, bandwidth measured */
        rc = provideo_pool_create(argv[1], strtoll(argv[3], NULL, 10), NULL, &pool, &err);
    if (rc != 0 || provideo_capture_start(pool, argv[2], &options, &capture, &err) != 0)
        goto failed;
    static char frame[1 << 20];
    ssize_t n;
    while ((n = read(0, frame, sizeof frame)) > 0)
        if (provideo_capture_append(capture, frame, (size_t)n, &err) != 0) goto failed;
    provideo_recording recording;
    if (provideo_capture_finish(capture, &recording, &err) != 0) goto failed;
    printf("recorded %lld bytes to %s\n", (long long)recording.length, recording.path);
    provideo_capture_close(capture, NULL);
    provideo_pool_close(pool, NULL);
    return 0;

failed:
    fprintf(stderr, "%s (%s)\n", err.message, provideo_strerror(err.code));
    provideo_capture_close(capture, NULL); /* an unfinished capture is cancelled; NULL is harmless */
    provideo_pool_close(pool, NULL);
    return 1;
}
