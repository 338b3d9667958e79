/// How BPE cuts text into words before merging, one case per regex family of
/// llama.cpp (`llm_tokenizer_bpe`). Merges never cross a word boundary, so ids depend on
/// these cuts as much as on the merges.
///
/// Each case is a fixed sequence of stages; each stage splits every word the previous one
/// produced. The matchers are hand-written over Unicode scalars and reproduce llama.cpp's
/// behaviour, including where it differs from the original Python regexes (a stage sees only
/// its own word, so `\s+(?!\S)` stops at a word's end and `$` is the end of the word).
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
    /// Qwen 3.5's regex: Qwen 2's with combining marks (`\p{M}`) kept in letter runs.
    case qwen35
    /// SmolLM's (and StarCoder's): every digit on its own, then GPT-2's regex.
    case smollm
    /// Falcon's: punctuation runs (backquote included), GPT-2's regex, ASCII digits in threes.
    case falcon
    /// DeepSeek LLM's: line breaks alone, cased-letter runs and ASCII or full-width punctuation
    /// runs each with one whitespace before them, trailing whitespace, CJK runs, number runs.
    case deepseekLLM = "deepseek-llm"
    /// DeepSeek Coder's: line breaks alone, letter runs and punctuation runs each with one
    /// whitespace before them, CJK runs, every digit on its own.
    case deepseekCoder = "deepseek-coder"
    /// Gemma 4's: runs of line feeds and runs of everything else; the text is spelled with `▁`
    /// for spaces, so the merges see whole lines.
    case gemma4

    private enum Stage {
        case gpt2
        case llama3(maxDigits: Int, marksInLetters: Bool)
        case singleNumbers           // \p{N}
        case numberRuns              // \p{N}+
        case punctuationRuns         // [\p{P}\$\+<=>\^~\|]+
        case punctuationOrBackquoteRuns  // [\p{P}\$\+<=>\^~\|`]+
        case asciiDigitTriples       // [0-9][0-9][0-9]
        case lineBreaks              // [\r\n]
        case spaceThenRun(ScalarClass)   // \s?[class]+
        case runs(ScalarClass)       // [class]+
        case trailingWhitespace      // \s+$
        case lineFeedRuns            // [^\n]+|[\n]+
    }

    private var stages: [Stage] {
        switch self {
        case .default: return [.punctuationRuns, .gpt2, .numberRuns, .asciiDigitTriples]
        case .gpt2: return [.gpt2]
        case .llama3: return [.llama3(maxDigits: 3, marksInLetters: false)]
        case .qwen2: return [.llama3(maxDigits: 1, marksInLetters: false)]
        case .qwen35: return [.llama3(maxDigits: 1, marksInLetters: true)]
        case .smollm: return [.singleNumbers, .gpt2]
        case .falcon: return [.punctuationOrBackquoteRuns, .gpt2, .asciiDigitTriples]
        case .deepseekLLM:
            return [.lineBreaks, .spaceThenRun(.casedLetter), .spaceThenRun(.asciiOrFullWidthPunctuation),
                    .trailingWhitespace, .runs(.cjk), .numberRuns]
        case .deepseekCoder:
            return [.lineBreaks, .spaceThenRun(.letter), .spaceThenRun(.punctuation), .runs(.cjk), .singleNumbers]
        case .gemma4: return [.lineFeedRuns]
        }
    }

    /// Character classes of the regexes llama.cpp runs through `std::regex` rather than a
    /// hand-written matcher. Whitespace is never a member: llama.cpp hands the regex engine every
    /// non-ASCII whitespace as U+000B, which none of these classes names.
    private enum ScalarClass {
        case letter                        // \p{L}
        case punctuation                   // \p{P}
        case casedLetter                   // DeepSeek LLM's list of cased-letter ranges
        case asciiOrFullWidthPunctuation   // [!-/:-~！-／：-～‘-‟　-。]
        case cjk                           // [一-龥ࠀ-一가-퟿]

        func contains(_ scalar: UInt32, _ flags: CodepointFlags) -> Bool {
            if flags.contains(.whitespace) { return false }
            switch self {
            case .letter: return flags.contains(.letter)
            case .punctuation: return flags.contains(.punctuation)
            case .casedLetter: return Self.isCasedLetter(scalar)
            case .asciiOrFullWidthPunctuation:
                switch scalar {
                case 0x21...0x2F, 0x3A...0x7E, 0xFF01...0xFF0F, 0xFF1A...0xFF5E, 0x2018...0x201F, 0x3000...0x3002:
                    return true
                default:
                    return false
                }
            case .cjk:
                switch scalar {
                case 0x4E00...0x9FA5, 0x0800...0x4E00, 0xAC00...0xD7FF: return true
                default: return false
                }
            }
        }

        private static func isCasedLetter(_ scalar: UInt32) -> Bool {
            var low = 0, high = casedLetterRanges.count
            while low < high {
                let mid = (low + high) / 2
                if casedLetterRanges[mid].upperBound < scalar { low = mid + 1 } else { high = mid }
            }
            return low < casedLetterRanges.count && casedLetterRanges[low].contains(scalar)
        }

        /// The ranges of DeepSeek LLM's letter class, in order (Latin, Greek, Cyrillic, Armenian,
        /// Georgian, Cherokee, Glagolitic, Coptic, full-width Latin, Deseret, Osage, Old Hungarian,
        /// Warang Citi, Adlam).
        private static let casedLetterRanges: [ClosedRange<UInt32>] = [
            0x0041...0x005A, 0x0061...0x007A, 0x00B5...0x00B5, 0x00C0...0x00D6, 0x00D8...0x00F6, 0x00F8...0x01BA,
            0x01BC...0x01BF, 0x01C4...0x0293, 0x0295...0x02AF, 0x0370...0x0373, 0x0376...0x0377, 0x037B...0x037D,
            0x037F...0x037F, 0x0386...0x0386, 0x0388...0x038A, 0x038C...0x038C, 0x038E...0x03A1, 0x03A3...0x03F5,
            0x03F7...0x0481, 0x048A...0x052F, 0x0531...0x0556, 0x10A0...0x10C5, 0x13A0...0x13F5, 0x13F8...0x13FD,
            0x1C90...0x1CBA, 0x1CBD...0x1CBF, 0x1D00...0x1D2B, 0x1D6B...0x1D77, 0x1D79...0x1D9A, 0x1E00...0x1F15,
            0x1F18...0x1F1D, 0x1F20...0x1F45, 0x1F48...0x1F4D, 0x1F50...0x1F57, 0x1F59...0x1F59, 0x1F5B...0x1F5B,
            0x1F5D...0x1F5D, 0x1F5F...0x1F7D, 0x1F80...0x1FB4, 0x1FB6...0x1FBC, 0x1FBE...0x1FBE, 0x1FC2...0x1FC4,
            0x1FC6...0x1FCC, 0x1FD0...0x1FD3, 0x1FD6...0x1FDB, 0x1FE0...0x1FEC, 0x1FF2...0x1FF4, 0x1FF6...0x1FFC,
            0x2102...0x2102, 0x2107...0x2107, 0x210A...0x2113, 0x2115...0x2115, 0x2119...0x211D, 0x2124...0x2124,
            0x2126...0x2126, 0x2128...0x2128, 0x212A...0x212D, 0x212F...0x2134, 0x2139...0x2139, 0x213C...0x213F,
            0x2145...0x2149, 0x214E...0x214E, 0x2183...0x2184, 0x2C00...0x2C7B, 0x2C7E...0x2CE4, 0x2CEB...0x2CEE,
            0x2CF2...0x2CF3, 0xA640...0xA66D, 0xA680...0xA69B, 0xA722...0xA76F, 0xA771...0xA787, 0xA78B...0xA78E,
            0xAB70...0xABBF, 0xFB00...0xFB06, 0xFB13...0xFB17, 0xFF21...0xFF3A, 0xFF41...0xFF5A, 0x10400...0x1044F,
            0x104B0...0x104D3, 0x104D8...0x104FB, 0x10C80...0x10CB2, 0x10CC0...0x10CF2, 0x118A0...0x118DF,
            0x1E900...0x1E943
        ]
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
        let text = ScalarText(bytes)
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

        func apply(_ stage: Stage, to ranges: [Range<Int>]) -> [Range<Int>] {
            var out: [Range<Int>] = []
            out.reserveCapacity(ranges.count * 2)
            for range in ranges {
                switch stage {
                case .gpt2: splitGPT2(range, into: &out)
                case .llama3(let maxDigits, let marksInLetters):
                    splitLlama3(range, maxDigits: maxDigits, marksInLetters: marksInLetters, into: &out)
                case .singleNumbers:
                    splitMatches(range, into: &out) { flags[$0].contains(.number) ? 1 : 0 }
                case .numberRuns:
                    splitMatches(range, into: &out) { run(from: $0, before: range.upperBound) { flags[$0].contains(.number) } }
                case .punctuationRuns:
                    splitMatches(range, into: &out) { run(from: $0, before: range.upperBound) { isPunctuationRunScalar($0) } }
                case .punctuationOrBackquoteRuns:
                    splitMatches(range, into: &out) { start in
                        run(from: start, before: range.upperBound) { isPunctuationRunScalar($0) || scalars[$0] == 0x60 }
                    }
                case .asciiDigitTriples:
                    splitMatches(range, into: &out) { start in
                        guard start + 3 <= range.upperBound else { return 0 }
                        for p in start..<start + 3 where !(0x30...0x39).contains(scalars[p]) { return 0 }
                        return 3
                    }
                case .lineBreaks:
                    splitMatches(range, into: &out) { scalars[$0] == 0x0D || scalars[$0] == 0x0A ? 1 : 0 }
                case .spaceThenRun(let scalarClass):
                    splitMatches(range, into: &out) { start in
                        func inClass(_ p: Int) -> Bool { scalarClass.contains(scalars[p], flags[p]) }
                        let members = run(from: start, before: range.upperBound, inClass)
                        if members > 0 { return members }
                        // \s? then at least one: a whitespace counts only before a member of the class.
                        guard flags[start].contains(.whitespace), start + 1 < range.upperBound else { return 0 }
                        let after = run(from: start + 1, before: range.upperBound, inClass)
                        return after > 0 ? after + 1 : 0
                    }
                case .runs(let scalarClass):
                    splitMatches(range, into: &out) { start in
                        run(from: start, before: range.upperBound) { scalarClass.contains(scalars[$0], flags[$0]) }
                    }
                case .trailingWhitespace:
                    // The only match of \s+$ is the longest run of whitespace that ends the word.
                    var start = range.upperBound
                    while start > range.lowerBound && flags[start - 1].contains(.whitespace) { start -= 1 }
                    if start > range.lowerBound && start < range.upperBound {
                        out.append(range.lowerBound..<start)
                        out.append(start..<range.upperBound)
                    } else {
                        out.append(range)
                    }
                case .lineFeedRuns:
                    var start = range.lowerBound
                    while start < range.upperBound {
                        let isLineFeed = scalars[start] == 0x0A
                        var end = start + 1
                        while end < range.upperBound && (scalars[end] == 0x0A) == isLineFeed { end += 1 }
                        out.append(start..<end)
                        start = end
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

        /// Length of the run of scalars from `start` (before `end`) that satisfy `member`.
        @inline(__always)
        private func run(from start: Int, before end: Int, _ member: (Int) -> Bool) -> Int {
            var p = start
            while p < end && member(p) { p += 1 }
            return p - start
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
        // With `marksInLetters`, \p{L} in the letter runs is [\p{L}\p{M}] and the symbol runs
        // exclude \p{M} as well.
        private func splitLlama3(_ range: Range<Int>, maxDigits: Int, marksInLetters: Bool,
                                 into out: inout [Range<Int>]) {
            let end = range.upperBound
            func scalar(_ p: Int) -> UInt32 { p < end ? scalars[p] : Self.outside }
            func flag(_ p: Int) -> CodepointFlags { p < end ? flags[p] : .outside }
            // Only ASCII letters lower-case to the letters of these contractions.
            func lower(_ c: UInt32) -> UInt32 { (0x41...0x5A).contains(c) ? c + 0x20 : c }
            let letterish: CodepointFlags = marksInLetters ? [.letter, .mark] : .letter
            let wordish: CodepointFlags = letterish.union([.whitespace, .number])

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
                    if !f.isDisjoint(with: letterish) || !flag(pos + 1).isDisjoint(with: letterish) {
                        pos += 1
                        while !flag(pos).isDisjoint(with: letterish) { pos += 1 }
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
