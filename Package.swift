// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ProVideoStorage",
    products: [
        .library(name: "ProVideoStorage", targets: ["ProVideoStorage"]),
        .executable(name: "provideo", targets: ["provideo"]),
        .executable(name: "provideo-bench", targets: ["provideo-bench"]),
    ],
    targets: [
        // The few Linux calls Swift cannot reach directly (they need _GNU_SOURCE or kernel
        // headers) and the C libraries we use: liburing, libblkid, libcrypto (SHA-256).
        .target(
            name: "CProVideo",
            path: "Sources/CProVideo",
            cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("uring"), .linkedLibrary("blkid"), .linkedLibrary("crypto")]
        ),
        .target(name: "ProVideoStorage", dependencies: ["CProVideo"], path: "Sources/ProVideoStorage"),
        .target(name: "CommandLineSupport", dependencies: ["ProVideoStorage"], path: "Tools/CommandLineSupport"),
        .executableTarget(
            name: "provideo", dependencies: ["ProVideoStorage", "CommandLineSupport", "CProVideo"], path: "Tools/provideo"),
        .target(name: "BenchKit", dependencies: ["ProVideoStorage", "CProVideo"], path: "Tools/BenchKit"),
        .executableTarget(
            name: "provideo-bench", dependencies: ["ProVideoStorage", "CommandLineSupport", "BenchKit"],
            path: "Tools/provideo-bench", exclude: ["traces"]),
        .testTarget(
            name: "ProVideoStorageTests",
            dependencies: ["ProVideoStorage", "CommandLineSupport", "CProVideo", "BenchKit"],
            path: "Tests/ProVideoStorageTests"),
    ]
)
