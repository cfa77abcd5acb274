import Foundation
import TestSupport
import Testing
@testable import ProVideoStorage

/// Capture buffers sit on transparent huge pages so a write is a few DMA segments, not one per
/// 4 KiB page (see `AlignedBuffer`).
@Suite struct AlignedBufferTests {
    @Test func largeBuffersAreHugePageAlignedAndAdvised() throws {
        let length = 4 << 20
        let buffer = try #require(AlignedBuffer(length: length, alignment: 4096))
        let start = UInt(bitPattern: buffer.bytes.baseAddress)
        #expect(start % UInt(AlignedBuffer.hugePageSize) == 0)
        #expect(buffer.bytes.count == length)
        let mode = try String(contentsOfFile: "/sys/kernel/mm/transparent_hugepage/enabled", encoding: .utf8)
        // smaps says whether the mapping holding the buffer may take huge pages: under
        // `[madvise]` only MADV_HUGEPAGE makes it so; under `[never]` nothing does.
        let eligible = try thpEligible(containing: start)
        #expect(eligible == !mode.contains("[never]"))
    }

    @Test func smallBuffersKeepPageAlignment() throws {
        let buffer = try #require(AlignedBuffer(length: 8192, alignment: 512))
        #expect(UInt(bitPattern: buffer.bytes.baseAddress) % UInt(sysconf(Int32(_SC_PAGESIZE))) == 0)
        #expect(buffer.bytes.allSatisfy { $0 == 0 })
    }

    /// A ring is resident before its first write; a patch window (`populated: false`) only where
    /// touched, so a rarely used window costs a recorder no memory (mincore(2) counts pages).
    @Test func onlyPopulatedBuffersAreResidentBeforeTheirFirstWrite() throws {
        let length = 4 << 20
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let ring = try #require(AlignedBuffer(length: length, alignment: 4096))
        let window = try #require(AlignedBuffer(length: length, alignment: 4096, populated: false))
        #expect(try residentPages(ring) == length / page)
        #expect(try residentPages(window) == 0)
        window.bytes.storeBytes(of: 1, toByteOffset: 0, as: UInt8.self)
        #expect(try residentPages(window) == 1)
        #expect(window.isAligned(to: 4096))
    }

    private func residentPages(_ buffer: AlignedBuffer) throws -> Int {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        var vector = [UInt8](repeating: 0, count: (buffer.bytes.count + page - 1) / page)
        try #require(mincore(buffer.bytes.baseAddress, buffer.bytes.count, &vector) == 0)
        return vector.filter { $0 & 1 != 0 }.count
    }

    /// The `THPeligible` line of the /proc/self/smaps entry whose range holds `address`.
    private func thpEligible(containing address: UInt) throws -> Bool {
        // /proc files report size 0, so read to the end rather than by size.
        let smaps = String(decoding: try #require(FileHandle(forReadingAtPath: "/proc/self/smaps")).readDataToEndOfFile(),
                           as: UTF8.self)
        var inside = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
               let low = UInt(line[..<dash], radix: 16), let high = UInt(line[line.index(after: dash)..<space], radix: 16) {
                inside = low <= address && address < high
            } else if inside, line.hasPrefix("THPeligible:") {
                return line.hasSuffix("1")
            }
        }
        throw SmapsError.noMapping(address)
    }

    enum SmapsError: Error { case noMapping(UInt) }
}
