import Foundation
import ProVideoStorage

/// A mistake in how a command was called: exit status 2.
public struct UsageError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The words after the program name, consumed as a command reads them: options anywhere
/// (`--flag`, `--name value`, `--name=value`), positionals in order.
public struct Arguments {
    private var words: [String]

    public init(_ words: [String]) { self.words = words }

    /// The words not consumed yet.
    public var remaining: [String] { words }

    /// Removes `--name` and reports whether it was there.
    public mutating func flag(_ name: String) -> Bool {
        guard let index = words.firstIndex(of: name) else { return false }
        words.remove(at: index)
        return true
    }

    /// Removes `--name value` or `--name=value` and returns the value.
    public mutating func option(_ name: String) throws -> String? {
        if let index = words.firstIndex(where: { $0.hasPrefix(name + "=") }) {
            return String(words.remove(at: index).dropFirst(name.count + 1))
        }
        guard let index = words.firstIndex(of: name) else { return nil }
        guard index + 1 < words.count else { throw UsageError("\(name) needs a value") }
        let value = words[index + 1]
        words.removeSubrange(index...index + 1)
        return value
    }

    /// Removes `--name`, `--name NUMBER` or `--name=NUMBER` (`status --watch [SECONDS]`):
    /// nil when absent, `whenBare` when given without a number.
    public mutating func optionalNumber(_ name: String, whenBare: String) throws -> String? {
        if words.contains(where: { $0.hasPrefix(name + "=") }) { return try option(name) }
        guard let index = words.firstIndex(of: name) else { return nil }
        if index + 1 < words.count, Double(words[index + 1]) != nil {
            return try option(name)
        }
        words.remove(at: index)
        return whenBare
    }

    /// Removes and returns the next positional word.
    public mutating func positional(_ what: String) throws -> String {
        guard let index = words.firstIndex(where: { !$0.hasPrefix("--") || $0 == "--" }) else {
            throw UsageError("missing \(what)")
        }
        return words.remove(at: index)
    }

    /// Fails on anything left over.
    public func finish() throws {
        if let extra = words.first { throw UsageError("unexpected argument '\(extra)'") }
    }
}
