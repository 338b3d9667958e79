import Foundation
import HearthCore
import HearthTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real models the tests read, fetched into `models/` by `scripts/fetch-models`.
enum TestModels {
    static var smolLM2: URL { get throws { try TestFiles.modelURL(TestFiles.smolLM2) } }
    static var gemma3: URL { get throws { try TestFiles.modelURL(TestFiles.gemma3) } }
    static var miniLM: URL { get throws { try TestFiles.modelURL("all-MiniLM-L6-v2/model.safetensors") } }
}

func randomBytes(_ count: Int, using generator: inout SplitMix64) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0 ... .max, using: &generator) }
}

extension Array where Element == UInt8 {
    /// Appends an integer in little-endian order, for hand-made files.
    mutating func append<T: FixedWidthInteger>(littleEndian value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    /// Appends a GGUF string: its byte count as a UInt64, then its UTF-8.
    mutating func append(ggufString string: String) {
        append(littleEndian: UInt64(string.utf8.count))
        append(contentsOf: string.utf8)
    }

    /// Overwrites bytes at `offset` with `value` in little-endian order.
    mutating func patch<T: FixedWidthInteger>(_ offset: Int, _ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { replaceSubrange(offset..<offset + $0.count, with: $0) }
    }

    /// Where `needle` first occurs.
    func offset(of needle: [UInt8], from start: Int = 0) -> Int? {
        guard needle.count <= count else { return nil }
        var i = start
        while i <= count - needle.count {
            if self[i] == needle[0], self[i..<i + needle.count].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    /// Where the GGUF string `string` (its length, then its bytes) first occurs.
    func offset(ofGGUFString string: String) -> Int? {
        var encoded: [UInt8] = []
        encoded.append(ggufString: string)
        return offset(of: encoded)
    }
}

/// A temporary copy of a real model's first `prefix` bytes followed by a sparse hole as long
/// as the rest of it: the header is the real one and the file has the real size, yet making
/// one costs no more than writing the header.
final class SparseCopy {
    let directory: TemporaryDirectory
    let url: URL
    let handle: FileHandle
    /// The real bytes kept.
    let prefix: [UInt8]
    let fileSize: Int

    init(of original: MappedFile, keeping count: Int) throws {
        prefix = Array(original.bytes[0..<count])
        fileSize = original.size
        directory = try TemporaryDirectory()
        url = directory.file("copy")
        try Data(prefix).write(to: url)
        handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(fileSize))
    }

    deinit { try? handle.close() }

    func overwrite(_ offset: Int, with byte: UInt8) throws {
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [byte])
    }

    func truncate(to length: Int) throws {
        try handle.truncate(atOffset: UInt64(length))
    }

    /// "parsed", the message of the HearthError `open` threw, or a description of anything else.
    func outcome(_ open: (URL) throws -> Void) -> String {
        do {
            try open(url)
            return "parsed"
        } catch let error as HearthError {
            return error.message
        } catch {
            return "not a HearthError: \(error)"
        }
    }
}

/// One random change to a byte: a flipped bit mostly, else a random byte, 0xFF or 0.
func damaged(_ byte: UInt8, using random: inout SplitMix64) -> UInt8 {
    switch Int.random(in: 0..<10, using: &random) {
    case 0..<5: return byte ^ (1 << UInt8.random(in: 0..<8, using: &random))
    case 5..<8: return UInt8.random(in: 0 ... .max, using: &random)
    case 8: return 0xFF
    default: return 0
    }
}

/// `runs` seeded runs of one to three damaged bytes each: every damaged copy of `bytes` either
/// parses (then `parse` reads all it parsed) or throws a HearthError, never crashes or throws
/// anything else. Returns how many parsed and how many were rejected.
func damageRuns(of bytes: [UInt8], seed: UInt64, runs: Int = 1000,
                parse: ([UInt8]) throws -> Void) throws -> (parsed: Int, rejected: Int) {
    var random = SplitMix64(seed: seed)
    var parsed = 0, rejected = 0
    for _ in 0..<runs {
        var damagedBytes = bytes
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let offset = Int.random(in: 0..<bytes.count, using: &random)
            damagedBytes[offset] = damaged(damagedBytes[offset], using: &random)
        }
        do {
            try parse(damagedBytes)
            parsed += 1
        } catch is HearthError {
            rejected += 1
        }
    }
    return (parsed, rejected)
}

/// The lengths of the prefixes of `bytes` (all but `bytes` itself) that `parse` accepts; every
/// other prefix must throw a HearthError.
func acceptedTruncations(of bytes: [UInt8], parse: ([UInt8]) throws -> Void) throws -> [Int] {
    var accepted: [Int] = []
    for length in 0..<bytes.count {
        do {
            try parse(Array(bytes[..<length]))
            accepted.append(length)
        } catch is HearthError {
            continue
        }
    }
    return accepted
}
