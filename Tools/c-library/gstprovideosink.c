/*
 * provideosink: a GStreamer sink that records into a Pro Video Storage pool.
 *
 *   gst-launch-1.0 videotestsrc num-buffers=50 ! avenc_prores_ks ! qtmux \
 *       ! provideosink pool=/srv/pool location=/media/take1.mov bitrate=880000000
 *
 * Properties: location (the destination), pool (the pool directory; unset: $PROVIDEO_POOL,
 * else /var/lib/provideo), bitrate (bit/s, see below), landing (automatic, finish or
 * background: when a location on another filesystem than the pool gets the recording;
 * background leaves it in the pool for `provideo land`).
 *
 * Buffers: a muxer's output carries no bitrate (qtmux forwards no bitrate tag, its caps have
 * none), so the capture's buffers are three seconds of the bitrate property, as the library's
 * default, or, unset (0), of the stream's rate measured from its first buffers: the sink holds
 * them (references, no copy) until they span a second of stream time (their durations) or
 * reach 16 MiB, then starts the capture with that rate, declared to the pool's admission, and
 * writes them. A stream whose buffers carry no duration gets the library's smallest default,
 * 32 MiB, declared as 880 Mbit/s (an unknown stream is admitted as a large one). Before, every
 * stream without the property got 32 MiB: a tenth of a second at 2160p ProRes HQ, ten times
 * what a 320x240 JPEG stream needs. When every buffer is in flight,
 * render waits for the disk up to the library's 30 s stall limit, as filesink's write
 * blocks: the pipeline's queues decide what to drop, and a stall longer than the buffers
 * does not fail the take.
 *
 * Like filesink: a buffer at the end is appended; a BYTES segment event (qtmux, mp4mux and
 * matroskamux seek back to patch sizes in headers) moves the write position, and the buffers
 * that follow are written at that offset (provideo_capture_write_at). EOS finishes the capture
 * (the recording moves to `location`) before the EOS goes on; stopping without EOS (an error,
 * a cancelled pipeline) cancels it. Every failure posts an element error whose message is the
 * library's (busy pool, full pool, existing or bad destination).
 *
 * The pool opens and the capture starts at the first buffer (once the held buffers measured
 * the stream, when the bitrate is unset; at EOS for a stream without one), not in start(), which only checks the properties, as cheap as filesink's open:
 * splitmuxsink starts each take's sink on its streaming thread just before it posts the
 * pipeline's PAUSED, and our work there (a first pool open, a capture start pinning its
 * buffers: 12 ms for 32 MiB) made a GStreamer race that hangs gst-launch-1.0 at the end
 * (gst-run.c) likelier: 34 of 150 runs hung, filesink 20 (Docs/C-LIBRARY.md). So a missing
 * pool, a busy one or an existing destination fails the first buffer, with the library's
 * message, before anything is written.
 *
 * Build (a plugin, loaded through GST_PLUGIN_PATH):
 *   cc -shared -fPIC -o libgstprovideosink.so gstprovideosink.c \
 *      $(pkg-config --cflags --libs provideo gstreamer-1.0 gstreamer-base-1.0)
 */
#include <gst/base/gstbasesink.h>
#include <gst/gst.h>
#include <inttypes.h>
#include <string.h>

#include <provideo.h>

#define PACKAGE "provideo"
#define VERSION "1.0.0"

/* The library's smallest default buffer budget (provideo.h, buffer_budget). */
#define SMALL_BUFFER_BUDGET (32 << 20)
/* The library's default: buffers for three seconds of the stream (provideo.h, buffer_budget). */
#define BUFFER_SECONDS 3
/* The most the sink holds to measure an unset bitrate: a second of stream time, or 16 MiB
 * (four frames of 2160p ProRes HQ), whichever comes first. */
#define MEASURE_TIME GST_SECOND
#define MEASURE_BYTES (16 << 20)
/* The longest overrun wait the library accepts (provideo.h, overrun_wait_ns). */
#define STALL_LIMIT_NS 30000000000ULL

GST_DEBUG_CATEGORY_STATIC(provideo_sink_debug);
#define GST_CAT_DEFAULT provideo_sink_debug

typedef struct {
    GstBaseSink parent;
    gchar *location;
    gchar *pool_path;
    gint64 bitrate;
    gchar *landing;
    provideo_capture_options options; /* for the capture the first buffer starts */
    provideo_pool *pool;
    provideo_capture *capture;
    gint64 position; /* where the next buffer goes */
    gint64 length;   /* bytes in the recording */
    gboolean finished;
    gboolean failed; /* a write or the start failed: EOS must not finish anything */
    /* Measuring an unset bitrate: the buffers held before the capture starts, appended in
     * order from byte 0 (position and length count them), and those of them with a duration. */
    GQueue held;
    gint64 timed_bytes;
    GstClockTime timed_duration;
} ProvideoSink;

typedef struct {
    GstBaseSinkClass parent_class;
} ProvideoSinkClass;

enum { PROP_0, PROP_LOCATION, PROP_POOL, PROP_BITRATE, PROP_LANDING };

G_DEFINE_TYPE(ProvideoSink, provideo_sink, GST_TYPE_BASE_SINK)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE("sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS_ANY);

/* Posts the library's message as an element error, in the GStreamer error domain that fits. */
static void post_error(ProvideoSink *self, const char *action, const provideo_error *err) {
    switch (err->code) {
    case PROVIDEO_E_STORAGE_FULL:
    case PROVIDEO_E_NOT_ENOUGH_SPACE:
        GST_ELEMENT_ERROR(self, RESOURCE, NO_SPACE_LEFT, ("%s", err->message),
                          ("%s: %s (%d)", action, provideo_strerror(err->code), err->code));
        break;
    case PROVIDEO_E_BUSY:
        GST_ELEMENT_ERROR(self, RESOURCE, BUSY, ("%s", err->message),
                          ("%s: %s (%d)", action, provideo_strerror(err->code), err->code));
        break;
    case PROVIDEO_E_POOL_NOT_FOUND:
        GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("%s", err->message),
                          ("%s: %s (%d)", action, provideo_strerror(err->code), err->code));
        break;
    case PROVIDEO_E_PERMISSION_DENIED:
        GST_ELEMENT_ERROR(self, RESOURCE, NOT_AUTHORIZED, ("%s", err->message),
                          ("%s: %s (%d)", action, provideo_strerror(err->code), err->code));
        break;
    default:
        if (g_str_equal(action, "start"))
            GST_ELEMENT_ERROR(self, RESOURCE, OPEN_WRITE, ("%s", err->message),
                              ("%s: %s (%d)", action, provideo_strerror(err->code), err->code));
        else
            GST_ELEMENT_ERROR(self, RESOURCE, WRITE, ("%s", err->message),
                              ("%s: %s (%d, errno %d)", action, provideo_strerror(err->code), err->code, err->sys_errno));
    }
}

static gboolean provideo_sink_start(GstBaseSink *base) {
    ProvideoSink *self = (ProvideoSink *)base;
    if (!self->location) {
        GST_ELEMENT_ERROR(self, RESOURCE, NOT_FOUND, ("No location set: provideosink needs location=DESTINATION"), (NULL));
        return FALSE;
    }
    provideo_capture_options *options = &self->options;
    provideo_capture_options_init(options);
    if (self->bitrate > 0)
        options->bitrate = self->bitrate;
    else
        options->buffer_budget = SMALL_BUFFER_BUDGET;
    options->overrun_policy = PROVIDEO_OVERRUN_WAIT;
    options->overrun_wait_ns = STALL_LIMIT_NS;
    if (!self->landing || strcmp(self->landing, "automatic") == 0) {
        options->landing = PROVIDEO_LANDING_AUTOMATIC;
    } else if (strcmp(self->landing, "finish") == 0) {
        options->landing = PROVIDEO_LANDING_FINISH;
    } else if (strcmp(self->landing, "background") == 0) {
        options->landing = PROVIDEO_LANDING_BACKGROUND;
    } else {
        GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("landing=%s: use automatic, finish or background", self->landing),
                          (NULL));
        return FALSE;
    }
    self->position = self->length = 0;
    self->finished = self->failed = FALSE;
    self->timed_bytes = 0;
    self->timed_duration = 0;
    return TRUE;
}

/* Drops the buffers held to measure the stream (never written: a stop before the capture). */
static void provideo_sink_drop_held(ProvideoSink *self) {
    GstBuffer *buffer;
    while ((buffer = g_queue_pop_head(&self->held))) gst_buffer_unref(buffer);
    self->timed_bytes = 0;
    self->timed_duration = 0;
}

/* Sizes the capture from the held buffers' rate, when they carry durations: bits per second
 * over their stream time, three seconds of it as the buffers. */
static void provideo_sink_size_from_stream(ProvideoSink *self) {
    if (self->bitrate > 0 || self->timed_duration == 0 || self->timed_bytes == 0) return;
    gint64 rate = (gint64)gst_util_uint64_scale(self->timed_bytes * 8, GST_SECOND, self->timed_duration);
    if (rate <= 0) return;
    self->options.bitrate = rate;
    self->options.buffer_budget = MIN(rate / 8 * BUFFER_SECONDS, (gint64)1 << 30);
    GST_INFO_OBJECT(self, "stream measured at %" G_GINT64_FORMAT " bit/s over %" GST_TIME_FORMAT
                    " (%" G_GINT64_FORMAT " bytes): %" G_GINT64_FORMAT " bytes of buffers",
                    rate, GST_TIME_ARGS(self->timed_duration), self->timed_bytes, self->options.buffer_budget);
}

/* Opens the pool and starts the capture if none runs yet; FALSE (the error posted) when
 * either fails. */
static gboolean provideo_sink_start_capture(ProvideoSink *self) {
    provideo_error err;
    if (self->capture) return TRUE;
    if (!self->pool && provideo_pool_open(self->pool_path, &self->pool, &err) != 0) {
        post_error(self, "start", &err);
        self->failed = TRUE;
        return FALSE;
    }
    if (provideo_capture_start(self->pool, self->location, &self->options, &self->capture, &err) != 0) {
        post_error(self, "start", &err);
        self->failed = TRUE;
        return FALSE;
    }
    return TRUE;
}

/* Releases the capture; one neither finished nor cancelled (an error, a stop before EOS) is
 * cancelled by the close: no file at the destination, the capacity back in the pool. */
static gboolean provideo_sink_stop(GstBaseSink *base) {
    ProvideoSink *self = (ProvideoSink *)base;
    provideo_sink_drop_held(self);
    if (self->capture) {
        if (!self->finished) GST_INFO_OBJECT(self, "stopped before EOS: cancelling the capture");
        provideo_capture_close(self->capture, NULL);
        self->capture = NULL;
    }
    if (self->pool) {
        provideo_pool_close(self->pool, NULL);
        self->pool = NULL;
    }
    return TRUE;
}

/* Writes at the current position: patches what exists, appends the rest. */
static GstFlowReturn provideo_sink_write(ProvideoSink *self, GstBuffer *buffer) {
    GstMapInfo map;
    provideo_error err;
    if (self->failed || !provideo_sink_start_capture(self)) return GST_FLOW_ERROR;
    if (!gst_buffer_map(buffer, &map, GST_MAP_READ)) return GST_FLOW_ERROR;
    const guint8 *data = map.data;
    gint64 size = (gint64)map.size;
    int rc = 0;
    if (self->position > self->length) {
        gst_buffer_unmap(buffer, &map);
        GST_ELEMENT_ERROR(self, RESOURCE, SEEK, ("Cannot write at byte %" G_GINT64_FORMAT ": the recording has %" G_GINT64_FORMAT " bytes",
                                                 self->position, self->length), (NULL));
        return GST_FLOW_ERROR;
    }
    if (self->position < self->length && size > 0) {
        gint64 n = MIN(size, self->length - self->position);
        rc = provideo_capture_write_at(self->capture, self->position, data, (size_t)n, &err);
        if (rc == 0) {
            self->position += n;
            data += n;
            size -= n;
        }
    }
    /* One buffer is one append: a muxer's buffer is a frame or a header, so frame boundaries
     * survive into the capture (the durability commits end on them). */
    if (rc == 0 && (size > 0 || map.size == 0)) {
        rc = provideo_capture_append(self->capture, data, (size_t)size, &err);
        if (rc == 0) self->position = self->length = self->length + size;
    }
    gst_buffer_unmap(buffer, &map);
    if (rc == 0) rc = provideo_capture_poll(self->capture, &err);
    if (rc != 0) {
        post_error(self, "write", &err);
        /* Cancel now: upstream may still send EOS (a muxer writing its trailer after the
         * error), and a recording cut short must not be finished and moved into place. */
        self->failed = TRUE;
        provideo_capture_cancel(self->capture, NULL);
        return GST_FLOW_ERROR;
    }
    return GST_FLOW_OK;
}

/* Starts the capture, sized from the held buffers, and writes them, in order from byte 0. */
static GstFlowReturn provideo_sink_release_held(ProvideoSink *self) {
    if (self->capture) return GST_FLOW_OK;
    provideo_sink_size_from_stream(self);
    if (!provideo_sink_start_capture(self)) {
        provideo_sink_drop_held(self);
        return GST_FLOW_ERROR;
    }
    self->position = self->length = 0;
    GstFlowReturn flow = GST_FLOW_OK;
    GstBuffer *buffer;
    while (flow == GST_FLOW_OK && (buffer = g_queue_pop_head(&self->held))) {
        flow = provideo_sink_write(self, buffer);
        gst_buffer_unref(buffer);
    }
    provideo_sink_drop_held(self);
    return flow;
}

static GstFlowReturn provideo_sink_render(GstBaseSink *base, GstBuffer *buffer) {
    ProvideoSink *self = (ProvideoSink *)base;
    if (self->finished) return GST_FLOW_EOS;
    if (self->failed) return GST_FLOW_ERROR;
    /* An unset bitrate is measured: the stream's first buffers are held (appends only) until
     * they span MEASURE_TIME or MEASURE_BYTES. */
    if (!self->capture && self->bitrate == 0 && self->position == self->length) {
        gint64 size = (gint64)gst_buffer_get_size(buffer);
        g_queue_push_tail(&self->held, gst_buffer_ref(buffer));
        self->position = self->length = self->length + size;
        if (GST_BUFFER_DURATION_IS_VALID(buffer)) {
            self->timed_bytes += size;
            self->timed_duration += GST_BUFFER_DURATION(buffer);
        }
        if (self->timed_duration < MEASURE_TIME && self->length < MEASURE_BYTES) return GST_FLOW_OK;
        return provideo_sink_release_held(self);
    }
    return provideo_sink_write(self, buffer);
}

static gboolean provideo_sink_event(GstBaseSink *base, GstEvent *event) {
    ProvideoSink *self = (ProvideoSink *)base;
    provideo_error err;
    switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_SEGMENT: {
        const GstSegment *segment;
        gst_event_parse_segment(event, &segment);
        /* A muxer seeking back to patch a header sends a BYTES segment starting there. */
        if (segment->format == GST_FORMAT_BYTES) {
            /* A seek ends the measuring: the held buffers are written before the position moves. */
            if ((gint64)segment->start != self->length && !g_queue_is_empty(&self->held) &&
                provideo_sink_release_held(self) != GST_FLOW_OK) {
                gst_event_unref(event);
                return FALSE;
            }
            if ((gint64)segment->start > self->length) {
                GST_ELEMENT_ERROR(self, RESOURCE, SEEK, ("Cannot seek to byte %" G_GUINT64_FORMAT ": the recording has %" G_GINT64_FORMAT " bytes",
                                                         segment->start, self->length), (NULL));
                gst_event_unref(event);
                return FALSE;
            }
            self->position = (gint64)segment->start;
        }
        break;
    }
    case GST_EVENT_EOS:
        /* failed: the error is posted, the capture was cancelled or never started. */
        if (self->failed || provideo_sink_release_held(self) != GST_FLOW_OK) {
            gst_event_unref(event);
            return FALSE;
        }
        /* Finish before the EOS goes on, so the file is at its destination when the
         * application sees EOS. */
        if (!self->finished) {
            provideo_recording recording;
            if (provideo_capture_finish(self->capture, &recording, &err) != 0) {
                post_error(self, "finish", &err);
                gst_event_unref(event);
                return FALSE;
            }
            self->finished = TRUE;
            GST_INFO_OBJECT(self, "recorded %" G_GINT64_FORMAT " bytes to %s", recording.length, recording.path);
        }
        break;
    default: break;
    }
    return GST_BASE_SINK_CLASS(provideo_sink_parent_class)->event(base, event);
}

/* Muxers ask whether they can seek back in bytes before they choose to patch headers. */
static gboolean provideo_sink_query(GstBaseSink *base, GstQuery *query) {
    ProvideoSink *self = (ProvideoSink *)base;
    GstFormat format;
    switch (GST_QUERY_TYPE(query)) {
    case GST_QUERY_SEEKING:
        gst_query_parse_seeking(query, &format, NULL, NULL, NULL);
        gst_query_set_seeking(query, format, format == GST_FORMAT_BYTES || format == GST_FORMAT_DEFAULT, 0, -1);
        return TRUE;
    case GST_QUERY_POSITION:
        gst_query_parse_position(query, &format, NULL);
        if (format != GST_FORMAT_BYTES && format != GST_FORMAT_DEFAULT) break;
        gst_query_set_position(query, GST_FORMAT_BYTES, self->position);
        return TRUE;
    case GST_QUERY_FORMATS:
        gst_query_set_formats(query, 2, GST_FORMAT_DEFAULT, GST_FORMAT_BYTES);
        return TRUE;
    case GST_QUERY_URI:
        gst_query_set_uri(query, self->location);
        return TRUE;
    default: break;
    }
    return GST_BASE_SINK_CLASS(provideo_sink_parent_class)->query(base, query);
}

static void provideo_sink_set_property(GObject *object, guint id, const GValue *value, GParamSpec *spec) {
    ProvideoSink *self = (ProvideoSink *)object;
    switch (id) {
    case PROP_LOCATION:
        g_free(self->location);
        self->location = g_value_dup_string(value);
        break;
    case PROP_POOL:
        g_free(self->pool_path);
        self->pool_path = g_value_dup_string(value);
        break;
    case PROP_BITRATE: self->bitrate = g_value_get_int64(value); break;
    case PROP_LANDING:
        g_free(self->landing);
        self->landing = g_value_dup_string(value);
        break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
    }
}

static void provideo_sink_get_property(GObject *object, guint id, GValue *value, GParamSpec *spec) {
    ProvideoSink *self = (ProvideoSink *)object;
    switch (id) {
    case PROP_LOCATION: g_value_set_string(value, self->location); break;
    case PROP_POOL: g_value_set_string(value, self->pool_path); break;
    case PROP_BITRATE: g_value_set_int64(value, self->bitrate); break;
    case PROP_LANDING: g_value_set_string(value, self->landing ? self->landing : "automatic"); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
    }
}

static void provideo_sink_finalize(GObject *object) {
    ProvideoSink *self = (ProvideoSink *)object;
    g_free(self->location);
    g_free(self->pool_path);
    g_free(self->landing);
    provideo_sink_drop_held(self);
    G_OBJECT_CLASS(provideo_sink_parent_class)->finalize(object);
}

static void provideo_sink_class_init(ProvideoSinkClass *klass) {
    GObjectClass *gobject = G_OBJECT_CLASS(klass);
    GstElementClass *element = GST_ELEMENT_CLASS(klass);
    GstBaseSinkClass *base = GST_BASE_SINK_CLASS(klass);
    gobject->set_property = provideo_sink_set_property;
    gobject->get_property = provideo_sink_get_property;
    gobject->finalize = provideo_sink_finalize;
    g_object_class_install_property(
        gobject, PROP_LOCATION,
        g_param_spec_string("location", "Location", "Destination of the recording (never overwritten)", NULL,
                            G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    g_object_class_install_property(
        gobject, PROP_POOL,
        g_param_spec_string("pool", "Pool", "Pool directory (default: $PROVIDEO_POOL, else /var/lib/provideo)", NULL,
                            G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    g_object_class_install_property(
        gobject, PROP_BITRATE,
        g_param_spec_int64("bitrate", "Bitrate",
                           "Expected bitrate in bit/s: three seconds of it size the capture's buffers and the pool "
                           "admits it; 0: measured from the stream's first second (its buffers' durations), "
                           "else 32 MiB of buffers, admitted as 880 Mbit/s",
                           0, G_MAXINT64, 0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    g_object_class_install_property(
        gobject, PROP_LANDING,
        g_param_spec_string("landing", "Landing",
                            "When a location on another filesystem gets the recording: automatic (in the background "
                            "for network filesystems), finish, or background (`provideo land` copies it)",
                            "automatic", G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    gst_element_class_set_static_metadata(element, "Pro Video Storage sink", "Sink/File",
                                          "Records into a preallocated Pro Video Storage pool",
                                          "Pro Video Storage for Linux");
    gst_element_class_add_static_pad_template(element, &sink_template);
    base->start = provideo_sink_start;
    base->stop = provideo_sink_stop;
    base->render = provideo_sink_render;
    base->event = provideo_sink_event;
    base->query = provideo_sink_query;
}

static void provideo_sink_init(ProvideoSink *self) {
    /* A file sink: write as fast as buffers come, no clock sync. */
    gst_base_sink_set_sync(GST_BASE_SINK(self), FALSE);
    g_queue_init(&self->held);
}

static gboolean plugin_init(GstPlugin *plugin) {
    GST_DEBUG_CATEGORY_INIT(provideo_sink_debug, "provideosink", 0, "Pro Video Storage sink");
    return gst_element_register(plugin, "provideosink", GST_RANK_NONE, provideo_sink_get_type());
}

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, provideosink, "Records into a Pro Video Storage pool", plugin_init,
                  VERSION, "unknown", PACKAGE, "https://example.invalid/provideo")
