import ProVideoSystem
import ProVideoJournal

/// A capture's destination: resolved once, checked when the capture starts, and refused while
/// another take has it.
struct CaptureDestination {
    /// The pool's directory, which no destination may be inside.
    let poolDirectory: String

    /// The destination with its directory resolved (symbolic links, `..`), so the checks made
    /// now hold at finish even if a link in the path changes.
    /// - Throws: `.invalidDestination`, `.destinationExists`.
    func resolve(_ destination: String) throws -> String {
        // "" would resolve to the current directory, refused as existing: say what is wrong.
        guard !destination.isEmpty else {
            throw ProVideoError(.invalidDestination, "the destination path is empty; give a file name", path: destination)
        }
        let absolute = FileSystem.absolute(destination)
        let name = FileSystem.lastComponent(of: absolute)
        guard !destination.hasSuffix("/"), !name.isEmpty else {
            throw ProVideoError(.invalidDestination, "\(destination) names a directory; give a file name", path: destination)
        }
        let directory = FileSystem.parent(of: absolute)
        guard let real = FileSystem.realPath(directory) else {
            throw ProVideoError(.invalidDestination, "the destination's directory \(directory) does not exist; create it "
                                + "first", path: destination)
        }
        let resolved = real + "/" + name
        try check(resolved.hasPrefix("//") ? String(resolved.dropFirst()) : resolved)
        return resolved.hasPrefix("//") ? String(resolved.dropFirst()) : resolved
    }

    private func check(_ destination: String) throws {
        let directory = FileSystem.parent(of: destination)
        guard FileSystem.isDirectory(directory) else {
            throw ProVideoError(.invalidDestination, "the destination's directory \(directory) does not exist; create it "
                                + "before starting the capture", path: destination)
        }
        guard FileSystem.isWritable(directory) else {
            throw ProVideoError(.invalidDestination, "the destination's directory \(directory) is not writable",
                                path: destination)
        }
        if FileSystem.existsWithoutFollowing(destination) {
            throw ProVideoError(.destinationExists, "\(destination) already exists; it is never overwritten: choose "
                                + "another name", path: destination)
        }
        let real = FileSystem.realPath(poolDirectory) ?? poolDirectory
        if destination.hasPrefix(real + "/") || destination.hasPrefix(poolDirectory + "/") {
            throw ProVideoError(.invalidDestination, "\(destination) is inside the pool directory; choose a destination "
                                + "outside \(poolDirectory)", path: destination)
        }
    }

    /// One destination per take: refuses a start whose `destination` is that of a running
    /// capture (`running`) or of a take waiting to land (`waiting`), since one of the two would end held in the pool
    /// with "appeared while recording". Destinations are compared as directory entries
    /// (`DestinationIdentity`: the directory's device and inode, and the name; a bind mount of
    /// the directory is the same entry), under the mutation lock, so two starts in any
    /// processes cannot both pass.
    /// - Throws: `.busy` naming the capture or the take that has the destination;
    ///   `.destinationExists` when a file is there by now.
    static func refuseTaken(_ destination: String, running: [CaptureCensus.Running], waiting: [HeldRecording]) throws {
        if let other = running.first(where: { DestinationIdentity.same($0.journal.destination, destination) }) {
            throw ProVideoError(.busy, "cannot start a capture to \(destination): process \(other.journal.pid) is already "
                                + "recording to it (capture \(other.files.id)); give this take another name, or start it "
                                + "once that one has finished", path: destination)
        }
        if let waiting = waiting.first(where: { DestinationIdentity.same($0.destination, destination) }) {
            throw ProVideoError(.busy, "cannot start a capture to \(destination): the take \(waiting.path) is waiting to "
                                + "land there; give this take another name, or start it once that one has landed",
                                path: destination, remedies: [.land])
        }
        // Checked again here, under the lock: the check at resolve time came before it, and a
        // capture that finished (or a take that landed) since has put its file there. Its
        // rename comes before its journal goes, so one of the three checks sees it.
        if FileSystem.existsWithoutFollowing(destination) {
            throw ProVideoError(.destinationExists, "\(destination) already exists; it is never overwritten: choose "
                                + "another name", path: destination)
        }
    }
}
