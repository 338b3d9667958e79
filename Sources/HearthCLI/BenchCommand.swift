import ArgumentParser
import Foundation
import Hearth

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure prompt processing and generation speed, like llama-bench.",
        discussion: """
            ppN evaluates an N-token prompt in one batch; tgN generates N tokens one at a time from an \
            empty context. Each test runs once to warm up, then --repetitions times; the table shows \
            mean ± standard deviation of tokens per second. With -d D both run after D tokens already \
            in the cache ("pp512 @ d4096"), as llama-bench's --n-depth: the speed of a long chat or \
            a retrieved document.

            --chat measures a two-turn conversation instead: the time from asking to the first \
            token of the answer, for a first question (about 60 prompt tokens with the chat \
            template) and a follow-up that reuses the first turn's cache.

            --server URL measures an OpenAI-compatible server (hearth serve, llama-server, …) \
            instead: for each count in --streams, that many chat requests stream -n tokens at \
            once; the table shows generated tokens per second over all of them, and the mean \
            time to first token. MODEL is then the model's name at the server.

            --parallel 1,2,4,8 measures that many sequences at once, as llama-batched-bench does: \
            each reads a -p token prompt, then all generate -n tokens together, one shared pass \
            per step; the table shows prompt and generated tokens per second over all of them.

            --embed measures a sentence-transformers model (MODEL is its folder) instead: each \
            repetition embeds every line of --sentences, in consecutive batches of each --batch \
            size, and the table shows sentences per second, tokenizing, pooling and normalizing \
            included.
            """
    )

    @Argument(help: "The model: a GGUF file, a folder holding one, or a cached Hub name (with --embed, a sentence-transformers folder or name; with --server, the model's name there).")
    var model: String

    @Option(name: [.customShort("p"), .customLong("n-prompt")], help: "Prompt tokens for the pp test (0 skips it).")
    var promptTokens = 128

    @Option(name: [.customShort("n"), .customLong("n-gen")], help: "Generated tokens for the tg test (0 skips it).")
    var generatedTokens = 128

    @Option(name: [.customShort("d"), .customLong("n-depth")], help: "Tokens already in the cache before each pp and tg test.")
    var depth = 0

    @Option(name: [.short, .customLong("threads")], help: "Comma-separated thread counts to test.")
    var threads = "\(ProcessInfo.processInfo.activeProcessorCount)"

    @Option(name: [.short, .customLong("repetitions")], help: "Measured runs of each test.")
    var repetitions = 5

    @OptionGroup var cache: CacheTypeOptions

    @Flag(help: "Print one JSON object per test instead of the table.")
    var json = false

    @Flag(help: "Measure the time to first token of a two-turn chat instead.")
    var chat = false

    @Option(help: "Measure concurrent streams against this OpenAI-compatible base URL (such as http://127.0.0.1:11435/v1).")
    var server: String?

    @Option(help: "With --server: comma-separated numbers of concurrent streams.")
    var streams = "1,4,8"

    @Option(name: .customLong("api-key"), help: "With --server: the API key to send.")
    var apiKey: String?

    @Flag(help: "Measure sentence embeddings per second instead.")
    var embed = false

    @Option(name: .customLong("batch"), help: "With --embed: comma-separated batch sizes to test.")
    var batchSizes = "1,32"

    @Option(help: "With --embed: a text file of sentences to embed, one per line.")
    var sentences: String?

    @Option(help: "Measure this many sequences at once in shared passes instead (comma-separated counts, such as 1,2,4,8).")
    var parallel: String?

    var threadCounts: [Int] {
        get throws { try Self.counts(threads, option: "--threads", in: 1...512, example: "1,2") }
    }

    /// A comma-separated list of counts, each within `range`, or an error that shows the form.
    static func counts(_ text: String, option: String, in range: ClosedRange<Int>, example: String) throws -> [Int] {
        let values = text.split(separator: ",", omittingEmptySubsequences: false).map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ $0.map(range.contains) ?? false }) else {
            throw ValidationError("\(option) takes counts between \(range.lowerBound) and \(range.upperBound) separated by commas, such as \(example).")
        }
        return values.map { $0! }
    }

    func validate() throws {
        _ = try threadCounts
        guard [chat, embed, server != nil, parallel != nil].filter({ $0 }).count <= 1 else {
            throw ValidationError("--chat, --embed, --server and --parallel are different benchmarks: choose one.")
        }
        if parallel != nil { _ = try parallelCounts }
        if embed {
            _ = try embedBatchSizes
            guard sentences != nil else { throw ValidationError("--embed needs --sentences FILE, a text file with one sentence per line.") }
        }
        guard (0...65_536).contains(promptTokens), (0...65_536).contains(generatedTokens),
              promptTokens + generatedTokens > 0 else {
            throw ValidationError("-p and -n must be between 0 and 65536, and one must be more than 0.")
        }
        guard (1...1000).contains(repetitions) else { throw ValidationError("--repetitions must be between 1 and 1000.") }
        guard (0...1_048_576).contains(depth) else { throw ValidationError("-d must be between 0 and 1048576 tokens.") }
        guard depth == 0 || !(chat || embed || server != nil || parallel != nil) else {
            throw ValidationError("-d applies to the pp and tg tests only, not to --chat, --embed, --server or --parallel.")
        }
    }

    struct Result: Codable {
        var model: String
        var sizeBytes: Int
        var parameters: Int
        var threads: Int
        var test: String
        var typeK: String
        var typeV: String
        var tokensPerSecond: Double
        var standardDeviation: Double
        var samples: [Double]
    }

    func run() async throws {
        if let server {
            try await reportingErrors { try await runServer(server) }
            return
        }
        if chat {
            try await reportingErrors { try await runChat() }
            return
        }
        if embed {
            try reportingErrors { try runEmbed() }
            return
        }
        if parallel != nil {
            try reportingErrors { try runParallel() }
            return
        }
        try reportingErrors {
            var rows: [Result] = []
            // The cache's types get columns when they are not the default, as in llama-bench's table.
            let typed = cache.types != .f16
            if !json {
                print("| model                          |       size |     params | threads |" + (typed ? " type_k | type_v |" : "")
                      + "            test |              t/s |")
                print("| ------------------------------ | ---------: | ---------: | ------: |" + (typed ? " -----: | -----: |" : "")
                      + " --------------: | ---------------: |")
            }
            for threadCount in try threadCounts {
                let loadStart = ContinuousClock.now
                let model = try TransformerModel(path: try localModel(gguf: true), threads: threadCount)
                let needed = depth + promptTokens + generatedTokens + 1
                guard needed <= model.configuration.contextLength else {
                    throw HearthError.invalidArgument(
                        "-d \(depth) with -p \(promptTokens) and -n \(generatedTokens) needs \(needed) positions, more than the model's context of \(model.configuration.contextLength): ask for fewer.")
                }
                // The depth is read in passes of up to 512 tokens, as a prompt of that length would be.
                let state = try model.makeSequence(contextLength: needed, chunkSize: max(promptTokens, min(depth, 512), 1),
                                                   cacheTypes: cache.types)
                // Load as a user sees it: map the file, build the tokenizer, evaluate one token.
                try model.evaluate([model.tokenizer.bosToken ?? 0], sequence: state)
                state.reset()
                let loadSeconds = (ContinuousClock.now - loadStart) / .seconds(1)
                let summary = ModelSummary(model.gguf)
                let name = describe(summary, model.gguf)
                let parameters = summary.parameterCount
                var random = SystemRandomNumberGenerator()
                let vocabulary = Int32(model.configuration.vocabularySize)
                if depth > 0 {
                    // Read once; each test then forgets what it added, back to the depth.
                    try model.evaluate((0..<depth).map { _ in Int32.random(in: 0..<vocabulary, using: &random) }, sequence: state)
                }
                let depthName = depth > 0 ? " @ d\(depth)" : ""
                // A hybrid model's recurrent state goes back only to its checkpoints: the
                // positions from there to the depth are read again, before the clock starts.
                func backToDepth() throws {
                    state.rewind(to: depth)
                    if state.position < depth {
                        try model.evaluate((state.position..<depth).map { _ in Int32.random(in: 0..<vocabulary, using: &random) },
                                           sequence: state)
                    }
                }

                var tests: [(String, () throws -> Double)] = []
                if promptTokens > 0 {
                    tests.append(("pp\(promptTokens)\(depthName)", {
                        let tokens = (0..<promptTokens).map { _ in Int32.random(in: 0..<vocabulary, using: &random) }
                        try backToDepth()
                        let start = ContinuousClock.now
                        try model.evaluate(tokens, sequence: state)
                        return Double(promptTokens) / ((ContinuousClock.now - start) / .seconds(1))
                    }))
                }
                if generatedTokens > 0 {
                    tests.append(("tg\(generatedTokens)\(depthName)", {
                        try backToDepth()
                        var token = model.tokenizer.bosToken ?? 0
                        let start = ContinuousClock.now
                        for _ in 0..<generatedTokens {
                            token = try model.evaluate([token], sequence: state).argmax
                        }
                        return Double(generatedTokens) / ((ContinuousClock.now - start) / .seconds(1))
                    }))
                }
                for (test, body) in tests {
                    _ = try body()
                    let samples = try (0..<repetitions).map { _ in try body() }
                    let (mean, deviation) = Self.meanAndDeviation(samples)
                    let row = Result(model: name, sizeBytes: model.gguf.fileSize, parameters: parameters, threads: threadCount,
                                     test: test, typeK: cache.keys.rawValue, typeV: cache.values.rawValue, tokensPerSecond: mean,
                                     standardDeviation: deviation, samples: samples)
                    rows.append(row)
                    if json {
                        try Self.printJSONLine(row)
                    } else {
                        let speed = String(format: "%.2f ± %.2f", mean, row.standardDeviation)
                        let params = String(format: "%.2f M", Double(parameters) / 1e6)
                        print("| \(pad(name, 30)) | \(pad(HumanReadable.bytes(row.sizeBytes), 10, right: true)) | "
                              + "\(pad(params, 10, right: true)) | \(pad(String(threadCount), 7, right: true)) | "
                              + (typed ? "\(pad(cache.keys.rawValue, 6, right: true)) | \(pad(cache.values.rawValue, 6, right: true)) | " : "")
                              + "\(pad(test, 15, right: true)) | \(pad(speed, 16, right: true)) |")
                    }
                }
                if !json {
                    printError(String(format: "threads %d: load to first token %.1f ms, peak RSS %@ (model file %@, KV cache %@ in %@), %.1f MB of weights read a generated token",
                                      threadCount, loadSeconds * 1000, HumanReadable.bytes(peakResidentBytes()),
                                      HumanReadable.bytes(model.gguf.fileSize), HumanReadable.bytes(state.cacheBytes),
                                      state.cacheTypes.description, Double(model.weightBytesPerToken) / 1e6))
                }
            }
        }
    }

    /// The two turns of `--chat`: a first question that makes a prompt of about 60 tokens
    /// with SmolLM2's template and default system prompt, and a follow-up.
    static let chatTurns = [
        "I am planning a weekend trip to the mountains with two friends in October. We like hiking and cooking outdoors. What should we pack for it?",
        "Which of those matter most if it rains?",
    ]

    struct ChatResult: Codable {
        var model: String
        var threads: Int
        var turn: Int
        var promptTokens: Int
        var cachedPromptTokens: Int
        var timeToFirstTokenMilliseconds: Double
        var standardDeviation: Double
        var samples: [Double]
    }

    /// Times each turn from the call that asks to the first token that arrives, in fresh
    /// sessions, after one warm-up conversation.
    /// Where MODEL is on disk: a file or folder that exists, else a model in the Hub cache
    /// (bench never downloads). `gguf` asks for the GGUF file of a language model.
    func localModel(gguf: Bool) throws -> String {
        let hearth = Hearth(configuration: .init())
        guard let url = try gguf ? hearth.cachedModelFile(model) : hearth.cachedModel(model) else {
            throw HearthError.invalidArgument("\(model) is not on disk: pull it with `hearth pull \(model)` first, or name a file.")
        }
        return url.path
    }

    private func runChat() async throws {
        if !json {
            print("| threads | turn | prompt tokens | cached | evaluated | time to first token (ms) |")
            print("| ------: | ---: | ------------: | -----: | --------: | -----------------------: |")
        }
        for threadCount in try threadCounts {
            let loaded = try await Hearth(configuration: .init(threads: threadCount, contextLength: 1024, cacheTypes: cache.types))
                .loadModel(model)
            var options = GenerationOptions.greedy
            options.maxTokens = 32
            var samples = Array(repeating: [Double](), count: Self.chatTurns.count)
            var usage = Array(repeating: GenerationStatistics(), count: Self.chatTurns.count)
            for repetition in 0...repetitions {
                let session = loaded.chat(options: options)
                for (turn, question) in Self.chatTurns.enumerated() {
                    let start = ContinuousClock.now
                    var first: Double?
                    for try await chunk in session.stream(question) {
                        if first == nil, chunk.token != nil || chunk.finishReason != nil {
                            first = (ContinuousClock.now - start) / .milliseconds(1)
                        }
                        if let stats = chunk.statistics { usage[turn] = stats }
                    }
                    if repetition > 0, let first { samples[turn].append(first) }
                }
            }
            for turn in samples.indices {
                let values = samples[turn]
                let (mean, deviation) = Self.meanAndDeviation(values)
                let row = ChatResult(model: loaded.name, threads: threadCount, turn: turn + 1,
                                     promptTokens: usage[turn].promptTokens, cachedPromptTokens: usage[turn].cachedPromptTokens,
                                     timeToFirstTokenMilliseconds: mean, standardDeviation: deviation, samples: values)
                if json {
                    try Self.printJSONLine(row)
                } else {
                    print("| \(pad(String(threadCount), 7, right: true)) | \(pad(String(turn + 1), 4, right: true)) | "
                          + "\(pad(String(row.promptTokens), 13, right: true)) | \(pad(String(row.cachedPromptTokens), 6, right: true)) | "
                          + "\(pad(String(row.promptTokens - row.cachedPromptTokens), 9, right: true)) | "
                          + "\(pad(String(format: "%.1f ± %.1f", mean, row.standardDeviation), 24, right: true)) |")
                }
            }
        }
    }

    struct ServerResult: Codable {
        var server: String
        var model: String
        var streams: Int
        var tokensPerSecond: Double
        var standardDeviation: Double
        var timeToFirstTokenMilliseconds: Double
        var timeToFirstTokenP50Milliseconds: Double
        var timeToFirstTokenP95Milliseconds: Double
        var completionTokens: Int
        var samples: [Double]
    }

    static let storyTopics = ["a dragon", "a lighthouse keeper", "a lost robot", "a sailing ship", "a mountain village",
                              "a clockmaker", "a desert caravan", "a space station"]

    /// Streams `n` tokens in `count` concurrent chats, after one warm-up round, and reports the
    /// tokens generated over all of them per second of wall time.
    private func runServer(_ address: String) async throws {
        guard let base = URL(string: address), base.scheme == "http" || base.scheme == "https" else {
            throw HearthError.invalidArgument("--server takes an http(s) base URL such as http://127.0.0.1:11435/v1.")
        }
        let counts = try Self.counts(streams, option: "--streams", in: 1...256, example: "1,4,8")
        let remote = RemoteModel(name: model, baseURL: base, apiKey: apiKey)
        let options = GenerationOptions(sampling: .greedy, maxTokens: max(1, generatedTokens))
        let topics = Self.storyTopics
        if !json {
            print("| streams | generated tokens | aggregate (t/s)   | first token, mean (ms) | p50 (ms) | p95 (ms) |")
            print("| ------: | ---------------: | ----------------: | ---------------------: | -------: | -------: |")
        }
        for count in counts {
            var samples: [Double] = []
            var firstTokens: [Double] = []
            var eachFirstToken: [Double] = []
            var tokens = 0
            for repetition in 0...repetitions {
                let started = ContinuousClock.now
                let results = try await withThrowingTaskGroup(of: (Int, Double).self) { group in
                    for index in 0..<count {
                        group.addTask {
                            let prompt = "Write a long story about \(topics[index % topics.count]) (\(index / topics.count + 1))."
                            let asked = ContinuousClock.now
                            var first: Double?
                            var generated = 0
                            for try await chunk in remote.stream(prompt, options: options) {
                                if first == nil, !chunk.text.isEmpty { first = (ContinuousClock.now - asked) / .milliseconds(1) }
                                if let stats = chunk.statistics { generated = stats.completionTokens }
                            }
                            return (generated, first ?? 0)
                        }
                    }
                    var all: [(Int, Double)] = []
                    for try await result in group { all.append(result) }
                    return all
                }
                let seconds = (ContinuousClock.now - started) / .seconds(1)
                guard repetition > 0 else { continue }
                let generated = results.reduce(0) { $0 + $1.0 }
                samples.append(Double(generated) / seconds)
                firstTokens.append(results.reduce(0) { $0 + $1.1 } / Double(results.count))
                eachFirstToken += results.map(\.1)
                tokens = generated
            }
            let (mean, deviation) = Self.meanAndDeviation(samples)
            let row = ServerResult(server: address, model: model, streams: count, tokensPerSecond: mean, standardDeviation: deviation,
                                   timeToFirstTokenMilliseconds: Self.meanAndDeviation(firstTokens).0,
                                   timeToFirstTokenP50Milliseconds: Self.percentile(50, of: eachFirstToken),
                                   timeToFirstTokenP95Milliseconds: Self.percentile(95, of: eachFirstToken),
                                   completionTokens: tokens, samples: samples)
            if json {
                try Self.printJSONLine(row)
            } else {
                print("| \(pad(String(count), 7, right: true)) | \(pad(String(tokens), 16, right: true)) | "
                      + "\(pad(String(format: "%.2f ± %.2f", mean, deviation), 17, right: true)) | "
                      + "\(pad(String(format: "%.0f", row.timeToFirstTokenMilliseconds), 22, right: true)) | "
                      + "\(pad(String(format: "%.0f", row.timeToFirstTokenP50Milliseconds), 8, right: true)) | "
                      + "\(pad(String(format: "%.0f", row.timeToFirstTokenP95Milliseconds), 8, right: true)) |")
            }
        }
    }

    /// The `p`th percentile of `values` by the nearest rank (0 when there are none).
    static func percentile(_ p: Double, of values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    /// Mean and sample standard deviation (0 for a single sample).
    static func meanAndDeviation(_ samples: [Double]) -> (Double, Double) {
        let mean = samples.reduce(0, +) / Double(samples.count)
        let variance = samples.count > 1
            ? samples.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(samples.count - 1) : 0
        return (mean, variance.squareRoot())
    }

    static func printJSONLine(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - text.count))
        return right ? fill + text : text + fill
    }

    /// "llama 135M Q4_1", as llama-bench names models.
    func describe(_ summary: ModelSummary, _ gguf: GGUFFile) -> String {
        [summary.architecture, gguf.string("general.size_label"), summary.fileType]
            .compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}
