extension BPETokenizer {
    /// A byte-level BPE tokenizer from its tokens alone, given as raw bytes in rank order (a
    /// token's id is its rank), as tiktoken files and whisper.cpp's vocabularies hold them;
    /// `specials` follow them as control tokens.
    ///
    /// With no merge list the ranks decide, as tiktoken encodes: two adjacent parts of a word
    /// merge when their concatenation is a token, the lowest-ranked concatenation first and the
    /// leftmost among equals. So every split of a token into two tokens is a merge, and all the
    /// splits of one token share its rank.
    public init(rankedTokens: [[UInt8]], specials: [String], preTokenizer: BPEPreTokenizer,
                path: String = "the ranked vocabulary") throws {
        // Slices as keys, so that looking up every split of every token copies no bytes.
        var rank: [ArraySlice<UInt8>: Int32] = [:]
        rank.reserveCapacity(rankedTokens.count)
        for (id, bytes) in rankedTokens.enumerated() where !bytes.isEmpty && rank[bytes[...]] == nil {
            rank[bytes[...]] = Int32(id)
        }
        var spelled: [String] = []
        spelled.reserveCapacity(rankedTokens.count + specials.count)
        var merges: [String] = []
        var ranks: [Int32] = []
        var utf8: [UInt8] = []
        var boundaries: [Int] = []
        for (id, bytes) in rankedTokens.enumerated() {
            utf8.removeAll(keepingCapacity: true)
            boundaries.removeAll(keepingCapacity: true)
            for byte in bytes {
                boundaries.append(utf8.count)
                utf8 += ByteLevelEncoding.utf8ForByte[Int(byte)]
            }
            spelled.append(String(decoding: utf8, as: UTF8.self))
            // A repeated token never merges: its first occurrence holds the rank.
            guard bytes.count >= 2, rank[bytes[...]] == Int32(id) else { continue }
            for split in 1..<bytes.count where rank[bytes[..<split]] != nil && rank[bytes[split...]] != nil {
                let cut = boundaries[split]
                merges.append(String(decoding: utf8[..<cut] + [0x20] + utf8[cut...], as: UTF8.self))
                ranks.append(Int32(id))
            }
        }
        let types = [TokenType](repeating: .normal, count: rankedTokens.count) + [TokenType](repeating: .control, count: specials.count)
        try self.init(tokens: spelled + specials, tokenTypes: types, merges: merges, mergeRanks: ranks,
                      preTokenizer: preTokenizer, ignoresMerges: false, specialTokens: SpecialTokens(), spacing: .none,
                      path: path)
    }
}
