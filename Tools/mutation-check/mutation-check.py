#!/usr/bin/env python3
"""Mutation check: remove one durability step or promise at a time from the library, rebuild,
run the tests that should notice, restore the source, and print which test caught each
mutation. Exits 1 when a mutation survives (or its code no longer exists: a mutation that
cannot be applied must not pass silently), 2 on usage errors.

Usage (from the package root, as root so that the loop-filesystem tests run too):
    python3 Tools/mutation-check/mutation-check.py [--only NAME[,NAME...]] [--list]

Each mutation is one exact text replacement in one source file. Runs take about a minute per
mutation on 2 cores (an incremental debug build and a filtered `swift test`).
"""
import argparse
import os
import re
import subprocess
import sys
import time

S = "Sources/ProVideoStorage/"
# Seconds one filtered test run may take before it counts as hung.
TEST_TIMEOUT = 600

# name, file, original text, mutated text, test filter (a regex over test names)
MUTATIONS = [
    ("commit record without its data sync", "Sources/ProVideoWritePath/CaptureWriterRequests.swift",
     "        try engine.queueDataSync(fd: data.rawValue, tag: CompletionTag.dataSync.rawValue)",
     "        try engine.queueDataSync(fd: commitFile.rawValue, tag: CompletionTag.dataSync.rawValue)",
     "commitRecordFollowsADataSync"),
    ("no directory flush after the rename to the destination", S + "Placement/RecordingMove.swift",
     "                    try directory.sync(calls)\n                    try sourceDirectory.sync(calls)\n",
     "                    try sourceDirectory.sync(calls)\n",
     "publishedRecordingIsFlushedBeforeTheJournalMovesOn"),
    ("no directory flush after the copy's no-clobber publish", S + "Placement/NoClobberPublish.swift",
     "                learnt.methods.withLock { $0[device] = method }\n                try directory.sync(calls)\n",
     "                learnt.methods.withLock { $0[device] = method }\n",
     "publishedRecordingIsFlushedBeforeTheJournalMovesOn"),
    ("copy's SHA-256 verification skipped", S + "Placement/RecordingCopy.swift",
     "guard try digest(source, length: length, calls: calls, control: control) == copiedDigest else {",
     "guard true else {",
     "corruptedCopyIsNeverPublished"),
    ("plain rename instead of no-clobber", "Sources/ProVideoSystem/SystemCalls.swift",
     "renameNoReplace: { from, to in pv_rename_noreplace(from, to) },",
     "renameNoReplace: { from, to in Glibc.rename(from, to) == 0 ? 0 : -Glibc.errno },",
     "takenDestinationKeepsRecordingInPool|existingDestination"),
    ("recording not cut to its length", S + "Placement/RecordingPlacement.swift",
     "        try data.truncate(length, calls)\n        try data.sync(calls)",
     "        try data.sync(calls)",
     "oddFramesGiveAnExactFile|tinyRecordingsAreExact"),
    ("short-completion retry not rounded to the alignment", "Sources/ProVideoSystem/WriteProgress.swift",
     "let reached = result > 0 ? (done + Int(result)) / alignment * alignment : done",
     "let reached = result > 0 ? done + Int(result) : done",
     "retryStartsAtAnAlignedBoundary|shortCompletionsAreResubmitted"),
    ("salvage keeps the whole file", S + "Recovery/RecoveryDecision.swift",
     ": .salvage(length: committed, claimed: nil)",
     ": .salvage(length: size, claimed: nil)",
     "killedRecorderIsSalvaged|ioErrorStopsTheCaptureAndTheRestIsSalvaged|killNineAtRandomPoints|theTableRows"),
    ("remaining capacity ignores a running capture", S + "Reserve/CapacityAccount.swift",
     "            return (captures.map { max($0.granted - $0.written, 0) } + [ownReserve]).saturatingSum()",
     "            return ownReserve",
     "otherProcessesSeeProgressEverySecond|slowStreamFramesBecomeDurable"),
    # Promises of several captures in one pool.
    ("a grant does not cut the reserve", S + "Reserve/ReserveGrants.swift",
     "            try reserveFD.truncate(size - amount, reserve.calls)\n",
     "",
     "eightCapturesFromOneProcess|threeCapturesFillThePool"),
    # Grants that scale (issue 44): no grant waits behind another's fallocate, a cut or a give-back.
    ("a grant's fallocate under the reserve lock", S + "Reserve/ReserveGrants.swift",
     "        let rc = calls.fallocate(data.rawValue, false, granted, amount)\n        if rc == -ENOSPC",
     "        let rc = try lock.withReserve { calls.fallocate(data.rawValue, false, granted, amount) }\n        if rc == -ENOSPC",
     "theCapturesGrantsRunAtOnce"),
    ("the status stream coalesces events for longer than its fallback interval", S + "Pool/StatusUpdates.swift",
     "    static let statusEventCoalescing: UInt32 = 50_000\n",
     "    static let statusEventCoalescing: UInt32 = 1_500_000\n",
     "updatesFromACaptureInAnotherProcess"),
    ("a reserve that cannot regrow is ignored by the give-back", S + "Recovery/CaptureCompletion.swift",
     "            } catch let error as ProVideoError where error.code == .notEnoughSpace {\n",
     "            } catch {\n",
     "aReserveThatCannotRegrowStopsTheFinishWithItsError"),
    ("a second writer's open of a take in the mount is let in", "Sources/ProVideoMount/MountOperations.swift",
     "                return flags & O_TRUNC != 0 && mounted.length > 0 ? -EPERM : -EBUSY\n",
     "                return flags & O_TRUNC != 0 && mounted.length > 0 ? -EPERM : 0\n",
     "aTakeInProgressHasOneWriter"),
    ("a grant the recorder asked past is not counted late", S + "Capture/CaptureGranter.swift",
     "                    let late = self.wanted.load(ordering: .sequentiallyConsistent) > from\n",
     "                    let late = head.load(ordering: .sequentiallyConsistent) >= from\n",
     "eachGrantIsTimedStepByStep"),
    ("a claim that waited behind the cuts not counted", S + "Capture/CaptureGranter.swift",
     "                    if behindCuts { timings.claimsBehindCuts += 1 }\n",
     "",
     "aCutTheReserveDoesNotPlaceSendsTheClaimBehindTheCuts"),
    ("a claim beside a cut in flight counts the cut bytes twice", S + "Reserve/ReserveClaims.swift",
     "            if reserveSize == cut.from - cut.bytes { return total - cut.bytes }\n",
     "            if reserveSize == cut.from - cut.bytes { return total }\n",
     "aGrantBesideACutFindsTheReserveAsItIs|apiTestProgramPassesEveryCheck"),
    ("a claim beside a cut in flight waits for the cut", S + "Reserve/ReserveClaims.swift",
     "            guard let cut = cuts.first else { return total }\n",
     "            guard let cut = cuts.first else { return total }\n            if cut.bytes > 0 { return nil }\n",
     "aGrantBesideACutFindsTheReserveAsItIs"),
    ("a cut in flight that the reserve's size does not place is trusted", S + "Reserve/ReserveClaims.swift",
     "            return nil\n        }\n    }\n\n    /// A cut of `bytes`",
     "            return total - cut.bytes\n        }\n    }\n\n    /// A cut of `bytes`",
     "aCutTheReserveDoesNotPlaceSendsTheClaimBehindTheCuts|claimsAreSeenByOthersAndDieWithTheirHolder"),
    ("a recovery asked for skips the salvage while the pool is being changed", S + "Pool/Pool.swift",
     "        if waitingForTheLock { return try lock.withMutation(repairing) }\n",
     "",
     "aRecoveryWaitsForAChangeOfThePoolInProgress"),
    ("a claim's end clears its slot's cut in flight", S + "Reserve/ReserveClaims.swift",
     "        if cutEnded { (next.cutting, next.cutFrom) = (0, 0) }\n",
     "        (next.cutting, next.cutFrom) = (0, 0)\n",
     "aGrantBesideACutFindsTheReserveAsItIs|apiTestProgramPassesEveryCheck|whatFitsIsKeptAndTheRestIsReported"),
    ("a slot's cut of more than it counts is read as a figure", S + "Reserve/ReserveClaims.swift",
     "            if slot.cutting > [slot.claimed, slot.allocated].saturatingSum() || slot.cutting > slot.cutFrom {",
     "            if false {",
     "claimsAreSeenByOthersAndDieWithTheirHolder"),
    ("a grant's cut on the granter's thread", S + "Capture/CaptureGranter.swift",
     "                    if cutting { cutter?.cut(claimed) }",
     "                    if cutting { try grants.cut(claimed) }",
     "aCutNeverDelaysTheNextGrant"),
    ("a give-back holding the reserve lock while it grows the reserve", S + "Recovery/CaptureCompletion.swift",
     "                _ = try reserve.refill(by: grow)\n",
     "                _ = try lock.withReserve { try reserve.refill(by: grow) }\n",
     "aGiveBackNeverDelaysAGrant"),
    ("a claim in flight not counted as its capture's", S + "Reserve/CapacityAccount.swift",
     "granted = max(Int64(clamping: facts.size), claims.claimEnds[facts.inode] ?? 0)",
     "granted = Int64(clamping: facts.size)",
     "aGrantInFlightIsCountedOnceAtEachStep|asyncRecorderWithStatusObserver"),
    ("a dead holder's claim slot counted", S + "Reserve/ReserveClaims.swift",
     "                  try file.isLockedByOthers(Self.slotLockBase + Int64(index), 1) else { continue }",
     "                  true else { continue }",
     "claimsAreSeenByOthersAndDieWithTheirHolder"),
    ("a claim slot's value not range-checked", S + "Reserve/ReserveClaims.swift",
     "where !(0...Reserve.maximumSize).contains(value) {",
     "where value < 0 && false {",
     "claimsAreSeenByOthersAndDieWithTheirHolder"),
    ("salvage takes running captures too", S + "Recovery/RecoveryDecision.swift",
     "        case .alive: return .leave\n",
     "        case .alive: break\n",
     "oneOfFourKilled|runningCapturesRefuseResizeAndDestroyOnly|committedBytesThatMayExist"),
    # Recovery on proof (issue 37).
    ("an unreadable commit record read as nothing committed", S + "Recovery/RecoveryDecision.swift",
     "        guard case .length(let committed) = facts.commit else { return .keep(.commitUnknown) }",
     "        guard case .length(let committed) = facts.commit else { return .discard(reported: true) }",
     "committedBytesThatMayExist|unreadableCommitRecordKeepsTheTake|aStateFileTheMemberCannotReadKeepsTheTake"),
    ("a finishing take's lock removed before its journal", S + "Recovery/CaptureCompletion.swift",
     "for file in [files.data, files.journal + \".tmp\", files.journal, files.commit, files.progress] {",
     "for file in [files.progress, files.commit, files.data, files.journal + \".tmp\", files.journal] {",
     "anotherThreadOpeningThePoolNeverSalvagesAFinishingTake"),
    ("a take reported recovered where its data is gone", S + "Recovery/RecoveryDecision.swift",
     "return facts.placed == .holds(committed) ? .completeRemoval(placedLength: committed) : .keep(.dataMissing)",
     "return .completeRemoval(placedLength: committed)",
     "nothingIsReportedPlaced|missingDataIsNotReportedRecovered"),
    # Promises of the write path state machine.
    ("a buffer that fills during its flush waits for it", "Sources/ProVideoWritePath/CaptureWriter.swift",
     "        let slot = ring.filling\n        if let write",
     "        let slot = ring.filling\n        if let slot { try waitUntil(\"flush\", until: Self.now() + Self.stallLimit) { ring.slots[slot].phase != .flushing } }\n        if let write",
     "lateFlushesNeverBlockTheRecorder"),
    ("capturing released before the requests stopped", S + "Capture/Capture.swift",
     "            if writer.stopRequests() {\n                _ = granter.stop()",
     "            if true {\n                _ = granter.stop()",
     "failedWriteStopsEveryWriteBeforeRelease"),
    ("no cancellation after a failure", "Sources/ProVideoWritePath/CaptureWriterRequests.swift",
     "        if outstanding > 0 { try? engine.cancelAll(tag: CompletionTag.cancel.rawValue) }",
     "",
     "failedWriteStopsEveryWriteBeforeRelease"),
    ("a patch ignores a flush in flight", "Sources/ProVideoWritePath/CaptureWriterBlocks.swift",
     "try waitUntil(\"the flush of the patched buffer\", until: deadline) { !ring.flushCovers(offset..<end) }",
     "",
     "patchNeverTearsAFlushInFlight"),
    ("progress published every 2 s", "Sources/ProVideoWritePath/CaptureWriter.swift",
     "now - published.at >= Self.progressInterval",
     "now - published.at >= 2_000_000_000",
     "otherProcessesSeeProgressEverySecond"),
    ("write size not rounded to the alignment", S + "Capture/CaptureOptions.swift",
     "let unit = (max(alignment, optimalIOSize) + alignment - 1) / alignment * alignment",
     "let unit = max(alignment, optimalIOSize)",
     "writeSizesAreAligned"),
    # Steps mutations written without seeing the tests found unguarded (issue 25).
    ("no directory flush after a take is kept in recordings/", S + "Placement/RecordingPlacement.swift",
     "        try FileSystem.rename(files.data, kept)\n        try FileSystem.syncDirectory(layout.recordings, calls)\n",
     "        try FileSystem.rename(files.data, kept)\n",
     "aTakeKeptInThePoolIsFlushedBeforeTheJournalMovesOn"),
    ("a same-length file at a copy's destination taken as the copy", S + "Placement/RecordingCopy.swift",
     "        guard try digest(source, length: length, calls: calls, control: control) == existingDigest else { return nil }\n",
     "",
     "aForeignFileOfTheSameLengthIsNotTheCopy"),
    ("capture file opened without O_DIRECT", S + "Capture/CaptureStart.swift",
     "let data = try FileDescriptor.open(files.data, O_RDWR, direct: true)",
     "let data = try FileDescriptor.open(files.data, O_RDWR, direct: false)",
     "theCaptureWritesWithODirect"),
    ("commit record's check word ignored", "Sources/ProVideoJournal/CommitRecord.swift",
     "return word(bytes, at: start + 8) == length ^ commitCheck ? Int64(clamping: length) : nil",
     "return Int64(clamping: length)",
     "aBadCommitRecordLosesToTheOtherSlot"),
    ("invariant check disabled", "Sources/ProVideoWritePath/CaptureWriterRequests.swift",
     "        if let problem { throw violated(problem) }",
     "        _ = problem",
     "aBrokenInvariantFailsTheCapture"),
    ("any file at a landing's destination taken as landed", S + "Landing/LandingTransfer.swift",
     "try holdsLanded(existing, length: length, record) else {",
     "true else {",
     "aForeignFileAtTheDestinationIsNotTheLandedTake"),
    ("the recorder waits for a grant under overrun policy fail", S + "Capture/Capture.swift",
     "if end > grants.granted, let deadline { grants = granter.wait(reaching: end, until: deadline) }",
     "if end > grants.granted { grants = granter.wait(reaching: end, until: deadline ?? Self.now() + Self.stallLimit) }",
     "failRefusesAtOnceWhileAGrantIsSlow"),
    # A suite that fails on every defect (issue 38).
    ("the spare gives its blocks but not its inode", S + "Reserve/MetadataHeadroom.swift",
     "        _ = try? FileSystem.remove(path)\n        return true",
     "        return true",
     "theSpareGivesItsInodeForAPoolFile"),
    ("any write's success restarts every request's ENOSPC count", "Sources/ProVideoWritePath/CaptureWriterRequests.swift",
     "        if result >= 0, let retry { noSpaceRetries[retry] = 0 }",
     "        if result >= 0 { for index in noSpaceRetries.indices { noSpaceRetries[index] = 0 } }",
     "aWriteThatKeepsMeetingNoSpaceFailsAfterItsOwnRetries"),
    ("EMFILE while reading a capture's lock taken for a dead recorder", S + "Capture/CaptureClaim.swift",
     "            return error.errno == ENOENT ? .dead : .unknown(error)",
     "            return error.errno == ENOENT || error.errno == EMFILE ? .dead : .unknown(error)",
     "aCaptureWhoseLockCannotBeReadIsLeftRunning"),
    ("both commit records in one sector", "Sources/ProVideoJournal/CommitRecord.swift",
     "static let commitSlots: [Int64] = [0, 512]",
     "static let commitSlots: [Int64] = [0, 16]",
     "aGarbledSectorLeavesTheOtherCommitRecord"),
    ("an unreadable progress block counted as nothing written", S + "Reserve/CapacityAccount.swift",
     "                do { return try CaptureJournal.readWritten(files.progress) } catch {\n",
     "                do { return try CaptureJournal.readWritten(files.progress) } catch {\n                    return 0\n",
     "anUnreadableProgressBlockIsUnknownNotZero"),
    ("a progress block that is gone read as nothing written", S + "Reserve/CapacityAccount.swift",
     "written.map(reserve.rounded) ?? granted : granted,",
     "written.map(reserve.rounded) ?? 0 : granted,",
     "anUnreadableProgressBlockIsUnknownNotZero"),
    ("a capture's uncountable grant counted as none", S + "Reserve/CapacityAccount.swift",
     "            } catch let error as ProVideoError where error.errno == ENOENT {",
     "            } catch {",
     "aReplenishBesideAnUncountableGrantGrowsNothing"),
    ("a negative bitrate admitted", S + "Capture/CaptureStart.swift",
     "        guard options.bitrate >= 0 else {",
     "        guard true else {",
     "aNegativeBitrateIsRefused"),
    ("destinations compared by their text", S + "Capture/CaptureDestination.swift",
     "running.first(where: { DestinationIdentity.same($0.journal.destination, destination) })",
     "running.first(where: { $0.journal.destination == destination })",
     "aDestinationThroughABindMountIsRefused"),
    ("an unreadable salvage log overwritten as if empty", S + "Recovery/RecoveredLog.swift",
     "            try FileSystem.rename(file, file + \".unreadable\")\n",
     "",
     "anUnreadableSalvageLogIsKeptBeside"),
    ("a cut commit file read as its remaining record", "Sources/ProVideoJournal/CommitRecord.swift",
     "        guard bytes.count >= commitFileLength else { return .torn }\n"
     "        let lengths = commitSlots.map { Int($0) }.compactMap {",
     "        let lengths = commitSlots.map { Int($0) }.filter { $0 + commitRecordLength <= bytes.count }.compactMap {",
     "aCutCommitFileProvesNothing"),
    ("two takes admitted to one destination", S + "Capture/CaptureStart.swift",
     "                try CaptureDestination.refuseTaken(destination, running: census.running, waiting: try waitingToLand())\n",
     "",
     "aTakensDestinationIsRefused|aRunningCapturesDestinationIsRefused"),
    # Whom root acts as, and the pool's files as input (issue 38).
    ("a capture's data of another user than its directory's", S + "Placement/RecordingOwner.swift",
     "        guard data.uid == directory.uid else {",
     "        guard true else {",
     "aMembersDataInAnOwnersDirectoryIsNeverPlacedAsTheOwner"),
    ("a file acted on as its owner with more than one link", S + "Placement/RecordingOwner.swift",
     "guard facts.mode & 0o022 == 0, facts.linkCount == 1, facts.mode",
     "guard facts.mode & 0o022 == 0, facts.mode",
     "aHardLinkedFileIsNeverActedOnAsItsOwner"),
    ("a state file read before its size is checked", "Sources/ProVideoSystem/FileSystem.swift",
     "guard facts.mode & UInt32(S_IFMT) == UInt32(S_IFREG), procfs || facts.size <= UInt64(smallFileLimit) else {",
     "guard facts.mode & UInt32(S_IFMT) == UInt32(S_IFREG), true else {",
     "aHugeStateFileIsRefusedBySizeUnread"),
    ("landing threads detached again: landPending returns while they still end", S + "Landing/Landing.swift",
     "        threads.forEach { $0.join() }\n",
     "        threads.forEach { _ = Unmanaged.passRetained($0) }\n",
     "aLandingReturnsOnlyOnceItsThreadsHaveEnded"),
    # Held recordings on proof: a note or a listing that cannot be read is never "nothing held".
    ("a held recording whose note cannot be read vanishes", S + "Pool/PoolMaintenance.swift",
     "            return unreadableNote(path, recording: recording, error: error)\n",
     "            return nil\n",
     "aHeldRecordingWhoseNoteCannotBeReadIsStillHeld"),
    ("a held recording whose note is gone vanishes", S + "Pool/PoolMaintenance.swift",
     "        return noted + noteless\n",
     "        return noted\n",
     "aHeldRecordingWhoseNoteCannotBeReadIsStillHeld"),
    ("recordings/ that cannot be listed read as nothing held", S + "Pool/PoolMaintenance.swift",
     "        guard let names = try FileSystem.entries(layout.recordings, consequence:",
     "        guard let names = try? FileSystem.entries(layout.recordings, consequence:",
     "unlistableRecordingsAreNotNothingHeld"),
    ("provideo recover skips the salvage while another process changes the pool", "Tools/provideo/Commands.swift",
     "let pool = try Pool.open(at: path, systemCalls: .live, waitingForTheLock: true, fstab: fstab)",
     "let pool = try Pool.open(at: path, systemCalls: .live, waitingForTheLock: false, fstab: fstab)",
     "recoverWaitsForAChangeOfThePoolInProgress"),
    ("status shows a floor of the remaining capacity as the exact figure", S + "Reserve/CapacityAccount.swift",
     "         captures.compactMap { $0.uncountable ?? $0.unreadable })",
     "         [])",
     "anUnreadableProgressBlockIsUnknownNotZero"),
    ("a field of a 1.0 struct resized in provideo.h", "Sources/CProVideoAPI/include/provideo.h",
     "    uint32_t busy_reasons;      /* PROVIDEO_BUSY_* bits; 0 when idle */",
     "    uint64_t busy_reasons;      /* PROVIDEO_BUSY_* bits; 0 when idle */",
     "theABIGrowsOnly"),
    ("the landing backlog summed with a trap on overflow", S + "Pool/Pool.swift",
     "            landingBytes: landing.map(\\.length).saturatingSum(),",
     "            landingBytes: landing.reduce(0) { $0 + $1.length },",
     "landingLengthsThatOverflowTheirSumAreHeld"),
    ("land says nothing of a held recording whose note cannot be read", S + "Landing/Landing.swift",
     "        return done + unknown\n",
     "        return done\n",
     "aHeldRecordingWhoseNoteCannotBeReadIsStillHeld"),
    ("the recorder's advance takes the granter's lock again (priority inversion)", S + "Capture/CaptureGranter.swift",
     "    func advance(to head: Int64, needing end: Int64) -> Grants {\n",
     "    func advance(to head: Int64, needing end: Int64) -> Grants {\n        condition.lock(); defer { condition.unlock() }\n",
     "anAppendTakesNoLockTheGranterHolds"),
    # Leads in stream time (issue 44 items 2 and 3).
    ("a capture's lead is two steps, not stream time", S + "Capture/GrantLead.swift",
     "        ask = max(min(Self.streamBytes(time, bitrate: bitrate), eighth), steps)\n",
     "        ask = steps\n",
     "grantsSlowerThanTwoStepsRefuseNoFrame|aLeadIsStreamTimeFromTheSlowestGrant"),
    ("a grant fills the lead only to where it asks", S + "Capture/GrantLead.swift",
     "        fill = ask + min(Self.streamBytes(slowest, bitrate: bitrate), eighth / 2)\n",
     "        fill = ask\n",
     "grantsSlowerThanTwoStepsRefuseNoFrame|aLeadIsStreamTimeFromTheSlowestGrant"),
    ("a capture's slow grant is not shared with the pool's other captures", S + "Capture/CaptureGranter.swift",
     "                    slowest.record(allocatedAt - started, at: allocatedAt)\n",
     "",
     "oneCapturesSlowGrantLengthensEveryLead"),
    ("a capture's start cuts the reserve under the pool's mutation lock", S + "Capture/CaptureStart.swift",
     "if granted > 0, try grants.allocate(granted, to: data, granted: 0) { uncut = granted }",
     "if granted > 0, try grants.allocate(granted, to: data, granted: 0) { try grants.cut(granted) }",
     "aStartsCutNeverDelaysAnotherStart"),
    ("a killed move's target that cannot be looked at read as absent", S + "Pool/PoolMaintenance.swift",
     "                targetPresent = try FileSystem.isPresent(target, calls)\n",
     "                targetPresent = (try? FileSystem.isPresent(target, calls)) ?? false\n",
     "aTargetThatCannotBeLookedAtLeavesTheMove"),
    ("a killed move's take that cannot be looked at read as absent", S + "Pool/PoolMaintenance.swift",
     "                heldPresent = try FileSystem.isPresent(held, calls)\n",
     "                heldPresent = (try? FileSystem.isPresent(held, calls)) ?? false\n",
     "aTakeThatCannotBeLookedAtKeepsItsNote"),
    # Leads cut from the reserve's room (issue 38's stress CI, issue 44).
    ("a lead not shared among the running captures", S + "Capture/GrantLead.swift",
     "        let eighth = max(room, 0) / 8 / Int64(max(sharers, 1))\n",
     "        let eighth = max(room, 0) / 8\n",
     "eightCapturesWithSlowGrantsShareASmallPool|aLeadIsStreamTimeFromTheSlowestGrant"),
    # A salvage log that cannot be read is not "nothing salvaged" (recovery on proof).
    ("an unreadable salvage log listed as none salvaged", S + "Pool/PoolMaintenance.swift",
     "            unreadable = error.message\n",
     "            _ = error\n",
     "anUnreadableSalvageLogIsKeptBeside"),
    ("an unreadable salvage log counted as 0 salvaged", "Tools/provideo/Metrics.swift",
     "        if let unreadable = listing.recoveredUnreadable {\n",
     "        if let unreadable = Optional<String>.none {\n",
     "anUnreadableSalvageLogIsKeptBeside"),
    # The fleet's landing budget (issue 43).
    ("a fleet slot taken without its lock", S + "Landing/FleetSlots.swift",
     "            if try descriptor.lock(Int64(index), 1, wait: false) { return Held(descriptor, index: index) }",
     "            return Held(descriptor, index: index)",
     "oneSlotLandsTheServersInTurn|slotsAreTakenOnceAndFreedWithTheirHolder"),
    ("a failed start's failed discard dropped (try?)", S + "Capture/CaptureStart.swift",
     "            if try FileSystem.isPresent(files.directory) { try completion.discard(files) }\n",
     "            if try FileSystem.isPresent(files.directory) { try? completion.discard(files) }\n",
     "aFailedStartWhoseDiscardFailsKeepsTheFirstError"),
    ("provideosink's buffers not sized from the stream", "Tools/c-library/gstprovideosink.c",
     "    provideo_sink_size_from_stream(self);\n",
     "",
     "anUnsetBitrateIsMeasuredFromTheStream"),
    # Acting on proof, the remaining try? (stop 57).
    ("a landing's failed refill dropped (try?)", S + "Landing/Landing.swift",
     "        if done.contains(where: \\.landed), let failure = Self.refillFailure(replenish) {\n",
     "        if done.contains(where: \\.landed), let failure = Optional(try? replenish()).flatMap({ _ in String?.none }) {\n",
     "aLandingWhoseSpaceCannotBeReturnedSaysSo"),
    ("a take whose lock cannot be probed shown as waiting", S + "Landing/Landing.swift",
     "                unknown = (error as? ProVideoError)?.message ?? \"\\(error)\"\n",
     "                transferring = false\n",
     "aTakeWhoseLockCannotBeProbedIsUnknownNotWaiting"),
    ("a state file's close error ignored", S + "Pool/DurableFile.swift",
     "            try fd.close(calls)\n",
     "",
     "aTemporaryWhoseCloseFailsIsNotRenamedOverTheFile"),
    ("the noise writer stops at a full filesystem", "Tools/BenchKit/NoiseWriter.swift",
     "                case ENOSPC, EDQUOT:\n",
     "                case EDQUOT:\n",
     "aFullFilesystemStartsTheFileAgainAndTheWritingGoesOn"),
    ("a scratch pool sized without the grants in flight", "Tools/BenchKit/Sizing.swift",
     "            let fits = max(free - noiseBytes - (4 << 30), 0) / (perStream + inFlight)\n",
     "            let fits = max(free - noiseBytes - (4 << 30), 0) / (perStream + 0 * inFlight)\n",
     "theScratchPoolLeavesRoomForTheNeighbourAndTheGrantsInFlight"),
    ("the storage's verdict counts the card's queue", "Tools/BenchKit/Sizing.swift",
     "ended.hasPrefix(\"a capture failed\") && framesRefused == 0 }",
     "ended.hasPrefix(\"a capture failed\") && framesDropped == 0 }",
     "theStoragesLimitAndTheHostsAreToldApart"),
    ("confirmations halve while none held", "Tools/BenchKit/Sizing.swift",
     "max(floor, failed - max(1, failed / 4))",
     "max(floor, failed / 2)",
     "theAnswerIsConfirmedAtLength"),
    ("the queue needed read from the wake-ups alone", "Tools/BenchKit/SimulatedRecorder.swift",
     "            latestTurn = max(latestTurn, begin &- min(begin, due))\n",
     "            latestTurn = latestWakeUp\n",
     "aRecorderBlockedInWriteLosesTheFramesItsQueueCannotHold"),
    ("a reused ring keeps the last take's bytes", "Sources/ProVideoWritePath/RingMemory.swift",
     "        kept.zero()\n",
     "",
     "aFinishedCapturesRingIsTheNextCapturesAndStartsZeroed"),
    ("a finished capture's ring unmapped, not kept", "Sources/ProVideoWritePath/CaptureWriter.swift",
     "    deinit { if outstanding == 0 { RingMemory.give(memory) } }\n",
     "    deinit {}\n",
     "aFinishedCapturesRingIsTheNextCapturesAndStartsZeroed"),
    ("a thread's timed lock that never waits", "Sources/ProVideoSystem/ThreadLock.swift",
     "pv_mutex_lock_until(mutex, deadline) == 0 }",
     "pthread_mutex_trylock(mutex) == 0 }",
     "anotherThreadsHoldIsWaitedForUntilItsDeadline"),
    ("each PoolLock's reserve holds its own", S + "Pool/PoolLock.swift",
     "        reserveHolds = ThreadHold.reserveHolds(of: try file.facts())\n",
     "        reserveHolds = ThreadHold.ReserveHolds()\n",
     "anotherThreadsHoldIsWaitedForUntilItsDeadline"),
    ("a note's temporary removed beside a running capture", S + "Pool/PoolMaintenance.swift",
     "        if !temporaries.isEmpty, try !lock.heldByOthers().contains(.capturing) {\n",
     "        if !temporaries.isEmpty {\n",
     "aNotesTemporaryGoesOnlyWhenNoCaptureCouldBeWritingIt"),
    ("the tool words no remedy", "Tools/CommandLineSupport/RemedyText.swift",
     "        guard !remedies.isEmpty else { return message }\n",
     "        guard remedies.isEmpty else { return message }\n",
     "aRefusalSaysWhichCommandsDealWithIt|theCommandsFollowTheMessageInOrder"),
    ("the C API's message names no remedy", "Sources/ProVideoC/Errors.swift",
     "error.message + error.remedies.cText)",
     "error.message)",
     "CLibraryTests"),
    ("a failed capture's error names no recovery", S + "Capture/Capture.swift",
     "            if !failure.remedies.contains(.recover) { failure.remedies.append(.recover) }\n",
     "",
     "WriteFaultTests"),
    # Evidence ranks and one capacity invariant (issue 63): the six mutations that survived
    # the suite on 1ef9be0, then the new rules.
    ("the place a killed take went to looked at through a link", S + "Recovery/CaptureObservation.swift",
     "found = try owner.acting { try FileSystem.factsWithoutFollowing(place) }",
     "found = try owner.acting { try FileSystem.facts(place) }",
     "aLinkAtThePlaceIsNotTheTake"),
    ("the one-link rule for pool files opened for writing removed", "Sources/ProVideoSystem/FileDescriptor.swift",
     "!writing || facts.linkCount <= 1 else {",
     "!writing || facts.linkCount >= 0 else {",
     "aReserveWithASecondNameIsNeverWrittenThrough"),
    ("a give-back that cannot count the grants grows the reserve anyway", S + "Recovery/CaptureCompletion.swift",
     "        } catch {\n            return nil\n        }\n    }\n\n    /// Removes a capture's files",
     "        } catch {\n            return Int64.max\n        }\n    }\n\n    /// Removes a capture's files",
     "aGiveBackThatCannotCountGrowsNothing"),
    ("the mount's truncate of a take in progress succeeds", "Sources/ProVideoMount/MountOperations.swift",
     "            return mounted.length == size ? 0 : -EPERM",
     "            return 0",
     "aTakeInProgressHasOneWriter"),
    ("a nested hold of one lock byte released one step early", S + "Pool/PoolLock.swift",
     "        if thread.depth > 1 { return try body() }",
     "        if thread.depth > 2 { return try body() }",
     "aNestedHoldKeepsTheByteUntilTheOuterOneEnds"),
    ("--fleet-rate not shared among the landers (each takes the whole budget)", S + "Landing/FleetSlots.swift",
     "            bytesPerSecond = max(rate / Int64(max(try holders(), 1)), 1)",
     "            bytesPerSecond = max(rate / Int64(max(try holders(), 1)) * Int64(max(try holders(), 1)), 1)",
     "twoLandersTogetherStayWithinTheFleetRate"),
    ("a journal's starting outranks a commit record that proves bytes", S + "Recovery/RecoveryDecision.swift",
     "return provesNothing(facts) ? .discard(reported: false) : .keep(.contradicted)",
     "return .discard(reported: false)",
     "aStartingJournalBesideCommittedBytesIsKept|bytesOutrankAJournalsClaim"),
    ("a journal's placedAt believed on its word", S + "Recovery/RecoveryDecision.swift",
     "return facts.data == .missing ? .completeRemoval(placedLength: nil) : .keep(.placementUnproven)",
     "return .completeRemoval(placedLength: nil)",
     "aPlacementTheDestinationDoesNotHoldKeepsTheData|bytesOutrankAJournalsClaim"),
    ("a resize forgets the grants of kept captures", S + "Pool/PoolResize.swift",
     "            let limit = try account.reserveLimit\n",
     "            let limit = target\n",
     "resizeKeepsTheGrantOfAKeptCapture"),
    ("a grant that is no regular file counted at its own size", S + "Reserve/CapacityAccount.swift",
     "                    if let refusal = EvidenceFile.refusal(facts, expected: S_IFREG, path: files.data) {",
     "                    if false, let refusal = EvidenceFile.refusal(facts, expected: S_IFREG, path: files.data) {",
     "aDataThatIsNoFileIsNeverCountedAtItsOwnSize"),
    ("a state file with a second name read as evidence", "Sources/ProVideoSystem/FileSystem.swift",
     "if Confinement.split(path) != nil, let refusal = EvidenceFile.refusal(facts, expected: S_IFREG, path: path) {",
     "if false, let refusal = EvidenceFile.refusal(facts, expected: S_IFREG, path: path) {",
     "anotherCapturesCommitRecordIsNotBelieved"),
    ("a commit record moved from another capture believed", "Sources/ProVideoJournal/CommitRecord.swift",
     "            if let expected, !expected.matches(read.facts) {",
     "            if let expected, !expected.matches(read.facts), false {",
     "anotherCapturesCommitRecordIsNotBelieved"),
]


def run(command, log, timeout=None):
    """The command's exit status, or None when it ran past `timeout` seconds (then killed)."""
    with open(log, "w") as out:
        try:
            return subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return None


def failed_tests(log):
    names = []
    with open(log, errors="replace") as text:
        for line in text:
            match = re.match(r"✘ Test (\w+)\(", line)
            if match and match.group(1) not in names:
                names.append(match.group(1))
    return names


def main():
    parser = argparse.ArgumentParser(description="Mutation check of the durability steps.")
    parser.add_argument("--only", help="comma-separated mutation names (substrings)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = parser.parse_args()
    if args.list:
        for name, path, *_ in MUTATIONS:
            print(f"{name}  ({path})")
        return 0
    chosen = MUTATIONS
    if args.only:
        wanted = [w.strip() for w in args.only.split(",")]
        chosen = [m for m in MUTATIONS if any(w in m[0] for w in wanted)]
        if not chosen:
            print(f"mutation-check: no mutation matches {args.only}; see --list", file=sys.stderr)
            return 2
    if not os.path.exists("Package.swift"):
        print("mutation-check: run from the package root", file=sys.stderr)
        return 2
    logs = os.path.join(".build", "mutation-check")
    os.makedirs(logs, exist_ok=True)
    rows, survivors, started = [], 0, time.time()
    for index, (name, path, original, mutated, tests) in enumerate(chosen):
        with open(path) as source:
            text = source.read()
        if text.count(original) != 1:
            rows.append((name, f"NOT APPLIED: the code is gone or not unique in {path}"))
            survivors += 1
            continue
        print(f"[{index + 1}/{len(chosen)}] {name}", file=sys.stderr, flush=True)
        try:
            with open(path, "w") as source:
                source.write(text.replace(original, mutated))
            log = os.path.join(logs, f"{index + 1}.log")
            if run(["swift", "build", "--build-tests"], log) != 0:
                rows.append((name, f"BUILD FAILED (see {log})"))
                survivors += 1
                continue
            status = run(["swift", "test", "--skip-build", "--filter", tests], log, timeout=TEST_TIMEOUT)
            caught = failed_tests(log)
            if status is None:
                rows.append((name, f"TIMED OUT after {TEST_TIMEOUT} s: a hang is not a catch (see {log})"))
                survivors += 1
            elif status != 0:
                rows.append((name, "caught by " + (", ".join(caught) or f"a crash of the test run (see {log})")))
            else:
                rows.append((name, "SURVIVED"))
                survivors += 1
        finally:
            with open(path, "w") as source:
                source.write(text)
    run(["swift", "build", "--build-tests"], os.path.join(logs, "restore.log"))
    width = max(len(name) for name, _ in rows)
    print(f"{'mutation'.ljust(width)}  result")
    for name, result in rows:
        print(f"{name.ljust(width)}  {result}")
    print(f"{len(rows) - survivors} caught, {survivors} not caught, in {time.time() - started:.0f} s")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
