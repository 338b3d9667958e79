import HearthKernels
import Foundation

/// The stages of `Sampler`'s chain over raw buffers, with no allocation: vocabulary-sized
/// scratch is passed in. Candidates are always kept in increasing token id, so that the draw
/// depends only on which tokens survive, never on how a stage reordered them.
///
/// "Better" is a total order on tokens: higher value first, lower id on ties. Top-k, top-p and
/// min-p each keep a prefix of that order, so a stage's result is described by its worst
/// survivor (the cutoff) and found without sorting the vocabulary: a histogram of the values
/// finds the bucket the cut falls in, and only that bucket is sorted.
enum SamplingStages {
    /// The repetition, frequency and presence penalties in effect, or nil when they change nothing.
    static func penalties(_ o: SamplingOptions) -> (repetition: Float, frequency: Float, presence: Float)? {
        guard o.penaltyWindow > 0 else { return nil }
        let r = o.repetitionPenalty.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? 1
        let f = o.frequencyPenalty.flatMap { $0.isFinite ? $0 : nil } ?? 0
        let p = o.presencePenalty.flatMap { $0.isFinite ? $0 : nil } ?? 0
        return r == 1 && f == 0 && p == 0 ? nil : (r, f, p)
    }

    /// Stages 1 and 2, in place. Out-of-range options and token ids are skipped, not trapped on.
    static func adjust(_ a: UnsafeMutableBufferPointer<Float>, history: some Collection<Int32>,
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

    /// The first index of the highest finite value, or nil when none is finite.
    static func argmax(_ values: UnsafePointer<Float>, _ n: Int) -> Int32? {
        guard let high = finiteRange(values, n)?.max else { return nil }
        var i = 0
        while values[i] != high { i += 1 }
        return Int32(i)
    }

    /// The range and number of the finite values, or nil when none is finite. Eight lanes at a
    /// time: this pass over the vocabulary is the whole cost of greedy sampling.
    static func finiteRange(_ values: UnsafePointer<Float>, _ n: Int) -> (min: Float, max: Float, count: Int)? {
        let limit = SIMD8<Float>(repeating: .greatestFiniteMagnitude)
        var low = SIMD8<Float>(repeating: .infinity), high = SIMD8<Float>(repeating: -.infinity)
        var counts = SIMD8<Int32>(repeating: 0)
        var i = 0
        while i + 8 <= n {
            let x = UnsafeRawPointer(values + i).loadUnaligned(as: SIMD8<Float>.self)
            // False for NaN and the infinities.
            let finite = (x .<= limit) .& (x .>= -limit)
            low.replace(with: x, where: finite .& (x .< low))
            high.replace(with: x, where: finite .& (x .> high))
            counts &+= SIMD8<Int32>(repeating: 0).replacing(with: 1, where: finite)
            i += 8
        }
        var lowest = low.min(), highest = high.max(), count = Int(counts.wrappedSum())
        for j in i..<n where values[j].isFinite {
            lowest = min(lowest, values[j])
            highest = max(highest, values[j])
            count += 1
        }
        return count > 0 ? (lowest, highest, count) : nil
    }

    // A candidate list is either `ids[0..<count]` (finite tokens, in increasing id) or, with
    // `ids` nil, the whole vocabulary (`count` = its size), whose non-finite tokens are not
    // candidates. Starting from the whole vocabulary saves writing 262,144 ids when a stage
    // is about to keep only a few.

    @inline(__always)
    private static func token(_ ids: UnsafePointer<Int32>?, _ i: Int) -> Int32 {
        ids.map { $0[i] } ?? Int32(i)
    }

    /// `out[i] = softmax((v - maxValue) / temperature)` over the candidates' values `v`
    /// (0 for a non-candidate), dividing by multiplying with 1/temperature, through the engine's
    /// vectorised softmax, whose bits are the same on every instruction set, so the draw is the
    /// same on every machine. Subtracting the maximum first keeps a tiny temperature from
    /// overflowing.
    static func softmax(_ values: UnsafePointer<Float>, ids: UnsafePointer<Int32>?, count: Int, maxValue: Float,
                        temperature: Float, into out: UnsafeMutablePointer<Float>) {
        // Below the smallest normal temperature 1/T is infinite: (v - max) · ∞ is then -∞ as it
        // should be, except at v = max, which the selects keep at 0 rather than NaN.
        let scale = 1 / temperature
        if let ids {
            for i in 0..<count {
                let d = values[Int(ids[i])] - maxValue
                out[i] = d == 0 ? 0 : d * scale
            }
        } else {
            let limit = SIMD8<Float>(repeating: .greatestFiniteMagnitude)
            let top = SIMD8<Float>(repeating: maxValue), factor = SIMD8<Float>(repeating: scale)
            let excluded = SIMD8<Float>(repeating: -.infinity), zero = SIMD8<Float>(repeating: 0)
            var i = 0
            while i + 8 <= count {
                let v = UnsafeRawPointer(values + i).loadUnaligned(as: SIMD8<Float>.self)
                let finite = (v .<= limit) .& (v .>= -limit)
                let d = v - top
                var x = (d * factor).replacing(with: zero, where: d .== zero)
                x.replace(with: excluded, where: .!finite)
                UnsafeMutableRawPointer(out + i).storeBytes(of: x, as: SIMD8<Float>.self)
                i += 8
            }
            for j in i..<count {
                let d = values[j] - maxValue
                out[j] = values[j].isFinite ? (d == 0 ? 0 : d * scale) : -.infinity
            }
        }
        Activations.softmax(out, count: count)
    }

    /// What a cut keeps: a number of tokens, or enough tokens for a probability mass.
    enum Cut {
        case count(Int)
        /// Mass `p` of `probabilities`, indexed by token id when `byToken`, else parallel to the
        /// candidate list.
        case mass(Float, probabilities: UnsafePointer<Float>, byToken: Bool)
    }

    /// The worst token that `cut` keeps from the candidates (the token that reaches the mass
    /// included), or nil when it keeps them all. `range` bounds the candidates' values;
    /// `buckets` and `boundary` are scratch for `count` entries.
    static func cutoff(_ cut: Cut, ids: UnsafePointer<Int32>?, count: Int, values: UnsafePointer<Float>,
                       range: (min: Float, max: Float), buckets bucketOf: UnsafeMutablePointer<UInt16>,
                       boundary: UnsafeMutablePointer<Int32>) -> Int32? {
        let target: Double
        switch cut {
        case .count(let k): target = Double(k)
        case .mass(let p, _, _): target = Double(p)
        }
        @inline(__always) func weight(_ i: Int) -> Double {
            switch cut {
            case .count: return 1
            case .mass(_, let probabilities, let byToken): return Double(probabilities[byToken ? Int(token(ids, i)) : i])
            }
        }
        let buckets = 4096
        let outside = UInt16.max
        var scale = Float(buckets) / (range.max - range.min)
        if !scale.isFinite { scale = 0 }

        let (stop, before) = withUnsafeTemporaryAllocation(of: Double.self, capacity: buckets) { tally in
            tally.initialize(repeating: 0)
            for i in 0..<count {
                let v = values[Int(token(ids, i))]
                guard v.isFinite else {
                    bucketOf[i] = outside
                    continue
                }
                // Bucket 0 holds the best values; anything past the end joins the last.
                let d = (range.max - v) * scale
                let b = d < Float(buckets - 1) ? Int(d) : buckets - 1
                bucketOf[i] = UInt16(b)
                tally[b] += weight(i)
            }
            var before = 0.0
            var b = 0
            while b < buckets && before + tally[b] < target {
                before += tally[b]
                b += 1
            }
            return (b, before)
        }
        // Fewer tokens than k, or rounding left the mass short of p: everything is kept.
        guard stop < buckets else { return nil }

        var m = 0
        for i in 0..<count where bucketOf[i] == UInt16(stop) {
            boundary[m] = Int32(i)
            m += 1
        }
        guard m > 0 else { return nil }
        var positions = UnsafeMutableBufferPointer(start: boundary, count: m)
        positions.sort { a, b in
            let x = token(ids, Int(a)), y = token(ids, Int(b))
            let vx = values[Int(x)], vy = values[Int(y)]
            return vx > vy || (vx == vy && x < y)
        }
        var reached = before
        for j in 0..<m {
            reached += weight(Int(positions[j]))
            if reached >= target { return token(ids, Int(positions[j])) }
        }
        return token(ids, Int(positions[m - 1]))
    }

    /// Writes to `out` (which may be `ids`), in order, the candidates whose value beats
    /// `value`, or equals it with an id ≤ `id`; returns how many.
    static func keep(atLeast value: Float, id: Int32, from ids: UnsafePointer<Int32>?, count: Int,
                     values: UnsafePointer<Float>, into out: UnsafeMutablePointer<Int32>) -> Int {
        var kept = 0
        for i in 0..<count {
            let t = token(ids, i)
            let v = values[Int(t)]
            // Branch-free: the store is harmless when the token is not kept.
            out[kept] = t
            kept += (v > value || (v == value && t <= id)) && v < .infinity ? 1 : 0
        }
        return kept
    }

    /// The position in `probabilities[0..<count]` where their running sum first exceeds
    /// `target`, skipping zeros. Sums of 64 first, so that the chain of dependent additions is
    /// short; if rounding leaves the sum short of `target`, the last nonzero position.
    static func draw(_ probabilities: UnsafePointer<Float>, count: Int, target: Double) -> Int {
        var cumulative: Double = 0
        var start = 0
        while start < count {
            let end = min(start + 64, count)
            var lanes = SIMD4<Double>()
            var i = start
            while i + 4 <= end {
                lanes += SIMD4(Double(probabilities[i]), Double(probabilities[i + 1]),
                               Double(probabilities[i + 2]), Double(probabilities[i + 3]))
                i += 4
            }
            var block = lanes.sum()
            while i < end { block += Double(probabilities[i]); i += 1 }
            if cumulative + block > target {
                var running = cumulative
                for j in start..<end where probabilities[j] > 0 {
                    running += Double(probabilities[j])
                    if running > target { return j }
                }
            }
            cumulative += block
            start = end
        }
        var last = count - 1
        while last > 0 && !(probabilities[last] > 0) { last -= 1 }
        return last
    }
}
