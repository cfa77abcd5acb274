import ProVideoStorage

extension BandwidthMeasurement {
    /// The first second's rate as the tools print it, with why it is below the sustained rate
    /// when it is (issue 41: "sustained 26.8 Gbit/s (burst 21.2 Gbit/s)" read as a contradiction).
    package var burstText: String {
        "burst \(BitRateFormat.human(burst)) in the first second"
            + (burst < sustained ? ", below the sustained rate: the device's write cache gave no head start" : "")
    }
}
