import Foundation
import HearthCore

/// The element types a safetensors file names in its header (`"dtype": "F32"`).
public enum SafetensorsDType: String, Sendable, CaseIterable, Codable {
    case bool = "BOOL"
    case f4 = "F4"
    case f6_e2m3 = "F6_E2M3"
    case f6_e3m2 = "F6_E3M2"
    case u8 = "U8"
    case i8 = "I8"
    case f8_e5m2 = "F8_E5M2"
    case f8_e4m3 = "F8_E4M3"
    case f8_e8m0 = "F8_E8M0"
    case i16 = "I16"
    case u16 = "U16"
    case f16 = "F16"
    case bf16 = "BF16"
    case i32 = "I32"
    case u32 = "U32"
    case f32 = "F32"
    case c64 = "C64"
    case f64 = "F64"
    case i64 = "I64"
    case u64 = "U64"

    /// Bits per element; the 4- and 6-bit float formats pack several elements into a byte.
    public var bitCount: Int {
        switch self {
        case .f4: return 4
        case .f6_e2m3, .f6_e3m2: return 6
        case .bool, .u8, .i8, .f8_e5m2, .f8_e4m3, .f8_e8m0: return 8
        case .i16, .u16, .f16, .bf16: return 16
        case .i32, .u32, .f32: return 32
        case .c64, .f64, .i64, .u64: return 64
        }
    }

    /// Bytes taken by `count` elements, or nil when they do not fill whole bytes or the size
    /// does not fit in an `Int`.
    public func byteCount(elements count: Int) -> Int? {
        let (bits, overflow) = count.multipliedReportingOverflow(by: bitCount)
        guard count >= 0, !overflow, bits % 8 == 0 else { return nil }
        return bits / 8
    }
}

/// One tensor of a safetensors file: its name, type, shape and where its bytes lie.
public struct SafetensorsTensor: Sendable, Equatable {
    /// The tensor's name, such as `encoder.layer.0.attention.self.query.weight`.
    public let name: String
    /// Element type.
    public let dtype: SafetensorsDType
    /// Sizes, outermost first (row-major, as PyTorch and NumPy write them).
    public let shape: [Int]
    /// Byte range of the data, relative to the start of the file's data section.
    public let dataOffsets: Range<Int>
    /// Number of elements (1 for a scalar, whose shape is empty).
    public let elementCount: Int

    /// Bytes of data.
    public var byteCount: Int { dataOffsets.count }
}

/// Swift types a safetensors tensor can be viewed as without copying, and the dtypes each
/// can stand for (`UInt16` holds the bits of F16 and BF16 values).
public protocol SafetensorsElement: Sendable {
    /// The dtypes whose elements are stored as this type.
    static var safetensorsDTypes: Set<SafetensorsDType> { get }
}

extension Float: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.f32] } }
extension Double: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.f64] } }
extension Int64: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.i64] } }
extension UInt64: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.u64] } }
extension Int32: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.i32] } }
extension UInt32: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.u32] } }
extension Int16: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.i16] } }
extension UInt16: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.u16, .f16, .bf16] } }
extension Int8: SafetensorsElement { public static var safetensorsDTypes: Set<SafetensorsDType> { [.i8] } }
extension UInt8: SafetensorsElement {
    public static var safetensorsDTypes: Set<SafetensorsDType> { [.u8, .bool, .f8_e4m3, .f8_e5m2, .f8_e8m0] }
}

/// A safetensors model file, memory-mapped: an 8-byte little-endian header length, a JSON
/// header naming each tensor's dtype, shape and byte range, then the tensor data.
///
/// The header is checked the way the reference implementation checks it: the data ranges
/// must match dtype × shape and tile the data section exactly, with no overlap, gap or
/// trailing bytes. Anything else is a `HearthError.invalidModelFile` naming the problem.
public final class SafetensorsFile: MappedModelFile, Sendable {
    /// `__metadata__`: free-form strings such as `"format": "pt"`; empty when absent.
    public let metadata: [String: String]
    /// Tensors in the order their data lies in the file.
    public let tensors: [SafetensorsTensor]
    /// Offset of the data section from the start of the file (8 + the header length).
    public let dataOffset: Int
    /// The mapping that tensor views point into.
    public let mapping: MappedFile

    private let tensorIndex: [String: Int]

    /// Longest header accepted, as in the reference implementation.
    public static let maximumHeaderLength = 100_000_000

    /// Reads the header of an already mapped file.
    public init(mapping: MappedFile) throws {
        self.mapping = mapping
        let bytes = mapping.bytes
        func invalid(_ reason: String) -> HearthError {
            HearthError.invalidModelFile(path: mapping.path, reason: reason)
        }

        guard bytes.count >= 8 else {
            throw invalid("truncated: \(bytes.count) bytes is too short for the 8-byte header length")
        }
        let headerLength = UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))
        guard headerLength <= UInt64(Self.maximumHeaderLength) else {
            throw invalid("its header length \(headerLength) is absurd (at most \(Self.maximumHeaderLength) allowed); it is probably not a safetensors file")
        }
        guard headerLength <= UInt64(bytes.count - 8) else {
            throw invalid("truncated: its header length \(headerLength) runs past the end of the file (\(bytes.count) bytes)")
        }
        let dataOffset = 8 + Int(headerLength)
        let dataSize = bytes.count - dataOffset

        let header: Header
        do {
            let json = Data(UnsafeRawBufferPointer(rebasing: bytes[8..<dataOffset]))
            header = try JSONDecoder().decode(Header.self, from: json)
        } catch let error as DecodingError {
            throw invalid(Self.describe(error))
        } catch {
            throw invalid("its header is not valid JSON (\(error))")
        }

        var tensors: [SafetensorsTensor] = []
        tensors.reserveCapacity(header.entries.count)
        for (name, entry) in header.entries {
            guard let dtype = SafetensorsDType(rawValue: entry.dtype) else {
                throw invalid("tensor \(name) has unknown dtype \(entry.dtype)")
            }
            var elements = 1
            for size in entry.shape {
                guard size >= 0 else { throw invalid("tensor \(name) has dimension size \(size)") }
                let (product, overflow) = elements.multipliedReportingOverflow(by: size)
                guard !overflow else { throw invalid("tensor \(name) has too many elements") }
                elements = product
            }
            guard !elements.multipliedReportingOverflow(by: dtype.bitCount).overflow else {
                throw invalid("tensor \(name) has too many elements")
            }
            guard let byteCount = dtype.byteCount(elements: elements) else {
                throw invalid("tensor \(name) has \(elements) \(dtype.rawValue) elements, which do not fill whole bytes")
            }
            let offsets = entry.dataOffsets
            guard offsets.count == 2, offsets[0] >= 0, offsets[0] <= offsets[1] else {
                throw invalid("tensor \(name) has data_offsets \(offsets); expected [begin, end] with 0 <= begin <= end")
            }
            guard offsets[1] <= dataSize else {
                throw invalid("tensor \(name) (data_offsets \(offsets)) runs past the end of the data section, \(dataSize) bytes (truncated download?)")
            }
            guard offsets[1] - offsets[0] == byteCount else {
                throw invalid("tensor \(name) has \(offsets[1] - offsets[0]) bytes at data_offsets \(offsets) but \(entry.shape) \(dtype.rawValue) needs \(byteCount)")
            }
            tensors.append(SafetensorsTensor(name: name, dtype: dtype, shape: entry.shape,
                                             dataOffsets: offsets[0]..<offsets[1], elementCount: elements))
        }
        tensors.sort { ($0.dataOffsets.lowerBound, $0.dataOffsets.upperBound, $0.name) < ($1.dataOffsets.lowerBound, $1.dataOffsets.upperBound, $1.name) }

        var end = 0
        var previous: String?
        for tensor in tensors {
            let begin = tensor.dataOffsets.lowerBound
            if begin < end {
                throw invalid("tensor \(tensor.name) (data_offsets \(begin)..<\(tensor.dataOffsets.upperBound)) overlaps tensor \(previous ?? "")")
            }
            if begin > end {
                throw invalid("there are \(begin - end) unused bytes before tensor \(tensor.name) at data offset \(end)")
            }
            end = tensor.dataOffsets.upperBound
            previous = tensor.name
        }
        guard end == dataSize else {
            throw invalid("there are \(dataSize - end) bytes after the last tensor's data")
        }

        var index: [String: Int] = [:]
        for (i, tensor) in tensors.enumerated() { index[tensor.name] = i }
        self.metadata = header.metadata
        self.tensors = tensors
        self.tensorIndex = index
        self.dataOffset = dataOffset
    }

    // MARK: - Tensors

    /// The tensor called `name`, if there is one.
    public func tensor(named name: String) -> SafetensorsTensor? {
        tensorIndex[name].map { tensors[$0] }
    }

    /// The bytes of a tensor, inside the mapping.
    public func data(for tensor: SafetensorsTensor) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: mapping.bytes[dataOffset + tensor.dataOffsets.lowerBound ..< dataOffset + tensor.dataOffsets.upperBound])
    }

    /// The bytes of the tensor called `name`; throws when the file lacks it.
    public func data(named name: String) throws -> UnsafeRawBufferPointer {
        data(for: try required(name))
    }

    /// The elements of `tensor` as `T`, inside the mapping (no copy). Throws when `T` does not
    /// hold the tensor's dtype, or when the data is not aligned for `T` (then use `floats(_:)`
    /// or `data(for:)`).
    public func view<T: SafetensorsElement>(_ tensor: SafetensorsTensor, as type: T.Type = T.self) throws -> UnsafeBufferPointer<T> {
        guard T.safetensorsDTypes.contains(tensor.dtype) else {
            throw HearthError.invalidArgument("Tensor \(tensor.name) in \(mapping.path) is \(tensor.dtype.rawValue), which cannot be viewed as \(T.self)")
        }
        let raw = data(for: tensor)
        guard tensor.elementCount > 0 else { return UnsafeBufferPointer(start: nil, count: 0) }
        guard Int(bitPattern: raw.baseAddress!) % MemoryLayout<T>.alignment == 0 else {
            throw HearthError.unsupportedModel(reason: "tensor \(tensor.name) in \(mapping.path) is not aligned for \(T.self)")
        }
        return UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: T.self), count: tensor.elementCount)
    }

    /// The elements of the tensor called `name` as `T`; see `view(_:as:)`.
    public func view<T: SafetensorsElement>(named name: String, as type: T.Type = T.self) throws -> UnsafeBufferPointer<T> {
        try view(try required(name), as: type)
    }

    /// A copy of a floating-point tensor (F32, F16, BF16 or F64) converted to `Float`.
    public func floats(_ tensor: SafetensorsTensor) throws -> [Float] {
        let raw = data(for: tensor)
        let count = tensor.elementCount
        switch tensor.dtype {
        case .f32:
            return (0..<count).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        case .f16:
            return (0..<count).map { floatFromHalf(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self))) }
        case .bf16:
            return (0..<count).map { Float(bitPattern: UInt32(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self))) << 16) }
        case .f64:
            return (0..<count).map { Float(Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)))) }
        default:
            throw HearthError.invalidArgument("Tensor \(tensor.name) in \(mapping.path) is \(tensor.dtype.rawValue), not a float type that converts to Float")
        }
    }

    /// A copy of the floating-point tensor called `name`; see `floats(_:)`.
    public func floats(named name: String) throws -> [Float] {
        try floats(try required(name))
    }

    /// Size of the file in bytes.
    public var fileSize: Int { mapping.size }

    private func required(_ name: String) throws -> SafetensorsTensor {
        guard let tensor = tensor(named: name) else {
            throw HearthError.invalidModelFile(path: mapping.path, reason: "tensor \(name) is missing")
        }
        return tensor
    }

    // MARK: - Header

    private struct Header: Decodable {
        struct Entry: Decodable {
            let dtype: String
            let shape: [Int]
            let dataOffsets: [Int]

            enum CodingKeys: String, CodingKey {
                case dtype, shape
                case dataOffsets = "data_offsets"
            }
        }

        struct Key: CodingKey {
            let stringValue: String
            init(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }

        var metadata: [String: String] = [:]
        var entries: [(String, Entry)] = []

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            for key in container.allKeys {
                if key.stringValue == "__metadata__" {
                    metadata = try container.decode([String: String].self, forKey: key)
                } else {
                    entries.append((key.stringValue, try container.decode(Entry.self, forKey: key)))
                }
            }
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func place(_ context: DecodingError.Context) -> String {
            context.codingPath.isEmpty ? "" : " at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        }
        func detail(_ context: DecodingError.Context) -> String {
            var text = context.debugDescription
            while text.hasSuffix(".") { text.removeLast() }
            return text
        }
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return "its header is not valid JSON"
        case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "its header has a bad value\(place(context)): \(detail(context))"
        case .keyNotFound(let key, let context):
            return "its header entry\(place(context)) has no \(key.stringValue)"
        @unknown default:
            return "its header cannot be decoded: \(error)"
        }
    }
}

/// An IEEE half-precision value widened to `Float`, without `Float16`, which some platforms
/// lack.
func floatFromHalf(_ bits: UInt16) -> Float {
    let sign = UInt32(bits & 0x8000) << 16
    let exponent = Int(bits >> 10) & 0x1F
    let mantissa = UInt32(bits & 0x3FF)
    switch exponent {
    case 0:
        // Zero or subnormal: mantissa × 2^-24, exact in Float.
        let magnitude = Float(mantissa) * Float(sign: .plus, exponent: -24, significand: 1)
        return Float(bitPattern: sign | magnitude.bitPattern)
    case 0x1F:
        return Float(bitPattern: sign | 0x7F80_0000 | mantissa << 13)
    default:
        return Float(bitPattern: sign | UInt32(exponent + 112) << 23 | mantissa << 13)
    }
}
