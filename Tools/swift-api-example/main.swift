// A first recorder, as a program's main.swift: records 25 frames into the pool and lands them
// at the path given (default take.mov).
import Foundation
import ProVideoStorage

/// Records `frames` frames of `frameBytes` bytes each to `destination` through the pool at
/// $PROVIDEO_POOL, else /var/lib/provideo (`provideo create --capacity 64G` makes one).
func record(frames: Int, frameBytes: Int, to destination: String) async throws -> RecordingResult {
    let pool = try Pool.shared
    print("the pool can take \(try pool.remainingCapacity) more bytes")
    // The stream's bitrate in bits per second: the pool admits the capture against its bandwidth.
    let capture = try pool.startCapture(to: destination, options: CaptureOptions(bitrate: 100_000_000))
    for index in 0..<frames {
        // append copies the frame into the capture's buffers and never waits for the disk while
        // one is free: call it from the thread that receives the frames.
        try capture.append([UInt8](repeating: UInt8(truncatingIfNeeded: index), count: frameBytes))
    }
    // finish waits for the disk and lands the take at its destination, off this thread.
    return try await capture.finish()
}

let destination = CommandLine.arguments.dropFirst().first ?? "take.mov"
do {
    let recording = try await record(frames: 25, frameBytes: 500_000, to: destination)
    print("recorded \(recording.length) bytes at \(recording.path)")
} catch let error as ProVideoError {
    // The error says what failed and names what deals with it (`remedies`): no pool, `.create`.
    let remedies = error.remedies.map { "`provideo \($0)`" }.joined(separator: " or ")
    let advice = remedies.isEmpty ? "" : "; see \(remedies)"
    FileHandle.standardError.write(Data("swift-api-example: \(error.message)\(advice)\n".utf8))
    exit(1)
} catch {
    FileHandle.standardError.write(Data("swift-api-example: \(error)\n".utf8))
    exit(1)
}
