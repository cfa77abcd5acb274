import ProVideoStorage

/// Records `encodedFrames` (each any size) to `destination` through the pool, then patches
/// the container's header at offset 0 as a muxer does.
func record(_ encodedFrames: [[UInt8]], header: [UInt8], to destination: String) throws -> RecordingResult {
    let pool = try Pool.open()                       // $PROVIDEO_POOL, else /var/lib/provideo
    print(pool.initialCapacity, try pool.remainingCapacity, try pool.busyReasons)
    let capture = try pool.startCapture(to: destination, options: CaptureOptions(bitrate: 880_000_000))
    for frame in encodedFrames {
        try capture.append(frame)                    // returns without waiting for the disk
    }
    try capture.append(count: 4096) { piece in       // or fill the pool's own buffer: no copy
        piece.initializeMemory(as: UInt8.self, repeating: 0)
    }
    try capture.patch(header, at: 0)                 // muxers patch earlier bytes
    return try capture.finish()                      // flushed, moved to destination, reserve returned
}
