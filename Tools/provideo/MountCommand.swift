import CommandLineSupport
import Foundation
import ProVideoMount
import ProVideoStorage

/// `provideo mount MOUNTPOINT --destination DIR [--bitrate RATE] [--land WHEN] [--allow-other]
/// [--foreground] [--json]`: the pool as a directory any recorder writes into (Docs/CAPTURE-MOUNT.md).
enum MountCommand {
    /// The mount must not show itself or the pool: a mount point inside (or over) the
    /// destination, or the pool or the destination inside the mount point, would make the
    /// daemon call into its own filesystem.
    static func refuseOverlap(mountpoint: String, destination: String, pool: String) throws {
        func real(_ path: String) -> String { URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL.path }
        func within(_ inner: String, _ outer: String) -> Bool { inner == outer || inner.hasPrefix(outer == "/" ? "/" : outer + "/") }
        let mount = real(mountpoint), shown = real(destination), poolPath = real(pool)
        if within(mount, shown) || within(shown, mount) {
            throw UsageError("the mount point \(mount) and the destination \(shown) overlap; mount it beside the destination")
        }
        if within(poolPath, mount) || within(mount, poolPath) {
            throw UsageError("the mount point \(mount) and the pool \(poolPath) overlap; mount it outside the pool")
        }
    }

    static func run(_ path: String, _ arguments: inout Arguments) throws {
        let destination = try arguments.option("--destination")
        let bitrate = try arguments.option("--bitrate").map { try SizeParser.videoBitrate($0) }
        let land = try arguments.option("--land")
        let allowOther = arguments.flag("--allow-other")
        let foreground = arguments.flag("--foreground")
        let json = arguments.flag("--json")
        let mountpoint = try arguments.positional("MOUNTPOINT (an empty directory)")
        try arguments.finish()
        guard let destination, !destination.isEmpty else {
            throw UsageError("mount needs --destination DIR: the directory the mount shows and its recordings land in")
        }
        if mountpoint.isEmpty { throw UsageError("mount needs a mount point (MOUNTPOINT); got ''") }
        // Without a bitrate, 100 Mbit/s (OBS, ffmpeg's H.264/H.265): it sizes each file's
        // buffers (three seconds, at least 32 MiB), which a file's start allocates and faults in.
        var capture = CaptureOptions(bitrate: bitrate ?? 100_000_000)
        // A program writing a file waits for a slow disk as it would on any filesystem.
        capture.overrunPolicy = .wait(nanoseconds: 30_000_000_000)
        if let land {
            guard let landing = LandingMode(rawValue: land == "auto" ? "automatic" : land) else {
                throw UsageError("--land takes auto, finish or background, not '\(land)'")
            }
            capture.landing = landing
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: mountpoint, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ProVideoError(.invalidArgument, "the mount point \(mountpoint) is not a directory; create it with "
                                + "`mkdir -p \(mountpoint)`", path: mountpoint)
        }
        let pool = try Commands.openPool(path)
        try refuseOverlap(mountpoint: mountpoint, destination: destination, pool: pool.path)
        let mount = try CaptureMount(pool: pool, options: CaptureMount.Options(
            destination: destination, capture: capture, allowOther: allowOther, foreground: foreground, json: json))
        let status = mount.run(at: mountpoint)
        if status != 0 {
            throw ProVideoError(.ioError, "mounting at \(mountpoint) failed (libfuse status \(status)); see the message "
                                + "above", path: mountpoint)
        }
    }
}
