import ArgumentParser
import Foundation
import Hearth

/// `hearth bench MODEL --parallel 1,2,4,8`: aggregate prompt and generation speed of several
/// sequences evaluated in shared forward passes, as llama-batched-bench measures it.
extension BenchCommand {
    var parallelCounts: [Int] {
        get throws { try Self.counts(parallel ?? "", option: "--parallel", in: 1...256, example: "1,2,4,8") }
    }

    struct ParallelResult: Codable {
        var model: String
        var threads: Int
        var sequences: Int
        var promptTokens: Int
        var generatedTokens: Int
        /// Prompt tokens of all sequences per second.
        var promptTokensPerSecond: Double
        var promptStandardDeviation: Double
        /// Generated tokens of all sequences per second.
        var generationTokensPerSecond: Double
        var generationStandardDeviation: Double
    }

    /// For each count N: N sequences read a -p token prompt each, in passes of up to
    /// `TransformerModel.maximumPassRows` rows (each sequence's prompt cut into the same chunks
    /// as alone), then generate -n tokens each, one pass per step with one row per sequence.
    /// Greedy choices feed back, so each step does a real step's work.
    func runParallel() throws {
        if !json {
            print("| model                          | threads | seqs |    pp |    tg |        pp t/s (all) |        tg t/s (all) |")
            print("| ------------------------------ | ------: | ---: | ----: | ----: | ------------------: | ------------------: |")
        }
        for threadCount in try threadCounts {
            let model = try TransformerModel(path: try localModel(gguf: true), threads: threadCount)
            let name = describe(ModelSummary(model.gguf), model.gguf)
            let vocabulary = Int32(model.configuration.vocabularySize)
            var random = SystemRandomNumberGenerator()
            for count in try parallelCounts {
                let sequences = try (0..<count).map { _ in
                    try model.makeSequence(contextLength: promptTokens + generatedTokens + 1, cacheTypes: cache.types)
                }
                /// One repetition: (prompt t/s, generation t/s) over all sequences.
                func measure() throws -> (Double, Double) {
                    for sequence in sequences { sequence.reset() }
                    let prompts = sequences.map { _ in
                        (0..<max(promptTokens, 1)).map { _ in Int32.random(in: 0..<vocabulary, using: &random) }
                    }
                    let start = ContinuousClock.now
                    if promptTokens > 0 {
                        try evaluatePrompts(prompts, sequences: sequences, model: model)
                    } else {
                        var batch = Batch()
                        for (sequence, prompt) in zip(sequences, prompts) { try batch.add(prompt, to: sequence) }
                        try model.evaluate(batch)
                    }
                    let prompted = ContinuousClock.now
                    for _ in 0..<generatedTokens {
                        var batch = Batch()
                        for sequence in sequences { try batch.add([sequence.logits.argmax], to: sequence) }
                        try model.evaluate(batch)
                    }
                    let end = ContinuousClock.now
                    let pp = Double(count * promptTokens) / ((prompted - start) / .seconds(1))
                    let tg = Double(count * generatedTokens) / ((end - prompted) / .seconds(1))
                    return (promptTokens > 0 ? pp : 0, generatedTokens > 0 ? tg : 0)
                }
                _ = try measure()
                let samples = try (0..<repetitions).map { _ in try measure() }
                let (pp, ppDeviation) = Self.meanAndDeviation(samples.map(\.0))
                let (tg, tgDeviation) = Self.meanAndDeviation(samples.map(\.1))
                let row = ParallelResult(model: name, threads: threadCount, sequences: count, promptTokens: promptTokens,
                                         generatedTokens: generatedTokens, promptTokensPerSecond: pp, promptStandardDeviation: ppDeviation,
                                         generationTokensPerSecond: tg, generationStandardDeviation: tgDeviation)
                if json {
                    try Self.printJSONLine(row)
                } else {
                    print("| \(pad(name, 30)) | \(pad(String(threadCount), 7, right: true)) | \(pad(String(count), 4, right: true)) | "
                          + "\(pad(String(promptTokens), 5, right: true)) | \(pad(String(generatedTokens), 5, right: true)) | "
                          + "\(pad(String(format: "%.2f ± %.2f", pp, ppDeviation), 19, right: true)) | "
                          + "\(pad(String(format: "%.2f ± %.2f", tg, tgDeviation), 19, right: true)) |")
                }
            }
        }
    }

    /// Every sequence's prompt, chunk by chunk as each would be cut alone, as many chunks per
    /// pass as fit.
    private func evaluatePrompts(_ prompts: [[Int32]], sequences: [SequenceState], model: TransformerModel) throws {
        var offsets = [Int](repeating: 0, count: sequences.count)
        while offsets.indices.contains(where: { offsets[$0] < prompts[$0].count }) {
            var batch = Batch()
            for index in sequences.indices where offsets[index] < prompts[index].count {
                let sequence = sequences[index]
                let end = min(offsets[index] + sequence.chunkSize, prompts[index].count)
                guard batch.rowCount + end - offsets[index] <= TransformerModel.maximumPassRows else { break }
                try batch.add(Array(prompts[index][offsets[index]..<end]), to: sequence,
                              logits: end == prompts[index].count ? .last : .none)
                offsets[index] = end
            }
            try model.evaluate(batch)
        }
    }
}
