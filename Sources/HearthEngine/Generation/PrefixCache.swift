/// Keys and values of sequences that moved on to other prompts, kept in RAM so that a later
/// prompt beginning the same way starts from them instead of evaluating its beginning again
/// (as llama-server's `--cache-ram`). An entry holds a sequence's reproducible positions (whole
/// prompt chunks, see `SequenceState.reproducible`), so starting from it gives the bits a
/// prompt gets alone; the least recently used entries go first when the entries' bytes would
/// pass the limit.
///
/// Used by one thread at a time (a `BatchedGenerator`'s).
final class PrefixCache {
    private struct Entry {
        let sequence: SequenceState
        /// The context length of the sequence it was copied from: positions are shared only
        /// between sequences of the same length and chunk size.
        let contextLength: Int
        var lastUse: UInt64

        func fits(_ other: SequenceState) -> Bool {
            other.chunkSize == sequence.chunkSize && other.contextLength == contextLength && other.cacheTypes == sequence.cacheTypes
        }
    }

    /// Most bytes the entries may take; 0 keeps nothing.
    let byteLimit: Int
    private var entries: [Entry] = []
    private var uses: UInt64 = 0
    private(set) var bytes = 0

    init(byteLimit: Int) { self.byteLimit = max(byteLimit, 0) }

    /// Entries held now.
    var count: Int { entries.count }

    /// The entry for sequences like `target` sharing the longest reproducible beginning with
    /// `prompt`, and how many tokens it shares.
    func longestPrefix(of prompt: [Int32], like target: SequenceState) -> (sequence: SequenceState, shared: Int)? {
        var best: (sequence: SequenceState, shared: Int)?
        for entry in entries where entry.fits(target) {
            let shared = entry.sequence.reproduciblePrefixLength(with: prompt)
            if shared > (best?.shared ?? 0) { best = (entry.sequence, shared) }
        }
        return best
    }

    /// Marks the entry holding `sequence` as just used.
    func touch(_ sequence: SequenceState) {
        guard let index = entries.firstIndex(where: { $0.sequence === sequence }) else { return }
        uses += 1
        entries[index].lastUse = uses
    }

    /// Whether an entry for sequences like `source` already holds `tokens` as reproducible positions.
    func covers(_ tokens: [Int32], like source: SequenceState) -> Bool {
        entries.contains { $0.fits(source) && $0.sequence.reproduciblePrefixLength(with: tokens) == tokens.count }
    }

    /// Keeps a copy of `sequence`'s reproducible positions, made on `model`. Entries it extends
    /// are dropped; nothing is kept when there is not one whole chunk, when an entry holds them
    /// already, or when they are larger than the limit.
    func keep(_ sequence: SequenceState, model: TransformerModel) {
        let count = sequence.reproducible - sequence.reproducible % sequence.chunkSize
        let tokens = Array(sequence.tokens[..<count])
        let c = model.configuration
        // A hybrid's copy also holds its recurrent state and a checkpoint at each whole chunk.
        let size = sequence.cacheTypes.bytesPerPosition(c) * count + model.recurrentStateBytes * (1 + count / sequence.chunkSize)
        guard count > 0, size <= byteLimit, !covers(tokens, like: sequence) else { return }
        let copy = SequenceState(owner: ObjectIdentifier(model), configuration: c,
                                 contextLength: count, chunkSize: sequence.chunkSize, cacheTypes: sequence.cacheTypes,
                                 withLogits: false)
        entries.removeAll { entry in
            let extended = entry.fits(sequence) && tokens.starts(with: entry.sequence.tokens)
            if extended { bytes -= entry.sequence.cacheBytes }
            return extended
        }
        while bytes + copy.cacheBytes > byteLimit, let oldest = entries.indices.min(by: { entries[$0].lastUse < entries[$1].lastUse }) {
            bytes -= entries.remove(at: oldest).sequence.cacheBytes
        }
        // Both belong to `model` and the copy has room for every position: this cannot fail.
        try? sequence.copyPrefix(count, to: copy)
        uses += 1
        entries.append(Entry(sequence: copy, contextLength: sequence.contextLength, lastUse: uses))
        bytes += copy.cacheBytes
    }
}
