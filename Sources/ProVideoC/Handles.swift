import CProVideoAPI
import FoundationEssentials
import ProVideoStorage
import Synchronization

/// The objects behind the C handles. Each has its own lock: the C API lets any thread call,
/// and the Swift objects are used from one thread at a time (`Capture` says so), so calls on
/// one handle are serialized here.
final class PoolHandle: @unchecked Sendable {
    let lock = ThreadLock()
    let pool: Pool
    init(_ pool: Pool) { self.pool = pool }
}

final class CaptureHandle: @unchecked Sendable {
    let lock = ThreadLock()
    let capture: Capture
    /// Finished or cancelled through the API: `close` need not cancel it.
    var ended = false
    /// Bytes handed out by `provideo_capture_append_begin` and not yet committed: while set,
    /// calls that would fill or seal the capture's buffers are refused.
    var reserved: Int?
    init(_ capture: Capture) { self.capture = capture }
}

/// Live handles by token. A C handle is a token, not an address: tokens are never reused, so a
/// closed, forged or stale handle is simply absent here and gives `PROVIDEO_E_INVALID_HANDLE`
/// instead of a use-after-free. The registry holds the only strong reference the C side has.
enum Registry {
    enum Entry: @unchecked Sendable {
        case pool(PoolHandle)
        case capture(CaptureHandle)
    }

    private struct Table {
        /// Step 16 from a high base: tokens look like aligned pointers and never collide with
        /// small integers a caller might pass by mistake.
        var next: UInt = 0x5056_0000_0000
        var live: [UInt: Entry] = [:]
    }

    private static let table = Mutex(Table())

    static func add(_ entry: Entry) -> OpaquePointer {
        table.withLock { table in
            table.next += 16
            table.live[table.next] = entry
            return OpaquePointer(bitPattern: table.next)!
        }
    }

    static func pool(_ handle: OpaquePointer?) throws -> PoolHandle {
        guard case .pool(let pool)? = lookup(handle) else { throw invalid(handle, "pool") }
        return pool
    }

    static func capture(_ handle: OpaquePointer?) throws -> CaptureHandle {
        guard case .capture(let capture)? = lookup(handle) else { throw invalid(handle, "capture") }
        return capture
    }

    /// Removes a handle of the kind `isKind` accepts; nil when there is none.
    static func remove(_ handle: OpaquePointer?, _ isKind: (Entry) -> Bool) -> Entry? {
        guard let handle else { return nil }
        let key = UInt(bitPattern: handle)
        return table.withLock { table in
            guard let entry = table.live[key], isKind(entry) else { return nil }
            table.live[key] = nil
            return entry
        }
    }

    private static func lookup(_ handle: OpaquePointer?) -> Entry? {
        guard let handle else { return nil }
        return table.withLock { $0.live[UInt(bitPattern: handle)] }
    }

    static func invalid(_ handle: OpaquePointer?, _ kind: String) -> APIError {
        APIError(PROVIDEO_E_INVALID_HANDLE, handle == nil
                 ? "the \(kind) handle is NULL"
                 : "not an open \(kind) handle (closed already, never opened, or another kind of handle)")
    }
}
