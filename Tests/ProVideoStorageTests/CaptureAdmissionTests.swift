import Testing
@testable import ProVideoStorage

/// Admission as a value (issue 40): the capture limit and the bandwidth decide a start from
/// the running captures' journals alone, with no pool on disk.
@Suite struct CaptureAdmissionTests {
    static func running(_ bitrates: [Int64]) -> [(files: CaptureFiles, journal: CaptureJournal)] {
        bitrates.enumerated().map { index, bitrate in
            (CaptureFiles(directory: "/pool/captures/c\(index)"),
             CaptureJournal(id: "c\(index)", destination: "/takes/\(index).mov", alignment: 4096, bitrate: bitrate,
                            engine: "io_uring", phase: .recording, startedAt: 0, pid: 100 + Int32(index)))
        }
    }

    static func admission(limit: Int? = nil, bandwidth: Int64? = nil) -> CaptureAdmission {
        CaptureAdmission(captureLimit: limit, bandwidth: bandwidth, poolPath: "/pool", capturesDirectory: "/pool/captures")
    }

    static func journal() -> CaptureJournal {
        CaptureJournal(id: "new", destination: "/takes/new.mov", alignment: 4096, bitrate: 300_000_000, engine: "io_uring",
                       phase: .starting, startedAt: 0, pid: 200)
    }

    @Test func theCaptureLimitRefusesTheNextStartNamingTheRunningOnes() throws {
        var journal = Self.journal()
        let error = #expect(throws: ProVideoError.self) {
            try Self.admission(limit: 2).admit(CaptureOptions(bitrate: 1), running: Self.running([1, 1]), journal: &journal)
        }
        #expect(error?.code == .busy)
        #expect(error?.message.contains("process 101 is recording to /takes/1.mov") == true, "\(error?.message ?? "")")
        try Self.admission(limit: 3).admit(CaptureOptions(bitrate: 1), running: Self.running([1, 1]), journal: &journal)
        #expect(journal.admittedOverBandwidth == nil)
    }

    /// 1 Gbit/s measured admits 800 Mbit/s declared: 2 × 300 + 200 fits, 2 × 300 + 300 does not.
    @Test func theBandwidthAdmitsEightyPercentAndSaysTheNumbers() throws {
        let admission = Self.admission(bandwidth: 1_000_000_000)
        var journal = Self.journal()
        try admission.admit(CaptureOptions(bitrate: 200_000_000), running: Self.running([300_000_000, 300_000_000]),
                            journal: &journal)
        #expect(journal.admittedOverBandwidth == nil)
        let error = #expect(throws: ProVideoError.self) {
            try admission.admit(CaptureOptions(bitrate: 300_000_000), running: Self.running([300_000_000, 300_000_000]),
                                journal: &journal)
        }
        #expect(error?.code == .bandwidthExceeded)
        #expect(error?.message.contains("(2 × 300 Mbit/s) declare 600 Mbit/s of the 800 Mbit/s admissible") == true,
                "\(error?.message ?? "")")
        try admission.admit(CaptureOptions(bitrate: 300_000_000, admitOverBandwidth: true),
                            running: Self.running([300_000_000, 300_000_000]), journal: &journal)
        #expect(journal.admittedOverBandwidth == true)
    }

    /// A capture alone is admitted at any bitrate; an undecided entry makes the bandwidth in
    /// use unknown, which refuses a start unless it is forced (and then marks it).
    @Test func aLoneCaptureIsAdmittedAndAnUndecidedEntryIsUnknownBandwidth() throws {
        let admission = Self.admission(bandwidth: 100_000_000)
        var journal = Self.journal()
        try admission.admit(CaptureOptions(bitrate: 900_000_000), running: [], journal: &journal)
        #expect(journal.admittedOverBandwidth == nil)
        let undecided = [UndecidedCapture(id: "x", reason: "its journal cannot be read")]
        let error = #expect(throws: ProVideoError.self) {
            try admission.admit(CaptureOptions(bitrate: 1), running: [], undecided: undecided, journal: &journal)
        }
        #expect(error?.code == .bandwidthExceeded)
        #expect(error?.path == "/pool/captures/x")
        try Self.admission().admit(CaptureOptions(bitrate: 1), running: [], undecided: undecided, journal: &journal)
        #expect(journal.admittedOverBandwidth == nil)
        try admission.admit(CaptureOptions(bitrate: 1, admitOverBandwidth: true), running: [], undecided: undecided,
                            journal: &journal)
        #expect(journal.admittedOverBandwidth == true)
    }
}
