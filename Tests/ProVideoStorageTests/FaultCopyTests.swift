import Foundation
import Glibc
import TestSupport
import Testing
@testable import ProVideoStorage

/// What a swapped system call saw, shared with the test (the closures are @Sendable).
final class FaultCallLog: @unchecked Sendable {
    struct Copy: Equatable { var offsetIn: Int64; var offsetOut: Int64; var length: Int }
    private let lock = NSLock()
    private var _copies: [Copy] = []
    private var _partialWrites: [(offset: Int64, count: Int)] = []

    func record(_ copy: Copy) { lock.withLock { _copies.append(copy) } }
    func recordWrite(offset: Int64, count: Int) { lock.withLock { _partialWrites.append((offset, count)) } }
    var copies: [Copy] { lock.withLock { _copies } }
    var partialWrites: [(offset: Int64, count: Int)] { lock.withLock { _partialWrites } }

    /// copy_file_range done by hand (pread + pwrite). The kernel answers EXDEV between ext4
    /// and tmpfs, so the swapped call plays a kernel (or an NFS server-side copy) that can
    /// copy across them, copying at most `length` bytes.
    static func emulatedCopy(_ fdIn: Int32, _ offsetIn: Int64, _ fdOut: Int32, _ offsetOut: Int64, _ length: Int) -> Int {
        var buffer = [UInt8](repeating: 0, count: length)
        let n = pread(fdIn, &buffer, length, off_t(offsetIn))
        guard n > 0 else { return n < 0 ? -Int(errno) : 0 }
        let m = pwrite(fdOut, buffer, n, off_t(offsetOut))
        return m < 0 ? -Int(errno) : m
    }
}

extension FilesystemTests {
    /// F7 through the swappable syscall layer: copy_file_range that stops part-way.
    @Suite struct FaultCopy {
        /// Runs a capture of `input` into a pool on a loop ext4 with `calls`, finishing to a
        /// destination on tmpfs, and checks the destination and the pool afterwards.
        private func copyOut(_ input: [UInt8], calls: SystemCalls) throws {
            try LoopFilesystem.with("ext4", megabytes: 128) { fs in
                try LoopFilesystem.with("tmpfs", megabytes: 32) { tmp in
                    let path = fs.mountPoint + "/pool"
                    let pool = try Pool.create(at: path, capacity: 16 << 20, systemCalls: calls)
                    defer { FS.destroyQuietly(path) }
                    let destination = tmp.mountPoint + "/take.mov"
                    let capture = try pool.startCapture(to: destination, options: FS.options)
                    var offset = 0
                    while offset < input.count {
                        let end = min(offset + 333_333, input.count)
                        try capture.append(Array(input[offset..<end]))
                        offset = end
                    }
                    let result = try capture.finish()
                    #expect(result.path == destination)
                    #expect(result.length == Int64(input.count))
                    #expect(try TestSupport.sha256sum(destination) == TestSupport.sha256Hex(input))
                    #expect(TestSupport.fileEquals(destination, input))
                    #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.mountPoint) == ["take.mov"])
                    #expect(try pool.remainingCapacity == 16 << 20, "the reserve was not restored whole")
                    try FS.expectIdleAndConsistent(pool)
                }
            }
        }

        /// copy_file_range copies 1 MiB, then fails with EIO: the copy goes on by hand from
        /// exactly 1 MiB, and the destination is identical.
        @Test func copyThatStopsAfterOneMiBResumesThere() throws {
            let input = TestSupport.pattern(5 * (1 << 20) + 17, seed: 21)
            let log = FaultCallLog()
            var calls = SystemCalls.live
            calls.copyFileRange = { fdIn, offsetIn, fdOut, offsetOut, length in
                log.record(.init(offsetIn: offsetIn, offsetOut: offsetOut, length: length))
                if log.copies.count > 1 { return -Int(EIO) }
                return FaultCallLog.emulatedCopy(fdIn, offsetIn, fdOut, offsetOut, min(length, 1 << 20))
            }
            calls.pwrite = { fd, buffer, count, offset in
                if TestSupport.path(of: fd).hasSuffix(".partial") { log.recordWrite(offset: offset, count: count) }
                return SystemCalls.live.pwrite(fd, buffer, count, offset)
            }
            try copyOut(input, calls: calls)
            let total = Int64(input.count)
            #expect(log.copies == [.init(offsetIn: 0, offsetOut: 0, length: input.count),
                                   .init(offsetIn: 1 << 20, offsetOut: 1 << 20, length: input.count - (1 << 20))])
            let writes = log.partialWrites
            #expect(writes.first?.offset == 1 << 20, "the fallback must resume at 1 MiB: \(writes.prefix(3))")
            var next: Int64 = 1 << 20
            for write in writes {
                #expect(write.offset == next, "the fallback skipped or repeated bytes at \(write.offset)")
                next = write.offset + Int64(write.count)
            }
            #expect(next == total)
        }

        /// copy_file_range copies 1 byte per call: every call asks exactly for the bytes still
        /// left, from where the last one stopped.
        @Test func oneBytePerCallAsksOnlyForWhatIsLeft() throws {
            let input = TestSupport.pattern(100_003, seed: 22)
            let log = FaultCallLog()
            var calls = SystemCalls.live
            calls.copyFileRange = { fdIn, offsetIn, fdOut, offsetOut, length in
                log.record(.init(offsetIn: offsetIn, offsetOut: offsetOut, length: length))
                return FaultCallLog.emulatedCopy(fdIn, offsetIn, fdOut, offsetOut, min(length, 1))
            }
            try copyOut(input, calls: calls)
            let copies = log.copies
            #expect(copies.count == input.count)
            let wrong = copies.enumerated().filter { index, copy in
                copy != .init(offsetIn: Int64(index), offsetOut: Int64(index), length: input.count - index)
            }
            #expect(wrong.isEmpty, "calls that did not ask for exactly the rest: \(wrong.prefix(3))")
        }
    }
}
