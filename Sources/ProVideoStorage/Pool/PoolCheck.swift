import Glibc
import ProVideoSystem

extension Pool {
    /// Checks the pool's accounting against what the filesystem really allocated. Returns one
    /// sentence per problem; empty when the pool is consistent:
    /// - the reserve is fully allocated and holds no blocks past its end;
    /// - `remainingCapacity` does not exceed what is really reserved, and the reserve and the
    ///   captures' grants together do not exceed `initialCapacity`;
    /// - each running capture's file is fully allocated up to what it was granted;
    /// - no capture is left without a live owner (it would be salvaged by `open`);
    /// - the reserve's size is a whole number of allocation units.
    package func check() throws -> [String] {
        var problems: [String] = []
        let reserveFile = reserve(layout.reserve)
        let size = try reserveFile.size()
        let (mapped, end) = try reserveFile.extents()
        if mapped < size {
            problems.append("the reserve is \(size) bytes but only \(mapped) are allocated")
        }
        if end > reserveFile.rounded(size) {
            problems.append("the reserve holds \(end - reserveFile.rounded(size)) bytes allocated past its end")
        }
        if size % reserveFile.unit != 0 {
            problems.append("the reserve's size \(size) is not a multiple of \(reserveFile.unit)")
        }
        let held = try heldRecordings()
        for held in held where held.noteUnreadable == true {
            problems.append("the held recording \(held.path): \(held.reason)")
        }
        for held in held where try !FileSystem.isPresent(held.path) {
            problems.append("the pool lists \(held.path), which is missing")
        }
        for held in held where try FileSystem.isPresent(held.path) {
            let (_, heldEnd) = try reserve(held.path).extents()
            if heldEnd > reserveFile.rounded(Int64(try FileSystem.facts(held.path).size)) {
                problems.append("the held recording \(held.path) holds blocks past its end")
            }
        }
        var reserved = mapped
        for (name, what) in try layout.strayCaptureEntries() {
            problems.append("\(layout.captures)/\(name) is \(what), not a capture (the pool makes only directories there); "
                            + "nothing uses it: remove it")
        }
        for files in try layout.captureFiles() {
            switch CaptureClaim.liveness(files, calls) {
            case .dead:
                problems.append("the capture \(files.id) is in the pool with no live recorder; a recovery salvages it")
                continue
            case .unknown(let error):
                problems.append("\(layout.captures)/\(files.id) may be a running capture and cannot be read "
                                + "(\(error.message)); remove it if it is not a capture")
                continue
            case .alive: break
            }
            // A capture at its start (before its data is made) or one that ended since its
            // liveness was read has no file to check.
            guard try FileSystem.isPresent(files.data) else { continue }
            let granted = Int64(try FileSystem.facts(files.data).size)
            let (data, _) = try reserve(files.data).extents()
            reserved += data
            if data < granted {
                problems.append("the capture \(files.id)'s file was granted \(granted) bytes but only \(data) are allocated")
            }
        }
        let remaining = try remainingCapacity
        if remaining > reserved {
            problems.append("remainingCapacity \(remaining) exceeds the \(reserved) bytes really reserved")
        }
        let capacity = try initialCapacity
        // A grant in flight holds its bytes in a capture's file and the reserve until its cut.
        let account = try lock.withReserve { try capacityAccount(reserve(layout.reserve)) }
        do {
            if try account.overcommitted > 0 {
                problems.append("the reserve (\(account.ownReserve) bytes beyond grants in flight) and the captures' grants "
                                + "(\(try account.held) bytes) exceed the pool's capacity of \(capacity) bytes")
            }
        } catch let error as ProVideoError where error.code == .corruptState {
            problems.append("the pool's capacity cannot be checked: \(error.message)")
        }
        return problems
    }
}
