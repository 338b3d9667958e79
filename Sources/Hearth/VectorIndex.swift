import Foundation
import HearthCore

/// A small in-memory index for semantic search: vectors with a key each, searched by cosine
/// similarity, saved to and loaded from a file of its own.
///
/// ```swift
/// var index = VectorIndex(dimensions: embedder.dimensions)
/// for (line, vector) in zip(lines, try await embedder.embed(lines)) { try index.add(line, vector) }
/// let best = index.search(try await embedder.embed("weather tomorrow"), top: 3)
/// ```
public struct VectorIndex: Sendable, Equatable {
    /// A key and its similarity to a query, in [-1, 1].
    public struct Match: Sendable, Equatable {
        public var key: String
        public var score: Float
    }

    /// Length of every vector.
    public let dimensions: Int
    /// The keys, in the order they were added.
    public private(set) var keys: [String] = []
    /// The vectors, scaled to length 1, one after another.
    private var vectors: [Float] = []

    /// An empty index for vectors of `dimensions` floats.
    public init(dimensions: Int) {
        self.dimensions = dimensions
    }

    /// Number of entries.
    public var count: Int { keys.count }

    /// Adds `vector` under `key` (keys may repeat). A vector of another length, or one that is
    /// zero or not finite, is refused.
    public mutating func add(_ key: String, _ vector: [Float]) throws {
        guard vector.count == dimensions else {
            throw HearthError.invalidArgument("The vector has \(vector.count) dimensions; this index holds \(dimensions).")
        }
        let length = vector.reduce(0) { $0 + $1 * $1 }.squareRoot()
        guard length.isFinite, length > 0 else {
            throw HearthError.invalidArgument("A zero or non-finite vector cannot be searched by cosine.")
        }
        keys.append(key)
        vectors += vector.map { $0 / length }
    }

    /// The `top` entries most similar to `query`, best first (ties keep the order of adding).
    public func search(_ query: [Float], top: Int) -> [Match] {
        guard query.count == dimensions, top > 0, !keys.isEmpty else { return [] }
        let length = query.reduce(0) { $0 + $1 * $1 }.squareRoot()
        guard length > 0, length.isFinite else { return [] }
        var scores = [Float](repeating: 0, count: keys.count)
        vectors.withUnsafeBufferPointer { all in
            for i in keys.indices {
                var dot: Float = 0
                let row = i * dimensions
                for j in 0..<dimensions { dot += all[row + j] * query[j] }
                scores[i] = dot / length
            }
        }
        let order = scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
        return order.prefix(top).map { Match(key: keys[$0], score: scores[$0]) }
    }

    // MARK: - Files

    private static let magic = Array("HRTHVIX1".utf8)

    /// Writes the index to `url` atomically: the magic `HRTHVIX1`, then little-endian
    /// dimensions and count (UInt32), each key as a UInt32 byte length and UTF-8, then the
    /// vectors as Float32.
    public func save(to url: URL) throws {
        var bytes = Self.magic
        func append(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
        append(UInt32(dimensions))
        append(UInt32(keys.count))
        for key in keys {
            let utf8 = Array(key.utf8)
            append(UInt32(utf8.count))
            bytes += utf8
        }
        for value in vectors { append(value.bitPattern) }
        try Data(bytes).write(to: url, options: .atomic)
    }

    /// Reads an index written by `save(to:)`; a damaged or foreign file is
    /// `HearthError.invalidModelFile`.
    public init(contentsOf url: URL) throws {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw HearthError.fileNotFound(path: url.path)
        }
        let bytes = [UInt8](data)
        func invalid(_ reason: String) -> HearthError {
            .invalidModelFile(path: url.path, reason: "it is not a Hearth vector index (\(reason))")
        }
        var offset = 0
        func read(_ count: Int) throws -> ArraySlice<UInt8> {
            guard count >= 0, bytes.count - offset >= count else { throw invalid("it ends early") }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }
        func number() throws -> Int {
            let slice = try read(4)
            return Int(slice.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }
        guard Array(try read(Self.magic.count)) == Self.magic else { throw invalid("wrong magic") }
        let dimensions = try number(), count = try number()
        guard (1...65_536).contains(dimensions) else { throw invalid("\(dimensions) dimensions") }
        guard count <= (bytes.count - offset) / 4 else { throw invalid("\(count) entries cannot fit") }
        self.init(dimensions: dimensions)
        for _ in 0..<count {
            guard let key = String(validating: try read(try number()), as: UTF8.self) else { throw invalid("a key is not UTF-8") }
            keys.append(key)
        }
        guard bytes.count - offset == count * dimensions * 4 else { throw invalid("the vectors have the wrong size") }
        vectors.reserveCapacity(count * dimensions)
        for _ in 0..<(count * dimensions) { vectors.append(Float(bitPattern: UInt32(try number()))) }
        guard vectors.allSatisfy(\.isFinite) else { throw invalid("a vector is not finite") }
    }
}
