import ProVideoStorage

/// Every capture running in the pool. Status, `--watch` and `metrics` loop over this one list,
/// so a pool that runs several captures at once changes only this function.
func runningCaptures(_ status: PoolStatus) -> [PoolStatus.Capture] {
    status.capture.map { [$0] } ?? []
}
