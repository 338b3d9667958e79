import HearthCore

/// A piece of input after special tokens are split out: text still to tokenize, or a token.
enum Fragment: Equatable {
    case text(Range<Int>)
    case token(Int32)
}

/// Special tokens that take the whitespace beside them out of the text, as llama.cpp decides by
/// the model's name (its `LLAMA_TOKEN_ATTR_LSTRIP` and `RSTRIP`): a text of spaces around them
/// would otherwise become tokens of its own.
enum SpecialTokenSpacing: Sendable {
    /// None does.
    case none
    /// Phi-3: every special token but `<unk>`, `<s>` and `<|endoftext|>` takes the whitespace after it.
    case phi3
    /// The mask token (`<mask>`, `[MASK]`) takes the whitespace before it (Jina, Nomic, ModernBERT).
    case maskTakesSpaceBefore(String)

    /// The spacing llama.cpp gives a vocabulary, from `general.name`, `tokenizer.ggml.pre` and
    /// `general.architecture`.
    init(modelName: String?, preTokenizer: String?, architecture: String?) {
        let name = modelName?.lowercased() ?? ""
        let pre = preTokenizer ?? "", architecture = architecture ?? ""
        if ["jina-v2-de", "jina-v2-es", "jina-v2-code"].contains(where: pre.contains)
            || ["nomic-bert-moe", "jina-bert-v3"].contains(where: architecture.contains) {
            self = .maskTakesSpaceBefore("<mask>")
        } else if name.contains("phi-3") || name.contains("phi3") {
            self = .phi3
        } else if name.contains("modern-bert") {
            self = .maskTakesSpaceBefore("[MASK]")
        } else {
            self = .none
        }
    }
}

/// The token list, its types and its special tokens: what the tokenizers share. Built the way
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

    // The texts llama.cpp (as vendored by llama-cpp-python 0.3.36) recognizes special tokens by.
    static let endOfTurnTexts = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                 "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>",
                                 "<end_of_utterance>"]
    static let endOfGenerationTexts: Set<String> = [
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
        "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
        "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
    ]
    // Fill-in-the-middle tokens: llama.cpp makes them control tokens, and the last three end generation.
    static let fimTexts: [(texts: [String], endsGeneration: Bool)] = [
        (["<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>",
          "<|prefix|>"], false),
        (["<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>",
          "<|suffix|>"], false),
        (["<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>",
          "<|middle|>"], false),
        (["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"], true),
        (["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"], true),
        (["<|file_sep|>"], true),
    ]
    // gpt-oss's message markers, which llama.cpp always renders as text.
    static let alwaysRenderedTexts = ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"]

    /// `extraCapacity` and `extraBytes` are room for strings a tokenizer adds to `texts` after
    /// the tokens.
    init(tokens: [String], types givenTypes: [TokenType]?, special given: SpecialTokens, extraCapacity: Int = 0,
         extraBytes: Int = 0, spacing: SpecialTokenSpacing = .none, path: String) throws {
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
        for text in Self.alwaysRenderedTexts {
            if let marker = id(of: text) { types[Int(marker)] = .userDefined }
        }
        for id in [special.eos, special.eot, special.eom] {
            if let id { endOfGeneration.insert(id) }
        }
        // Vocabularies whose turns end in <|return|> or <|call|> (gpt-oss, Solar Open) use <|end|>
        // inside a turn: llama.cpp keeps generating through it.
        func ends(_ text: String) -> Bool { id(of: text).map(endOfGeneration.contains) ?? false }
        let endsInCalls = ends("<|call|>") || ends("<|calls|>")
        if let end = id(of: "<|end|>"), endOfGeneration.contains(end),
           endsInCalls && (ends("<|return|>") || ends("<|flush|>")) {
            endOfGeneration.remove(end)
            types[Int(end)] = .userDefined
        }
        // Gemma 4 and PLaMo have an ordinary </s>.
        if let s = id(of: "</s>"), endOfGeneration.contains(s), ends("<|tool_response>") || ends("<|plamo:eos|>") {
            endOfGeneration.remove(s)
            types[Int(s)] = .normal
        }

        // Longest text first, as llama.cpp orders its special-token cache; ties by id.
        let specialIDs = (0..<tokens.count).filter {
            types[$0] == .control || types[$0] == .userDefined || types[$0] == .unknown
        }
        let lengths = specialIDs.map { texts.bytes(of: $0).count }
        let order = specialIDs.indices.sorted {
            lengths[$0] != lengths[$1] ? lengths[$0] > lengths[$1] : specialIDs[$0] < specialIDs[$1]
        }.map { Int32(specialIDs[$0]) }

        var strips = SpecialTokenMatcher.Strips()
        switch spacing {
        case .none:
            break
        case .phi3:
            strips.after = Set(order)
            if let end = id(of: "</s>") { strips.after.insert(end) }
            for text in ["<unk>", "<s>", "<|endoftext|>"] {
                if let kept = id(of: text) { strips.after.remove(kept) }
            }
        case .maskTakesSpaceBefore(let mask):
            if let mask = id(of: mask) { strips.before = [mask] }
        }

        self.texts = texts
        self.types = types
        self.special = special
        self.endOfGeneration = endOfGeneration
        parsedSpecials = SpecialTokenMatcher(order: order, texts: texts, strips: strips)
        alwaysSplit = SpecialTokenMatcher(order: order.filter { types[Int($0)] == .userDefined }, texts: texts,
                                          strips: strips)
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

    /// The tokens of `text`: BOS before and EOS after when `addSpecial` and the vocabulary adds
    /// them, and between them what `body` appends for the text's UTF-8 bytes.
    func encode(_ text: String, addSpecial: Bool,
                _ body: (UnsafeBufferPointer<UInt8>, inout [Int32]) -> Void) -> [Int32] {
        var output: [Int32] = []
        output.reserveCapacity(text.utf8.count / 3 + 2)
        if addSpecial && special.addBOS, let bos = special.bos { output.append(bos) }
        text.withUTF8Bytes { body($0, &output) }
        if addSpecial && special.addEOS, let eos = special.eos { output.append(eos) }
        return output
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
    /// Tokens that take the whitespace before or after them out of the text.
    struct Strips: Sendable {
        var before: Set<Int32> = []
        var after: Set<Int32> = []
    }

    /// Token ids in matching order.
    let order: [Int32]
    let strips: Strips
    /// Distinct special texts; entry `e` first appears at `rankOfEntry[e]` in `order`.
    private var table: ByteStringTable
    private var rankOfEntry: [Int32] = []
    /// For each first byte, the lengths of the special texts that start with it.
    private var lengthsByFirstByte: [[Int]] = Array(repeating: [], count: 256)

    init(order: [Int32], texts: ByteStringTable, strips: Strips) {
        self.order = order
        self.strips = strips
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
                let stripsBefore = strips.before.contains(id), stripsAfter = strips.after.contains(id)
                var cursor = range.lowerBound
                while let match = Self.firstOccurrence(of: needle, in: bytes, from: cursor, before: range.upperBound) {
                    var textEnd = match
                    if stripsBefore {
                        while textEnd > cursor && Self.isSpace(bytes[textEnd - 1]) { textEnd -= 1 }
                    }
                    if textEnd > cursor { next.append(.text(cursor..<textEnd)) }
                    next.append(.token(id))
                    cursor = match + needle.count
                    if stripsAfter {
                        while cursor < range.upperBound && Self.isSpace(bytes[cursor]) { cursor += 1 }
                    }
                }
                if cursor < range.upperBound { next.append(.text(cursor..<range.upperBound)) }
            }
            fragments = next
        }
        return fragments
    }

    /// C's `isspace`, which llama.cpp strips with: space, tab, line feed, vertical tab, form feed,
    /// carriage return.
    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
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
