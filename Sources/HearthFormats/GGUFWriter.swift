#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HearthCore

/// Builds a GGUF version 3 file from metadata and tensors, in the order they are added.
///
///     var writer = GGUFWriter()
///     writer.add("general.architecture", .string("llama"))
///     writer.add("llama.block_count", .uint32(2))
///     writer.add("tokenizer.ggml.tokens", strings: ["<unk>", "a", "b"])
///     writer.addTensor(name: "token_embd.weight", dimensions: [8, 3], floats: weights)
///     try writer.write(to: url)          // or: let bytes = try writer.data()
///
/// Tensor data is padded to `general.alignment` (32 when the metadata does not set it), the
/// way llama.cpp writes it. Nothing is checked until `data()` or `write(to:)`, which throw
/// `HearthError.invalidArgument` for anything `GGUFFile` would refuse to read.
public struct GGUFWriter: Sendable {
    private struct Entry: Sendable {
        let key: String
        let value: GGUFValue
        let elementKind: GGUFValue.Kind?
    }

    private struct Tensor: Sendable {
        let name: String
        let dimensions: [Int]
        let type: GGMLType
        let contents: Contents
    }

    /// A tensor's bytes: given, or made piece by piece as the file is written.
    private enum Contents: Sendable {
        case bytes([UInt8])
        case pieces(count: Int, make: @Sendable (Int) -> [UInt8])

        /// The bytes given, or nil when they are made on writing.
        var givenCount: Int? {
            if case .bytes(let bytes) = self { return bytes.count }
            return nil
        }

        /// Calls `body` with each run of bytes in order; a made tensor's total must be `expected`.
        func forEachRun(expected: Int, name: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
            switch self {
            case .bytes(let bytes):
                try bytes.withUnsafeBytes(body)
            case .pieces(let count, let make):
                var total = 0
                for index in 0..<count {
                    let piece = make(index)
                    total += piece.count
                    guard total <= expected else { break }
                    try piece.withUnsafeBytes(body)
                }
                guard total == expected else {
                    throw HearthError.invalidArgument("GGUF tensor \(name) needs \(expected) bytes of data, but its pieces made \(total)")
                }
            }
        }
    }

    private var entries: [Entry] = []
    private var tensors: [Tensor] = []

    /// An empty file: no metadata, no tensors.
    public init() {}

    // MARK: - Metadata

    /// Adds a metadata entry. A non-empty array is written with the kind of its first element
    /// (all its elements must share it); an empty array, at any depth, is written with
    /// `elementKind`, which it therefore needs.
    public mutating func add(_ key: String, _ value: GGUFValue, elementKind: GGUFValue.Kind? = nil) {
        entries.append(Entry(key: key, value: value, elementKind: elementKind))
    }

    /// Adds an array of strings, such as `tokenizer.ggml.tokens`; it may be empty.
    public mutating func add(_ key: String, strings: [String]) {
        add(key, .array(strings.map(GGUFValue.string)), elementKind: .string)
    }

    /// Adds an array of 32-bit floats, such as `tokenizer.ggml.scores`; it may be empty.
    public mutating func add(_ key: String, floats: [Float]) {
        add(key, .array(floats.map(GGUFValue.float32)), elementKind: .float32)
    }

    /// Adds an array of 32-bit integers, such as `tokenizer.ggml.token_type`; it may be empty.
    public mutating func add(_ key: String, int32s: [Int32]) {
        add(key, .array(int32s.map(GGUFValue.int32)), elementKind: .int32)
    }

    // MARK: - Tensors

    /// Adds a tensor. `dimensions` are innermost first (`[rowLength, rowCount]`), and `data` is
    /// its bytes exactly as GGML lays them out for `type`.
    public mutating func addTensor(name: String, dimensions: [Int], type: GGMLType, data: [UInt8]) {
        tensors.append(Tensor(name: name, dimensions: dimensions, type: type, contents: .bytes(data)))
    }

    /// Adds a tensor whose bytes are made as the file is written: `piece(0)`, `piece(1)`, …
    /// `piece(pieces - 1)` in order, concatenated, must be its bytes exactly. Only one piece is
    /// held at a time, so `write(to:)` writes files larger than memory.
    public mutating func addTensor(name: String, dimensions: [Int], type: GGMLType, pieces: Int,
                                   piece: @escaping @Sendable (Int) -> [UInt8]) {
        tensors.append(Tensor(name: name, dimensions: dimensions, type: type, contents: .pieces(count: pieces, make: piece)))
    }

    /// Adds a tensor, copying its bytes from `data` (a view into another file, for instance).
    public mutating func addTensor(name: String, dimensions: [Int], type: GGMLType, data: UnsafeRawBufferPointer) {
        addTensor(name: name, dimensions: dimensions, type: type, data: Array(data))
    }

    /// Adds an F32 tensor from its values.
    public mutating func addTensor(name: String, dimensions: [Int], floats: [Float]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(floats.count * 4)
        for value in floats { bytes.appendLittleEndian(value.bitPattern) }
        addTensor(name: name, dimensions: dimensions, type: .f32, data: bytes)
    }

    // MARK: - Output

    /// The whole file as bytes.
    public func data() throws -> [UInt8] {
        let layout = try self.layout()
        var bytes = layout.header
        bytes.reserveCapacity(layout.fileSize)
        for (index, (tensor, padding)) in zip(tensors, layout.paddings).enumerated() {
            try tensor.contents.forEachRun(expected: layout.sizes[index], name: tensor.name) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: repeatElement(0, count: padding))
        }
        return bytes
    }

    /// Writes the file at `url`, replacing any file there. It is written under a temporary name
    /// in the same directory and renamed into place, so no reader ever sees half a file.
    public func write(to url: URL) throws {
        try write(toPath: url.path)
    }

    /// Writes the file at `path`; see `write(to:)`.
    public func write(toPath path: String) throws {
        let layout = try self.layout()
        let temporary = path + ".tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        guard fd >= 0 else { throw Self.writeError(path, errno) }
        var closed = false
        var renamed = false
        defer {
            if !closed { close(fd) }
            if !renamed { unlink(temporary) }
        }
        try layout.header.withUnsafeBytes { try Self.writeAll($0, to: fd, path: path) }
        let zeros = [UInt8](repeating: 0, count: layout.alignment)
        for (index, (tensor, padding)) in zip(tensors, layout.paddings).enumerated() {
            try tensor.contents.forEachRun(expected: layout.sizes[index], name: tensor.name) { try Self.writeAll($0, to: fd, path: path) }
            try zeros.withUnsafeBytes { try Self.writeAll(UnsafeRawBufferPointer(rebasing: $0[0..<padding]), to: fd, path: path) }
        }
        guard fsync(fd) == 0 else { throw Self.writeError(path, errno) }
        closed = true
        guard close(fd) == 0 else { throw Self.writeError(path, errno) }
        guard rename(temporary, path) == 0 else { throw Self.writeError(path, errno) }
        renamed = true
    }

    // MARK: - Layout

    private struct Layout {
        var header: [UInt8]
        /// Each tensor's bytes, and the padding after them.
        var sizes: [Int]
        var paddings: [Int]
        var alignment: Int
        var fileSize: Int
    }

    /// Checks everything and encodes the header (padded to the data section) and the padding
    /// after each tensor.
    private func layout() throws -> Layout {
        var seenKeys = Set<String>()
        var alignment = 32
        for entry in entries {
            guard seenKeys.insert(entry.key).inserted else {
                throw HearthError.invalidArgument("GGUF metadata key \(entry.key) is added twice")
            }
            if entry.key == "general.alignment" {
                guard let a = entry.value.intValue, a > 0, a <= 1 << 20, a & (a - 1) == 0 else {
                    throw HearthError.invalidArgument("general.alignment must be a power of two up to 2^20, not \(entry.value)")
                }
                alignment = a
            }
        }

        var header: [UInt8] = []
        header.appendLittleEndian(UInt32(0x4655_4747))  // "GGUF"
        header.appendLittleEndian(UInt32(3))
        header.appendLittleEndian(UInt64(tensors.count))
        header.appendLittleEndian(UInt64(entries.count))
        for entry in entries {
            header.appendGGUFString(entry.key)
            header.appendLittleEndian(entry.value.kind.rawValue)
            try header.appendGGUFValue(entry.value, key: entry.key, emptyKind: entry.elementKind, depth: 0)
        }

        var seenNames = Set<String>()
        var sizes: [Int] = []
        var paddings: [Int] = []
        var offset = 0
        for tensor in tensors {
            let name = tensor.name
            guard seenNames.insert(name).inserted else {
                throw HearthError.invalidArgument("GGUF tensor \(name) is added twice")
            }
            let dimensions = tensor.dimensions
            guard (1...GGUFFile.maximumDimensions).contains(dimensions.count) else {
                throw HearthError.invalidArgument("GGUF tensor \(name) has \(dimensions.count) dimensions (1 to \(GGUFFile.maximumDimensions) allowed)")
            }
            var elements = 1
            for size in dimensions {
                guard size >= 1 else { throw HearthError.invalidArgument("GGUF tensor \(name) has dimension size \(size)") }
                let (product, overflow) = elements.multipliedReportingOverflow(by: size)
                guard !overflow else { throw HearthError.invalidArgument("GGUF tensor \(name) has too many elements") }
                elements = product
            }
            guard dimensions[0] % tensor.type.blockSize == 0, let bytes = tensor.type.byteCount(elements: elements) else {
                throw HearthError.invalidArgument("GGUF tensor \(name) has rows of \(dimensions[0]) elements, not a whole number of \(tensor.type.name) blocks of \(tensor.type.blockSize)")
            }
            if let given = tensor.contents.givenCount, given != bytes {
                throw HearthError.invalidArgument("GGUF tensor \(name) (\(dimensions.map(String.init).joined(separator: "x")) \(tensor.type.name)) needs \(bytes) bytes of data, but \(given) were given")
            }
            header.appendGGUFString(name)
            header.appendLittleEndian(UInt32(dimensions.count))
            for size in dimensions { header.appendLittleEndian(UInt64(size)) }
            header.appendLittleEndian(tensor.type.rawValue)
            header.appendLittleEndian(UInt64(offset))
            let padding = (alignment - bytes % alignment) % alignment
            sizes.append(bytes)
            paddings.append(padding)
            offset += bytes + padding
        }

        header.append(contentsOf: repeatElement(0, count: (alignment - header.count % alignment) % alignment))
        return Layout(header: header, sizes: sizes, paddings: paddings, alignment: alignment, fileSize: header.count + offset)
    }

    private static func writeAll(_ buffer: UnsafeRawBufferPointer, to fd: Int32, path: String) throws {
        var done = 0
        while done < buffer.count {
            let written = systemWrite(fd, buffer.baseAddress! + done, buffer.count - done)
            if written < 0 {
                if errno == EINTR { continue }
                throw writeError(path, errno)
            }
            done += written
        }
    }

    private static func writeError(_ path: String, _ code: Int32) -> HearthError {
        if code == ENOENT || code == ENOTDIR {
            return .fileNotFound(path: (path as NSString).deletingLastPathComponent)
        }
        return .resourceUnavailable("Cannot write \(path): \(String(cString: strerror(code)))")
    }
}

/// POSIX `write`, which `GGUFWriter.write(to:)` would otherwise shadow.
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, bytes, count)
    #elseif canImport(Musl)
    return Musl.write(fd, bytes, count)
    #else
    return Darwin.write(fd, bytes, count)
    #endif
}

extension Array where Element == UInt8 {
    fileprivate mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    fileprivate mutating func appendGGUFString(_ string: String) {
        let utf8 = string.utf8
        appendLittleEndian(UInt64(utf8.count))
        append(contentsOf: utf8)
    }

    fileprivate mutating func appendGGUFValue(_ value: GGUFValue, key: String, emptyKind: GGUFValue.Kind?, depth: Int) throws {
        switch value {
        case .uint8(let v): appendLittleEndian(v)
        case .int8(let v): appendLittleEndian(v)
        case .uint16(let v): appendLittleEndian(v)
        case .int16(let v): appendLittleEndian(v)
        case .uint32(let v): appendLittleEndian(v)
        case .int32(let v): appendLittleEndian(v)
        case .uint64(let v): appendLittleEndian(v)
        case .int64(let v): appendLittleEndian(v)
        case .float32(let v): appendLittleEndian(v.bitPattern)
        case .float64(let v): appendLittleEndian(v.bitPattern)
        case .bool(let v): append(v ? 1 : 0)
        case .string(let v): appendGGUFString(v)
        case .array(let elements):
            guard depth < GGUFFile.maximumArrayDepth else {
                throw HearthError.invalidArgument("GGUF metadata \(key) nests arrays deeper than \(GGUFFile.maximumArrayDepth) levels")
            }
            guard elements.count <= GGUFFile.maximumArrayLength else {
                throw HearthError.invalidArgument("GGUF metadata \(key) has \(elements.count) elements, more than the \(GGUFFile.maximumArrayLength) allowed")
            }
            guard let kind = elements.first?.kind ?? emptyKind else {
                throw HearthError.invalidArgument("GGUF metadata \(key) has an empty array; give its element kind")
            }
            appendLittleEndian(kind.rawValue)
            appendLittleEndian(UInt64(elements.count))
            for element in elements {
                guard element.kind == kind else {
                    throw HearthError.invalidArgument("GGUF metadata \(key) mixes \(kind) and \(element.kind) elements in one array")
                }
                try appendGGUFValue(element, key: key, emptyKind: emptyKind, depth: depth + 1)
            }
        }
    }
}
