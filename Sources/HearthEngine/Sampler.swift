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
        run(logits, history: history, draw: true).token
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

    /// The distribution the draw picks from after stages 1–6: the surviving tokens in increasing
    /// id with their probabilities, which sum to 1 (tokens whose probability underflows to 0 are
    /// left out, as the draw cannot pick them). At temperature 0, the greedy token with
    /// probability 1. The generator does not advance.
    public func distribution(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>) -> [TokenProbability] {
        var copy = self
        let result = copy.run(logits, history: history, draw: false)
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

        mutating func reserve(_ n: Int) {
            if ids.count < n { ids = [Int32](repeating: 0, count: n) }
            if weights.count < n { weights = [Float](repeating: 0, count: n) }
            if buckets.count < n { buckets = [UInt16](repeating: 0, count: n) }
            if boundary.count < n { boundary = [Int32](repeating: 0, count: n) }
        }
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

    /// Runs the chain; `draw` false stops before the draw, leaving the distribution in `scratch`.
    private mutating func run(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>, draw: Bool) -> Outcome {
        let n = logits.count
        precondition(n > 0, "Sampling needs at least one logit.")
        // Taking the buffers out of `self` keeps them uniquely referenced (no copy on write) and
        // lets the generator advance while they are borrowed.
        var s = scratch
        scratch = Scratch()
        defer { scratch = s }
        s.reserve(n)
        let options = options
        let adjusting = !options.logitBias.isEmpty || (SamplingStages.penalties(options) != nil && !history.isEmpty)
        if adjusting {
            if s.adjusted.count != n { s.adjusted = [Float](repeating: 0, count: n) }
            s.adjusted.withUnsafeMutableBufferPointer { a in
                a.baseAddress!.update(from: logits.baseAddress!, count: n)
                SamplingStages.adjust(a, history: history, options: options, window: &s.window)
            }
        }
        return s.ids.withUnsafeMutableBufferPointer { idBuffer in
            s.weights.withUnsafeMutableBufferPointer { weightBuffer in
                s.buckets.withUnsafeMutableBufferPointer { bucketBuffer in
                    s.boundary.withUnsafeMutableBufferPointer { boundaryBuffer in
                        s.adjusted.withUnsafeBufferPointer { adjustedBuffer in
                            let values = adjusting ? adjustedBuffer.baseAddress! : logits.baseAddress!
                            guard options.temperature > 0 else {
                                return Outcome(token: SamplingStages.argmax(values, n) ?? Self.rawArgmax(logits))
                            }
                            guard let finite = SamplingStages.finiteRange(values, n) else {
                                return Outcome(token: Self.rawArgmax(logits))
                            }
                            let target = draw ? Double(generator.next() >> 11) * 0x1p-53 : nil
                            return Self.filterAndDraw(
                                values, n, finite: finite, options: options, ids: idBuffer.baseAddress!,
                                weights: weightBuffer.baseAddress!, buckets: bucketBuffer.baseAddress!,
                                boundary: boundaryBuffer.baseAddress!, target: target)
                        }
                    }
                }
            }
        }
    }

    /// Stages 3–7, drawing at `target` in [0, 1) when given. Every filter keeps the best token,
    /// so `finite.max` stays the survivors' maximum.
    private static func filterAndDraw(_ values: UnsafePointer<Float>, _ n: Int, finite: (min: Float, max: Float, count: Int),
                                      options: SamplingOptions, ids: UnsafeMutablePointer<Int32>,
                                      weights: UnsafeMutablePointer<Float>, buckets: UnsafeMutablePointer<UInt16>,
                                      boundary: UnsafeMutablePointer<Int32>, target: Double?) -> Outcome {
        // The candidates: the whole vocabulary until a filter writes `ids`.
        var list: UnsafeMutablePointer<Int32>? = nil
        var count = n
        var survivors = finite.count

        if let k = options.topK, k > 0, k < survivors {
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
