import ProVideoSystem

/// Undoing a step after it failed, keeping the failure: a rollback that fails too is added to
/// the first error's message (what it could not restore), never thrown in its place. The first
/// error says what went wrong; a rollback's error thrown over it would hide that, and a
/// rollback swallowed silently (`try?`) would hide what is now left undone.
enum Rollback {
    /// Runs `undo` after `error`.
    /// - Returns: `error`; when `undo` failed, as a `ProVideoError` (`.ioError` for another
    ///   error) whose message adds that `what` could not be restored, and why, and whose
    ///   remedies add `remedy`, the operation that restores it.
    static func keepingFirst(_ error: Error, restoring what: String, remedy: ProVideoError.Remedy? = nil,
                             _ undo: () throws -> Void) -> Error {
        do {
            try undo()
            return error
        } catch let failed {
            var first = error as? ProVideoError ?? ProVideoError(.ioError, "\(error)")
            first.message += "; and \(what) could not be restored: \((failed as? ProVideoError)?.message ?? "\(failed)")"
            if let remedy, !first.remedies.contains(remedy) { first.remedies.append(remedy) }
            return first
        }
    }
}
