import Foundation
import ProVideoStorage

/// Records `encodedFrames` (each any size) to `destination` through the pool, then patches
/// the container's header at offset 0 as a muxer does.
func record(_ encodedFrames: [[UInt8]], header: [UInt8], to destination: String) throws -> RecordingResult {
    let pool = try Pool.open()                       // $PROVIDEO_POOL, else /var/lib/provideo
    print(try pool.initialCapacity, try pool.remainingCapacity, try pool.busyReasons)
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

/// The same from a thread of the recorder's own (a real-time one, say): a `Capture` is
/// `Sendable`, handed to the thread that records; one call at a time is checked at run time.
func recordOnItsOwnThread(_ encodedFrames: [[UInt8]], to destination: String) throws -> Thread {
    let capture = try Pool.open().startCapture(to: destination, options: CaptureOptions(bitrate: 100_000_000))
    let recorder = Thread {
        for frame in encodedFrames { try? capture.append(frame) }
        _ = try? capture.finish()
    }
    recorder.start()
    return recorder
}
