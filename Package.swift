// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ProVideoStorage",
    products: [
        .library(name: "ProVideoStorage", targets: ["ProVideoStorage"]),
        .executable(name: "provideo", targets: ["provideo"]),
        .executable(name: "provideo-bench", targets: ["provideo-bench"]),
        // The C API for C/C++ recorders (FFmpeg, GStreamer): libprovideo.so.1, header provideo.h.
        // SwiftPM names it libProVideoC.so (the product name `provideo` is the CLI's); its soname
        // is libprovideo.so.1, the name Tools/c-library/install installs it under.
        .library(name: "ProVideoC", type: .dynamic, targets: ["ProVideoC"]),
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
        // The syscall layer: one thin call per system call with typed errors, descriptors,
        // confined paths, identities, clocks. It knows nothing above it (Docs/ARCHITECTURE.md).
        .target(name: "ProVideoSystem", dependencies: ["CProVideo"], path: "Sources/ProVideoSystem",
                exclude: ["README.md"]),
        .target(name: "ProVideoIO", dependencies: ["CProVideo", "ProVideoSystem"], path: "Sources/ProVideoIO",
                exclude: ["README.md"]),
        .target(name: "ProVideoJournal", dependencies: ["CProVideo", "ProVideoSystem"], path: "Sources/ProVideoJournal",
                exclude: ["README.md"]),
        .target(name: "ProVideoWritePath", dependencies: ["ProVideoSystem", "ProVideoIO", "ProVideoJournal"],
                path: "Sources/ProVideoWritePath", exclude: ["README.md"]),
        .target(name: "ProVideoStorage", dependencies: ["ProVideoSystem", "ProVideoJournal", "ProVideoIO", "ProVideoWritePath"], path: "Sources/ProVideoStorage",
                // Each folder's README says what it owns and may use (Docs/ARCHITECTURE.md).
                exclude: ["Landing/README.md", "Capture/README.md", "Recovery/README.md", "Placement/README.md", "Pool/README.md", "Reserve/README.md", "Formatting/README.md"]),
        // The C API: the hand-written header (CProVideoAPI/include/provideo.h, installed for C
        // programs) and its implementation in Swift (`@c` functions over the library).
        .target(name: "CProVideoAPI", path: "Sources/CProVideoAPI"),
        .target(
            name: "ProVideoC", dependencies: ["ProVideoStorage", "CProVideoAPI"], path: "Sources/ProVideoC",
            exclude: ["libprovideo.map"],
            // The soname C programs record, whatever SwiftPM names the file (its major version
            // changes only when the ABI breaks), and a version script that exports provideo.h's
            // functions only (Docs/C-LIBRARY.md). Linked with lld (in the toolchain): gold, the
            // default, keeps 76 of the hidden Swift symbols in .dynsym as local entries.
            linkerSettings: [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-soname=libprovideo.so.1", "-Xlinker",
                                           "--version-script=\(Context.packageDirectory)/Sources/ProVideoC/libprovideo.map"])]),
        // `provideo mount`: the pool as a directory unmodified recorders write into, through
        // libfuse 3 (Debian's libfuse3-dev), in a module of its own so that the library does
        // not link libfuse.
        .target(name: "CProVideoMount", path: "Sources/CProVideoMount", linkerSettings: [.linkedLibrary("fuse3")]),
        .target(name: "ProVideoMount", dependencies: ["ProVideoStorage", "CProVideoMount", "CommandLineSupport"],
                path: "Sources/ProVideoMount"),
        .target(name: "CommandLineSupport", dependencies: ["ProVideoStorage"], path: "Tools/CommandLineSupport"),
        .executableTarget(
            name: "provideo", dependencies: ["ProVideoStorage", "ProVideoMount", "CommandLineSupport"],
            path: "Tools/provideo"),
        .target(name: "BenchKit", dependencies: ["ProVideoStorage"], path: "Tools/BenchKit"),
        .executableTarget(
            name: "provideo-bench", dependencies: ["ProVideoStorage", "CommandLineSupport", "BenchKit"],
            path: "Tools/provideo-bench", exclude: ["traces"]),
        // Docs/SWIFT-API.md's first program, byte for byte (SwiftAPIExampleTests builds and runs it).
        // Built with warnings as errors: a blocking overload picked under `await` is a warning.
        .executableTarget(name: "swift-api-example", dependencies: ["ProVideoStorage"], path: "Tools/swift-api-example",
                          swiftSettings: [.unsafeFlags(["-warnings-as-errors"])]),
        // Helpers every test target shares: scratch directories, built tools as processes,
        // loop filesystems, crash kits, and FaultEngine (the fault-injecting write engine).
        .target(
            name: "TestSupport", dependencies: ["ProVideoStorage", "CProVideo"], path: "Tests/TestSupport"),
        // One test target per module: the library, the `provideo` CLI, the bench's BenchKit.
        .testTarget(
            name: "ProVideoStorageTests", dependencies: ["ProVideoStorage", "ProVideoWritePath", "CProVideo", "TestSupport"],
            path: "Tests/ProVideoStorageTests"),
        .testTarget(
            name: "ProvideoTests", dependencies: ["ProVideoStorage", "CommandLineSupport", "CProVideo", "TestSupport"],
            path: "Tests/ProvideoTests"),
        // The README's library example, compiled and run as written (keep README.md in sync).
        .testTarget(
            name: "ReadmeExampleTests", dependencies: ["ProVideoStorage", "TestSupport"],
            path: "Tests/ReadmeExampleTests"),
        .testTarget(
            name: "BenchKitTests", dependencies: ["BenchKit", "ProVideoStorage", "TestSupport"],
            path: "Tests/BenchKitTests"),
    ]
)
