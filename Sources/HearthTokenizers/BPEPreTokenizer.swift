/// How byte-level BPE cuts text into words before merging, one case per regex family of
/// llama.cpp (`llm_tokenizer_bpe`). Merges never cross a word boundary, so ids depend on
/// these cuts as much as on the merges.
///
/// Each case is a fixed sequence of stages; each stage splits every word the previous one
/// produced. The matchers are hand-written over Unicode scalars and reproduce llama.cpp's
/// behaviour, including where it differs from the original Python regexes (a stage sees only
/// its own word, so `\s+(?!\S)` stops at a word's end).
public enum BPEPreTokenizer: String, Sendable, CaseIterable {
    /// llama.cpp's `default`: punctuation runs, GPT-2's regex, number runs, ASCII digits in threes.
    case `default`
    /// GPT-2's regex: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`.
    case gpt2
    /// Llama 3's regex: case-insensitive contractions, numbers in groups of up to three digits,
    /// newlines kept with the whitespace before them.
    case llama3
    /// Qwen 2's regex: Llama 3's with every digit on its own.
    case qwen2
    /// SmolLM's (and StarCoder's): every digit on its own, then GPT-2's regex.
    case smollm

    private enum Stage {
        case gpt2
        case llama3(maxDigits: Int)
        case singleNumbers       // \p{N}
        case numberRuns          // \p{N}+
        case punctuationRuns     // [\p{P}\$\+<=>\^~\|]+
        case asciiDigitTriples   // [0-9][0-9][0-9]
    }

    private var stages: [Stage] {
        switch self {
        case .default: return [.punctuationRuns, .gpt2, .numberRuns, .asciiDigitTriples]
        case .gpt2: return [.gpt2]
        case .llama3: return [.llama3(maxDigits: 3)]
        case .qwen2: return [.llama3(maxDigits: 1)]
        case .smollm: return [.singleNumbers, .gpt2]
        }
    }

    /// The words `text` is cut into.
    public func split(_ text: String) -> [String] {
        let bytes = Array(text.utf8)
        var words: [Range<Int>] = []
        bytes.withUnsafeBufferPointer { split($0, into: &words) }
        return words.map { String(decoding: bytes[$0], as: UTF8.self) }
    }

    /// Appends the byte ranges of the words of `bytes` (valid UTF-8) to `words`.
    func split(_ bytes: UnsafeBufferPointer<UInt8>, into words: inout [Range<Int>]) {
        guard !bytes.isEmpty else { return }
        var text = ScalarText(bytes)
        var ranges = [0..<text.scalars.count]
        for stage in stages {
            ranges = text.apply(stage, to: ranges)
        }
        for range in ranges {
            words.append(text.byteOffsets[range.lowerBound]..<text.byteOffsets[range.upperBound])
        }
    }

    /// A text as scalars with their flags and byte offsets; stages work in scalar positions.
    private struct ScalarText {
        var scalars: [UInt32] = []
        var flags: [CodepointFlags] = []
        var byteOffsets: [Int] = []

        init(_ bytes: UnsafeBufferPointer<UInt8>) {
            scalars.reserveCapacity(bytes.count)
            flags.reserveCapacity(bytes.count)
            byteOffsets.reserveCapacity(bytes.count + 1)
            var index = 0
            while index < bytes.count {
                let (scalar, length) = UTF8Decoding.scalar(in: bytes, at: index)
                scalars.append(scalar)
                flags.append(CodepointFlags.of(scalar))
                byteOffsets.append(index)
                index += length
            }
            byteOffsets.append(bytes.count)
        }

        mutating func apply(_ stage: Stage, to ranges: [Range<Int>]) -> [Range<Int>] {
            var out: [Range<Int>] = []
            out.reserveCapacity(ranges.count * 2)
            for range in ranges {
                switch stage {
                case .gpt2: splitGPT2(range, into: &out)
                case .llama3(let maxDigits): splitLlama3(range, maxDigits: maxDigits, into: &out)
                case .singleNumbers:
                    splitMatches(range, into: &out) { flags[$0].contains(.number) ? 1 : 0 }
                case .numberRuns:
                    splitMatches(range, into: &out) { start in
                        var end = start
                        while end < range.upperBound && flags[end].contains(.number) { end += 1 }
                        return end - start
                    }
                case .punctuationRuns:
                    splitMatches(range, into: &out) { start in
                        var end = start
                        while end < range.upperBound && isPunctuationRunScalar(end) { end += 1 }
                        return end - start
                    }
                case .asciiDigitTriples:
                    splitMatches(range, into: &out) { start in
                        guard start + 3 <= range.upperBound else { return 0 }
                        for p in start..<start + 3 where !(0x30...0x39).contains(scalars[p]) { return 0 }
                        return 3
                    }
                }
            }
            return out
        }

        private func isPunctuationRunScalar(_ p: Int) -> Bool {
            if flags[p].contains(.whitespace) { return false }
            if flags[p].contains(.punctuation) { return true }
            switch scalars[p] {
            case 0x24, 0x2B, 0x3C, 0x3D, 0x3E, 0x5E, 0x7E, 0x7C: return true  // $ + < = > ^ ~ |
            default: return false
            }
        }

        /// A regex split: every leftmost non-overlapping match is a word, and so is each
        /// stretch of text between matches. `matchLength` gives the match at a position (0: none).
        private func splitMatches(_ range: Range<Int>, into out: inout [Range<Int>],
                                  _ matchLength: (Int) -> Int) {
            var gapStart = range.lowerBound
            var p = range.lowerBound
            while p < range.upperBound {
                let length = matchLength(p)
                if length > 0 {
                    if p > gapStart { out.append(gapStart..<p) }
                    out.append(p..<p + length)
                    p += length
                    gapStart = p
                } else {
                    p += 1
                }
            }
            if range.upperBound > gapStart { out.append(gapStart..<range.upperBound) }
        }

        private static let outside: UInt32 = .max

        // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
        private func splitGPT2(_ range: Range<Int>, into out: inout [Range<Int>]) {
            let end = range.upperBound
            func scalar(_ p: Int) -> UInt32 { p < end ? scalars[p] : Self.outside }
            func flag(_ p: Int) -> CodepointFlags { p < end ? flags[p] : .outside }
            let wordish: CodepointFlags = [.whitespace, .letter, .number]

            var pos = range.lowerBound
            while pos < end {
                let start = pos
                let c = scalars[pos]
                if c == 0x27 /* ' */ && pos + 1 < end {
                    let next = scalars[pos + 1]
                    if next == 0x73 || next == 0x74 || next == 0x6D || next == 0x64 {  // s t m d
                        out.append(pos..<pos + 2)
                        pos += 2
                        continue
                    }
                    if pos + 2 < end {
                        let after = scalars[pos + 2]
                        if (next == 0x72 && after == 0x65) || (next == 0x76 && after == 0x65)
                            || (next == 0x6C && after == 0x6C) {  // re ve ll
                            out.append(pos..<pos + 3)
                            pos += 3
                            continue
                        }
                    }
                }
                let skipsSpace = c == 0x20
                let first = skipsSpace ? flag(pos + 1) : flags[pos]
                if first.contains(.letter) || first.contains(.number) {
                    let kind: CodepointFlags = first.contains(.letter) ? .letter : .number
                    if skipsSpace { pos += 1 }
                    while flag(pos).contains(kind) { pos += 1 }
                    out.append(start..<pos)
                    continue
                }
                if first.isDisjoint(with: wordish) && first != .outside {
                    if skipsSpace { pos += 1 }
                    while flag(pos).isDisjoint(with: wordish) && flag(pos) != .outside { pos += 1 }
                    out.append(start..<pos)
                    continue
                }
                var spaces = 0
                while flag(pos + spaces).contains(.whitespace) { spaces += 1 }
                if spaces > 1 && scalar(pos + spaces) != Self.outside {
                    // \s+(?!\S): leave the last space to prefix the next word.
                    pos += spaces - 1
                } else if spaces > 0 {
                    pos += spaces
                } else {
                    pos += 1
                }
                out.append(start..<pos)
            }
        }

        // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}
        //   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
        private func splitLlama3(_ range: Range<Int>, maxDigits: Int, into out: inout [Range<Int>]) {
            let end = range.upperBound
            func scalar(_ p: Int) -> UInt32 { p < end ? scalars[p] : Self.outside }
            func flag(_ p: Int) -> CodepointFlags { p < end ? flags[p] : .outside }
            // Only ASCII letters lower-case to the letters of these contractions.
            func lower(_ c: UInt32) -> UInt32 { (0x41...0x5A).contains(c) ? c + 0x20 : c }
            let wordish: CodepointFlags = [.whitespace, .letter, .number]

            var pos = range.lowerBound
            while pos < end {
                let start = pos
                let c = scalars[pos]
                let f = flags[pos]
                if c == 0x27 && pos + 1 < end {
                    let next = lower(scalars[pos + 1])
                    if next == 0x73 || next == 0x74 || next == 0x6D || next == 0x64 {
                        out.append(pos..<pos + 2)
                        pos += 2
                        continue
                    }
                    if pos + 2 < end {
                        let after = lower(scalars[pos + 2])
                        if (next == 0x72 && after == 0x65) || (next == 0x76 && after == 0x65)
                            || (next == 0x6C && after == 0x6C) {
                            out.append(pos..<pos + 3)
                            pos += 3
                            continue
                        }
                    }
                }
                // [^\r\n\p{L}\p{N}]?\p{L}+
                if !(c == 0x0D || c == 0x0A || f.contains(.number)) {
                    if f.contains(.letter) || flag(pos + 1).contains(.letter) {
                        pos += 1
                        while flag(pos).contains(.letter) { pos += 1 }
                        out.append(start..<pos)
                        continue
                    }
                }
                // \p{N}{1,maxDigits}
                if f.contains(.number) {
                    var groupStart = pos
                    while flag(pos).contains(.number) {
                        pos += 1
                        if pos - groupStart >= maxDigits {
                            out.append(groupStart..<pos)
                            groupStart = pos
                        }
                    }
                    if pos > groupStart { out.append(groupStart..<pos) }
                    continue
                }
                // " ?[^\s\p{L}\p{N}]+[\r\n]*"
                let skipsSpace = c == 0x20
                let first = skipsSpace ? flag(pos + 1) : f
                if first.isDisjoint(with: wordish) {
                    if skipsSpace { pos += 1 }
                    while flag(pos).isDisjoint(with: wordish) && flag(pos) != .outside { pos += 1 }
                    while scalar(pos) == 0x0D || scalar(pos) == 0x0A { pos += 1 }
                    out.append(start..<pos)
                    continue
                }
                var spaces = 0
                var afterLastNewline = 0
                while flag(pos + spaces).contains(.whitespace) {
                    let s = scalars[pos + spaces]
                    if s == 0x0D || s == 0x0A { afterLastNewline = pos + spaces + 1 }
                    spaces += 1
                }
                if afterLastNewline > 0 {
                    pos = afterLastNewline  // \s*[\r\n]+
                } else if spaces > 1 && scalar(pos + spaces) != Self.outside {
                    pos += spaces - 1       // \s+(?!\S)
                } else if spaces > 0 {
                    pos += spaces           // \s+
                } else {
                    pos += 1
                }
                out.append(start..<pos)
            }
        }
    }
}
