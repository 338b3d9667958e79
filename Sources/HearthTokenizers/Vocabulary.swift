import HearthFormats

/// A piece of input after special tokens are split out: text still to tokenize, or a token.
enum Fragment: Equatable {
    case text(Range<Int>)
    case token(Int32)
}

/// The token list, its types and its special tokens: what both tokenizers share. Built the way
/// llama.cpp's `llama_vocab::impl::load` builds it, so the same tokens count as special.
struct Vocabulary: Sendable {
    /// Number of tokens.
    let count: Int
    /// Token texts, entry `i` being token `i`. BPE appends strings that only merges use, with
    /// indices from `count` up.
    var texts: ByteStringTable
    /// Type of each token, after the overrides below.
    let types: [TokenType]
    /// Special ids, with EOT and EOM found by text when the metadata does not give them.
    let special: SpecialTokens
    /// Tokens that end generation.
    let endOfGeneration: Set<Int32>

    private let parsedSpecials: SpecialTokenMatcher
    private let alwaysSplit: SpecialTokenMatcher

    static let endOfTurnTexts = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                 "<EOT>", "<｜end▁of▁sentence｜>"]
    static let endOfGenerationTexts: Set<String> = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
                                                    "<|endoftext|>", "<|eom_id|>", "<EOT>"]
    // Fill-in-the-middle tokens: llama.cpp makes them control tokens, and the last three end generation.
    static let fimTexts: [(texts: [String], endsGeneration: Bool)] = [
        (["<|fim_prefix|>", "<fim-prefix>", "<｜fim▁begin｜>", "<PRE>"], false),
        (["<|fim_suffix|>", "<fim-suffix>", "<｜fim▁hole｜>", "<SUF>"], false),
        (["<|fim_middle|>", "<fim-middle>", "<｜fim▁end｜>", "<MID>"], false),
        (["<|fim_pad|>", "<fim-pad>", "<PAD>"], true),
        (["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"], true),
        (["<|file_sep|>"], true),
    ]

    /// `extraCapacity` and `extraBytes` are room for strings a tokenizer adds to `texts` after
    /// the tokens.
    init(tokens: [String], types givenTypes: [TokenType]?, special given: SpecialTokens, extraCapacity: Int = 0,
         extraBytes: Int = 0, path: String) throws {
        guard !tokens.isEmpty else {
            throw HearthError.invalidModelFile(path: path, reason: "the vocabulary (tokenizer.ggml.tokens) is empty")
        }
        guard tokens.count < Int(Int32.max) else {
            throw HearthError.invalidModelFile(path: path, reason: "the vocabulary has \(tokens.count) tokens, too many for 32-bit ids")
        }
        if let givenTypes, givenTypes.count != tokens.count {
            throw HearthError.invalidModelFile(
                path: path, reason: "tokenizer.ggml.token_type has \(givenTypes.count) entries for \(tokens.count) tokens")
        }
        // Offsets into the text buffer are 32-bit; BPE adds up to twice its merges' text on top.
        let textBytes = tokens.reduce(0) { $0 + $1.utf8.count } + extraBytes
        guard textBytes < Int(Int32.max) else {
            throw HearthError.invalidModelFile(path: path, reason: "the vocabulary's text takes \(textBytes) bytes, more than 2 GiB")
        }
        count = tokens.count
        func check(_ id: Int32?, _ name: String) throws {
            if let id, id < 0 || Int(id) >= tokens.count {
                throw HearthError.invalidModelFile(
                    path: path, reason: "\(name) is \(id), outside the vocabulary of \(tokens.count) tokens")
            }
        }
        try check(given.bos, "the BOS token id")
        try check(given.eos, "the EOS token id")
        try check(given.eot, "the EOT token id")
        try check(given.eom, "the EOM token id")
        try check(given.unknown, "the unknown token id")
        try check(given.padding, "the padding token id")
        if given.addBOS && given.bos == nil {
            throw HearthError.invalidModelFile(path: path, reason: "the vocabulary asks for a BOS token but has none")
        }
        if given.addEOS && given.eos == nil {
            throw HearthError.invalidModelFile(path: path, reason: "the vocabulary asks for an EOS token but has none")
        }

        // llama.cpp renames empty tokens so that they never match text.
        let named = tokens.contains(where: \.isEmpty)
            ? tokens.enumerated().map { $1.isEmpty ? "[EMPTY_\($0)]" : $1 }
            : tokens
        let texts = ByteStringTable(named, extraCapacity: extraCapacity)

        var types = givenTypes ?? Array(repeating: .normal, count: tokens.count)
        var special = given
        var endOfGeneration = Set<Int32>()
        func id(of text: String) -> Int32? {
            text.withUTF8Bytes { texts.find($0) }
        }
        // Where llama.cpp looks tokens up by text, it walks a hash map and takes the first hit; the
        // lowest id is the deterministic choice for vocabularies that have several candidates.
        func firstID(_ candidates: [String]) -> Int32? {
            candidates.compactMap(id(of:)).min()
        }
        if special.eot == nil, let eot = firstID(Self.endOfTurnTexts) {
            special.eot = eot
            types[Int(eot)] = .control
        }
        if special.eom == nil, let eom = id(of: "<|eom_id|>") {
            special.eom = eom
            types[Int(eom)] = .control
        }
        for fim in Self.fimTexts {
            guard let fimID = firstID(fim.texts) else { continue }
            types[Int(fimID)] = .control
            if fim.endsGeneration { endOfGeneration.insert(fimID) }
        }
        for text in Self.endOfGenerationTexts {
            guard let eog = id(of: text) else { continue }
            endOfGeneration.insert(eog)
            types[Int(eog)] = .control
        }
        for id in [special.eos, special.eot, special.eom] {
            if let id { endOfGeneration.insert(id) }
        }

        // Longest text first, as llama.cpp orders its special-token cache; ties by id.
        let specialIDs = (0..<tokens.count).filter {
            types[$0] == .control || types[$0] == .userDefined || types[$0] == .unknown
        }
        let lengths = specialIDs.map { texts.bytes(of: $0).count }
        let order = specialIDs.indices.sorted {
            lengths[$0] != lengths[$1] ? lengths[$0] > lengths[$1] : specialIDs[$0] < specialIDs[$1]
        }.map { Int32(specialIDs[$0]) }

        self.texts = texts
        self.types = types
        self.special = special
        self.endOfGeneration = endOfGeneration
        parsedSpecials = SpecialTokenMatcher(order: order, texts: texts)
        alwaysSplit = SpecialTokenMatcher(order: order.filter { types[Int($0)] == .userDefined }, texts: texts)
    }

    /// The token whose text is exactly `bytes`.
    func token(for bytes: UnsafeBufferPointer<UInt8>) -> Int32? {
        guard let entry = texts.find(bytes), Int(entry) < count else { return nil }
        return entry
    }

    /// The type of `id`, or nil when it is not a token.
    func type(of id: Int32) -> TokenType? {
        id >= 0 && Int(id) < count ? types[Int(id)] : nil
    }

    /// The stored text of `id`.
    func text(of id: Int32) -> ArraySlice<UInt8> {
        texts.bytes(of: Int(id))
    }

    /// `bytes` cut at the special tokens in it. User-defined tokens are always cut out; control
    /// and unknown tokens only when `parseSpecial` is set, as llama.cpp's `tokenizer_st_partition`.
    func fragments(of bytes: UnsafeBufferPointer<UInt8>, parseSpecial: Bool) -> [Fragment] {
        guard !bytes.isEmpty else { return [] }
        let matcher = parseSpecial ? parsedSpecials : alwaysSplit
        return matcher.partition(bytes, texts: texts)
    }
}

/// Finds special-token texts in input with llama.cpp's result: each special token in order
/// (longest first) splits every remaining text fragment at each of its occurrences.
///
/// llama.cpp searches for all of them in turn; with thousands of special tokens (Gemma has
/// 6,414) that is thousands of scans per call. Here one pass finds which special tokens occur at
/// all, and only those are applied, in the same order, so the cuts are the same.
private struct SpecialTokenMatcher: Sendable {
    /// Token ids in matching order.
    let order: [Int32]
    /// Distinct special texts; entry `e` first appears at `rankOfEntry[e]` in `order`.
    private var table: ByteStringTable
    private var rankOfEntry: [Int32] = []
    /// For each first byte, the lengths of the special texts that start with it.
    private var lengthsByFirstByte: [[Int]] = Array(repeating: [], count: 256)

    init(order: [Int32], texts: ByteStringTable) {
        self.order = order
        table = ByteStringTable(expectedCount: order.count)
        var lengthSets = Array(repeating: Set<Int>(), count: 256)
        for (rank, id) in order.enumerated() {
            let text = texts.bytes(of: Int(id))
            text.withUnsafeBufferPointer { text in
                guard table.find(text) == nil else { return }  // an earlier one with this text wins
                table.append(text)
                rankOfEntry.append(Int32(rank))
                lengthSets[Int(text[0])].insert(text.count)
            }
        }
        lengthsByFirstByte = lengthSets.map { $0.sorted() }
    }

    func partition(_ bytes: UnsafeBufferPointer<UInt8>, texts: ByteStringTable) -> [Fragment] {
        var present = Set<Int32>()
        if !order.isEmpty {
            for start in 0..<bytes.count {
                for length in lengthsByFirstByte[Int(bytes[start])] {
                    guard start + length <= bytes.count else { break }
                    if let entry = table.find(bytes, start..<start + length) {
                        present.insert(rankOfEntry[Int(entry)])
                    }
                }
            }
        }
        var fragments: [Fragment] = [.text(0..<bytes.count)]
        for rank in present.sorted() {
            let id = order[Int(rank)]
            let needle = texts.bytes(of: Int(id))
            var next: [Fragment] = []
            next.reserveCapacity(fragments.count + 2)
            for fragment in fragments {
                guard case .text(let range) = fragment else {
                    next.append(fragment)
                    continue
                }
                var cursor = range.lowerBound
                while let match = Self.firstOccurrence(of: needle, in: bytes, from: cursor, before: range.upperBound) {
                    if match > cursor { next.append(.text(cursor..<match)) }
                    next.append(.token(id))
                    cursor = match + needle.count
                }
                if cursor < range.upperBound { next.append(.text(cursor..<range.upperBound)) }
            }
            fragments = next
        }
        return fragments
    }

    private static func firstOccurrence(of needle: ArraySlice<UInt8>, in bytes: UnsafeBufferPointer<UInt8>,
                                        from start: Int, before end: Int) -> Int? {
        let length = needle.count
        guard length > 0, end - start >= length else { return nil }
        let first = needle[needle.startIndex]
        var position = start
        while position <= end - length {
            if bytes[position] == first {
                var offset = 1
                while offset < length && bytes[position + offset] == needle[needle.startIndex + offset] { offset += 1 }
                if offset == length { return position }
            }
            position += 1
        }
        return nil
    }
}
