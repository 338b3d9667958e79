/// Which tokens may come next, for constrained sampling (JSON mode is one). `Sampler` applies
/// it after the logit bias, as if every token it refuses had a logit of -infinity.
///
/// The sampler asks as little as it can: greedy and top-k only need the best few allowed
/// tokens, so it asks `allows` about candidates from the most likely down and stops when it
/// has enough; only a stage that needs every allowed token (top-p or min-p without top-k, or
/// temperature alone) asks for the whole vocabulary through `markAllowed`.
public protocol TokenConstraint {
    /// Whether `token` may come next.
    func allows(_ token: Int32) -> Bool

    /// Sets bit `t % 64` of `mask[t / 64]` for every allowed token `t` below `vocabularySize`;
    /// the words arrive zeroed. The default asks `allows` about each token.
    func markAllowed(in mask: UnsafeMutableBufferPointer<UInt64>, vocabularySize: Int)
}

extension TokenConstraint {
    public func markAllowed(in mask: UnsafeMutableBufferPointer<UInt64>, vocabularySize: Int) {
        for token in 0..<vocabularySize where allows(Int32(token)) {
            mask[token >> 6] |= 1 << UInt64(token & 63)
        }
    }
}

/// A constraint that follows the output as it grows: the sampler asks it which tokens may come
/// next, and the generation tells it each token taken.
public protocol OutputConstraint: TokenConstraint {
    /// Takes `token` (whose bytes are `bytes`) into the output; false when it breaks the rule.
    mutating func accept(_ token: Int32, bytes: [UInt8]) -> Bool
    /// Whether the output is complete and nothing more may follow: generation ends.
    var isComplete: Bool { get }
    /// Tells the constraint how many tokens are left before the budget ends, counting the one
    /// about to be sampled; a constraint that can close its output in time keeps to it.
    mutating func setRemainingTokens(_ count: Int)
}

extension OutputConstraint {
    public mutating func setRemainingTokens(_ count: Int) {}
}

extension JSONTokenConstraint: OutputConstraint {
    public mutating func accept(_ token: Int32, bytes: [UInt8]) -> Bool {
        recognizer.consume(bytes)
    }

    public var isComplete: Bool { recognizer.isComplete }
}

extension GrammarConstraint: OutputConstraint {
    public mutating func setRemainingTokens(_ count: Int) { remainingTokens = count }

    public mutating func accept(_ token: Int32, bytes: [UInt8]) -> Bool {
        accept(token)
    }
}

extension LazyGrammarConstraint {
    public mutating func setRemainingTokens(_ count: Int) { remainingTokens = count }
}
