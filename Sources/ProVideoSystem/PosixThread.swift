import CProVideo
import Glibc

/// pthread_create(3) for a Swift closure, and the thread's name (pthread_setname_np(3): at most
/// 15 bytes, for `top -H`, `perf` and core dumps). `JoinedThread` and `DetachedThread` start
/// their threads here.
enum PosixThread {
    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(_ name: String, _ run: @escaping @Sendable () -> Void) { (self.name, self.run) = (name, run) }
    }

    /// Starts `body` on a new thread named `name`.
    /// - Throws: `.ioError` with pthread_create(3)'s error (EAGAIN: out of threads or memory).
    static func start(name: String, _ body: @escaping @Sendable () -> Void) throws -> pthread_t {
        let box = Unmanaged.passRetained(Body(name, body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
            _ = pv_name_this_thread(body.name)  // a name is for people; a thread runs without one
            body.run()
            return nil
        }, box)
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(box).release()
            throw ProVideoError.system("pthread_create", errno: result)
        }
        return thread
    }
}
