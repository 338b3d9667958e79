import HearthTokenizers
import Synchronization

/// JSON mode's rule for the sampler: a token may come next when its bytes keep the answer the
/// beginning of one JSON object (`recognizer` holds the answer so far); an end-of-generation
/// token only once the object is complete; control and other non-text tokens never.
///
/// Asking about one token runs its bytes through a copy of the recognizer, stopping at the
/// first refused byte. Marking the whole vocabulary tries each first byte once and then only
/// the tokens that start with an accepted one, and the model remembers the answer for the
/// state: states recur (inside a string at the same depth, after a comma in an object) within
/// an answer and across answers.
public struct JSONTokenConstraint: TokenConstraint {
    /// The answer so far.
    public var recognizer: JSONRecognizer
    let table: TokenByteTable

    public init(recognizer: JSONRecognizer, table: TokenByteTable) {
        self.recognizer = recognizer
        self.table = table
    }

    public func allows(_ token: Int32) -> Bool {
        guard token >= 0 && Int(token) < table.vocabularySize else { return false }
        switch table.kinds[Int(token)] {
        case .excluded: return false
        case .end: return recognizer.isComplete
        case .text:
            return table.bytes.withUnsafeBufferPointer { bytes in
                var r = recognizer
                for i in Int(table.offsets[Int(token)])..<Int(table.offsets[Int(token) + 1]) {
                    guard r.step(bytes[i]) else { return false }
                }
                return true
            }
        }
    }

    public func markAllowed(in mask: UnsafeMutableBufferPointer<UInt64>, vocabularySize: Int) {
        let words = (min(vocabularySize, table.vocabularySize) + 63) / 64
        if let known = table.masks.withLock({ $0[recognizer] }) {
            for i in 0..<min(words, known.count) { mask[i] |= known[i] }
            return
        }
        var computed = [UInt64](repeating: 0, count: (table.vocabularySize + 63) / 64)
        table.bytes.withUnsafeBufferPointer { bytes in
            table.offsets.withUnsafeBufferPointer { offsets in
                table.byFirstByte.withUnsafeBufferPointer { tokens in
                    for first in 0..<256 {
                        var afterFirst = recognizer
                        guard afterFirst.step(UInt8(first)) else { continue }
                        next: for j in Int(table.firstByteStart[first])..<Int(table.firstByteStart[first + 1]) {
                            let token = Int(tokens[j])
                            var r = afterFirst
                            for i in Int(offsets[token]) + 1..<Int(offsets[token + 1]) {
                                guard r.step(bytes[i]) else { continue next }
                            }
                            computed[token >> 6] |= 1 << UInt64(token & 63)
                        }
                    }
                }
            }
        }
        if recognizer.isComplete {
            for token in table.endTokens { computed[Int(token) >> 6] |= 1 << UInt64(token & 63) }
        }
        let capacity = table.maskCapacity
        table.masks.withLock { masks in
            // Emptying when full is simpler than tracking use, and the states that recur come back soon.
            if masks.count >= capacity { masks.removeAll(keepingCapacity: true) }
            masks[recognizer] = computed
        }
        for i in 0..<words { mask[i] |= computed[i] }
    }
}

/// The vocabulary's bytes laid out for constrained sampling: every token's bytes in one buffer,
/// what each token is to a constraint, and the text tokens grouped by their first byte.
public final class TokenByteTable: Sendable {
    public enum Kind: UInt8, Sendable {
        /// Never sampled in JSON mode: control, unknown and unused tokens, and tokens with no bytes
        /// (which would change nothing and could repeat forever).
        case excluded
        /// Text, allowed when its bytes are.
        case text
        /// Ends generation, allowed once the object is complete.
        case end
    }

    public let vocabularySize: Int
    /// Token `t`'s bytes are `bytes[offsets[t]..<offsets[t + 1]]`.
    public let bytes: [UInt8]
    public let offsets: [Int32]
    public let kinds: [Kind]
    /// The text tokens in order of their first byte: those starting with `b` are
    /// `byFirstByte[firstByteStart[b]..<firstByteStart[b + 1]]`.
    let byFirstByte: [Int32]
    let firstByteStart: [Int32]
    public let endTokens: [Int32]
    /// Token `token`'s bytes (empty for tokens that are not text).
    public func tokenBytes(_ token: Int32) -> [UInt8] {
        Array(bytes[Int(offsets[Int(token)])..<Int(offsets[Int(token) + 1])])
    }

    /// The text tokens' bytes as a trie, built on first use (grammars walk it).
    var trie: TokenTrie {
        trieStorage.withLock { trie in
            if let trie { return trie }
            let built = TokenTrie(self)
            trie = built
            return built
        }
    }
    private let trieStorage = Mutex<TokenTrie?>(nil)
    /// Whole-vocabulary masks by recognizer state, shared by the model's generations.
    let masks = Mutex<[JSONRecognizer: [UInt64]]>([:])
    /// Most masks kept: about 4 MB of them (6 KB each for a 49,152-token vocabulary).
    var maskCapacity: Int { max(16, (4 << 20) / ((vocabularySize + 63) / 64 * 8)) }

    public init(tokenizer: any Tokenizer) {
        let n = tokenizer.vocabularySize
        let ends = tokenizer.endOfGenerationTokens
        var bytes: [UInt8] = []
        bytes.reserveCapacity(n * 8)
        var offsets: [Int32] = [0]
        offsets.reserveCapacity(n + 1)
        var kinds: [Kind] = []
        kinds.reserveCapacity(n)
        var perFirstByte = [Int32](repeating: 0, count: 257)
        for token in 0..<Int32(n) {
            let piece = tokenizer.tokenBytes(token)
            let kind: Kind
            if ends.contains(token) {
                kind = .end
            } else {
                switch tokenizer.tokenType(token) {
                case .control?, .unknown?, .unused?: kind = .excluded
                default: kind = piece.isEmpty ? .excluded : .text
                }
            }
            if kind == .text { bytes += piece; perFirstByte[Int(piece[0]) + 1] += 1 }
            offsets.append(Int32(bytes.count))
            kinds.append(kind)
        }
        for b in 0..<256 { perFirstByte[b + 1] += perFirstByte[b] }
        var fill = perFirstByte
        var grouped = [Int32](repeating: 0, count: Int(perFirstByte[256]))
        for token in 0..<n where kinds[token] == .text {
            let first = Int(bytes[Int(offsets[token])])
            grouped[Int(fill[first])] = Int32(token)
            fill[first] += 1
        }
        vocabularySize = n
        self.bytes = bytes
        self.offsets = offsets
        self.kinds = kinds
        byFirstByte = grouped
        firstByteStart = perFirstByte
        endTokens = ends.sorted()
    }
}

