import ProVideoStorage

extension ProVideoError {
    /// The message and what deals with it, as `provideo` words it: "…; run `provideo replenish`
    /// or `provideo resize`". The library's error names the operations (`remedies`); the
    /// commands that run them are the tool's.
    public var advised: String {
        guard !remedies.isEmpty else { return message }
        return message + "; run " + remedies.map { "`\(command(for: $0))`" }.joined(separator: " or ")
    }

    /// The `provideo` command that performs `remedy` for this error.
    func command(for remedy: Remedy) -> String {
        switch remedy {
        case .create: "provideo --pool \(path ?? "PATH") create --capacity SIZE"
        case .createOnUnmountedFilesystem: "provideo --pool \(path ?? "PATH") create --capacity SIZE --force"
        case .admitOverBandwidth: "provideo record --force"
        case .move: "provideo move \(path ?? "RECORDING") [DEST]"
        case .salvageWithoutJournal: "provideo recover --salvage-to DIR"
        default: "provideo \(remedy.rawValue)"
        }
    }
}
