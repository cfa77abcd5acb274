/*
 * gst-run: runs a gst-launch-1.0 pipeline description to its end the way an application
 * does, straight to PLAYING, then waits for EOS or an error on the bus; at the end it prints
 * the process's peak resident set size ("peak-rss-kib N", VmHWM of /proc/self/status).
 *
 *   gst-run 'videotestsrc num-buffers=600 ! jpegenc ! splitmuxsink async-finalize=true ...'
 *
 * Why not gst-launch-1.0: it sets PAUSED, waits for the PAUSED state change, then sets
 * PLAYING. splitmuxsink posts that PAUSED change of the pipeline from a streaming thread when
 * its first take starts, and GStreamer 1.22's GstBin records "posted PLAYING" after handing
 * a state change to the bus (gst_bin_post_message), so the streaming thread can record PAUSED
 * after the main thread recorded PLAYING; a bin that believes it is not playing never forwards
 * EOS, and gst-launch-1.0 waits forever after the last take, with filesink as with
 * provideosink (Docs/C-LIBRARY.md has the counts). An application that sets PLAYING without
 * waiting for the preroll posts both changes from one thread in order.
 *
 * Exit: 0 at EOS, 1 on an error message (printed), 2 for a description that does not parse.
 * Build: cc -o gst-run gst-run.c $(pkg-config --cflags --libs gstreamer-1.0)
 */
#include <gst/gst.h>
#include <stdio.h>

static void print_peak_rss(void) {
    char line[256];
    FILE *status = fopen("/proc/self/status", "r");
    if (!status) return;
    while (fgets(line, sizeof line, status)) {
        long kib;
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1) printf("peak-rss-kib %ld\n", kib);
    }
    fclose(status);
}

/* Prints the error `message` carries, naming the element that posted it. */
static void print_error(GstMessage *message) {
    GError *failure = NULL;
    gst_message_parse_error(message, &failure, NULL);
    fprintf(stderr, "ERROR from %s: %s\n", GST_OBJECT_NAME(GST_MESSAGE_SRC(message)), failure->message);
    g_error_free(failure);
}

int main(int argc, char **argv) {
    gst_init(&argc, &argv);
    if (argc != 2) {
        fprintf(stderr, "usage: gst-run 'PIPELINE DESCRIPTION'\n");
        return 2;
    }
    GError *error = NULL;
    GstElement *pipeline = gst_parse_launch(argv[1], &error);
    if (!pipeline || error) {
        fprintf(stderr, "gst-run: %s\n", error ? error->message : "the description gives no pipeline");
        return 2;
    }
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *message;
    if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE)
        /* The element that failed posted why. */
        message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    else
        message = gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    int status = message && GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS ? 0 : 1;
    if (!message)
        fprintf(stderr, "gst-run: the pipeline refused to start\n");
    else if (status != 0)
        print_error(message);
    if (message) gst_message_unref(message);
    gst_object_unref(bus);
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
    print_peak_rss();
    return status;
}
