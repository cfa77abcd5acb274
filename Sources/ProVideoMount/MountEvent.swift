import Foundation
import ProVideoStorage

/// One thing the mount's daemon did that an operator or a script acts on: a take landed, a
/// capture failed and was salvaged, an open was refused. Logged as a line for a person
/// (`line`), or written as one JSON object per line on standard output for a script
/// (`provideo mount --json`; Docs/CAPTURE-MOUNT.md lists the events and their fields).
struct MountEvent: Encodable, Equatable {
    enum Kind: String, Encodable {
        /// A take landed (`path`, `bytes`, `seconds`), or was kept to land in the background
        /// (`landingTo`).
        case landed
        /// A take landed under its first name: the rename its writer asked for failed (`message`).
        case renameFailed
        /// A take landed, but the mode its writer created it with could not be set (`message`).
        case modeNotSet
        /// A take renamed while recorded lands in the background under its first name.
        case landsUnderFirstName
        /// A capture failed (`error`, `message`); its committed part is salvaged next.
        case failed
        /// A failed capture's committed part was placed (`path`, `bytes`).
        case salvaged
        /// A failed capture could not be salvaged now (`provideo recover` places it).
        case notSalvaged
        /// A file could not be recorded (`uid`, `error`): the writer saw only an errno.
        case notRecorded
        /// A second open for writing of a file being recorded was refused (`uid`).
        case openRefused
        /// A write request took the daemon over 20 ms (`PROVIDEO_MOUNT_DEBUG=slow`).
        case slowWrite
    }

    var event: Kind
    /// The file's name in the mount.
    var name: String
    /// Where the take is now.
    var path: String?
    /// Bytes of the take (or of the write request, for `slowWrite`).
    var bytes: Int64?
    /// Where a take kept in the pool lands in the background.
    var landingTo: String?
    /// How long the finish (or the write request) took, in seconds.
    var seconds: Double?
    /// The user whose request it was.
    var uid: UInt32?
    /// The error's code (`ProVideoError.Code`), when it is one.
    var error: String?
    /// The line `line` is, for a person.
    var message: String

    init(_ event: Kind, name: String, message: String, path: String? = nil, bytes: Int64? = nil, landingTo: String? = nil,
         seconds: Double? = nil, uid: UInt32? = nil, error: Error? = nil) {
        (self.event, self.name, self.message, self.path, self.bytes) = (event, name, message, path, bytes)
        (self.landingTo, self.seconds, self.uid) = (landingTo, seconds, uid)
        self.error = (error as? ProVideoError)?.code.rawValue ?? error.map { _ in "ioError" }
    }

    /// The JSON object on one line (keys sorted, so that two events of a kind read alike).
    var jsonLine: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every field is a string, a number or absent: encoding cannot fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }
}
