/// GPT-2's reversible map from bytes to printable Unicode characters: byte-level BPE
/// vocabularies spell every token in these characters (a space is `Ġ`, a newline `Ċ`).
enum ByteLevelEncoding {
    /// The character standing for each byte.
    static let scalarForByte: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 256)
        var isPrintable = [Bool](repeating: false, count: 256)
        for byte in 0x21...0x7E { isPrintable[byte] = true }
        for byte in 0xA1...0xAC { isPrintable[byte] = true }
        for byte in 0xAE...0xFF { isPrintable[byte] = true }
        // Printable Latin-1 bytes stand for themselves; the rest take code points from 256 up,
        // in byte order.
        var next: UInt32 = 256
        for byte in 0..<256 {
            if isPrintable[byte] {
                table[byte] = UInt32(byte)
            } else {
                table[byte] = next
                next += 1
            }
        }
        return table
    }()

    /// UTF-8 of the character standing for each byte.
    static let utf8ForByte: [[UInt8]] = scalarForByte.map { Array(String(Unicode.Scalar($0)!).utf8) }

    /// The byte a character stands for, or nil if the character is not in the map.
    static func byte(for scalar: UInt32) -> UInt8? {
        if scalar < 256 {
            return scalarForByte[Int(scalar)] == scalar ? UInt8(scalar) : nil
        }
        return scalar < 256 + 68 ? byteForHighScalar[Int(scalar - 256)] : nil
    }

    private static let byteForHighScalar: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 68)
        for byte in 0..<256 where scalarForByte[byte] >= 256 {
            table[Int(scalarForByte[byte]) - 256] = UInt8(byte)
        }
        return table
    }()

    /// Maps `bytes` to the UTF-8 of their byte-level spelling.
    static func encode(_ bytes: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        for byte in bytes { output.append(contentsOf: utf8ForByte[Int(byte)]) }
    }

    /// The bytes a byte-level spelled token stands for. A character outside the map (a token
    /// not made by byte-level BPE) is kept as its own UTF-8.
    static func decode(_ text: ArraySlice<UInt8>, into output: inout [UInt8]) {
        var index = text.startIndex
        while index < text.endIndex {
            let (scalar, length) = UTF8Decoding.scalar(in: text, at: index)
            if let byte = byte(for: scalar) {
                output.append(byte)
            } else {
                output.append(contentsOf: text[index..<index + length])
            }
            index += length
        }
    }
}

/// Decoding UTF-8 that is known to be valid (it came from a Swift `String`).
enum UTF8Decoding {
    /// Length of the sequence a lead byte starts, as llama.cpp's `unicode_len_utf8` counts it:
    /// a stray continuation byte counts as one.
    @inline(__always)
    static func sequenceLength(_ lead: UInt8) -> Int {
        switch lead >> 4 {
        case 0xC, 0xD: return 2
        case 0xE: return 3
        case 0xF: return 4
        default: return 1
        }
    }

    /// The scalar at `index` and the number of bytes it takes.
    @inline(__always)
    static func scalar<C: Collection<UInt8>>(in bytes: C, at index: C.Index) -> (UInt32, Int) where C.Index == Int {
        let lead = UInt32(bytes[index])
        let length = min(sequenceLength(UInt8(lead)), bytes.endIndex - index)
        switch length {
        case 2: return (((lead & 0x1F) << 6) | (UInt32(bytes[index + 1]) & 0x3F), 2)
        case 3: return (((lead & 0x0F) << 12) | ((UInt32(bytes[index + 1]) & 0x3F) << 6)
                        | (UInt32(bytes[index + 2]) & 0x3F), 3)
        case 4: return (((lead & 0x07) << 18) | ((UInt32(bytes[index + 1]) & 0x3F) << 12)
                        | ((UInt32(bytes[index + 2]) & 0x3F) << 6) | (UInt32(bytes[index + 3]) & 0x3F), 4)
        default: return (lead, 1)
        }
    }
}
