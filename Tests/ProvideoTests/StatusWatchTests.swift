import Foundation
import Glibc
import TestSupport
import Testing

/// `status --watch`: a view every interval, each capture with its rate and time left, and a
/// clean exit on Ctrl-C.
@Suite struct StatusWatchTests {
    @Test func watchShowsViewsUntilInterrupted() throws {
        try FS.withScratchPool(capacity: "32M") { dir, pool in
            let (recorder, input) = try FS.startRecorder(pool, dir + "/take.mov", ["--bitrate", "80M"])
            defer { try? input.close(); recorder.waitUntilExit() }
            try input.write(contentsOf: Data(TestSupport.pattern(2_000_000, seed: 8)))
            for _ in 0..<100 where (try TestSupport.poolStatus(pool)).captures.isEmpty { usleep(50_000) }

            // Standard input a pipe, not the terminal a developer runs the tests from: no `q` prompt.
            let watch = try TestSupport.start("provideo", ["--pool", pool, "status", "--watch", "0.2"], stdinPipe: true)
            defer { if watch.isRunning { watch.terminate() } }
            usleep(1_000_000)
            kill(watch.processIdentifier, SIGINT)
            let output = String(decoding: (watch.standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            watch.waitUntilExit()
            #expect(watch.terminationReason == .exit && watch.terminationStatus == 0, "status \(watch.terminationStatus)")
            let views = output.components(separatedBy: "every 0.2 s, Ctrl-C to stop\n").dropFirst()
            #expect(views.count >= 3, "\(views.count) views in 1 s: \(output)")
            let second = try #require(views.dropFirst().first)
            #expect(second.contains("capture     → \(dir)/take.mov: "), "\(second)")
            #expect(second.contains(", 80 Mbit/s, ") && second.contains(" MB/s"), "\(second)")
        }
    }

    /// Run on a terminal (a pty, as a shell gives it), `status --watch` puts the terminal in
    /// non-canonical mode without echo while it watches, ends on `q` (or Ctrl-C, typed as the
    /// terminal's interrupt character) with exit 0, and leaves the terminal's mode as it found it.
    @Test(arguments: ["q", "\u{03}"])
    func aKeyEndsTheWatchAndRestoresTheTerminal(_ key: String) throws {
        try FS.withScratchPool(capacity: "8M") { _, pool in
            let script = """
                import json, os, pty, select, sys, termios, time
                binary, pool, key = sys.argv[1], sys.argv[2], sys.argv[3].encode()
                # The child waits for the parent to read the terminal's mode first: read after
                # an exec that had already begun the watch, "before" was the watch's own mode.
                go, ready = os.pipe()
                pid, fd = pty.fork()
                if pid == 0:
                    os.close(ready)
                    os.read(go, 1)
                    os.execv(binary, [binary, "--pool", pool, "status", "--watch", "0.2"])
                os.close(go)
                def lflag(): return termios.tcgetattr(fd)[3]
                before = lflag()
                os.write(ready, b"x")
                os.close(ready)
                output, deadline = b"", time.time() + 20
                while b"q or Ctrl-C to stop" not in output and time.time() < deadline:
                    if select.select([fd], [], [], 0.5)[0]: output += os.read(fd, 65536)
                watching = lflag()
                os.write(fd, key)
                while time.time() < deadline:
                    if not select.select([fd], [], [], 0.5)[0]: continue
                    try: data = os.read(fd, 65536)
                    except OSError: break
                    if not data: break
                    output += data
                ended, status = os.waitpid(pid, os.WNOHANG)
                while ended == 0 and time.time() < deadline:
                    time.sleep(0.05)
                    ended, status = os.waitpid(pid, os.WNOHANG)
                if ended == 0:
                    os.kill(pid, 9); os.waitpid(pid, 0); status = -1
                after = lflag()
                bits = lambda flags: [bool(flags & termios.ICANON), bool(flags & termios.ECHO), bool(flags & termios.ISIG)]
                print(json.dumps({"status": status, "before": bits(before), "watching": bits(watching),
                                  "after": bits(after), "views": output.count(b"every 0.2 s")}))
                """
            let result = try TestSupport.run("/usr/bin/python3", ["-c", script, TestSupport.productsDirectory + "/provideo", pool, key])
            #expect(result.status == 0, "\(result.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                                      "\(result.stdout)")
            #expect(report["status"] as? Int == 0, "waitpid's status: \(result.stdout)")
            // [ICANON, ECHO, ISIG]: canonical with echo before; both cleared while watching,
            // signals kept for Ctrl-C; as before after.
            #expect(report["before"] as? [Bool] == [true, true, true], "\(result.stdout)")
            #expect(report["watching"] as? [Bool] == [false, false, true], "\(result.stdout)")
            #expect(report["after"] as? [Bool] == [true, true, true], "\(result.stdout)")
            #expect((report["views"] as? Int ?? 0) >= 1, "\(result.stdout)")
        }
    }

    @Test(arguments: ["0", "-1", "x"])
    func badIntervalsAreRefused(_ interval: String) throws {
        let result = try TestSupport.run("provideo", ["--pool", "/nonexistent", "status", "--watch=\(interval)"])
        #expect(result.status == 2 && result.stderr.hasPrefix("provideo: --watch takes seconds between views"), "\(result.stderr)")
    }
}
