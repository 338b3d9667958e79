import Foundation
import HearthCore
import HearthTestSupport
import Testing

@Suite struct MappedFileTests {
    static let pattern: [UInt8] = (0..<(64 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }

    /// Dropped pages of a file are read again from it; a mapping made from bytes in memory
    /// keeps its pages (dropping them there would lose the bytes).
    @Test func droppedPagesKeepTheirBytes() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("pages.bin")
        try Data(Self.pattern).write(to: path)
        for mapping in [try MappedFile(path: path.path), try MappedFile(bytes: Self.pattern)] {
            #expect(mapping.bytes.elementsEqual(Self.pattern))
            // Part of the first page through part of the last: only the whole pages inside go.
            mapping.dropPages(UnsafeRawBufferPointer(rebasing: mapping.bytes[100..<(Self.pattern.count - 100)]))
            mapping.dropPages(UnsafeRawBufferPointer(rebasing: mapping.bytes[0..<0]))
            #expect(mapping.bytes.elementsEqual(Self.pattern), "\(mapping.path): the bytes changed")
        }
    }
}
