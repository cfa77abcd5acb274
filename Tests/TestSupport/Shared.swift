import Foundation

/// A value shared with injected system calls, which may run on the writer thread.
package final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    package init(_ value: Value) { self.value = value }
    package func update<T>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
    package var current: Value { lock.withLock { value } }
}
