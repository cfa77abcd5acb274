/// A benchmark that could not run as asked (too little reserve, fio missing, a bad trace):
/// the message says what to do. Exit status 1.
public struct BenchError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
