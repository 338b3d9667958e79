/// Reads little-endian values from a byte buffer, throwing instead of reading past its end.
public struct ByteReader {
    /// The whole buffer.
    public let bytes: UnsafeRawBufferPointer
    /// Where the next read starts.
    public var offset: Int
    /// The file the bytes come from, named in errors.
    public let path: String

    /// A reader of `bytes` from `offset`; errors name `path`.
    public init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0, path: String) {
        self.bytes = bytes
        self.offset = offset
        self.path = path
    }

    /// Bytes left after `offset`.
    public var remaining: Int { bytes.count - offset }

    /// The error for a file that is not what it claims, at this reader's file.
    public func invalid(_ reason: String) -> HearthError {
        HearthError.invalidModelFile(path: path, reason: reason)
    }

    /// Throws unless `count` more bytes remain.
    public mutating func need(_ count: Int, for what: @autoclosure () -> String) throws {
        guard count >= 0, count <= remaining else {
            throw invalid("truncated: \(what()) needs \(count) bytes at offset \(offset) but the file ends at \(bytes.count)")
        }
    }

    /// A little-endian integer.
    public mutating func read<T: FixedWidthInteger>(_: T.Type, _ what: @autoclosure () -> String) throws -> T {
        try need(MemoryLayout<T>.size, for: what())
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
        return T(littleEndian: value)
    }

    /// A little-endian IEEE single.
    public mutating func readFloat(_ what: @autoclosure () -> String) throws -> Float {
        Float(bitPattern: try read(UInt32.self, what()))
    }

    /// A little-endian IEEE double.
    public mutating func readDouble(_ what: @autoclosure () -> String) throws -> Double {
        Double(bitPattern: try read(UInt64.self, what()))
    }

    /// A GGUF string: a UInt64 byte count, then UTF-8 bytes.
    public mutating func readString(_ what: @autoclosure () -> String) throws -> String {
        let length = try read(UInt64.self, what())
        guard length <= UInt64(remaining) else {
            throw invalid("truncated: \(what()) claims \(length) bytes at offset \(offset) but only \(remaining) remain")
        }
        let count = Int(length)
        if count == 0 { return "" }
        let start = bytes.baseAddress!.advanced(by: offset)
        let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
        offset += count
        return text
    }
}
