import HearthCore

/// SentencePiece BPE as Llama 2, Mistral and Gemma use it (`tokenizer.ggml.model = llama`),
/// giving the ids llama.cpp gives.
///
/// Spaces become `▁` (and, with `addSpacePrefix`, one goes in front of each text fragment);
/// the text starts as one symbol per character, and the adjacent pair that forms the
/// highest-scoring token is merged until no pair forms a token. A character that is not a
/// token is spelled with byte tokens `<0xXX>`.
public struct SentencePieceTokenizer: VocabularyBackedTokenizer {
    let vocabulary: Vocabulary
    private let scores: [Float]
    /// Whether a space is put before text that starts the input or follows a special token
    /// (`tokenizer.ggml.add_space_prefix`).
    public let addSpacePrefix: Bool
    /// The `<0xXX>` token for each byte, -1 where the vocabulary has none.
    private let byteTokens: [Int32]

    /// A tokenizer from SentencePiece pieces (`▁` for space), their scores and types.
    /// Throws `HearthError.invalidModelFile` for inconsistent data.
    public init(tokens: [String], scores: [Float]? = nil, tokenTypes: [TokenType]? = nil,
                addSpacePrefix: Bool, specialTokens: SpecialTokens = SpecialTokens()) throws {
        try self.init(tokens: tokens, scores: scores, tokenTypes: tokenTypes, addSpacePrefix: addSpacePrefix,
                      specialTokens: specialTokens, spacing: .none, path: "the SentencePiece vocabulary")
    }

    init(tokens: [String], scores: [Float]?, tokenTypes: [TokenType]?, addSpacePrefix: Bool,
         specialTokens: SpecialTokens, spacing: SpecialTokenSpacing, path: String) throws {
        if let scores, scores.count != tokens.count {
            throw HearthError.invalidModelFile(
                path: path, reason: "tokenizer.ggml.scores has \(scores.count) entries for \(tokens.count) tokens")
        }
        let vocabulary = try Vocabulary(tokens: tokens, types: tokenTypes, special: specialTokens, spacing: spacing,
                                        path: path)
        self.vocabulary = vocabulary
        self.scores = scores ?? Array(repeating: 0, count: tokens.count)
        self.addSpacePrefix = addSpacePrefix
        byteTokens = SentencePieceSpelling.byteTokens(in: vocabulary).enumerated().map { byte, id in
            if id >= 0 { return id }
            // Some vocabularies spell a byte as the byte itself.
            return [UInt8(byte)].withUnsafeBufferPointer { vocabulary.token(for: $0) } ?? -1
        }
    }

    public func encode(_ text: String, addSpecial: Bool, parseSpecial: Bool) -> [Int32] {
        vocabulary.encode(text, addSpecial: addSpecial) { bytes, output in
            var state = MergeState()
            // The start of the input counts as following a special token, with or without BOS.
            var afterSpecial = true
            for fragment in vocabulary.fragments(of: bytes, parseSpecial: parseSpecial) {
                switch fragment {
                case .token(let id):
                    output.append(id)
                    afterSpecial = true
                case .text(let range):
                    state.escaped.removeAll(keepingCapacity: true)
                    if addSpacePrefix && afterSpecial {
                        state.escaped.append(contentsOf: SentencePieceSpelling.escapedSpace)
                    }
                    SentencePieceSpelling.escape(bytes[range], into: &state.escaped)
                    encodeEscaped(&state, into: &output)
                    afterSpecial = false
                }
            }
        }
    }

    private struct Bigram: HeapOrdered {
        var score: Float
        var left: Int32
        var right: Int32
        var length: Int32

        // Highest score first; among equal scores the leftmost, as llama.cpp's comparator.
        static func precedes(_ a: Bigram, _ b: Bigram) -> Bool {
            a.score > b.score || (a.score == b.score && a.left < b.left)
        }
    }

    private struct MergeState {
        var escaped: [UInt8] = []
        var symbols = MergeSymbols()
        var queue = BinaryHeap<Bigram>()
    }

    private func encodeEscaped(_ state: inout MergeState, into output: inout [Int32]) {
        state.symbols.removeAll()
        state.queue.removeAll()
        let escaped = state.escaped
        escaped.withUnsafeBufferPointer { text in
            var offset = 0
            while offset < text.count {
                let length = min(UTF8Decoding.sequenceLength(text[offset]), text.count - offset)
                state.symbols.append(start: offset, length: length, isLast: offset + length == text.count)
                offset += length
            }

            func addBigram(_ left: Int32, _ right: Int32, _ symbols: MergeSymbols, _ queue: inout BinaryHeap<Bigram>) {
                guard left >= 0, right >= 0 else { return }
                let start = Int(symbols[left].start)
                let end = Int(symbols[right].start + symbols[right].length)
                guard let id = vocabulary.token(for: UnsafeBufferPointer(rebasing: text[start..<end])) else { return }
                queue.push(Bigram(score: scores[Int(id)], left: left, right: right, length: Int32(end - start)))
            }

            for index in 1..<max(state.symbols.count, 1) {
                addBigram(Int32(index - 1), Int32(index), state.symbols, &state.queue)
            }
            while let bigram = state.queue.pop() {
                let leftLength = state.symbols[bigram.left].length, rightLength = state.symbols[bigram.right].length
                // A pair is stale once either side has changed since it was queued.
                guard leftLength > 0, rightLength > 0, leftLength + rightLength == bigram.length else { continue }
                let after = state.symbols.merge(bigram.left, bigram.right)
                addBigram(state.symbols[bigram.left].prev, bigram.left, state.symbols, &state.queue)
                addBigram(bigram.left, after, state.symbols, &state.queue)
            }

            var index: Int32 = state.symbols.count == 0 ? -1 : 0
            while index >= 0 {
                let symbol = state.symbols[index]
                let range = Int(symbol.start)..<Int(symbol.start + symbol.length)
                if let id = vocabulary.token(for: UnsafeBufferPointer(rebasing: text[range])) {
                    output.append(id)
                } else {
                    for byte in text[range] {
                        let id = byteTokens[Int(byte)]
                        if id >= 0 {
                            output.append(id)
                        } else if let unknown = vocabulary.special.unknown {
                            // llama.cpp aborts here; a vocabulary without byte tokens gets <unk>.
                            output.append(unknown)
                        }
                    }
                }
                index = symbol.next
            }
        }
    }

    public func tokenBytes(_ token: Int32) -> [UInt8] {
        guard let type = vocabulary.type(of: token) else { return [] }
        let text = vocabulary.text(of: token)
        switch type {
        case .normal:
            var bytes: [UInt8] = []
            bytes.reserveCapacity(text.count)
            SentencePieceSpelling.unescape(text, into: &bytes)
            return bytes
        case .byte:
            return SentencePieceSpelling.byteValue(text).map { [$0] } ?? Array(text)
        default:
            return Array(text)
        }
    }

    /// Text for `tokens`. With `addSpacePrefix`, the space that encoding put before the first
    /// piece of text (after any leading control tokens such as BOS) is removed.
    public func decode(_ tokens: [Int32]) -> String {
        var bytes: [UInt8] = []
        var stripPending = addSpacePrefix
        for token in tokens {
            var piece = tokenBytes(token)
            if stripPending && vocabulary.type(of: token) != .control {
                if piece.first == 0x20 { piece.removeFirst() }
                stripPending = false
            }
            bytes.append(contentsOf: piece)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
