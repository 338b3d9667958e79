/// How SentencePiece vocabularies spell text: `▁` (U+2581) for a space, and a byte token
/// `<0xXX>` for each byte of a character that no other token covers. Llama 2 and Gemma 3 spell
/// their SentencePiece vocabularies this way, and Gemma 4 its BPE vocabulary.
enum SentencePieceSpelling {
    /// UTF-8 of `▁`.
    static let escapedSpace: [UInt8] = [0xE2, 0x96, 0x81]

    /// Appends `bytes` to `output` with every space spelled `▁`.
    static func escape<Bytes: Sequence<UInt8>>(_ bytes: Bytes, into output: inout [UInt8]) {
        for byte in bytes {
            if byte == 0x20 {
                output.append(contentsOf: escapedSpace)
            } else {
                output.append(byte)
            }
        }
    }

    /// Appends `text` to `output` with every `▁` turned back into a space.
    static func unescape(_ text: ArraySlice<UInt8>, into output: inout [UInt8]) {
        var index = text.startIndex
        while index < text.endIndex {
            if text[index] == 0xE2 && index + 2 < text.endIndex
                && text[index + 1] == 0x96 && text[index + 2] == 0x81 {
                output.append(0x20)
                index += 3
            } else {
                output.append(text[index])
                index += 1
            }
        }
    }

    /// The `<0xXX>` token of each byte, -1 where the vocabulary has none.
    static func byteTokens(in vocabulary: Vocabulary) -> [Int32] {
        let hex = Array("0123456789ABCDEF".utf8)
        return (0..<256).map { byte in
            let spelled: [UInt8] = [0x3C, 0x30, 0x78, hex[byte >> 4], hex[byte & 15], 0x3E]  // <0xXX>
            return spelled.withUnsafeBufferPointer { vocabulary.token(for: $0) } ?? -1
        }
    }

    /// The byte a `<0xXX>` token stands for, or nil when `text` is not so spelled.
    static func byteValue(_ text: ArraySlice<UInt8>) -> UInt8? {
        guard text.count == 6 else { return nil }
        let b = Array(text)
        guard b[0] == 0x3C, b[1] == 0x30, b[2] == 0x78, b[5] == 0x3E,
              let high = hexValue(b[3]), let low = hexValue(b[4]) else { return nil }
        return high << 4 | low
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
