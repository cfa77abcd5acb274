import Synchronization

extension Pool {
    private static let sharedPool = Mutex<Pool?>(nil)

    /// The pool at the default path (`PROVIDEO_POOL`, else `defaultPath`), opened on first use
    /// and then the same instance for the life of the process (Apple: `shared`). It throws,
    /// rather than being optional, so that code learns why there is no pool (not created, no
    /// permission); a failed open is retried on the next access. Any thread.
    /// - Throws: as `open(at:)`.
    public static var shared: Pool {
        get throws {
            try sharedPool.withLock { cached in
                if let cached { return cached }
                let pool = try open(at: nil)
                cached = pool
                return pool
            }
        }
    }
}
