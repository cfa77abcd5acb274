import CommandLineSupport
import Testing

/// The progress line: a few lines in a log, one redrawn line on a terminal, with rate and
/// time left. The clock is the test's, so nothing here depends on the machine's speed.
@Suite struct ProgressLineTests {
    final class Recorder {
        var now = 0.0
        var written: [String] = []
    }

    /// 2 GiB in 20 s reported every 0.2 s (101 calls, as `create --zero` made 101 lines):
    /// a line every 5 s, then the final one.
    @Test func logGetsALineEveryFewSeconds() {
        let recorder = Recorder()
        var progress = ProgressLine("zero-filling the reserve", total: 2 << 30, terminal: false, interval: 5,
                                    clock: { recorder.now }, write: { recorder.written.append($0) })
        for step in 0...100 {
            recorder.now = Double(step) * 0.2
            progress.update(Int64(step) * (2 << 30) / 100)
        }
        progress.finish()
        #expect(recorder.written.count == 5)
        #expect(recorder.written.first == "zero-filling the reserve: 25% (512 MiB of 2.00 GiB), 107 MB/s, 0:00:15 left\n")
        #expect(recorder.written.last == "zero-filling the reserve: 100% (2.00 GiB of 2.00 GiB), 107 MB/s\n")
    }

    @Test func terminalRedrawsOneLine() {
        let recorder = Recorder()
        var progress = ProgressLine("copying", total: 800, terminal: true, clock: { recorder.now },
                                    write: { recorder.written.append($0) })
        for step in 1...8 {
            recorder.now = Double(step) * 0.0625  // exact in binary: a redraw every second step
            progress.update(Int64(step) * 100)
        }
        progress.finish()
        #expect(recorder.written.count == 5)
        #expect(recorder.written.allSatisfy { $0.hasPrefix("\r\u{1B}[K") })
        #expect(recorder.written.filter { $0.hasSuffix("\n") }.count == 1)
        #expect(recorder.written[0] == "\r\u{1B}[Kcopying: 25% (200 B of 800 B), 0 MB/s, 0:00:00 left")
    }

    /// A quick operation in a log prints nothing at all.
    @Test func quickOperationIsSilent() {
        let recorder = Recorder()
        var progress = ProgressLine("zero-filling the reserve", total: 100, terminal: false, clock: { recorder.now },
                                    write: { recorder.written.append($0) })
        recorder.now = 1
        progress.update(100)
        progress.finish()
        #expect(recorder.written.isEmpty)
    }

    /// A resumed transfer starts at its `baseline`: the rate counts only what this run did, and a
    /// line that ends short says where.
    @Test func theBaselineIsLeftOutOfTheRate() {
        let recorder = Recorder()
        var progress = ProgressLine("landing /m/take.mov", total: 1_000_000_000, terminal: true, clock: { recorder.now },
                                    write: { recorder.written.append($0) })
        progress.baseline = 600_000_000
        recorder.now = 10
        progress.update(800_000_000)
        // 200 MB in 10 s: 20 MB/s, and 200 MB left at that rate: 10 s (not 80 MB/s and 2 s).
        #expect(recorder.written.last == "\r\u{1B}[Klanding /m/take.mov: 80% (763 MiB of 954 MiB), 20 MB/s, 0:00:10 left")
        recorder.now = 12
        progress.finish(at: 820_000_000)
        #expect(recorder.written.last == "\r\u{1B}[Klanding /m/take.mov: 82% (782 MiB of 954 MiB), 18 MB/s, 0:00:09 left\n")
    }
}
