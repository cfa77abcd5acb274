import Foundation

/// A task executor with one thread of its own, for the tasks of a test that must keep running
/// on time while the rest of the suite blocks Swift's cooperative pool (a thread per core,
/// which synchronous tests hold for seconds): a status observer, a feeder.
package final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    /// One for the whole test process; its thread runs for as long as the process.
    package static let shared = ThreadExecutor()

    // `jobs` is read and written only with `condition` locked.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    private init() {
        let thread = Thread { [self] in run() }
        thread.name = "test-executor"
        thread.start()
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
