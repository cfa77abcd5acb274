/// A benchmark that could not run as asked (too little reserve, fio missing, a bad trace):
/// the message says what to do. Exit status 1.
package struct BenchError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}
