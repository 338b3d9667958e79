import HearthCore
import HearthFormats
import HearthKernels

/// How a KV cache keeps keys or values: half precision (as llama.cpp does by default), or
/// quantized to 8 or 4 bits a value in blocks of 32 with a half-precision scale, as llama.cpp's
/// `--cache-type-k`/`--cache-type-v` `q8_0` and `q4_0` do (34 and 18 bytes a block: 53% and 28%
/// of half precision's bytes).
public enum KVCacheType: String, Sendable, CaseIterable, Codable, CustomStringConvertible {
    case f16
    case q8_0
    case q4_0

    /// The type named `name` as llama.cpp spells it (`f16`, `q8_0`, `q4_0`, any case).
    public init(parsing name: String) throws {
        guard let type = Self(rawValue: name.lowercased()) else {
            throw HearthError.invalidArgument(
                "Unknown KV cache type '\(name)': use \(Self.allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        self = type
    }

    public var description: String { rawValue }

    var ggmlType: GGMLType {
        switch self {
        case .f16: return .f16
        case .q8_0: return .q8_0
        case .q4_0: return .q4_0
        }
    }

    /// Bytes one head's row of `headDimension` values takes.
    func rowBytes(headDimension: Int) -> Int {
        headDimension / ggmlType.blockSize * ggmlType.blockBytes
    }

    /// Why a head of `headDimension` values cannot be kept in this type, or nil.
    func unsupportedReason(headDimension: Int) -> String? {
        guard self != .f16, headDimension % ggmlType.blockSize != 0 else { return nil }
        return "A \(rawValue) KV cache needs heads of a multiple of \(ggmlType.blockSize) values; this model's have \(headDimension). Use f16."
    }
}

/// The types of a KV cache's keys and of its values.
public struct KVCacheTypes: Sendable, Hashable, Codable, CustomStringConvertible {
    public var keys: KVCacheType
    public var values: KVCacheType

    public init(keys: KVCacheType = .f16, values: KVCacheType = .f16) {
        self.keys = keys
        self.values = values
    }

    /// Half precision for both, llama.cpp's default.
    public static let f16 = KVCacheTypes()

    public var description: String { keys == values ? keys.rawValue : "k \(keys), v \(values)" }

    /// Bytes the keys and values of one position of every attention layer take.
    public func bytesPerPosition(_ c: ModelConfiguration) -> Int {
        c.cacheShapes.reduce(0) {
            $0 + $1.kvHeads * (keys.rowBytes(headDimension: $1.headDimension) + values.rowBytes(headDimension: $1.headDimension))
        }
    }

    /// The runs of a head that quantized keys are rotated in before they are stored (queries
    /// alike), or nil when the keys are half precision or heads are not a multiple of 64 wide:
    /// the largest power of two from 64 up that divides the head, as llama.cpp rotates them.
    func keyRotation(headDimension: Int) -> Int? {
        guard keys != .f16, headDimension % 64 == 0 else { return nil }
        var chunk = 64
        while headDimension % (2 * chunk) == 0 { chunk *= 2 }
        return chunk
    }

    /// The runs of 64 that quantized values are rotated in before they are stored (and the
    /// attention's output rotated back), or nil when values are half precision or heads are not
    /// a multiple of 64 wide. (Runs as wide as the keys' lose more: Gemma 3 at Q4_0, mean drift
    /// of the top logprobs 1.18 with 64, 1.34 with 256.)
    func valueRotation(headDimension: Int) -> Int? {
        values != .f16 && headDimension % 64 == 0 ? 64 : nil
    }

    /// Throws when `c`'s heads cannot be kept in these types.
    public func check(_ c: ModelConfiguration) throws {
        for d in Set(c.cacheShapes.map(\.headDimension)).sorted() {
            if let reason = keys.unsupportedReason(headDimension: d) ?? values.unsupportedReason(headDimension: d) {
                throw HearthError.invalidArgument(reason)
            }
        }
    }
}

/// Keys and values of every position of one sequence, per layer, in half precision or
/// quantized (`KVCacheTypes`). Layers may differ in heads and head size (Gemma 4's sliding and
/// global layers).
///
/// Each key/value head's positions lie one after another (layer, head, position), so that
/// attention reads one head's keys and values as one run of memory. With heads side by side in
/// a position's row (8 key/value heads of 64 halves, 1 KB a position), a head's 128 bytes every
/// kilobyte fall in one eighth of the cache's sets, and a deep context's head no longer stays
/// in L2.
///
/// Memory is reserved for the whole context but pages are touched only as positions fill, so
/// a long context costs address space, not resident memory, until it is used.
final class KVCache: @unchecked Sendable {
    /// Each layer's key/value heads and head size.
    let shapes: [ModelConfiguration.AttentionShape]
    let capacity: Int       // positions
    let types: KVCacheTypes
    /// Bytes of one head's key, and of its value, at one position, per layer.
    let keyRowBytes: [Int]
    let valueRowBytes: [Int]
    /// Where each layer's keys and values start, in bytes.
    private let keyOffsets: [Int]
    private let valueOffsets: [Int]
    let keys: UnsafeMutableRawPointer     // each layer's (heads, capacity) rows of its keyRowBytes
    let values: UnsafeMutableRawPointer   // each layer's (heads, capacity) rows of its valueRowBytes

    init(shapes: [ModelConfiguration.AttentionShape], capacity: Int, types: KVCacheTypes = .f16) {
        self.shapes = shapes
        self.capacity = capacity
        self.types = types
        keyRowBytes = shapes.map { types.keys.rowBytes(headDimension: $0.headDimension) }
        valueRowBytes = shapes.map { types.values.rowBytes(headDimension: $0.headDimension) }
        func offsets(_ rowBytes: [Int]) -> [Int] {
            var total = 0
            return zip(shapes, rowBytes).map { shape, bytes in
                defer { total += shape.kvHeads * capacity * bytes }
                return total
            }
        }
        keyOffsets = offsets(keyRowBytes)
        valueOffsets = offsets(valueRowBytes)
        let keyBytes = zip(shapes, keyRowBytes).reduce(0) { $0 + $1.0.kvHeads * capacity * $1.1 }
        let valueBytes = zip(shapes, valueRowBytes).reduce(0) { $0 + $1.0.kvHeads * capacity * $1.1 }
        keys = .allocate(byteCount: max(keyBytes, 1), alignment: 64)
        values = .allocate(byteCount: max(valueBytes, 1), alignment: 64)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Bytes reserved for keys and values.
    var bytes: Int {
        (0..<shapes.count).reduce(0) { $0 + shapes[$1].kvHeads * capacity * (keyRowBytes[$1] + valueRowBytes[$1]) }
    }

    /// Keys of `layer`'s head `head` at `position` (keyRowBytes[layer]; the next position
    /// follows, the next head `capacity` rows on).
    func keys(layer: Int, head: Int = 0, position: Int) -> UnsafeMutableRawPointer {
        keys + keyOffsets[layer] + (head * capacity + position) * keyRowBytes[layer]
    }

    /// Values of `layer`'s head `head` at `position`.
    func values(layer: Int, head: Int = 0, position: Int) -> UnsafeMutableRawPointer {
        values + valueOffsets[layer] + (head * capacity + position) * valueRowBytes[layer]
    }

    /// Stores one position's key and value (every head side by side), given as floats.
    func store(layer: Int, position: Int, key: UnsafePointer<Float>, value: UnsafePointer<Float>) {
        let d = shapes[layer].headDimension
        for head in 0..<shapes[layer].kvHeads {
            Activations.storeCacheRow(key + head * d, type: types.keys.ggmlType,
                                      into: keys(layer: layer, head: head, position: position), count: d)
            Activations.storeCacheRow(value + head * d, type: types.values.ggmlType,
                                      into: values(layer: layer, head: head, position: position), count: d)
        }
    }

    /// Copies the first `count` positions of every layer into `other`.
    func copyPrefix(_ count: Int, to other: KVCache) {
        precondition(other.shapes == shapes && other.types == types && count <= min(capacity, other.capacity))
        for (layer, shape) in shapes.enumerated() {
            for head in 0..<shape.kvHeads {
                other.keys(layer: layer, head: head, position: 0).copyMemory(from: keys(layer: layer, head: head, position: 0),
                                                                             byteCount: count * keyRowBytes[layer])
                other.values(layer: layer, head: head, position: 0).copyMemory(from: values(layer: layer, head: head, position: 0),
                                                                               byteCount: count * valueRowBytes[layer])
            }
        }
    }
}
