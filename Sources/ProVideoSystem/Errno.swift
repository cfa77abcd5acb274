import Glibc

/// errno values as people read them.
package enum Errno {
    /// strerror(3): the C library's text for `errno` ("No space left on device").
    package static func description(_ errno: Int32) -> String { String(cString: strerror(errno)) }
}
