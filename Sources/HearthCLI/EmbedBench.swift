import ArgumentParser
import Foundation
import Hearth

/// `hearth bench --embed`: sentences per second of a sentence-transformers model.
extension BenchCommand {
    var embedBatchSizes: [Int] {
        // Larger lists are split by the model itself, so a bigger size would not measure what it says.
        get throws { try Self.counts(batchSizes, option: "--batch", in: 1...SentenceEmbeddingModel.batchLimit, example: "1,32") }
    }

    struct EmbedResult: Codable {
        var model: String
        var threads: Int
        var batch: Int
        var sentences: Int
        var tokens: Int
        var sentencesPerSecond: Double
        var standardDeviation: Double
        var samples: [Double]
    }

    /// Reads the sentences: one per non-blank line.
    static func readSentences(_ path: String) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { throw HearthError.fileNotFound(path: path) }
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !lines.isEmpty else { throw HearthError.invalidArgument("\(path) has no sentences: give one per line.") }
        return lines
    }

    /// Each repetition embeds every sentence, batch after batch in file order, after one
    /// warm-up pass; the rate is sentences over the wall time of the whole pass.
    func runEmbed() throws {
        let texts = try Self.readSentences(sentences ?? "")
        let folder = try localModel(gguf: false)
        let name = URL(fileURLWithPath: folder).lastPathComponent
        if !json {
            print("| model                          | threads | batch | sentences | tokens |     sentences/s |")
            print("| ------------------------------ | ------: | ----: | --------: | -----: | --------------: |")
        }
        for threadCount in try threadCounts {
            let loadStart = ContinuousClock.now
            let embedder = try SentenceEmbeddingModel(directory: URL(fileURLWithPath: folder), threads: threadCount)
            let loadSeconds = (ContinuousClock.now - loadStart) / .seconds(1)
            let tokens = texts.reduce(0) { $0 + embedder.tokenizer.encode($1).count }
            for batch in try embedBatchSizes {
                let pass = {
                    let start = ContinuousClock.now
                    var index = 0
                    while index < texts.count {
                        let vectors = try embedder.embed(Array(texts[index..<min(index + batch, texts.count)]))
                        precondition(vectors.count == min(batch, texts.count - index))
                        index += batch
                    }
                    return Double(texts.count) / ((ContinuousClock.now - start) / .seconds(1))
                }
                _ = try pass()
                let samples = try (0..<repetitions).map { _ in try pass() }
                let (mean, deviation) = Self.meanAndDeviation(samples)
                let row = EmbedResult(model: name, threads: threadCount, batch: batch, sentences: texts.count, tokens: tokens,
                                      sentencesPerSecond: mean, standardDeviation: deviation, samples: samples)
                if json {
                    try Self.printJSONLine(row)
                } else {
                    print("| \(pad(name, 30)) | \(pad(String(threadCount), 7, right: true)) | \(pad(String(batch), 5, right: true)) | "
                          + "\(pad(String(texts.count), 9, right: true)) | \(pad(String(tokens), 6, right: true)) | "
                          + "\(pad(String(format: "%.2f ± %.2f", mean, deviation), 15, right: true)) |")
                }
            }
            if !json {
                printError(String(format: "threads %d: load %.1f ms, peak RSS %@", threadCount, loadSeconds * 1000,
                                  HumanReadable.bytes(peakResidentBytes())))
            }
        }
    }
}
