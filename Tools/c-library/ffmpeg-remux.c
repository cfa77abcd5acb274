/*
 * An FFmpeg (libavformat) recorder writing a normal, seekable MOV through a pool: the muxer
 * writes into a custom AVIOContext whose write callback appends to a capture and whose seek
 * callback turns the muxer's header rewrite (the `mdat` size patched at the end) into
 * provideo_capture_write_at. No fragmented MOV, no pipe. When the muxer reopens its output to
 * read it back (-movflags +faststart moves the `moov` atom to the front), the reads come from
 * the capture (provideo_capture_read).
 *
 *   ffmpeg-remux [--movflags FLAGS] --pool POOL INPUT DEST   remux INPUT into a capture moved to DEST
 *   ffmpeg-remux [--movflags FLAGS] --file INPUT DEST        the same muxing, same callbacks, into a plain file
 *
 * FLAGS are the mov muxer's, as ffmpeg's -movflags (e.g. +faststart). When a write fails (the
 * pool is full, a disk error), the take is finished rather than discarded: the bytes that
 * landed stay, at DEST, without the trailer; the program says where and exits 1.
 *
 * It remuxes (stream copy) rather than encodes, so that its output can be compared byte for
 * byte with `ffmpeg -i INPUT -c copy -fflags +bitexact -f mov REF` (an encoder run twice is
 * not reproducible enough for that); a recorder that encodes feeds its packets to the same
 * av_interleaved_write_frame call. Docs/C-LIBRARY.md explains the comparison.
 *
 * Build: cc ffmpeg-remux.c $(pkg-config --cflags --libs provideo libavformat libavcodec libavutil)
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libavformat/avformat.h>
#include <libavutil/mem.h>

#include <provideo.h>

/* Where the muxer's bytes go: a capture, or a plain file (the reference path). */
struct sink {
    provideo_capture *capture; /* NULL: write to fd */
    int fd;
    int64_t position; /* where the muxer writes next */
    int64_t length;   /* bytes written so far: the end of the recording */
    provideo_error err;
    int failed;
};

/* Appends at the end; rewrites bytes already written (a header patch). */
static int sink_put(struct sink *s, const uint8_t *data, int64_t size) {
    while (size > 0) {
        int64_t n;
        int rc;
        if (s->position < s->length) { /* a patch: at most up to the current end */
            n = s->length - s->position < size ? s->length - s->position : size;
            rc = s->capture ? provideo_capture_write_at(s->capture, s->position, data, (size_t)n, &s->err)
                            : (pwrite(s->fd, data, (size_t)n, s->position) == n ? 0 : -errno);
        } else if (s->position == s->length) {
            n = size;
            rc = s->capture ? provideo_capture_append(s->capture, data, (size_t)n, &s->err)
                            : (pwrite(s->fd, data, (size_t)n, s->position) == n ? 0 : -errno);
            if (rc == 0) s->length += n;
        } else { /* a muxer never seeks past the end to write; refuse rather than leave a hole */
            snprintf(s->err.message, sizeof s->err.message, "write at %" PRId64 " past the end %" PRId64, s->position,
                     s->length);
            rc = -1;
        }
        if (rc != 0) {
            if (!s->capture && rc != -1) snprintf(s->err.message, sizeof s->err.message, "%s", strerror(-rc));
            s->failed = 1;
            return AVERROR(EIO);
        }
        s->position += n;
        data += n;
        size -= n;
    }
    return 0;
}

/* Reads bytes already written back (for the muxer's second pass), at `position`. */
static int sink_get(struct sink *s, int64_t position, uint8_t *data, int size, size_t *got) {
    if (s->capture) return provideo_capture_read(s->capture, position, data, (size_t)size, got, &s->err);
    ssize_t n = pread(s->fd, data, (size_t)size, position);
    if (n < 0) {
        snprintf(s->err.message, sizeof s->err.message, "reading back: %s", strerror(errno));
        return -1;
    }
    *got = (size_t)n;
    return 0;
}

/* AVIOContext write callback (FFmpeg 5.1 signature; 6.1 makes buf const). */
static int write_packet(void *opaque, uint8_t *buf, int size) {
    int rc = sink_put(opaque, buf, size);
    return rc < 0 ? rc : size;
}

/* AVIOContext seek callback: the muxer seeks back to patch sizes, then to the end again. */
static int64_t seek(void *opaque, int64_t offset, int whence) {
    struct sink *s = opaque;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return s->length;
    case SEEK_SET: break;
    case SEEK_CUR: offset += s->position; break;
    case SEEK_END: offset += s->length; break;
    default: return AVERROR(EINVAL);
    }
    if (offset < 0 || offset > s->length) return AVERROR(EINVAL);
    s->position = offset;
    return offset;
}

/* The muxer's output reopened for reading: its own position over the same sink. */
struct reader {
    struct sink *sink;
    int64_t position;
};

static int read_packet(void *opaque, uint8_t *buf, int size) {
    struct reader *r = opaque;
    size_t got = 0;
    if (sink_get(r->sink, r->position, buf, size, &got) != 0) {
        r->sink->failed = 1;
        return AVERROR(EIO);
    }
    if (got == 0) return AVERROR_EOF;
    r->position += (int64_t)got;
    return (int)got;
}

static int64_t read_seek(void *opaque, int64_t offset, int whence) {
    struct reader *r = opaque;
    switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return r->sink->length;
    case SEEK_SET: break;
    case SEEK_CUR: offset += r->position; break;
    case SEEK_END: offset += r->sink->length; break;
    default: return AVERROR(EINVAL);
    }
    if (offset < 0) return AVERROR(EINVAL);
    r->position = offset;
    return offset;
}

/* AVFormatContext.io_open: the mov muxer's second pass (+faststart) reopens its output, by
 * name, to read what it wrote while it shifts the data up to make room for `moov` at the front.
 * The destination is not a file yet (the take is in the pool), so the reads come from the
 * sink; anything else the muxer might open is refused. */
static int io_open(AVFormatContext *s, AVIOContext **pb, const char *url, int flags, AVDictionary **options) {
    (void)options;
    if (strcmp(url, s->url) != 0 || (flags & AVIO_FLAG_WRITE)) {
        av_log(s, AV_LOG_ERROR, "ffmpeg-remux: cannot open %s: only the destination reopens, to be read back\n", url);
        return AVERROR(ENOSYS);
    }
    avio_flush(s->pb); /* the reads see every byte written so far */
    const int buffer_size = 1 << 20;
    struct reader *r = av_mallocz(sizeof *r);
    uint8_t *buffer = av_malloc(buffer_size);
    if (r) r->sink = s->opaque;
    *pb = r && buffer ? avio_alloc_context(buffer, buffer_size, 0, r, read_packet, NULL, read_seek) : NULL;
    if (!*pb) {
        av_free(r);
        av_free(buffer);
        return AVERROR(ENOMEM);
    }
    return 0;
}

static int io_close2(AVFormatContext *s, AVIOContext *pb) {
    (void)s;
    av_free(pb->opaque);
    av_freep(&pb->buffer);
    avio_context_free(&pb);
    return 0;
}

/* After a failure: keeps what landed (a capture is finished, not cancelled: the pool's
 * recorded bytes are the take) and says where it is. Returns the exit status, 1. */
/* Which of `moov` (the index) and `moof` (fragments) the file at `path` holds at its top level
 * (ISO/IEC 14496-12 4.2: a 32-bit big-endian size, a type; size 1: a 64-bit size follows;
 * size 0: to the end): bit 1 moov, bit 2 moof; 0 when it has neither or cannot be read. */
static int top_level_index(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) return 0;
    int found = 0;
    unsigned char header[16];
    for (int boxes = 0; boxes < 100000 && fread(header, 1, 8, file) == 8; boxes++) {
        uint64_t size = (uint64_t)header[0] << 24 | (uint64_t)header[1] << 16 | (uint64_t)header[2] << 8 | header[3];
        long skipped = 8;
        if (size == 1) {
            if (fread(header + 8, 1, 8, file) != 8) break;
            size = 0;
            for (int i = 8; i < 16; i++) size = size << 8 | header[i];
            skipped = 16;
        }
        if (memcmp(header + 4, "moov", 4) == 0) found |= 1;
        if (memcmp(header + 4, "moof", 4) == 0) found |= 2;
        if (size == 0 || size < (uint64_t)skipped || size - skipped > (uint64_t)INT64_MAX ||
            fseeko(file, (off_t)(size - skipped), SEEK_CUR) != 0)
            break;
    }
    fclose(file);
    return found;
}

/* What a player makes of a take cut off mid-stream. */
static const char *playability(const char *path) {
    int found = top_level_index(path);
    if (found & 2) return "a fragmented MOV: players open it up to its last whole fragment";
    if (found & 1) return "its index, the moov atom, comes first: players open it up to the cut";
    return "its trailer, the moov atom, is missing, so players cannot open it as is: record with -movflags "
           "frag_keyframe+empty_moov to keep a cut-off take playable, or rebuild the index with an untrunc-style tool";
}

static int keep_partial(struct sink *s, const char *dest) {
    if (!s->capture) {
        close(s->fd);
        fprintf(stderr, "ffmpeg-remux: the partial take (%" PRId64 " bytes, its trailer missing or incomplete) is at %s\n",
                s->length, dest);
        return 1;
    }
    provideo_recording recording;
    provideo_error err;
    if (provideo_capture_finish(s->capture, &recording, &err) != 0) {
        fprintf(stderr, "ffmpeg-remux: the partial take could not be kept: %s (%s)\n", err.message,
                provideo_strerror(err.code));
        provideo_capture_close(s->capture, NULL);
        return 1;
    }
    provideo_capture_close(s->capture, NULL);
    fprintf(stderr, "ffmpeg-remux: the partial take (%" PRId64 " bytes, the muxer's output up to the failure; %s) is at %s\n",
            recording.length, playability(recording.path), recording.path);
    return 1;
}

static int fail(const char *what, int rc) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {0};
    av_strerror(rc, text, sizeof text);
    fprintf(stderr, "ffmpeg-remux: %s: %s\n", what, text);
    return 1;
}

int main(int argc, char **argv) {
    const char *program = argv[0], *movflags = NULL;
    if (argc > 2 && strcmp(argv[1], "--movflags") == 0) {
        movflags = argv[2];
        argc -= 2;
        argv += 2;
    }
    if (argc < 4 || (strcmp(argv[1], "--pool") == 0 ? argc != 5 : strcmp(argv[1], "--file") != 0 || argc != 4)) {
        fprintf(stderr, "usage: %s [--movflags FLAGS] --pool POOL INPUT DEST | [--movflags FLAGS] --file INPUT DEST\n",
                program);
        return 2;
    }
    int use_pool = strcmp(argv[1], "--pool") == 0;
    const char *input = argv[use_pool ? 3 : 2], *dest = argv[use_pool ? 4 : 3];
    struct sink sink = {.fd = -1};
    provideo_pool *pool = NULL;

    AVFormatContext *in = NULL;
    int rc = avformat_open_input(&in, input, NULL, NULL);
    if (rc < 0) return fail(input, rc);
    if ((rc = avformat_find_stream_info(in, NULL)) < 0) return fail("stream info", rc);

    if (use_pool) {
        provideo_capture_options options;
        provideo_capture_options_init(&options);
        options.bitrate = in->bit_rate > 0 ? in->bit_rate : 880000000;
        if (provideo_pool_open(argv[2], &pool, &sink.err) != 0 ||
            provideo_capture_start(pool, dest, &options, &sink.capture, &sink.err) != 0) {
            fprintf(stderr, "ffmpeg-remux: %s (%s)\n", sink.err.message, provideo_strerror(sink.err.code));
            return 1;
        }
    } else if ((sink.fd = open(dest, O_RDWR | O_CREAT | O_EXCL, 0666)) < 0) {
        fprintf(stderr, "ffmpeg-remux: %s: %s\n", dest, strerror(errno));
        return 1;
    }

    /* A 4 MiB AVIO buffer, flushed after every packet: one append per frame (frames up to 4 MiB). */
    const int buffer_size = 4 << 20;
    uint8_t *buffer = av_malloc(buffer_size);
    AVIOContext *pb = avio_alloc_context(buffer, buffer_size, 1, &sink, NULL, write_packet, seek);
    AVFormatContext *out = NULL;
    if ((rc = avformat_alloc_output_context2(&out, NULL, "mov", dest)) < 0) return fail("mov muxer", rc);
    out->pb = pb;
    out->flags |= AVFMT_FLAG_BITEXACT | AVFMT_FLAG_CUSTOM_IO;
    out->opaque = &sink;
    out->io_open = io_open;
    out->io_close2 = io_close2;
    /* As the ffmpeg CLI does for a stream copy: the file's and each stream's metadata, the
     * codec parameters, the input time base as the muxer's hint, the frame rates. */
    av_dict_copy(&out->metadata, in->metadata, 0);
    for (unsigned i = 0; i < in->nb_streams; i++) {
        AVStream *is = in->streams[i], *os = avformat_new_stream(out, NULL);
        if ((rc = avcodec_parameters_copy(os->codecpar, is->codecpar)) < 0) return fail("codec parameters", rc);
        unsigned tag = 0;
        if (av_codec_get_id(out->oformat->codec_tag, is->codecpar->codec_tag) != is->codecpar->codec_id ||
            !av_codec_get_tag2(out->oformat->codec_tag, is->codecpar->codec_id, &tag))
            os->codecpar->codec_tag = 0;
        os->time_base = is->time_base;
        os->avg_frame_rate = is->avg_frame_rate;
        os->r_frame_rate = is->r_frame_rate;
        /* The CLI's choice: the stream's aspect ratio, else the codec's (it writes `pasp`). */
        os->sample_aspect_ratio = os->codecpar->sample_aspect_ratio =
            is->sample_aspect_ratio.num ? is->sample_aspect_ratio : is->codecpar->sample_aspect_ratio;
        os->disposition = is->disposition;
        av_dict_copy(&os->metadata, is->metadata, 0);
    }
    AVDictionary *muxer_options = NULL;
    if (movflags) av_dict_set(&muxer_options, "movflags", movflags, 0);
    rc = avformat_write_header(out, &muxer_options);
    AVDictionaryEntry *unknown = av_dict_get(muxer_options, "", NULL, AV_DICT_IGNORE_SUFFIX);
    if (rc >= 0 && unknown) {
        fprintf(stderr, "ffmpeg-remux: the mov muxer has no option %s\n", unknown->key);
        rc = AVERROR(EINVAL);
    }
    av_dict_free(&muxer_options);
    avio_flush(pb);
    if (rc < 0) { /* nothing recorded yet: no take to keep */
        if (sink.capture) provideo_capture_close(sink.capture, NULL);
        else unlink(dest);
        return fail(sink.failed ? sink.err.message : "header", rc);
    }

    AVPacket *packet = av_packet_alloc();
    int64_t packets = 0;
    while ((rc = av_read_frame(in, packet)) >= 0) {
        AVStream *is = in->streams[packet->stream_index], *os = out->streams[packet->stream_index];
        av_packet_rescale_ts(packet, is->time_base, os->time_base);
        packet->pos = -1;
        if ((rc = av_interleaved_write_frame(out, packet)) < 0) break;
        avio_flush(pb);
        if (pb->error < 0) {
            rc = pb->error;
            break;
        }
        if (sink.capture && provideo_capture_poll(sink.capture, &sink.err) != 0) {
            rc = AVERROR(EIO);
            sink.failed = 1;
            break;
        }
        packets++;
    }
    const char *stage = "muxing";
    if (rc == AVERROR_EOF) {
        /* Seeks back to patch the mdat size, writes moov (+faststart: then moves it to the front). */
        stage = "the trailer (av_write_trailer)";
        rc = av_write_trailer(out);
        avio_flush(pb);
        if (rc >= 0 && pb->error < 0) rc = pb->error;
    }
    if (rc < 0 || sink.failed) {
        fprintf(stderr, "ffmpeg-remux: %s failed after %" PRId64 " packets: %s\n", stage, packets,
                sink.failed ? sink.err.message : av_err2str(rc));
        return keep_partial(&sink, dest);
    }

    if (sink.capture) {
        provideo_recording recording;
        if (provideo_capture_finish(sink.capture, &recording, &sink.err) != 0) {
            fprintf(stderr, "ffmpeg-remux: %s\n", sink.err.message);
            return 1;
        }
        provideo_capture_statistics stats = {0};
        provideo_capture_get_statistics(sink.capture, &stats, NULL);
        provideo_capture_close(sink.capture, NULL);
        provideo_pool_close(pool, NULL);
        printf("ffmpeg-remux: %" PRId64 " packets, %" PRId64 " bytes, %" PRId64 " appends, %" PRId64 " patches, %s\n",
               packets, recording.length, stats.frames, stats.patches, recording.path);
    } else {
        close(sink.fd);
        printf("ffmpeg-remux: %" PRId64 " packets, %" PRId64 " bytes, %s\n", packets, sink.length, dest);
    }
    av_packet_free(&packet);
    av_freep(&pb->buffer);
    avio_context_free(&pb);
    avformat_free_context(out);
    avformat_close_input(&in);
    return 0;
}
