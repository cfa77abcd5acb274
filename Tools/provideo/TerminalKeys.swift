import Glibc

/// Single keys from the terminal on standard input, without Enter and without echo: the
/// terminal is put in non-canonical mode (termios(3): ICANON and ECHO cleared, ISIG kept, so
/// Ctrl-C still sends SIGINT) until `restore()`, which puts back the mode it had.
final class TerminalKeys {
    private let saved: termios
    private var restored = false
    /// false once the terminal hung up or failed: no key can come any more.
    private var readable = true

    /// nil when standard input is not a terminal, or this process is not in its foreground
    /// group (a `&` job: changing the mode would stop it with SIGTTOU).
    init?() {
        guard isatty(STDIN_FILENO) == 1, tcgetpgrp(STDIN_FILENO) == getpgrp() else { return nil }
        var mode = termios()
        guard tcgetattr(STDIN_FILENO, &mode) == 0 else { return nil }
        saved = mode
        mode.c_lflag &= ~tcflag_t(ICANON | ECHO)
        // VMIN 0, VTIME 0: a read returns what is there, never waits (poll(2) does the waiting).
        withUnsafeMutableBytes(of: &mode.c_cc) { $0[Int(VMIN)] = 0; $0[Int(VTIME)] = 0 }
        guard tcsetattr(STDIN_FILENO, TCSANOW, &mode) == 0 else { return nil }
    }

    deinit { restore() }

    /// Puts the terminal's mode back as it was; a second call does nothing.
    func restore() {
        guard !restored else { return }
        restored = true
        var mode = saved
        _ = tcsetattr(STDIN_FILENO, TCSANOW, &mode)
    }

    /// The next key typed within `milliseconds`, or nil (none typed, or the terminal is gone:
    /// then it just waits).
    func key(within milliseconds: Int32) -> UInt8? {
        guard readable else {
            usleep(UInt32(milliseconds) * 1000)
            return nil
        }
        var input = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard poll(&input, 1, milliseconds) > 0 else { return nil }
        var byte: UInt8 = 0
        let n = read(STDIN_FILENO, &byte, 1)
        if n == 1 { return byte }
        if n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) { readable = false }
        return nil
    }
}
