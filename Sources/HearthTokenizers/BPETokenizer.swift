import HearthCore

/// BPE as GPT-2, Llama 3, Qwen and SmolLM use it (`tokenizer.ggml.model = gpt2`), and as
/// Gemma 4 does (`gemma4`), giving the ids llama.cpp gives.
///
/// Text is cut at special tokens, then into words by the pre-tokenizer; each word starts as one
/// symbol per byte (byte-level vocabularies, which spell every byte as a printable character)
/// or per character (Gemma 4, whose vocabulary is spelled as SentencePiece's), and the adjacent
/// pair with the lowest merge rank is merged until no pair has a rank. Symbols are integer ids
/// throughout, so encoding does no string work.
public struct BPETokenizer: VocabularyBackedTokenizer {
    let vocabulary: Vocabulary
    /// The pre-tokenizer that cuts text into words.
    public let preTokenizer: BPEPreTokenizer
    /// Whether a word that is itself a token is taken whole, before any merging (Llama 3).
    public let ignoresMerges: Bool
    /// Number of merge rules.
    public let mergeCount: Int
    private let merges: MergeTable
    /// Whether the vocabulary spells text as SentencePiece does (`▁` for a space, `<0xXX>` byte
    /// tokens) rather than byte-level; the Gemma 4 pre-tokenizer implies it, as in llama.cpp.
    private let spellsLikeSentencePiece: Bool
    /// Byte-level spelling: the symbol each byte starts as, the id of its character, or -1.
    /// SentencePiece spelling: the `<0xXX>` token of each byte, or -1.
    private let byteSymbols: [Int32]

    /// A tokenizer from a vocabulary in byte-level spelling (`Ġ` for space) and merge rules
    /// `"left right"` in rank order. Throws `HearthError.invalidModelFile` for inconsistent data.
    public init(tokens: [String], tokenTypes: [TokenType]? = nil, merges: [String],
                preTokenizer: BPEPreTokenizer, ignoresMerges: Bool = false,
                specialTokens: SpecialTokens = SpecialTokens()) throws {
        try self.init(tokens: tokens, tokenTypes: tokenTypes, merges: merges, preTokenizer: preTokenizer,
                      ignoresMerges: ignoresMerges, specialTokens: specialTokens, spacing: .none,
                      path: "the BPE vocabulary")
    }

    /// `mergeRanks`, when given, holds each merge line's rank instead of its position; merges
    /// of equal rank then go leftmost first (a ranked vocabulary gives every way of making one
    /// token the same rank, as tiktoken does).
    init(tokens: [String], tokenTypes: [TokenType]?, merges mergeLines: [String], mergeRanks: [Int32]? = nil,
         preTokenizer: BPEPreTokenizer, ignoresMerges: Bool, specialTokens: SpecialTokens,
         spacing: SpecialTokenSpacing, path: String) throws {
        precondition(mergeRanks == nil || mergeRanks!.count == mergeLines.count)
        var vocabulary = try Vocabulary(tokens: tokens, types: tokenTypes, special: specialTokens,
                                        extraCapacity: tokens.count / 4,
                                        extraBytes: 2 * mergeLines.reduce(0) { $0 + $1.utf8.count },
                                        spacing: spacing, path: path)
        var texts = vocabulary.texts
        vocabulary.texts = ByteStringTable(expectedCount: 0)  // keep `texts` unshared, so appends do not copy it
        var table = MergeTable(capacityFor: mergeLines.count)
        for (rank, line) in mergeLines.enumerated() {
            try line.withUTF8Bytes { bytes in
                // The separator is the first space after the first byte, as llama.cpp splits.
                var split = 1
                while split < bytes.count && bytes[split] != 0x20 { split += 1 }
                guard split < bytes.count else {
                    throw HearthError.invalidModelFile(
                        path: path, reason: "merge \(rank) (\"\(line)\") has no space between its two parts")
                }
                let left = UnsafeBufferPointer(rebasing: bytes[0..<split])
                let right = UnsafeBufferPointer(rebasing: bytes[(split + 1)...])
                let leftID = texts.find(left) ?? texts.append(left)
                let rightID = texts.find(right) ?? texts.append(right)
                // A merge may produce a string that is not a token; llama.cpp still merges it
                // (and falls back to single characters at the end), so it gets an id too.
                let mergedID = texts.find(left, right) ?? texts.append(left, right)
                table.insertIfAbsent(left: leftID, right: rightID, rank: mergeRanks?[rank] ?? Int32(rank), merged: mergedID)
            }
        }
        spellsLikeSentencePiece = preTokenizer == .gemma4
        vocabulary.texts = texts
        if spellsLikeSentencePiece {
            byteSymbols = SentencePieceSpelling.byteTokens(in: vocabulary)
        } else {
            byteSymbols = (0..<256).map { byte in
                ByteLevelEncoding.utf8ForByte[byte].withUnsafeBufferPointer { texts.find($0) } ?? -1
            }
        }
        self.vocabulary = vocabulary
        self.merges = table
        self.mergeCount = mergeLines.count
        self.preTokenizer = preTokenizer
        self.ignoresMerges = ignoresMerges
    }

    public func encode(_ text: String, addSpecial: Bool, parseSpecial: Bool) -> [Int32] {
        vocabulary.encode(text, addSpecial: addSpecial) { bytes, output in
            var words: [Range<Int>] = []
            var state = MergeState()
            for fragment in vocabulary.fragments(of: bytes, parseSpecial: parseSpecial) {
                switch fragment {
                case .token(let id):
                    output.append(id)
                case .text(let range):
                    if spellsLikeSentencePiece {
                        // Spaces are spelled ▁ before the text is cut, so words see them as ▁.
                        state.escaped.removeAll(keepingCapacity: true)
                        SentencePieceSpelling.escape(bytes[range], into: &state.escaped)
                        let escaped = state.escaped
                        escaped.withUnsafeBufferPointer { encodeText($0, words: &words, state: &state, into: &output) }
                    } else {
                        encodeText(UnsafeBufferPointer(rebasing: bytes[range]), words: &words, state: &state,
                                   into: &output)
                    }
                }
            }
        }
    }

    private struct Bigram: HeapOrdered {
        var rank: Int32
        var left: Int32
        var right: Int32
        var leftID: Int32
        var rightID: Int32
        var merged: Int32

        // Lowest rank first; among equal ranks the leftmost, as llama.cpp's comparator.
        static func precedes(_ a: Bigram, _ b: Bigram) -> Bool {
            a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
        }
    }

    private struct MergeState {
        var symbols = MergeSymbols()
        /// Each symbol's token (or merge-only string) id, -1 for none.
        var ids: [Int32] = []
        var queue = BinaryHeap<Bigram>()
        var mapped: [UInt8] = []
        var escaped: [UInt8] = []
    }

    private func encodeText(_ text: UnsafeBufferPointer<UInt8>, words: inout [Range<Int>], state: inout MergeState,
                            into output: inout [Int32]) {
        words.removeAll(keepingCapacity: true)
        preTokenizer.split(text, into: &words)
        for word in words {
            encodeWord(UnsafeBufferPointer(rebasing: text[word]), state: &state, into: &output)
        }
    }

    private func encodeWord(_ word: UnsafeBufferPointer<UInt8>, state: inout MergeState, into output: inout [Int32]) {
        if spellsLikeSentencePiece {
            // A run of line feeds that is itself a token is taken whole, as llama.cpp does for
            // Gemma 4 (its merges never build such runs).
            if word.allSatisfy({ $0 == 0x0A }), let id = vocabulary.token(for: word) {
                output.append(id)
                return
            }
        } else if ignoresMerges {
            state.mapped.removeAll(keepingCapacity: true)
            ByteLevelEncoding.encode(word, into: &state.mapped)
            if let id = state.mapped.withUnsafeBufferPointer({ vocabulary.token(for: $0) }) {
                output.append(id)
                return
            }
        }
        state.symbols.removeAll()
        state.ids.removeAll(keepingCapacity: true)
        state.queue.removeAll()
        if spellsLikeSentencePiece {
            // One symbol per character, which may be a token, a string only merges use, or neither.
            var offset = 0
            while offset < word.count {
                let length = min(UTF8Decoding.sequenceLength(word[offset]), word.count - offset)
                state.symbols.append(start: offset, length: length, isLast: offset + length == word.count)
                state.ids.append(vocabulary.texts.find(word, offset..<offset + length) ?? -1)
                offset += length
            }
        } else {
            for index in 0..<word.count {
                state.symbols.append(start: index, length: 1, isLast: index + 1 == word.count)
                state.ids.append(byteSymbols[Int(word[index])])
            }
        }
        let count = Int32(state.symbols.count)

        func addBigram(_ left: Int32, _ right: Int32, _ ids: [Int32], _ queue: inout BinaryHeap<Bigram>) {
            guard left >= 0, right >= 0 else { return }
            let leftID = ids[Int(left)], rightID = ids[Int(right)]
            guard leftID >= 0, rightID >= 0, let merge = merges.find(left: leftID, right: rightID) else { return }
            queue.push(Bigram(rank: merge.rank, left: left, right: right, leftID: leftID, rightID: rightID,
                              merged: merge.merged))
        }

        for index in 1..<max(count, 1) {
            addBigram(index - 1, index, state.ids, &state.queue)
        }
        while let bigram = state.queue.pop() {
            // A pair is stale once either side has changed since it was queued.
            guard state.symbols[bigram.left].length > 0, state.symbols[bigram.right].length > 0,
                  state.ids[Int(bigram.left)] == bigram.leftID, state.ids[Int(bigram.right)] == bigram.rightID
            else { continue }
            let after = state.symbols.merge(bigram.left, bigram.right)
            state.ids[Int(bigram.left)] = bigram.merged
            addBigram(state.symbols[bigram.left].prev, bigram.left, state.ids, &state.queue)
            addBigram(bigram.left, after, state.ids, &state.queue)
        }

        for (symbol, id) in zip(state.symbols.items, state.ids) where symbol.length > 0 {
            if id >= 0 && Int(id) < vocabulary.count {
                output.append(id)
                continue
            }
            if spellsLikeSentencePiece {
                // Not a token: each byte is spelled by its byte token.
                for index in Int(symbol.start)..<Int(symbol.start + symbol.length) where byteSymbols[Int(word[index])] >= 0 {
                    output.append(byteSymbols[Int(word[index])])
                }
                continue
            }
            // Not a token: llama.cpp emits the single-character tokens of its bytes that exist.
            for index in Int(symbol.start)..<Int(symbol.start + symbol.length) {
                let byte = word[index]
                guard (0x21...0x7E).contains(byte) else { continue }
                if let id = [byte].withUnsafeBufferPointer({ vocabulary.token(for: $0) }) {
                    output.append(id)
                }
            }
        }
    }

    public func tokenBytes(_ token: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        appendBytes(of: token, to: &bytes)
        return bytes
    }

    private func appendBytes(of token: Int32, to bytes: inout [UInt8]) {
        guard let type = vocabulary.type(of: token) else { return }
        let text = vocabulary.text(of: token)
        switch type {
        case .normal where spellsLikeSentencePiece:
            SentencePieceSpelling.unescape(text, into: &bytes)
        case .normal:
            ByteLevelEncoding.decode(text, into: &bytes)
        case .byte:
            if let byte = SentencePieceSpelling.byteValue(text) {
                bytes.append(byte)
            } else {
                bytes.append(contentsOf: text)
            }
        default:
            bytes.append(contentsOf: text)
        }
    }

    public func decode(_ tokens: [Int32]) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(tokens.count * 4)
        for token in tokens { appendBytes(of: token, to: &bytes) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
