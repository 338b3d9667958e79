import HearthFormats

/// Byte-level BPE as GPT-2, Llama 3, Qwen and SmolLM use it (`tokenizer.ggml.model = gpt2`),
/// giving the ids llama.cpp gives.
///
/// Text is cut at special tokens, then into words by the pre-tokenizer; each word's bytes
/// start as one symbol each, and the adjacent pair with the lowest merge rank is merged until
/// no pair has a rank. Symbols are integer ids throughout, so encoding does no string work.
public struct BPETokenizer: Tokenizer {
    let vocabulary: Vocabulary
    /// The pre-tokenizer that cuts text into words.
    public let preTokenizer: BPEPreTokenizer
    /// Whether a word that is itself a token is taken whole, before any merging (Llama 3).
    public let ignoresMerges: Bool
    /// Number of merge rules.
    public let mergeCount: Int
    private let merges: MergeTable
    /// The symbol each byte starts as: the id of its byte-level character, or -1 if none.
    private let byteSymbols: [Int32]

    /// A tokenizer from a vocabulary in byte-level spelling (`Ġ` for space) and merge rules
    /// `"left right"` in rank order. Throws `HearthError.invalidModelFile` for inconsistent data.
    public init(tokens: [String], tokenTypes: [TokenType]? = nil, merges: [String],
                preTokenizer: BPEPreTokenizer, ignoresMerges: Bool = false,
                specialTokens: SpecialTokens = SpecialTokens()) throws {
        try self.init(tokens: tokens, tokenTypes: tokenTypes, merges: merges, preTokenizer: preTokenizer,
                      ignoresMerges: ignoresMerges, specialTokens: specialTokens, path: "the BPE vocabulary")
    }

    init(tokens: [String], tokenTypes: [TokenType]?, merges mergeLines: [String],
         preTokenizer: BPEPreTokenizer, ignoresMerges: Bool, specialTokens: SpecialTokens, path: String) throws {
        var vocabulary = try Vocabulary(tokens: tokens, types: tokenTypes, special: specialTokens,
                                        extraCapacity: tokens.count / 4,
                                        extraBytes: 2 * mergeLines.reduce(0) { $0 + $1.utf8.count }, path: path)
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
                table.insertIfAbsent(left: leftID, right: rightID, rank: Int32(rank), merged: mergedID)
            }
        }
        byteSymbols = (0..<256).map { byte in
            ByteLevelEncoding.utf8ForByte[byte].withUnsafeBufferPointer { texts.find($0) } ?? -1
        }
        vocabulary.texts = texts
        self.vocabulary = vocabulary
        self.merges = table
        self.mergeCount = mergeLines.count
        self.preTokenizer = preTokenizer
        self.ignoresMerges = ignoresMerges
    }

    public var vocabularySize: Int { vocabulary.count }
    public var bosToken: Int32? { vocabulary.special.bos }
    public var eosToken: Int32? { vocabulary.special.eos }
    public var addsBOS: Bool { vocabulary.special.addBOS }
    public var endOfGenerationTokens: Set<Int32> { vocabulary.endOfGeneration }
    /// Special token ids, with EOT and EOM filled in from their texts where the metadata lacked them.
    public var specialTokens: SpecialTokens { vocabulary.special }

    /// The type of `token`, or nil when it is not in the vocabulary.
    public func tokenType(_ token: Int32) -> TokenType? { vocabulary.type(of: token) }

    /// The token whose stored (byte-level spelled) text is `text`.
    public func token(forStoredText text: String) -> Int32? {
        text.withUTF8Bytes { vocabulary.token(for: $0) }
    }

    public func encode(_ text: String, addSpecial: Bool, parseSpecial: Bool) -> [Int32] {
        var output: [Int32] = []
        output.reserveCapacity(text.utf8.count / 3 + 2)
        if addSpecial && vocabulary.special.addBOS, let bos = vocabulary.special.bos { output.append(bos) }
        text.withUTF8Bytes { bytes in
            var words: [Range<Int>] = []
            var state = MergeState()
            for fragment in vocabulary.fragments(of: bytes, parseSpecial: parseSpecial) {
                switch fragment {
                case .token(let id):
                    output.append(id)
                case .text(let range):
                    let piece = UnsafeBufferPointer(rebasing: bytes[range])
                    words.removeAll(keepingCapacity: true)
                    preTokenizer.split(piece, into: &words)
                    for word in words {
                        encodeWord(UnsafeBufferPointer(rebasing: piece[word]), state: &state, into: &output)
                    }
                }
            }
        }
        if addSpecial && vocabulary.special.addEOS, let eos = vocabulary.special.eos { output.append(eos) }
        return output
    }

    private struct Symbol {
        var start: Int32
        var length: Int32
        var id: Int32
        var prev: Int32
        var next: Int32
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
        var symbols: [Symbol] = []
        var queue = BinaryHeap<Bigram>()
        var mapped: [UInt8] = []
    }

    private func encodeWord(_ word: UnsafeBufferPointer<UInt8>, state: inout MergeState, into output: inout [Int32]) {
        if ignoresMerges {
            state.mapped.removeAll(keepingCapacity: true)
            ByteLevelEncoding.encode(word, into: &state.mapped)
            if let id = state.mapped.withUnsafeBufferPointer({ vocabulary.token(for: $0) }) {
                output.append(id)
                return
            }
        }
        state.symbols.removeAll(keepingCapacity: true)
        state.queue.removeAll()
        let count = Int32(word.count)
        for index in 0..<count {
            state.symbols.append(Symbol(start: index, length: 1, id: byteSymbols[Int(word[Int(index)])],
                                        prev: index - 1, next: index + 1 < count ? index + 1 : -1))
        }

        func addBigram(_ left: Int32, _ right: Int32, _ symbols: [Symbol], _ queue: inout BinaryHeap<Bigram>) {
            guard left >= 0, right >= 0 else { return }
            let leftID = symbols[Int(left)].id, rightID = symbols[Int(right)].id
            guard leftID >= 0, rightID >= 0, let merge = merges.find(left: leftID, right: rightID) else { return }
            queue.push(Bigram(rank: merge.rank, left: left, right: right, leftID: leftID, rightID: rightID,
                              merged: merge.merged))
        }

        for index in 1..<max(count, 1) {
            addBigram(index - 1, index, state.symbols, &state.queue)
        }
        while let bigram = state.queue.pop() {
            let left = Int(bigram.left), right = Int(bigram.right)
            // A pair is stale once either side has changed since it was queued.
            guard state.symbols[left].length > 0, state.symbols[right].length > 0,
                  state.symbols[left].id == bigram.leftID, state.symbols[right].id == bigram.rightID
            else { continue }
            state.symbols[left].length += state.symbols[right].length
            state.symbols[left].id = bigram.merged
            state.symbols[right].length = 0
            let after = state.symbols[right].next
            state.symbols[left].next = after
            if after >= 0 { state.symbols[Int(after)].prev = bigram.left }
            addBigram(state.symbols[left].prev, bigram.left, state.symbols, &state.queue)
            addBigram(bigram.left, after, state.symbols, &state.queue)
        }

        for symbol in state.symbols where symbol.length > 0 {
            if symbol.id >= 0 && Int(symbol.id) < vocabulary.count {
                output.append(symbol.id)
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
        if type == .normal {
            ByteLevelEncoding.decode(text, into: &bytes)
        } else {
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
