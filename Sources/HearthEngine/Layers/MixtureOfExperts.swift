import Foundation
import HearthCore
import HearthFormats
import HearthKernels

/// A mixture-of-experts feed-forward network (Qwen3-MoE, Mixtral): a router scores the experts
/// for each row, the row goes through the `used` best ones (each a gated feed-forward network
/// of its own), and their outputs are added, each weighted by its routing probability.
///
/// As llama.cpp's `build_moe_ffn`: softmax over the router's scores (or each score's sigmoid), the
/// top `used` by probability (plus a selection bias where the file has one), their probabilities renormalized to sum to 1 (the sum clamped
/// below at 2^-14) and multiplied by `scale` when it is neither 0 nor 1; each expert's output
/// multiplied by its weight, and the weighted outputs added in the order the experts were
/// chosen. An expert's product sums its rows as llama.cpp's `mul_mat_id` does: one row at a time,
/// except for K-quant matrices it does not repack, which take its tiled kernel when 8 or more
/// rows chose the expert; rows are counted within each sequence, so a sequence's result does not
/// depend on the others in the pass.
struct MixtureOfExperts: FeedForwardLayer {
    let router: WeightMatrix            // (experts, dim) blk.N.ffn_gate_inp
    let gate: [WeightMatrix]            // experts × (ffn, dim) blk.N.ffn_gate_exps
    let up: [WeightMatrix]              // experts × (ffn, dim) blk.N.ffn_up_exps
    let down: [WeightMatrix]            // experts × (dim, ffn) blk.N.ffn_down_exps
    /// Added to the probabilities to choose the experts (not to weigh them): (experts)
    /// blk.N.exp_probs_b, or nil.
    let selectionBias: FloatBuffer?
    /// Added to the router's scores (gpt-oss): (experts) blk.N.ffn_gate_inp.bias, or nil.
    let routerBias: FloatBuffer?
    /// Added to each expert's gate, up and down products (gpt-oss): experts × (ffn), × (ffn) and
    /// × (dim), blk.N.ffn_{gate,up,down}_exps.bias, or nil.
    let gateBias: FloatBuffer?, upBias: FloatBuffer?, downBias: FloatBuffer?
    /// The count of experts, how many a row uses, the gating and the weights' scale.
    let shape: Shape
    let width: Int                      // ffn of one expert

    /// llama.cpp's `expert_gating_func`: 1 softmax over the experts, 2 each expert's sigmoid,
    /// 3 the experts chosen by their raw scores and weighted by a softmax over the chosen ones'.
    enum Gating: Int, Sendable {
        case softmax = 1
        case sigmoid = 2
        case softmaxWeight = 3
    }

    /// Block `layer`'s experts, each `width` wide.
    init(_ gguf: GGUFFile, layer: Int, configuration c: ModelConfiguration, shape: Shape, width: Int) throws {
        let p = "blk.\(layer)."
        let dim = c.embeddingLength, experts = shape.experts
        router = try WeightMatrix(gguf, p + "ffn_gate_inp.weight", rows: experts, columns: dim)
        gate = try WeightMatrix.experts(gguf, p + "ffn_gate_exps.weight", count: experts, rows: width, columns: dim)
        up = try WeightMatrix.experts(gguf, p + "ffn_up_exps.weight", count: experts, rows: width, columns: dim)
        down = try WeightMatrix.experts(gguf, p + "ffn_down_exps.weight", count: experts, rows: dim, columns: width)
        selectionBias = try loadOptionalVector(gguf, p + "exp_probs_b.bias", count: experts)
        routerBias = try loadOptionalVector(gguf, p + "ffn_gate_inp.bias", count: experts)
        gateBias = try loadOptionalVector(gguf, p + "ffn_gate_exps.bias", count: experts * width)
        upBias = try loadOptionalVector(gguf, p + "ffn_up_exps.bias", count: experts * width)
        downBias = try loadOptionalVector(gguf, p + "ffn_down_exps.bias", count: experts * dim)
        self.shape = shape
        self.width = width
    }

    /// What a family's metadata says of its experts: how many there are and how many each token
    /// uses (`expert_count`, `expert_used_count`), each expert's width (`expert_feed_forward_length`,
    /// one for every block or one a block), the scale of the chosen experts' weights
    /// (`expert_weights_scale`) and the gating (`expert_gating_func`).
    struct Shape: Sendable {
        /// Experts in a block, and how many of them each row goes through.
        let experts: Int, used: Int
        /// How the router's scores become probabilities.
        var gating: Gating
        /// Whether the chosen experts' weights are divided by their sum.
        var normalize = true
        /// Each expert's gated activation.
        var activation = GatedActivation.silu
        /// Multiplies the chosen experts' weights when neither 0 nor 1.
        let scale: Float
        /// Each block's expert width, 0 where the file gives none.
        let widths: [Int]

        /// The experts of `c`'s family, or nil when the file has none. When the file gives no
        /// expert width and `sharing` is given, each expert's is `sharing / used`.
        static func read(_ gguf: GGUFFile, configuration c: ModelConfiguration, sharing total: Int? = nil) throws -> Shape? {
            let a = c.architecture
            guard let experts = gguf.int("\(a).expert_count"), experts > 0 else { return nil }
            guard let used = gguf.int("\(a).expert_used_count"), (1...experts).contains(used),
                  let gating = Gating(rawValue: gguf.int("\(a).expert_gating_func") ?? Gating.softmax.rawValue) else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                                   reason: "\(a).expert_used_count or expert_gating_func is missing or out of range")
            }
            let key = "\(a).expert_feed_forward_length"
            let width = gguf.int(key) ?? total.map { $0 / used } ?? 0
            let widths = gguf.array(key).map { $0.map { $0.intValue ?? 0 } } ?? Array(repeating: width, count: c.blockCount)
            return Shape(experts: experts, used: used, gating: gating, scale: gguf.float("\(a).expert_weights_scale") ?? 0,
                         widths: widths)
        }

        /// Block `layer`'s mixture of experts.
        func layer(_ gguf: GGUFFile, _ layer: Int, configuration c: ModelConfiguration) throws -> MixtureOfExperts {
            guard layer < widths.count, widths[layer] > 0 else {
                throw HearthError.invalidModelFile(path: gguf.mapping.path,
                                                   reason: "\(c.architecture).expert_feed_forward_length gives block \(layer) no width")
            }
            return try MixtureOfExperts(gguf, layer: layer, configuration: c, shape: self, width: widths[layer])
        }
    }

    func callAsFunction(_ input: UnsafePointer<Float>, _ pass: ForwardPass) -> UnsafeMutablePointer<Float> {
        let n = pass.rows, dim = pass.configuration.embeddingLength, experts = gate.count
        let used = shape.used, scale = shape.scale
        let output = pass.blockOutput

        // Routing: every row's probabilities, its chosen experts and their weights.
        let probabilities = pass.workspace.floats(.router, n * experts)
        pass.project(input, columns: dim, through: [router], into: probabilities, outputStride: experts)
        var chosen = [Int](repeating: 0, count: n * used)
        var weights = [Float](repeating: 0, count: n * used)
        for row in 0..<n {
            let p = probabilities + row * experts
            if let routerBias { TensorMath.add(routerBias.pointer, to: p, count: experts) }
            switch shape.gating {
            case .softmax: Activations.softmaxRow(p, count: experts)
            case .sigmoid: for e in 0..<experts { p[e] = Activations.sigmoid(p[e]) }
            case .softmaxWeight: break
            }
            let score = selectionBias.map { bias in (0..<experts).map { p[$0] + bias.pointer[$0] } } ?? (0..<experts).map { p[$0] }
            let best = (0..<experts).sorted { score[$0] > score[$1] || (score[$0] == score[$1] && $0 < $1) }.prefix(used)
            for (slot, expert) in best.enumerated() {
                chosen[row * used + slot] = expert
                weights[row * used + slot] = p[expert]
            }
            weights.withUnsafeMutableBufferPointer { all in
                let w = all.baseAddress! + row * used
                if shape.gating == .softmaxWeight { Activations.softmaxRow(w, count: used) }
                if shape.normalize {
                    var sum: Double = 0
                    for slot in 0..<used { sum += Double(w[slot]) }
                    let total = max(Float(sum), 6.103515625e-5)
                    for slot in 0..<used { w[slot] /= total }
                }
            }
            if scale != 0 && scale != 1 {
                for slot in 0..<used { weights[row * used + slot] *= scale }
            }
        }

        // Each expert over the rows that chose it, one row per run.
        let results = pass.workspace.floats(.expertOutput, n * used * dim)
        let gathered = pass.workspace.floats(.expertInput, n * dim)
        let gateUp = pass.workspace.floats(.gateUp, n * 2 * width)
        let hidden = pass.workspace.floats(.hidden, n * width)
        let projected = pass.workspace.floats(.expertProjected, n * dim)
        for expert in 0..<experts {
            let slots = (0..<n * used).filter { chosen[$0] == expert }
            guard !slots.isEmpty else { continue }
            let rows = slots.count
            for (i, slot) in slots.enumerated() {
                (gathered + i * dim).update(from: input + (slot / used) * dim, count: dim)
            }
            var sequenceRuns: [Int] = []
            var lastRun = -1
            for slot in slots {
                let run = pass.rowRun[slot / used]
                if run == lastRun { sequenceRuns[sequenceRuns.count - 1] += 1 } else { sequenceRuns.append(1) }
                lastRun = run
            }
            let gateRuns = Self.runs(of: gate[expert], rows: rows, sequenceRuns: sequenceRuns)
            if gateRuns == Self.runs(of: up[expert], rows: rows, sequenceRuns: sequenceRuns) {
                pass.project(gathered, columns: dim, rows: rows, runs: gateRuns, through: [gate[expert], up[expert]],
                             into: gateUp, outputStride: 2 * width)
            } else {
                pass.project(gathered, columns: dim, rows: rows, runs: gateRuns, through: [gate[expert]],
                             into: gateUp, outputStride: 2 * width)
                pass.project(gathered, columns: dim, rows: rows, runs: Self.runs(of: up[expert], rows: rows, sequenceRuns: sequenceRuns),
                             through: [up[expert]], into: gateUp + width, outputStride: 2 * width)
            }
            for i in 0..<rows {
                let g = gateUp + i * 2 * width, u = g + width
                if let upBias { TensorMath.add(upBias.pointer + expert * width, to: u, count: width) }
                if let gateBias { TensorMath.add(gateBias.pointer + expert * width, to: g, count: width) }
                shape.activation.apply(gate: g, up: u, into: hidden + i * width, count: width)
            }
            pass.project(hidden, columns: width, rows: rows, runs: Self.runs(of: down[expert], rows: rows, sequenceRuns: sequenceRuns),
                         through: [down[expert]], into: projected, outputStride: dim)
            if let downBias {
                for i in 0..<rows { TensorMath.add(downBias.pointer + expert * dim, to: projected + i * dim, count: dim) }
            }
            for (i, slot) in slots.enumerated() {
                let weight = weights[slot]
                let source = projected + i * dim, target = results + slot * dim
                for j in 0..<dim { target[j] = source[j] * weight }
            }
        }

        // The weighted outputs added in the order the experts were chosen.
        for row in 0..<n {
            let target = output + row * dim
            target.update(from: results + row * used * dim, count: dim)
            for slot in 1..<used { TensorMath.add(results + (row * used + slot) * dim, to: target, count: dim) }
        }
        return output
    }

    /// How an expert's `rows` rows are summed: as runs of one sequence's rows each for the
    /// K-quants and IQ1, IQ2 and IQ3 types llama.cpp's tiled kernel takes (its sums depend on how
    /// many rows there are), one row at a time for every other type (Q4_K and Q4_0 are repacked,
    /// and their `mul_mat_id` takes one row at a time).
    private static func runs(of matrix: WeightMatrix, rows: Int, sequenceRuns: [Int]) -> [Int] {
        switch matrix.kernel.weightType {
        case .q2_K, .q3_K, .q5_K, .q6_K, .iq4_xs, .iq2_xxs, .iq2_xs, .iq2_s, .iq3_xxs, .iq3_s, .iq1_s, .iq1_m: sequenceRuns
        default: [Int](repeating: 1, count: rows)
        }
    }
}

extension MixtureOfExperts {
    /// Refuses by name a file of a family run here only dense whose blocks route among experts.
    static func refuse(_ gguf: GGUFFile, configuration c: ModelConfiguration) throws {
        if let experts = gguf.int("\(c.architecture).expert_count"), experts > 0 {
            throw HearthError.unsupportedModel(reason: "mixture-of-experts \(c.architecture) models (\(experts) experts)")
        }
    }
}
