import Foundation
import HearthCore

/// Where one tensor lies in a GGUF file, and its shape and type.
public struct GGUFTensorInfo: Sendable, Equatable {
    /// The tensor's name, such as `blk.0.attn_q.weight`.
    public let name: String
    /// Sizes, innermost first: `dimensions[0]` is the length of a row.
    public let dimensions: [Int]
    /// Element type.
    public let type: GGMLType
    /// Offset of the data from the start of the file's data section.
    public let offset: Int
    /// Number of elements.
    public let elementCount: Int
    /// Bytes of data.
    public let byteCount: Int

    /// Elements in one row (`dimensions[0]`).
    public var rowLength: Int { dimensions.first ?? 1 }
    /// Number of rows: the product of all dimensions but the first.
    public var rowCount: Int { dimensions.dropFirst().reduce(1, *) }
    /// Bytes in one row.
    public var rowBytes: Int { rowLength / type.blockSize * type.blockBytes }
}

/// A GGUF model file (versions 2 and 3), memory-mapped. Tensors are views into the mapping:
/// opening a file reads its header and nothing else.
///
/// Every count, size and offset in the header is checked against the file before it is used,
/// so a damaged or hostile file is a `HearthError`, never a crash or a huge allocation.
public final class GGUFFile: MappedModelFile, Sendable {
    /// The file's format version.
    public let version: UInt32
    /// Metadata in file order.
    public let metadataKeys: [String]
    /// Metadata by key.
    public let metadata: [String: GGUFValue]
    /// Tensors in file order.
    public let tensors: [GGUFTensorInfo]
    /// Alignment of tensor data (`general.alignment`, 32 by default).
    public let alignment: Int
    /// Offset of the data section from the start of the file.
    public let dataOffset: Int
    /// The mapping that tensor views point into.
    public let mapping: MappedFile

    private let tensorIndex: [String: Int]
    private let arrayElementKinds: [String: GGUFValue.Kind]

    /// Most nested a metadata array may be; real files use one level.
    public static let maximumArrayDepth = 4
    /// Most elements a metadata array may have: sixteen times the largest vocabulary in use
    /// (262,144). Each element takes 24 bytes in memory, and counts are otherwise bounded only
    /// by the file size, so without a cap one damaged count in a large model could make the
    /// reader build gigabytes of values out of tensor data before it noticed.
    public static let maximumArrayLength = 1 << 22
    /// Capacity reserved up front for counts read from the file; beyond it, storage grows
    /// only as elements are actually read, so a count that lies costs nothing.
    static let maximumReservation = 1 << 16
    /// Most dimensions a tensor may have, as in GGML.
    static let maximumDimensions = 4

    /// Reads the GGUF header of an already mapped file.
    public init(mapping: MappedFile) throws {
        self.mapping = mapping
        var reader = ByteReader(mapping.bytes, path: mapping.path)

        let magic = try reader.read(UInt32.self, "the magic number")
        guard magic == 0x4655_4747 else {  // "GGUF"
            throw reader.invalid("it does not start with the GGUF magic number")
        }
        let version = try reader.read(UInt32.self, "the version")
        guard version == 2 || version == 3 else {
            // The magic reads the same either way round; only the version gives a big-endian file away.
            if version.byteSwapped == 2 || version.byteSwapped == 3 {
                throw HearthError.unsupportedModel(reason: "\(mapping.path) is a big-endian GGUF file; Hearth reads little-endian ones")
            }
            throw reader.invalid("GGUF version \(version) is not supported (only 2 and 3)")
        }
        self.version = version

        let tensorCount = try reader.read(UInt64.self, "the tensor count")
        let keyCount = try reader.read(UInt64.self, "the metadata count")
        // Each key-value pair needs at least a key length, a type and one byte.
        guard keyCount <= UInt64(reader.remaining / 13) else {
            throw reader.invalid("it claims \(keyCount) metadata entries, more than the file could hold")
        }
        // Each tensor info needs at least a name length, a dimension count, a type and an offset.
        guard tensorCount <= UInt64(reader.remaining / 24) else {
            throw reader.invalid("it claims \(tensorCount) tensors, more than the file could hold")
        }

        var keys: [String] = []
        var metadata: [String: GGUFValue] = [:]
        var elementKinds: [String: GGUFValue.Kind] = [:]
        keys.reserveCapacity(min(Int(keyCount), Self.maximumReservation))
        for index in 0..<Int(keyCount) {
            let key = try reader.readString("metadata key \(index)")
            guard metadata[key] == nil else { throw reader.invalid("metadata key \(key) appears twice") }
            let kindNumber = try reader.read(UInt32.self, "the type of \(key)")
            guard let kind = GGUFValue.Kind(rawValue: kindNumber) else {
                throw reader.invalid("metadata \(key) has unknown value type \(kindNumber)")
            }
            let valueStart = reader.offset
            metadata[key] = try Self.readValue(kind, key: key, depth: 0, from: &reader)
            if kind == .array {
                // readValue checked it; kept because an empty array's value cannot say it.
                let number = UInt32(littleEndian: reader.bytes.loadUnaligned(fromByteOffset: valueStart, as: UInt32.self))
                elementKinds[key] = GGUFValue.Kind(rawValue: number)
            }
            keys.append(key)
        }
        self.metadataKeys = keys
        self.metadata = metadata
        self.arrayElementKinds = elementKinds

        let alignment: Int
        if let value = metadata["general.alignment"] {
            guard let a = value.intValue, a > 0, a <= 1 << 20, a & (a - 1) == 0 else {
                throw reader.invalid("general.alignment must be a power of two, found \(value)")
            }
            alignment = a
        } else {
            alignment = 32
        }
        self.alignment = alignment

        var infos: [GGUFTensorInfo] = []
        var index: [String: Int] = [:]
        infos.reserveCapacity(min(Int(tensorCount), Self.maximumReservation))
        for number in 0..<Int(tensorCount) {
            let name = try reader.readString("the name of tensor \(number)")
            guard index[name] == nil else { throw reader.invalid("tensor \(name) appears twice") }
            let dimensionCount = try reader.read(UInt32.self, "the dimension count of \(name)")
            guard dimensionCount >= 1, dimensionCount <= UInt32(Self.maximumDimensions) else {
                throw reader.invalid("tensor \(name) has \(dimensionCount) dimensions (1 to \(Self.maximumDimensions) allowed)")
            }
            var dimensions: [Int] = []
            var elements = 1
            for _ in 0..<Int(dimensionCount) {
                let size = try reader.read(UInt64.self, "a dimension of \(name)")
                guard size >= 1, size <= UInt64(Int32.max) * 4 else {
                    throw reader.invalid("tensor \(name) has dimension size \(size)")
                }
                let (product, overflow) = elements.multipliedReportingOverflow(by: Int(size))
                guard !overflow else { throw reader.invalid("tensor \(name) has too many elements") }
                elements = product
                dimensions.append(Int(size))
            }
            let typeNumber = try reader.read(UInt32.self, "the type of \(name)")
            guard let type = GGMLType(rawValue: typeNumber) else {
                throw reader.invalid("tensor \(name) has unknown type \(typeNumber)")
            }
            guard dimensions[0] % type.blockSize == 0 else {
                throw reader.invalid("tensor \(name) has rows of \(dimensions[0]) elements, not a whole number of \(type.name) blocks")
            }
            guard let bytes = type.byteCount(elements: elements) else {
                throw reader.invalid("tensor \(name) has too many elements")
            }
            let offset = try reader.read(UInt64.self, "the offset of \(name)")
            guard offset <= UInt64(mapping.size), offset % UInt64(alignment) == 0 else {
                throw reader.invalid("tensor \(name) has offset \(offset), past the end or not aligned to \(alignment)")
            }
            index[name] = infos.count
            infos.append(GGUFTensorInfo(name: name, dimensions: dimensions, type: type, offset: Int(offset),
                                        elementCount: elements, byteCount: bytes))
        }

        let headerEnd = reader.offset
        let dataOffset = (headerEnd + alignment - 1) / alignment * alignment
        for info in infos {
            let (end, overflow) = (dataOffset + info.offset).addingReportingOverflow(info.byteCount)
            guard !overflow, end <= mapping.size else {
                throw reader.invalid("tensor \(info.name) (\(info.byteCount) bytes at data offset \(info.offset)) runs past the end of the file (truncated download?)")
            }
        }
        self.dataOffset = dataOffset
        self.tensors = infos
        self.tensorIndex = index
    }

    private static func readValue(_ kind: GGUFValue.Kind, key: String, depth: Int,
                                  from reader: inout ByteReader) throws -> GGUFValue {
        switch kind {
        case .uint8: return .uint8(try reader.read(UInt8.self, key))
        case .int8: return .int8(try reader.read(Int8.self, key))
        case .uint16: return .uint16(try reader.read(UInt16.self, key))
        case .int16: return .int16(try reader.read(Int16.self, key))
        case .uint32: return .uint32(try reader.read(UInt32.self, key))
        case .int32: return .int32(try reader.read(Int32.self, key))
        case .uint64: return .uint64(try reader.read(UInt64.self, key))
        case .int64: return .int64(try reader.read(Int64.self, key))
        case .float32: return .float32(try reader.readFloat(key))
        case .float64: return .float64(try reader.readDouble(key))
        case .bool:
            let byte = try reader.read(UInt8.self, key)
            guard byte <= 1 else { throw reader.invalid("metadata \(key) has bool value \(byte)") }
            return .bool(byte == 1)
        case .string: return .string(try reader.readString(key))
        case .array:
            guard depth < maximumArrayDepth else {
                throw reader.invalid("metadata \(key) nests arrays deeper than \(maximumArrayDepth) levels")
            }
            let elementNumber = try reader.read(UInt32.self, "the element type of \(key)")
            guard let elementKind = GGUFValue.Kind(rawValue: elementNumber) else {
                throw reader.invalid("metadata \(key) is an array of unknown type \(elementNumber)")
            }
            let count = try reader.read(UInt64.self, "the length of \(key)")
            guard count <= UInt64(reader.remaining / elementKind.minimumSize) else {
                throw reader.invalid("metadata \(key) claims \(count) elements, more than the file could hold")
            }
            guard count <= UInt64(maximumArrayLength) else {
                throw reader.invalid("metadata \(key) claims \(count) elements, more than the \(maximumArrayLength) allowed")
            }
            var values: [GGUFValue] = []
            values.reserveCapacity(min(Int(count), maximumReservation))
            for _ in 0..<Int(count) {
                values.append(try readValue(elementKind, key: key, depth: depth + 1, from: &reader))
            }
            return .array(values)
        }
    }

    // MARK: - Tensors

    /// The tensor called `name`, if there is one.
    public func tensorInfo(named name: String) -> GGUFTensorInfo? {
        tensorIndex[name].map { tensors[$0] }
    }

    /// The bytes of a tensor, inside the mapping.
    public func data(for info: GGUFTensorInfo) -> UnsafeRawBufferPointer {
        let start = mapping.base!.advanced(by: dataOffset + info.offset)
        return UnsafeRawBufferPointer(start: start, count: info.byteCount)
    }

    /// The bytes of the tensor called `name`; throws when the model lacks it.
    public func data(named name: String) throws -> UnsafeRawBufferPointer {
        guard let info = tensorInfo(named: name) else {
            throw HearthError.invalidModelFile(path: mapping.path, reason: "tensor \(name) is missing")
        }
        return data(for: info)
    }

    /// Size of the file in bytes.
    public var fileSize: Int { mapping.size }

    // MARK: - Metadata

    /// A string value.
    public func string(_ key: String) -> String? { metadata[key]?.stringValue }
    /// An integer value of any integer type.
    public func int(_ key: String) -> Int? { metadata[key]?.intValue }
    /// A floating-point (or integer) value.
    public func float(_ key: String) -> Float? { metadata[key]?.doubleValue.map(Float.init) }
    /// A bool value.
    public func bool(_ key: String) -> Bool? { metadata[key]?.boolValue }
    /// An array value.
    public func array(_ key: String) -> [GGUFValue]? { metadata[key]?.arrayValue }
    /// The element kind of the array stored under `key`, which an empty array's value cannot
    /// tell; nil when `key` is missing or not an array.
    public func arrayElementKind(_ key: String) -> GGUFValue.Kind? { arrayElementKinds[key] }
    /// An array of strings; nil when missing or when an element is not a string.
    public func stringArray(_ key: String) -> [String]? {
        guard let values = array(key) else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(values.count)
        for value in values {
            guard let s = value.stringValue else { return nil }
            strings.append(s)
        }
        return strings
    }

    /// The model architecture (`general.architecture`), such as `llama` or `gemma3`.
    public var architecture: String? { string("general.architecture") }
}
