import HearthCore

/// The element types of a CTranslate2 model variable, whose `DataType` ids count from 0 in
/// this order.
public enum CTranslate2DType: UInt8, Sendable, CaseIterable {
    case float32, int8, int16, int32, float16, bfloat16

    /// Bytes per element.
    public var size: Int {
        switch self {
        case .int8: return 1
        case .int16, .float16, .bfloat16: return 2
        case .float32, .int32: return 4
        }
    }

    /// The type of an element of `size` bytes in files older than binary version 4, which
    /// store only the size.
    init?(legacySize size: UInt8) {
        switch size {
        case 1: self = .int8
        case 2: self = .int16
        case 4: self = .float32
        default: return nil
        }
    }
}

/// One variable of a CTranslate2 model: its name, shape, type and where its bytes lie in the
/// mapping.
public struct CTranslate2Variable: Sendable, Equatable {
    /// The variable's name, such as `encoder/layer_0/ffn/linear_0/weight`.
    public let name: String
    /// Sizes, outermost first (row-major).
    public let shape: [Int]
    public let dtype: CTranslate2DType
    /// Byte range of the data from the start of the file.
    public let bytes: Range<Int>

    /// Number of elements (1 for a scalar).
    public var elementCount: Int { shape.reduce(1, *) }
}

/// A CTranslate2 `model.bin`, memory-mapped: a binary version, the model spec's name and
/// revision, then named variables (rank, dimensions, type, byte count, data), then aliases
/// that give a variable a second name (Whisper's output projection is its decoder's
/// embeddings).
///
/// Every count and length is checked against the bytes that remain, and every variable's byte
/// count against its type and shape; anything else is a `HearthError.invalidModelFile`
/// naming the problem.
public final class CTranslate2File: MappedModelFile, Sendable {
    /// The format's version; versions 1 through `newestVersion` are read.
    public let binaryVersion: Int
    /// The model spec, such as `WhisperSpec` (empty before binary version 2).
    public let specName: String
    public let specRevision: Int
    /// Variables in file order.
    public let variables: [CTranslate2Variable]
    /// Second names: alias → the variable it names.
    public let aliases: [String: String]
    public let mapping: MappedFile

    private let index: [String: Int]

    /// The newest binary version this reader knows.
    public static let newestVersion = 6

    public init(mapping: MappedFile) throws {
        self.mapping = mapping
        var reader = ByteReader(mapping.bytes, path: mapping.path)
        let version = try reader.read(UInt32.self, "the binary version")
        guard version >= 1, version <= UInt32(Self.newestVersion) else {
            throw reader.invalid("its binary version is \(version), but CTranslate2 models have versions 1 to \(Self.newestVersion); it is probably not a CTranslate2 model.bin")
        }
        binaryVersion = Int(version)
        if version >= 2 {
            specName = try Self.readString(&reader, "the model spec's name")
            specRevision = Int(try reader.read(UInt32.self, "the spec revision"))
        } else {
            specName = ""
            specRevision = 1
        }
        let count = try reader.read(UInt32.self, "the variable count")
        // Each variable takes at least 8 bytes (name length, rank, type, byte count).
        guard Int(count) <= reader.remaining / 8 else {
            throw reader.invalid("truncated: it claims \(count) variables but only \(reader.remaining) bytes remain")
        }
        var variables: [CTranslate2Variable] = []
        var index: [String: Int] = [:]
        for number in 0..<Int(count) {
            let name = try Self.readString(&reader, "the name of variable \(number)")
            let rank = try reader.read(UInt8.self, "the rank of \(name)")
            var shape: [Int] = []
            var elements = 1
            for axis in 0..<Int(rank) {
                let size = Int(try reader.read(UInt32.self, "dimension \(axis) of \(name)"))
                let (product, overflow) = elements.multipliedReportingOverflow(by: size)
                guard !overflow else { throw reader.invalid("the shape of \(name) is too large") }
                elements = product
                shape.append(size)
            }
            let dtype: CTranslate2DType
            let byteCount: Int
            if version >= 4 {
                let id = try reader.read(UInt8.self, "the type of \(name)")
                guard let known = CTranslate2DType(rawValue: id) else {
                    throw reader.invalid("variable \(name) has type id \(id), which Hearth does not read (float32, float16, bfloat16, int8, int16 and int32 are read)")
                }
                dtype = known
                byteCount = Int(try reader.read(UInt32.self, "the byte count of \(name)"))
            } else {
                let size = try reader.read(UInt8.self, "the element size of \(name)")
                guard let known = CTranslate2DType(legacySize: size) else {
                    throw reader.invalid("variable \(name) has elements of \(size) bytes, which no CTranslate2 type has")
                }
                dtype = known
                let (bytes, overflow) = Int(try reader.read(UInt32.self, "the element count of \(name)")).multipliedReportingOverflow(by: Int(size))
                guard !overflow else { throw reader.invalid("variable \(name) is too large") }
                byteCount = bytes
            }
            let (expected, overflow) = elements.multipliedReportingOverflow(by: dtype.size)
            guard !overflow, expected == byteCount else {
                throw reader.invalid("variable \(name) holds \(byteCount) bytes, but \(shape) elements of \(dtype) take \(overflow ? "more than the address space" : String(expected))")
            }
            try reader.need(byteCount, for: "the data of \(name)")
            guard index[name] == nil else { throw reader.invalid("variable \(name) appears twice") }
            index[name] = variables.count
            variables.append(CTranslate2Variable(name: name, shape: shape, dtype: dtype, bytes: reader.offset..<reader.offset + byteCount))
            reader.offset += byteCount
        }
        var aliases: [String: String] = [:]
        if version >= 3 {
            let aliasCount = try reader.read(UInt32.self, "the alias count")
            guard Int(aliasCount) <= reader.remaining / 4 else {
                throw reader.invalid("truncated: it claims \(aliasCount) aliases but only \(reader.remaining) bytes remain")
            }
            for number in 0..<Int(aliasCount) {
                let alias = try Self.readString(&reader, "alias \(number)")
                let target = try Self.readString(&reader, "the variable alias \(alias) names")
                guard index[target] != nil else {
                    throw reader.invalid("alias \(alias) names \(target), which is not a variable of the file")
                }
                guard index[alias] == nil, aliases[alias] == nil else {
                    throw reader.invalid("alias \(alias) repeats a name already in the file")
                }
                aliases[alias] = target
            }
        }
        guard reader.remaining == 0 else {
            throw reader.invalid("\(reader.remaining) bytes follow the last \(version >= 3 ? "alias" : "variable"); the file is damaged or not a CTranslate2 model.bin")
        }
        self.variables = variables
        self.aliases = aliases
        self.index = index
    }

    /// The variable called `name`, directly or through an alias.
    public func variable(named name: String) -> CTranslate2Variable? {
        if let i = index[name] { return variables[i] }
        if let target = aliases[name], let i = index[target] { return variables[i] }
        return nil
    }

    /// The bytes of `variable`.
    public func data(for variable: CTranslate2Variable) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: mapping.bytes[variable.bytes])
    }

    /// The integer value of the scalar variable `name` (an int8, int16 or int32 of one
    /// element, as specs store flags and counts), or nil when the file has none.
    public func integer(named name: String) throws -> Int? {
        guard let variable = variable(named: name) else { return nil }
        let data = data(for: variable)
        guard variable.elementCount == 1 else {
            throw HearthError.invalidModelFile(path: mapping.path, reason: "\(name) should be a single number but has shape \(variable.shape)")
        }
        switch variable.dtype {
        case .int8: return Int(Int8(bitPattern: data[0]))
        case .int16: return Int(Int16(littleEndian: data.loadUnaligned(as: Int16.self)))
        case .int32: return Int(Int32(littleEndian: data.loadUnaligned(as: Int32.self)))
        default:
            throw HearthError.invalidModelFile(path: mapping.path, reason: "\(name) should be an integer but is \(variable.dtype)")
        }
    }

    /// A string: a UInt16 byte count, then the bytes, the last of them a NUL.
    private static func readString(_ reader: inout ByteReader, _ what: String) throws -> String {
        let length = Int(try reader.read(UInt16.self, what))
        try reader.need(length, for: what)
        let start = reader.offset
        reader.offset += length
        var bytes = UnsafeRawBufferPointer(rebasing: reader.bytes[start..<start + length])
        if bytes.last == 0 { bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast()) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw reader.invalid("\(what) at offset \(start) is not UTF-8")
        }
        return text
    }
}
