import HearthConstraints
import Foundation

/// Picks the next token from logits through a chain of stages, in this order:
///
/// 1. **Penalties**, over the last `penaltyWindow` tokens of the history: repetition
///    (llama.cpp: a seen token's logit becomes `logit / r` if positive, else `logit * r`), then
///    frequency (`- count * f`) and presence (`- p` if seen), as OpenAI defines them.
/// 2. **Logit bias**, added to the logits; `-infinity` bans a token.
/// 3. **Top-k**: the `k` highest logits survive.
/// 4. **Top-p**: with the survivors' probabilities (softmax at temperature 1), the most likely
///    survive until their sum is ≥ p, the token that crosses p included.
/// 5. **Min-p**: tokens with probability ≥ `minP` × the most likely survivor's survive.
/// 6. **Temperature**: the survivors' logits are divided by it.
/// 7. **Draw** from the softmax of what is left, with a SplitMix64 generator seeded by `seed`.
///
/// At temperature 0 the chain stops after stage 2 and returns the highest logit (the lowest id on
/// ties); top-k, top-p and min-p cannot change that token, since each keeps the most likely one.
/// These are llama.cpp's stage semantics (`src/llama-sampling.cpp`): filters see probabilities
/// before temperature, and each keeps at least one token. Ties are ordered by token id (lower
/// first), so every cut is deterministic. Tokens whose logit is not finite (NaN, or banned) are
/// never candidates; if none is left, the argmax of the raw logits is returned.
///
/// Same seed and same options give the same tokens: the draw walks the survivors in increasing
/// token id, so the result depends only on which tokens survive and their probabilities; those
/// come from the engine's softmax, whose bits are the same on every instruction set; and the
/// sampler runs on the calling thread, so the engine's thread count does not enter.
///
/// No stage sorts the vocabulary: a small top-k is a one-pass heap selection, and larger cuts
/// find their bucket in a histogram of the logits and sort only that bucket.
///
/// A `TokenConstraint` (JSON mode) can run between stages 2 and 3: it gives the same tokens as
/// setting the logit of every token it refuses to -infinity, but asks it only about what the
/// chain needs. Greedy and top-k (up to 256) need the best one or k allowed tokens: the best
/// k + 16 candidates are asked about one by one, and only when too few of them are allowed does
/// the constraint mark the whole vocabulary, from which one pass selects the best allowed. The
/// other stages see the whole distribution, so the constraint marks the whole vocabulary.
public struct Sampler: Sendable {
    /// The options the chain runs with.
    public private(set) var options: SamplingOptions
    private var generator: SplitMix64
    private var scratch = Scratch()

    /// 0 means greedy.
    public var temperature: Float {
        get { options.temperature }
        set { options.temperature = newValue }
    }

    /// A sampler at `temperature` with no other stage, seeded with `seed` (random when nil).
    public init(temperature: Float = 0, seed: UInt64? = nil) {
        self.init(options: SamplingOptions(temperature: temperature, seed: seed))
    }

    /// A sampler running the chain with `options` (call `options.validate()` first on user input).
    public init(options: SamplingOptions) {
        self.options = options
        generator = SplitMix64(seed: options.seed ?? UInt64.random(in: .min ... .max))
    }

    /// The next token, with no history (penalties have nothing to count).
    public mutating func sample(_ logits: UnsafeBufferPointer<Float>) -> Int32 {
        sample(logits, history: EmptyCollection())
    }

    /// The next token; `history` is the tokens so far (prompt and generated), oldest first.
    public mutating func sample(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>) -> Int32 {
        run(logits, history: history, draw: true, constraint: nil as Unconstrained?)!.token
    }

    /// The next token among those `constraint` allows, or nil when it allows none. It is the
    /// token `sample(_:history:)` would give if every refused token's logit were -infinity (and
    /// when no allowed token has a finite logit, the allowed token with the highest raw logit).
    public mutating func sample(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>,
                                constraint: some TokenConstraint) -> Int32? {
        run(logits, history: history, draw: true, constraint: constraint)?.token
    }

    /// The next token with log-probabilities for reporting. `logprob` is the log-softmax of the
    /// **raw** logits, before penalties, bias, filters and temperature: the model's own belief, as
    /// OpenAI reports logprobs and as llama-server does by default (`post_sampling_probs` off).
    /// `top` holds the `top` tokens with the highest raw logits, most likely first (lower id on
    /// ties), whether or not the chain let them through. `distribution(_:history:)` gives the
    /// probabilities after the chain instead.
    public mutating func sampleWithLogprobs(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>,
                                            top: Int) -> SampledToken {
        let token = sample(logits, history: history)
        return logprobs(of: token, logits, top: top)
    }

    /// `sampleWithLogprobs(_:history:top:)` among the tokens `constraint` allows, or nil when it
    /// allows none. The log-probabilities are still those of the raw logits: the model's belief,
    /// which the constraint does not change.
    public mutating func sampleWithLogprobs(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>,
                                            top: Int, constraint: some TokenConstraint) -> SampledToken? {
        guard let token = sample(logits, history: history, constraint: constraint) else { return nil }
        return logprobs(of: token, logits, top: top)
    }

    /// The distribution the draw picks from after stages 1–6: the surviving tokens in increasing
    /// id with their probabilities, which sum to 1 (tokens whose probability underflows to 0 are
    /// left out, as the draw cannot pick them). At temperature 0, the greedy token with
    /// probability 1. The generator does not advance.
    public func distribution(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>) -> [TokenProbability] {
        distribution(logits, history: history, constraint: nil as Unconstrained?)
    }

    /// The distribution the draw picks from with `constraint` applied after stage 2; empty when
    /// it allows no token.
    public func distribution(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>,
                             constraint: some TokenConstraint) -> [TokenProbability] {
        distribution(logits, history: history, constraint: Optional(constraint))
    }

    private func distribution<C: TokenConstraint>(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>,
                                                  constraint: C?) -> [TokenProbability] {
        var copy = self
        guard let result = copy.run(logits, history: history, draw: false, constraint: constraint) else { return [] }
        guard result.count > 0 else { return [TokenProbability(token: result.token, probability: 1)] }
        let ids = copy.scratch.ids, weights = copy.scratch.weights
        return (0..<result.count).compactMap { i in
            let p = weights[i]
            return p > 0 ? TokenProbability(token: result.wholeVocabulary ? Int32(i) : ids[i], probability: p) : nil
        }
    }

    /// The logits after stages 1–2 (penalties and bias), the values greedy sampling takes the
    /// argmax of and the later stages filter.
    public func adjustedLogits(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>) -> [Float] {
        var out = Array(logits)
        var window: [Int32] = []
        out.withUnsafeMutableBufferPointer {
            SamplingStages.adjust($0, history: history, options: options, window: &window)
        }
        return out
    }

    /// Reusable buffers, so that a token costs no allocation once they have grown to the vocabulary.
    private struct Scratch: Sendable {
        /// Logits after penalties and bias.
        var adjusted: [Float] = []
        /// Candidate token ids, in increasing id.
        var ids: [Int32] = []
        /// Probabilities parallel to the candidates.
        var weights: [Float] = []
        /// The histogram bucket of each candidate, for a cut.
        var buckets: [UInt16] = []
        /// Positions of the candidates in the bucket a cut falls in.
        var boundary: [Int32] = []
        /// The penalty window, sorted to count repeats.
        var window: [Int32] = []
        /// Candidates a constraint is asked about, best first.
        var batch: [Int32] = []
        /// The tokens a constraint allows, one bit each.
        var mask: [UInt64] = []

        mutating func reserve(_ n: Int) {
            if ids.count < n { ids = [Int32](repeating: 0, count: n) }
            if weights.count < n { weights = [Float](repeating: 0, count: n) }
            if buckets.count < n { buckets = [UInt16](repeating: 0, count: n) }
            if boundary.count < n { boundary = [Int32](repeating: 0, count: n) }
        }

        /// The candidates' buffers to write and the adjusted logits and mask to read, as memory
        /// for the length of `body`: the filtering stages and the draw work on pointers.
        mutating func withBuffers<R>(_ body: (Buffers) -> R) -> R {
            ids.withUnsafeMutableBufferPointer { ids in
                weights.withUnsafeMutableBufferPointer { weights in
                    buckets.withUnsafeMutableBufferPointer { buckets in
                        boundary.withUnsafeMutableBufferPointer { boundary in
                            adjusted.withUnsafeBufferPointer { adjusted in
                                mask.withUnsafeBufferPointer { mask in
                                    body(Buffers(ids: ids, weights: weights, buckets: buckets, boundary: boundary,
                                                 adjusted: adjusted, mask: mask))
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// `Scratch`'s buffers as memory (see `Scratch.withBuffers`).
    private struct Buffers {
        let ids: UnsafeMutableBufferPointer<Int32>
        let weights: UnsafeMutableBufferPointer<Float>
        let buckets: UnsafeMutableBufferPointer<UInt16>
        let boundary: UnsafeMutableBufferPointer<Int32>
        let adjusted: UnsafeBufferPointer<Float>
        let mask: UnsafeBufferPointer<UInt64>
    }

    private struct Outcome {
        /// The drawn (or greedy) token.
        var token: Int32
        /// The final candidates, with their probabilities in `scratch.weights`: `scratch.ids[0..<count]`,
        /// or the whole vocabulary when `wholeVocabulary`. None when the token is greedy.
        var count = 0
        var wholeVocabulary = false
    }

    /// Top-k up to this size selects with a heap in one pass; larger, with a histogram.
    private static let heapSelectionLimit = 256
    /// Candidates beyond the `k` needed that a constraint is asked about one by one before it
    /// marks the whole vocabulary: asking costs a little per token, marking a pass over them all.
    private static let extraQuestions = 16

    /// Allows every token: `run` without a constraint.
    private struct Unconstrained: TokenConstraint {
        func allows(_ token: Int32) -> Bool { true }
    }

    /// Runs the chain; `draw` false stops before the draw, leaving the distribution in `scratch`.
    /// Nil only when `constraint` allows no token.
    private mutating func run<C: TokenConstraint>(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>,
                                                  draw: Bool, constraint: C?) -> Outcome? {
        let n = logits.count
        precondition(n > 0, "Sampling needs at least one logit.")
        // Taking the buffers out of `self` keeps them uniquely referenced (no copy on write) and
        // lets the generator advance while they are borrowed.
        var s = scratch
        scratch = Scratch()
        defer { scratch = s }
        s.reserve(n)
        let options = options
        var adjusting = !options.logitBias.isEmpty || (SamplingStages.penalties(options) != nil && !history.isEmpty)
        if adjusting {
            if s.adjusted.count != n { s.adjusted = [Float](repeating: 0, count: n) }
            s.adjusted.withUnsafeMutableBufferPointer { a in
                a.baseAddress!.update(from: logits.baseAddress!, count: n)
                SamplingStages.adjust(a, history: history, options: options, window: &s.window)
            }
        }
        // With a constraint: either the best allowed tokens (`preselected` of them, best first in
        // `ids`), or the whole vocabulary masked in `adjusted`.
        var preselected = 0
        var masked = false
        if let constraint {
            let need = options.temperature == 0 ? 1 : options.topK.flatMap { (1...Self.heapSelectionLimit).contains($0) ? $0 : nil }
            var marked = false
            if let need, need < n {
                if s.batch.count < need + Self.extraQuestions { s.batch = [Int32](repeating: 0, count: need + Self.extraQuestions) }
                // First ask about the best few candidates: usually enough of them are allowed.
                var found = 0
                let amongBest = s.ids.withUnsafeMutableBufferPointer { ids in
                    s.batch.withUnsafeMutableBufferPointer { batch in
                        s.adjusted.withUnsafeBufferPointer { adjusted in
                            Self.askBest(need, values: adjusting ? adjusted.baseAddress! : logits.baseAddress!, count: n,
                                         constraint: constraint, into: ids.baseAddress!, batch: batch)
                        }
                    }
                }
                if amongBest {
                    found = need
                } else {
                    // They were not (the model wants prose where the object needs a quote): one
                    // pass over the vocabulary picks the best allowed tokens from the mask.
                    Self.mark(constraint, n, into: &s.mask)
                    marked = true
                    found = s.ids.withUnsafeMutableBufferPointer { ids in
                        s.mask.withUnsafeBufferPointer { mask in
                            s.adjusted.withUnsafeBufferPointer { adjusted in
                                TopSelection.selectFromVocabulary(
                                    need, values: adjusting ? adjusted.baseAddress! : logits.baseAddress!, count: n,
                                    allowed: mask, into: ids.baseAddress!)
                            }
                        }
                    }
                }
                if found > 0 {
                    if options.temperature == 0 { return Outcome(token: s.ids[0]) }
                    // What top-k keeps of the masked logits. With `need` or fewer tokens allowed
                    // the chain would skip top-k and sum over the whole vocabulary instead: the
                    // same tokens, with probabilities that may differ in the last bit.
                    preselected = found
                }
            }
            if preselected == 0 {
                if !marked { Self.mark(constraint, n, into: &s.mask) }
                guard s.mask.contains(where: { $0 != 0 }) else { return nil }
                if !adjusting {
                    if s.adjusted.count != n { s.adjusted = [Float](repeating: 0, count: n) }
                    s.adjusted.withUnsafeMutableBufferPointer { $0.baseAddress!.update(from: logits.baseAddress!, count: n) }
                    adjusting = true
                }
                s.adjusted.withUnsafeMutableBufferPointer { a in
                    s.mask.withUnsafeBufferPointer { Self.refuse(a, allowed: $0) }
                }
                masked = true
            }
        }
        return s.withBuffers { b -> Outcome? in
            let values = adjusting ? b.adjusted.baseAddress! : logits.baseAddress!
            // When no candidate has a finite value: the raw argmax, among the allowed tokens when
            // a mask is in force.
            func fallback() -> Int32 {
                masked ? Self.rawArgmax(logits, allowed: b.mask) : Self.rawArgmax(logits)
            }
            guard options.temperature > 0 else {
                return Outcome(token: SamplingStages.argmax(values, n) ?? fallback())
            }
            let finite: (min: Float, max: Float, count: Int)
            if preselected > 0 {
                let ids = b.ids.baseAddress!
                var low = values[Int(ids[0])]
                for i in 1..<preselected { low = min(low, values[Int(ids[i])]) }
                finite = (low, values[Int(ids[0])], preselected)
                // The chain keeps its candidates in increasing id.
                var kept = UnsafeMutableBufferPointer(start: ids, count: preselected)
                kept.sort()
            } else if let range = SamplingStages.finiteRange(values, n) {
                finite = range
            } else {
                return Outcome(token: fallback())
            }
            let target = draw ? Double(generator.next() >> 11) * 0x1p-53 : nil
            return Self.filterAndDraw(
                values, n, finite: finite, preselected: preselected, options: options,
                ids: b.ids.baseAddress!, weights: b.weights.baseAddress!,
                buckets: b.buckets.baseAddress!, boundary: b.boundary.baseAddress!,
                target: target)
        }
    }

    /// Writes to `ids[0..<need]` the `need` best tokens that `constraint` allows, best first, if
    /// they are among the best `need + extraQuestions` candidates (the argmax alone for greedy, which
    /// a vectorised pass finds); false when they are not, or the finite values run out.
    private static func askBest<C: TokenConstraint>(_ need: Int, values: UnsafePointer<Float>, count n: Int,
                                                    constraint: C, into ids: UnsafeMutablePointer<Int32>,
                                                    batch: UnsafeMutableBufferPointer<Int32>) -> Bool {
        var after: (value: Float, id: Int32)? = nil
        if need == 1 {
            guard let best = SamplingStages.argmax(values, n) else { return false }
            if constraint.allows(best) {
                ids[0] = best
                return true
            }
            after = (values[Int(best)], best)
        }
        let got = TopSelection.selectFromVocabulary(need + extraQuestions - (after == nil ? 0 : 1), values: values,
                                                    count: n, after: after, into: batch.baseAddress!)
        var found = 0
        for i in 0..<got where constraint.allows(batch[i]) {
            ids[found] = batch[i]
            found += 1
            if found == need { return true }
        }
        return false
    }

    /// Has `constraint` mark the tokens it allows in `mask`, which it sizes to the vocabulary.
    private static func mark<C: TokenConstraint>(_ constraint: C, _ n: Int, into mask: inout [UInt64]) {
        let words = (n + 63) / 64
        if mask.count != words { mask = [UInt64](repeating: 0, count: words) }
        mask.withUnsafeMutableBufferPointer { mask in
            mask.update(repeating: 0)
            constraint.markAllowed(in: mask, vocabularySize: n)
            // Bits past the vocabulary are not tokens.
            if n % 64 != 0 { mask[words - 1] &= (1 << UInt64(n % 64)) - 1 }
        }
    }

    /// Sets the values of the tokens `allowed` does not mark to -infinity.
    private static func refuse(_ values: UnsafeMutableBufferPointer<Float>, allowed: UnsafeBufferPointer<UInt64>) {
        for w in 0..<allowed.count {
            let bits = allowed[w]
            if bits == .max { continue }
            let start = w * 64, end = min(start + 64, values.count)
            for t in start..<end where bits & (1 << UInt64(t - start)) == 0 { values[t] = -.infinity }
        }
    }

    /// Stages 3–7, drawing at `target` in [0, 1) when given. Every filter keeps the best token,
    /// so `finite.max` stays the survivors' maximum.
    /// With `preselected` > 0, `ids[0..<preselected]` (in increasing id) are what top-k kept.
    private static func filterAndDraw(_ values: UnsafePointer<Float>, _ n: Int, finite: (min: Float, max: Float, count: Int),
                                      preselected: Int, options: SamplingOptions, ids: UnsafeMutablePointer<Int32>,
                                      weights: UnsafeMutablePointer<Float>, buckets: UnsafeMutablePointer<UInt16>,
                                      boundary: UnsafeMutablePointer<Int32>, target: Double?) -> Outcome {
        // The candidates: the whole vocabulary until a filter writes `ids`.
        var list: UnsafeMutablePointer<Int32>? = preselected > 0 ? ids : nil
        var count = preselected > 0 ? preselected : n
        var survivors = finite.count

        if preselected == 0, let k = options.topK, k > 0, k < survivors {
            if k <= heapSelectionLimit {
                count = TopSelection.selectFromVocabulary(k, values: values, count: n, into: ids)
                var selected = UnsafeMutableBufferPointer(start: ids, count: count)
                selected.sort()
                list = ids
            } else if let worst = SamplingStages.cutoff(.count(k), ids: nil, count: n, values: values,
                                                        range: (finite.min, finite.max), buckets: buckets,
                                                        boundary: boundary) {
                count = SamplingStages.keep(atLeast: values[Int(worst)], id: worst, from: nil, count: n,
                                            values: values, into: ids)
                list = ids
            }
            if list != nil { survivors = count }
        }
        if let p = options.topP, p > 0, p < 1, survivors > 1 {
            SamplingStages.softmax(values, ids: list, count: count, maxValue: finite.max, temperature: 1, into: weights)
            let byToken = list == nil
            if byToken {
                // Tokens with e^(v - max) < (1 - p) / N hold less than 1 - p together, so the
                // better tokens reach p first: only the others need a place in the histogram.
                let floor = finite.max + log((1 - p) / Float(survivors))
                count = SamplingStages.keep(atLeast: floor, id: .max, from: nil, count: n, values: values, into: ids)
                list = ids
            }
            var low = finite.max
            for i in 0..<count { low = min(low, values[Int(ids[i])]) }
            if let worst = SamplingStages.cutoff(.mass(p, probabilities: weights, byToken: byToken), ids: ids,
                                                 count: count, values: values, range: (low, finite.max),
                                                 buckets: buckets, boundary: boundary) {
                count = SamplingStages.keep(atLeast: values[Int(worst)], id: worst, from: ids, count: count,
                                            values: values, into: ids)
            }
            survivors = count
        }
        if let minP = options.minP, minP > 0, survivors > 1 {
            // p ≥ minP · p_max  ⇔  logit ≥ max + log(minP): compared on logits, as llama.cpp does.
            let threshold = finite.max + log(min(minP, 1))
            count = SamplingStages.keep(atLeast: threshold, id: .max, from: list, count: count, values: values, into: ids)
            list = ids
        }
        SamplingStages.softmax(values, ids: list, count: count, maxValue: finite.max,
                               temperature: options.temperature, into: weights)
        var outcome = Outcome(token: -1, count: count, wholeVocabulary: list == nil)
        guard let target else { return outcome }
        let chosen = SamplingStages.draw(weights, count: count, target: target)
        outcome.token = list.map { $0[chosen] } ?? Int32(chosen)
        return outcome
    }

    private static func rawArgmax(_ raw: UnsafeBufferPointer<Float>) -> Int32 {
        Int32(TensorMath.argmax(raw.baseAddress!, count: raw.count))
    }

    /// The allowed token with the highest raw logit (NaN counting as lowest, the lower id on
    /// ties); the caller has checked that one is allowed.
    private static func rawArgmax(_ raw: UnsafeBufferPointer<Float>, allowed: UnsafeBufferPointer<UInt64>) -> Int32 {
        var best = -1
        var bestValue = -Float.infinity
        for t in 0..<raw.count where allowed[t >> 6] & (1 << UInt64(t & 63)) != 0 {
            let v = raw[t].isNaN ? -Float.infinity : raw[t]
            if best < 0 || v > bestValue {
                best = t
                bestValue = v
            }
        }
        return Int32(best)
    }

    private mutating func logprobs(of token: Int32, _ logits: UnsafeBufferPointer<Float>, top: Int) -> SampledToken {
        let n = logits.count
        var s = scratch
        scratch = Scratch()
        defer { scratch = s }
        s.reserve(n)
        return s.ids.withUnsafeMutableBufferPointer { idBuffer in
            s.weights.withUnsafeMutableBufferPointer { weightBuffer in
                let raw = logits.baseAddress!
                let ids = idBuffer.baseAddress!, weights = weightBuffer.baseAddress!
                guard let finite = SamplingStages.finiteRange(raw, n) else {
                    return SampledToken(token: token, logprob: .nan, top: [])
                }
                SamplingStages.softmax(raw, ids: nil, count: n, maxValue: finite.max, temperature: 1, into: weights)
                // The best token's probability is 1 / Σ e^(v - max), so log Σ comes from it, and
                // a token whose probability underflows still gets a finite logprob.
                var best = 0
                while raw[best] != finite.max { best += 1 }
                let logSum = -log(Double(weights[best]))
                func logprob(_ t: Int32) -> Float {
                    let v = raw[Int(t)]
                    return v.isFinite ? Float(Double(v - finite.max) - logSum) : (v.isNaN ? .nan : -.infinity)
                }
                let found = top > 0 ? TopSelection.selectFromVocabulary(min(top, n), values: raw, count: n, into: ids) : 0
                let alternatives = (0..<found).map { TokenLogprob(token: ids[$0], logprob: logprob(ids[$0])) }
                return SampledToken(token: token, logprob: logprob(token), top: alternatives)
            }
        }
    }
}

/// A token and its probability.
public struct TokenProbability: Sendable, Equatable, Codable {
    /// The token id.
    public var token: Int32
    /// Its probability, in [0, 1].
    public var probability: Float

    /// A token with its probability.
    public init(token: Int32, probability: Float) {
        self.token = token
        self.probability = probability
    }
}

/// A token and its natural-log probability.
public struct TokenLogprob: Sendable, Equatable, Codable {
    /// The token id.
    public var token: Int32
    /// The natural logarithm of its probability (≤ 0).
    public var logprob: Float

    /// A token with its log-probability.
    public init(token: Int32, logprob: Float) {
        self.token = token
        self.logprob = logprob
    }
}

/// A sampled token with the log-probabilities reported beside it (see `Sampler.sampleWithLogprobs`).
public struct SampledToken: Sendable, Equatable {
    /// The token the chain chose.
    public var token: Int32
    /// Its log-probability under the raw logits.
    public var logprob: Float
    /// The most likely tokens under the raw logits, most likely first.
    public var top: [TokenLogprob]

    /// A sampled token with its log-probabilities.
    public init(token: Int32, logprob: Float, top: [TokenLogprob]) {
        self.token = token
        self.logprob = logprob
        self.top = top
    }
}

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64).
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
