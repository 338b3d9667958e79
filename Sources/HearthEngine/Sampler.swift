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
/// token id, so the result depends only on which tokens survive and their weights, and the
/// sampler runs on the calling thread, apart from the engine's worker pool.
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
    /// id with their probabilities, which sum to 1. At temperature 0, the greedy token with
    /// probability 1. The generator does not advance.
    public func distribution(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>) -> [TokenProbability] {
        var copy = self
        let result = copy.run(logits, history: history, draw: false)
        guard let total = result.total else { return [TokenProbability(token: result.token, probability: 1)] }
        return (0..<result.count).map { i in
            TokenProbability(token: copy.scratch.ids[i], probability: Float(Double(copy.scratch.weights[i]) / total))
        }
    }

    /// The logits after stages 1–2 (penalties and bias), the values greedy sampling takes the
    /// argmax of and the later stages filter.
    public func adjustedLogits(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>) -> [Float] {
        var out = Array(logits)
        var window: [Int32] = []
        out.withUnsafeMutableBufferPointer { Self.adjust($0, history: history, options: options, window: &window) }
        return out
    }

    // MARK: - The chain

    /// Reusable buffers, so that a token costs no allocation once the sizes are reached.
    private struct Scratch: Sendable {
        /// Logits after penalties and bias (vocabulary-sized).
        var adjusted: [Float] = []
        /// Candidate token ids.
        var ids: [Int32] = []
        /// Unnormalised probabilities of the final candidates, parallel to `ids`.
        var weights: [Float] = []
        /// The penalty window, sorted to count repeats.
        var window: [Int32] = []
    }

    private struct Outcome {
        /// The drawn (or greedy) token.
        var token: Int32
        /// The number of final candidates in `scratch.ids` / `scratch.weights`.
        var count: Int
        /// Sum of the weights; nil when the result is greedy (no distribution was formed).
        var total: Double?
    }

    private mutating func run(_ logits: UnsafeBufferPointer<Float>, history: some Collection<Int32>, draw: Bool) -> Outcome {
        let n = logits.count
        precondition(n > 0, "Sampling needs at least one logit.")
        // Taking the buffers out of `self` keeps them uniquely referenced (no copy on write) and
        // lets the generator be used while they are borrowed.
        var s = scratch
        scratch = Scratch()
        defer { scratch = s }
        if s.ids.count < n { s.ids = [Int32](repeating: 0, count: n) }
        if s.weights.count < n { s.weights = [Float](repeating: 0, count: n) }

        let options = options
        let adjusting = !options.logitBias.isEmpty || (Self.penalties(options) != nil && !history.isEmpty)
        if adjusting {
            if s.adjusted.count != n { s.adjusted = [Float](repeating: 0, count: n) }
            s.adjusted.withUnsafeMutableBufferPointer { a in
                a.baseAddress!.update(from: logits.baseAddress!, count: n)
                Self.adjust(a, history: history, options: options, window: &s.window)
            }
        }
        return s.ids.withUnsafeMutableBufferPointer { idBuffer in
            s.weights.withUnsafeMutableBufferPointer { weightBuffer in
                s.adjusted.withUnsafeBufferPointer { adjustedBuffer in
                    let values = adjusting ? adjustedBuffer.baseAddress! : logits.baseAddress!
                    guard options.temperature > 0 else {
                        return Outcome(token: Self.greedy(values, n, raw: logits), count: 0, total: nil)
                    }
                    let count = Self.filter(values, n, ids: idBuffer.baseAddress!, options: options)
                    guard count > 0 else {
                        return Outcome(token: Self.rawArgmax(logits), count: 0, total: nil)
                    }
                    let ids = idBuffer.baseAddress!, weights = weightBuffer.baseAddress!
                    var maxValue = -Float.infinity
                    for i in 0..<count { maxValue = max(maxValue, values[Int(ids[i])]) }
                    var total: Double = 0
                    for i in 0..<count {
                        let w = exp((values[Int(ids[i])] - maxValue) / options.temperature)
                        weights[i] = w
                        total += Double(w)
                    }
                    guard draw else { return Outcome(token: ids[0], count: count, total: total) }
                    let target = Double(generator.next() >> 11) * 0x1p-53 * total
                    var cumulative: Double = 0
                    var chosen = ids[0]
                    for i in 0..<count where weights[i] > 0 {
                        chosen = ids[i]
                        cumulative += Double(weights[i])
                        if cumulative > target { break }
                    }
                    return Outcome(token: chosen, count: count, total: total)
                }
            }
        }
    }

    /// The repetition, frequency and presence penalties in effect, or nil when they change nothing.
    private static func penalties(_ o: SamplingOptions) -> (repetition: Float, frequency: Float, presence: Float)? {
        guard o.penaltyWindow > 0 else { return nil }
        let r = o.repetitionPenalty.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? 1
        let f = o.frequencyPenalty.flatMap { $0.isFinite ? $0 : nil } ?? 0
        let p = o.presencePenalty.flatMap { $0.isFinite ? $0 : nil } ?? 0
        return r == 1 && f == 0 && p == 0 ? nil : (r, f, p)
    }

    /// Stages 1 and 2, in place. Out-of-range options and token ids are skipped, not trapped on.
    private static func adjust(_ a: UnsafeMutableBufferPointer<Float>, history: some Collection<Int32>,
                               options: SamplingOptions, window: inout [Int32]) {
        let n = a.count
        if let (r, f, p) = penalties(options) {
            window.removeAll(keepingCapacity: true)
            window.append(contentsOf: history.suffix(options.penaltyWindow))
            window.sort()
            var i = 0
            while i < window.count {
                let token = window[i]
                var j = i + 1
                while j < window.count && window[j] == token { j += 1 }
                let count = Float(j - i)
                i = j
                guard token >= 0 && Int(token) < n else { continue }
                var v = a[Int(token)]
                v = v > 0 ? v / r : v * r
                v -= count * f + p
                a[Int(token)] = v
            }
        }
        for (token, bias) in options.logitBias where token >= 0 && Int(token) < n {
            guard !bias.isNaN, bias != .infinity else { continue }
            a[Int(token)] += bias
        }
    }

    /// The first index of the highest finite value; the raw argmax when none is finite.
    private static func greedy(_ values: UnsafePointer<Float>, _ n: Int, raw: UnsafeBufferPointer<Float>) -> Int32 {
        var best = -1
        var bestValue = -Float.infinity
        for i in 0..<n {
            let v = values[i]
            if v > bestValue && v < .infinity {
                best = i
                bestValue = v
            }
        }
        return best >= 0 ? Int32(best) : rawArgmax(raw)
    }

    private static func rawArgmax(_ raw: UnsafeBufferPointer<Float>) -> Int32 {
        Int32(TensorMath.argmax(raw.baseAddress!, count: raw.count))
    }

    /// Stages 3–5: leaves the survivors in `ids[0..<result]` in increasing id.
    private static func filter(_ values: UnsafePointer<Float>, _ n: Int, ids: UnsafeMutablePointer<Int32>,
                               options: SamplingOptions) -> Int {
        var count: Int
        // Whether ids[0..<count] is in increasing id; otherwise it is best first.
        var inIdOrder: Bool
        if let k = options.topK, k > 0, k < n {
            count = TopSelection.selectFromVocabulary(k, values: values, count: n, into: ids)
            inIdOrder = false
        } else {
            count = 0
            for i in 0..<n where values[i].isFinite {
                ids[count] = Int32(i)
                count += 1
            }
            inIdOrder = true
        }
        guard count > 1 else { return count }

        var maxValue = -Float.infinity
        if inIdOrder {
            for i in 0..<count { maxValue = max(maxValue, values[Int(ids[i])]) }
        } else {
            maxValue = values[Int(ids[0])]
        }

        if let p = options.topP, p > 0, p < 1 {
            count = topP(p, values, ids: ids, count: count, maxValue: maxValue, bestFirst: !inIdOrder)
            inIdOrder = false
        }
        if let minP = options.minP, minP > 0 {
            // p_i ≥ minP · p_max  ⇔  logit_i ≥ max + log(minP); done on logits, no softmax needed.
            let threshold = maxValue + log(min(minP, 1))
            var kept = 0
            for i in 0..<count where values[Int(ids[i])] >= threshold {
                ids[kept] = ids[i]
                kept += 1
            }
            count = kept
        }
        if !inIdOrder { restoreIdOrder(values, n, ids: ids, count: count) }
        return count
    }

    /// Stage 4 on `ids[0..<count]`; returns how many survive, left best first. Selects the top
    /// 64, then 512, … until their mass reaches `p`, so a peaked distribution costs no full sort.
    private static func topP(_ p: Float, _ values: UnsafePointer<Float>, ids: UnsafeMutablePointer<Int32>,
                             count: Int, maxValue: Float, bestFirst: Bool) -> Int {
        var total: Double = 0
        for i in 0..<count { total += Double(exp(values[Int(ids[i])] - maxValue)) }
        let target = Double(p) * total
        var m = bestFirst ? count : min(count, 64)
        while true {
            if !bestFirst { TopSelection.selectInPlace(m, ids: ids, count: count, values: values) }
            var cumulative: Double = 0
            for i in 0..<m {
                cumulative += Double(exp(values[Int(ids[i])] - maxValue))
                if cumulative >= target { return i + 1 }
            }
            if m == count { return count }
            m = min(count, m * 8)
        }
    }

    /// Puts best-first survivors back in increasing id: sorting when few, otherwise a scan of
    /// the vocabulary for the tokens at least as good as the worst survivor (the survivors are
    /// always exactly those, as every filter cuts the best-first order).
    private static func restoreIdOrder(_ values: UnsafePointer<Float>, _ n: Int, ids: UnsafeMutablePointer<Int32>,
                                       count: Int) {
        if count <= 4096 {
            var buffer = UnsafeMutableBufferPointer(start: ids, count: count)
            buffer.sort()
            return
        }
        let worst = ids[count - 1]
        let worstValue = values[Int(worst)]
        var kept = 0
        for i in 0..<n {
            let v = values[i]
            if v.isFinite && (v > worstValue || (v == worstValue && Int32(i) <= worst)) {
                ids[kept] = Int32(i)
                kept += 1
            }
        }
        assert(kept == count)
    }

    // MARK: - Logprobs

    private mutating func logprobs(of token: Int32, _ logits: UnsafeBufferPointer<Float>, top: Int) -> SampledToken {
        let n = logits.count
        var maxValue = -Float.infinity
        for v in logits where v.isFinite { maxValue = max(maxValue, v) }
        var sum: Double = 0
        for v in logits where v.isFinite { sum += Double(exp(v - maxValue)) }
        let logSum = Double(maxValue) + log(sum)
        func logprob(_ t: Int32) -> Float {
            let v = logits[Int(t)]
            return v.isFinite ? Float(Double(v) - logSum) : (v.isNaN ? .nan : -.infinity)
        }
        var alternatives: [TokenLogprob] = []
        if top > 0 {
            var s = scratch
            scratch = Scratch()
            defer { scratch = s }
            if s.ids.count < n { s.ids = [Int32](repeating: 0, count: n) }
            let found = s.ids.withUnsafeMutableBufferPointer {
                TopSelection.selectFromVocabulary(min(top, n), values: logits.baseAddress!, count: n, into: $0.baseAddress!)
            }
            alternatives = (0..<found).map { TokenLogprob(token: s.ids[$0], logprob: logprob(s.ids[$0])) }
        }
        return SampledToken(token: token, logprob: logprob(token), top: alternatives)
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
