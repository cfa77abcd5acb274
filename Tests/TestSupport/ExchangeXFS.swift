import Foundation
import ProVideoStorage

/// XFS with the exchange-range feature (`mkfs.xfs -i exchange=1`, issue 64), which Debian 12's
/// xfsprogs cannot make: `Tools/xfs-exchange/make-image` fetches Debian 13's once into its
/// cache and runs it with its own loader. `LoopFilesystem.with(ExchangeXFS.type, …)` mounts one.
package enum ExchangeXFS {
    /// The `LoopFilesystem` type of such a filesystem (mounted as "xfs").
    package static let type = "xfs-exchange"

    /// The command that runs trixie's mkfs.xfs, or why there is none here: the tool's skip
    /// message (no network, no trixie in the registry, another architecture).
    private static let mkfs: Result<String, ToolUnavailable> = {
        let tool = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tools/xfs-exchange/make-image").path
        guard let result = try? TestSupport.run(tool, ["--mkfs-path"]) else {
            return .failure(ToolUnavailable(reason: "\(tool) cannot be run"))
        }
        guard result.status == 0 else {
            let reason = result.stderr.split(separator: "\n").last.map(String.init) ?? "exit status \(result.status)"
            return .failure(ToolUnavailable(reason: reason))
        }
        let words = result.stdout.split(separator: "\n").map { "'\($0)'" }
        return .success(words.joined(separator: " "))
    }()

    private struct ToolUnavailable: Error { var reason: String }

    /// Whether an exchange-capable XFS can be made here (for `.enabled(if:)`).
    package static var isAvailable: Bool { (try? mkfs.get()) != nil }

    /// Why not, for the skip's comment; nil when it can.
    package static var unavailableReason: String? {
        if case .failure(let why) = mkfs { return why.reason }
        return nil
    }

    /// The mkfs command line for a device, with the feature on.
    static func mkfsCommand() throws -> String {
        switch mkfs {
        case .success(let command): return command + " -q -f -i exchange=1 -m reflink=1"
        case .failure(let why): throw ProVideoError(.ioError, "no exchange-capable mkfs.xfs: \(why.reason)")
        }
    }
}
