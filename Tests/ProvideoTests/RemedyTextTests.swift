import CommandLineSupport
import ProVideoStorage
import Testing

/// How `provideo` words what deals with a library error (`ProVideoError.advised`).
struct RemedyTextTests {
    @Test func theCommandsFollowTheMessageInOrder() {
        let full = ProVideoError(.notEnoughSpace, "the pool has no remaining capacity", remedies: [.land, .replenish, .resize])
        #expect(full.advised == "the pool has no remaining capacity; run `provideo land` or `provideo replenish` or "
                + "`provideo resize`")
        let plain = ProVideoError(.ioError, "a read failed")
        #expect(plain.advised == "a read failed")
    }

    /// A move names the recording the error is about; a salvage without a journal, its option.
    @Test func aCommandTakesTheErrorsPathWhereItNeedsOne() {
        let kept = ProVideoError(.corruptState, "/p/recordings/a.mov.json names no absolute destination",
                                 path: "/p/recordings/a.mov", remedies: [.move])
        #expect(kept.advised.hasSuffix("; run `provideo move /p/recordings/a.mov [DEST]`"))
        let unnamed = ProVideoError(.corruptState, "kept", remedies: [.move, .salvageWithoutJournal])
        #expect(unnamed.advised == "kept; run `provideo move RECORDING [DEST]` or `provideo recover --salvage-to DIR`")
    }
}
