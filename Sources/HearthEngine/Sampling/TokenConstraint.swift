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
