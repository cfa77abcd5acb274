import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing
@testable import ProVideoStorage

/// `moveHeldRecording` on a take waiting to land: never under a running transfer, and the
/// partial copy an interrupted transfer left at the landing destination goes with the take.
/// The landing destination is on /dev/shm (tmpfs, another filesystem than the pool's, writable
/// without root).
@Suite struct WaitingTakeMoveTests {
    @Test func movingAWaitingTakeRemovesItsPartialLanding() throws {
        try TestSupport.withScratchOnAnotherFilesystem { landingDirectory in
            try withPool(capacity: 64 << 20) { pool, scratch in
                let bytes = TestSupport.pattern(20 << 20, seed: 7)
                let held = try recordWaitingToLand(pool, to: landingDirectory + "/take.mov", bytes)
                let partial = RecordingCopy.temporaryPath(for: landingDirectory + "/take.mov", tag: FileSystem.lastComponent(of: held))

                // A transfer stopped once one 8 MiB chunk is flushed at the destination.
                let stopped = try pool.landPending(shouldStop: { ((try? FileSystem.facts(partial).size) ?? 0) >= UInt64(LandingRecord.chunk) })
                #expect(stopped.isEmpty)
                #expect(FileSystem.exists(partial))
                #expect(try pool.landings().first?.landedBytes ?? 0 >= LandingRecord.chunk)

                // A lander holding the take: the move is refused and changes nothing.
                let lander = try FileDescriptor.open(held, O_RDWR)
                #expect(try lander.lock(0, 1, wait: false))
                #expect(throws: ProVideoError.self) { try pool.moveHeldRecording(held, to: scratch + "/moved.mov") }
                do { try pool.moveHeldRecording(held, to: scratch + "/moved.mov") } catch let error as ProVideoError {
                    #expect(error.code == .busy && error.message.contains("a landing is transferring \(held) now"), "\(error)")
                }
                #expect(FileSystem.exists(held) && !FileSystem.exists(scratch + "/moved.mov"))
                lander.unlock(0, 1)

                let moved = try pool.moveHeldRecording(held, to: scratch + "/moved.mov")
                #expect(moved == scratch + "/moved.mov")
                let identical = TestSupport.fileHolds(moved, bytes)
                #expect(identical)
                #expect(!FileSystem.exists(partial), "the partial landing stayed at \(partial)")
                #expect(!FileSystem.exists(landingDirectory + "/take.mov"))
                #expect(!FileSystem.exists(LandingRecord.path(forHeld: held)))
                #expect(try pool.landings().isEmpty)
                #expect(try FileManager.default.contentsOfDirectory(atPath: landingDirectory).isEmpty)
            }
        }
    }
}
