import HearthCore

/// One sequence: its KV cache (and the recurrent state of a hybrid family's recurrent blocks),
/// the tokens in it, and the logits of its last row that asked for them. The scratch of a forward pass is not here; the model owns it (`Workspace`), so a
/// thousand idle sequences cost their caches and nothing more.
///
/// A sequence belongs to the model that made it and is used by one task at a time.
public final class SequenceState: @unchecked Sendable {
    /// The model that made this sequence.
    let owner: ObjectIdentifier
    let cache: KVCache
    /// The state of the recurrent blocks, or nil when every block attends.
    let recurrent: RecurrentState?
    /// The last logits computed for this sequence.
    let logitBuffer: FloatBuffer    // (vocab)
    /// The tokens in the cache, one per position.
    public internal(set) var tokens: [Int32] = []
    /// Rows of this sequence evaluated in one pass when a longer run of tokens is evaluated
    /// (a prompt): runs are cut into chunks of this size, whatever else shares the passes, so
    /// a prompt's arithmetic is the same alone or beside other sequences.
    public let chunkSize: Int
    /// Of its first positions, how many hold exactly what evaluating its tokens from the start,
    /// `chunkSize` rows per pass, gives: filled by whole chunks cut from position 0. Another
    /// sequence may start from these positions and still give the bits it would give alone.
    public internal(set) var reproducible = 0

    /// A sequence of `contextLength` positions; one that only keeps a copy of another's
    /// positions (`withLogits` false) has no room for logits.
    init(owner: ObjectIdentifier, configuration c: ModelConfiguration, contextLength: Int, chunkSize: Int,
         cacheTypes: KVCacheTypes = .f16, withLogits: Bool = true) {
        self.owner = owner
        cache = KVCache(shapes: c.cacheShapes, capacity: contextLength, types: cacheTypes)
        recurrent = c.recurrentLayerCount == 0 ? nil
            : RecurrentState(slots: c.recurrentLayerCount, slotFloats: c.recurrentStateFloats)
        logitBuffer = FloatBuffer(withLogits ? c.vocabularySize : 0)
        self.chunkSize = chunkSize
    }

    /// Positions already in the cache; the next token goes here.
    public var position: Int { tokens.count }

    /// Positions the cache can hold.
    public var contextLength: Int { cache.capacity }

    /// The logits of the last row of this sequence that asked for them.
    public var logits: Logits { Logits(sequence: self) }

    /// Forgets every position, so the next evaluation starts a new sequence.
    public func reset() { rewind(to: 0) }

    /// Forgets the positions from `newPosition` on, keeping the ones before it (no-op when
    /// `newPosition` is not before the current one). A sequence with recurrent blocks goes back
    /// to `restorablePosition(atMost: newPosition)`, which may be earlier: `position` says where
    /// it stands.
    public func rewind(to newPosition: Int) {
        guard newPosition < position else { return }
        let target = restorablePosition(atMost: max(newPosition, 0))
        recurrent?.restore(to: target, now: position)
        tokens.removeSubrange(target...)
        reproducible = min(reproducible, position)
    }

    /// The latest position at or before `limit` this sequence can go back to. Any position of a
    /// sequence whose blocks all attend; for one with recurrent blocks, where it stands, the end
    /// of a whole chunk it evaluated from the start, or 0.
    public func restorablePosition(atMost limit: Int) -> Int {
        guard let recurrent else { return min(limit, position) }
        return recurrent.restorablePosition(atMost: limit, now: position)
    }

    /// Appends the tokens of rows just evaluated, noting whether they were a whole chunk in line
    /// with the ones before (where a recurrent state is kept as a checkpoint).
    func append(evaluated run: [Int32]) {
        if reproducible == position, position % chunkSize == 0, run.count == chunkSize { reproducible += run.count }
        tokens += run
        if let recurrent, reproducible == position, position % chunkSize == 0 { recurrent.checkpoint(at: position) }
    }

    /// How many of `prompt`'s first tokens another sequence may start from by copying this
    /// one's positions, keeping the bits it would get alone: the shared tokens among the
    /// reproducible positions, in whole chunks.
    public func reproduciblePrefixLength(with prompt: [Int32]) -> Int {
        let shared = min(commonPrefixLength(with: prompt), reproducible)
        let chunks = restorablePosition(atMost: shared - shared % chunkSize)
        return restorablePosition(atMost: chunks - chunks % chunkSize)
    }

    /// How many of `prompt`'s first tokens a generation in this sequence starts from: what the
    /// cache shares with it, all but the last token (whose logits are needed). When that goes
    /// only a few tokens past the shared reproducible chunks and the prompt has a whole chunk
    /// more to evaluate, it starts at the chunks' end instead: a handful of tokens evaluated
    /// again keep the rest of the prompt reproducible, for other sequences to start from.
    public func reusablePrefixLength(for prompt: [Int32]) -> Int {
        let reused = min(commonPrefixLength(with: prompt), max(prompt.count - 1, 0))
        let chunks = min(reproduciblePrefixLength(with: prompt), max(prompt.count - 1, 0)) / chunkSize * chunkSize
        return restorablePosition(atMost: reused - chunks < chunkSize / 4 && prompt.count - chunks >= chunkSize ? chunks : reused)
    }

    /// How many of `sequence`'s first tokens the cache already holds.
    public func commonPrefixLength(with sequence: [Int32]) -> Int {
        zip(tokens, sequence).prefix { $0 == $1 }.count
    }

    /// How its keys and values are kept.
    public var cacheTypes: KVCacheTypes { cache.types }

    /// Bytes reserved for its keys and values, and held by its recurrent state and checkpoints.
    public var cacheBytes: Int { cache.bytes + (recurrent?.bytes ?? 0) }

    /// Makes `other` hold this sequence's first `count` positions (keys, values, recurrent state
    /// and tokens), as if it had evaluated them itself: for prompts shared across requests and
    /// for beams. With recurrent blocks, `count` must be a position `restorablePosition` gives.
    public func copyPrefix(_ count: Int, to other: SequenceState) throws {
        guard other.owner == owner else { throw HearthError.invalidArgument("Both sequences must belong to the same model.") }
        guard count >= 0, count <= position else {
            throw HearthError.invalidArgument("Cannot copy \(count) positions of a sequence that holds \(position).")
        }
        guard count <= other.contextLength else { throw HearthError.contextOverflow(needed: count, limit: other.contextLength) }
        guard other.cacheTypes == cacheTypes else {
            throw HearthError.invalidArgument("Cannot copy a \(cacheTypes) KV cache into a \(other.cacheTypes) one.")
        }
        guard restorablePosition(atMost: count) == count else {
            throw HearthError.invalidArgument(
                "This sequence's recurrent state can go back to position \(restorablePosition(atMost: count)), not \(count).")
        }
        guard other !== self else { return rewind(to: count) }
        cache.copyPrefix(count, to: other.cache)
        if let recurrent, let target = other.recurrent { recurrent.copy(at: count, now: position, to: target) }
        other.tokens = Array(tokens[..<count])
        other.reproducible = other.chunkSize == chunkSize ? min(reproducible, count) : 0
        // Copies made to keep (with no room for logits) keep the count; a sequence of another
        // context length may rotate its positions differently (Phi-3), so it starts over.
        if other.logitBuffer.count > 0, logitBuffer.count > 0, other.contextLength != contextLength { other.reproducible = 0 }
    }
}
