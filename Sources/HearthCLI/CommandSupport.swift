import ArgumentParser
import Foundation
import Hearth

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a command body, printing a `HearthError` as its message (no stack trace) and exiting 1.
func reportingErrors<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as HearthError {
        printError("error: \(error.message)")
        throw ExitCode(1)
    }
}

/// Writes a line to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// Writes text to standard output at once, without waiting for a newline.
func writeNow(_ text: String) {
    guard !text.isEmpty else { return }
    FileHandle.standardOutput.write(Data(text.utf8))
}

/// Writes a streamed answer: the answer to standard output, a reasoning model's thoughts to
/// standard error (dimmed on a terminal) and a blank line after them, so a pipe gets only the
/// answer.
struct AnswerWriter {
    private var inThoughts = false
    private let dim = isatty(STDERR_FILENO) != 0

    mutating func write(_ chunk: GenerationChunk) {
        if !chunk.reasoning.isEmpty {
            if !inThoughts, dim { FileHandle.standardError.write(Data("\u{1B}[2m".utf8)) }
            inThoughts = true
            FileHandle.standardError.write(Data(chunk.reasoning.utf8))
        }
        if inThoughts, !chunk.text.isEmpty || chunk.finishReason != nil {
            inThoughts = false
            FileHandle.standardError.write(Data(((dim ? "\u{1B}[0m" : "") + "\n\n").utf8))
        }
        writeNow(chunk.text)
    }
}

/// Peak resident memory of this process so far, in bytes.
func peakResidentBytes() -> Int {
    var usage = rusage()
    #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Int(usage.ru_maxrss) * 1024
    #else
    getrusage(RUSAGE_SELF, &usage)
    return Int(usage.ru_maxrss)
    #endif
}

/// Runs an async command body, printing a `HearthError` as its message and exiting 1.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as HearthError {
        printError("error: \(error.message)")
        throw ExitCode(1)
    }
}

extension KVCacheType: ExpressibleByArgument {
    /// The type as llama.cpp spells it, in any case (`q8_0`, `Q8_0`).
    public init?(argument: String) { try? self.init(parsing: argument) }
}

/// How a command's model keeps its KV cache, as llama.cpp's options of the same names.
struct CacheTypeOptions: ParsableArguments {
    @Option(name: .customLong("cache-type-k"), help: "How the KV cache keeps keys: f16, q8_0 (53% of f16's bytes) or q4_0 (28%).")
    var keys: KVCacheType = .f16

    @Option(name: .customLong("cache-type-v"), help: "How the KV cache keeps values: f16, q8_0 or q4_0.")
    var values: KVCacheType = .f16

    var types: KVCacheTypes { KVCacheTypes(keys: keys, values: values) }
}

/// Options shared by the commands that load a model.
struct ModelOptions: ParsableArguments {
    @Argument(help: "A GGUF file, or a model to take from the cache (org/repo, org/repo:QUANT, an alias such as smollm2).")
    var model: String

    @Flag(name: .customLong("yes"), help: "Pull the model without asking if it is not in the cache.")
    var yes = false

    @Option(name: [.short, .customLong("threads")], help: "Threads to run on (default: one per core).")
    var threads: Int?

    @Option(name: [.short, .customLong("ctx-size")], help: "Context length (default: the model's, at most 4096).")
    var contextLength: Int?

    @OptionGroup var cache: CacheTypeOptions

    func validate() throws {
        if let threads, threads < 1 || threads > 512 {
            throw ValidationError("--threads must be between 1 and 512.")
        }
        if let contextLength, contextLength < 2 {
            throw ValidationError("--ctx-size must be at least 2.")
        }
    }

    /// Loads the model, pulling it first when it is not on disk: after asking on a terminal,
    /// or at once with --yes.
    func load(batchedGenerations: Int = 16) async throws -> LocalModel {
        let hearth = Hearth(configuration: .init(threads: threads, contextLength: contextLength, batchedGenerations: batchedGenerations,
                                                 cacheTypes: cache.types))
        try await pullIfMissing(model, hearth: hearth, yes: yes)
        return try await hearth.loadModel(model, pullIfMissing: false)
    }
}

/// Options of how to generate, shared by `run` and `chat`: a preset, then single settings
/// that override it.
struct GenerationArguments: ParsableArguments {
    @Option(help: "Sampling preset: creative, balanced, precise, code or greedy.")
    var preset = "balanced"

    @Option(name: [.customShort("n"), .customLong("max-tokens")], help: "Most tokens to generate (default: until the model stops).")
    var maxTokens: Int?

    @Option(name: .customLong("temp"), help: "Sampling temperature; 0 always picks the most likely token.")
    var temperature: Float?

    @Option(help: "Seed for sampling, for repeatable output.")
    var seed: UInt64?

    @Option(name: .customLong("top-k"), help: "Sample from the K most likely tokens only (0 = off).")
    var topK: Int?

    @Option(name: .customLong("top-p"), help: "Sample from the smallest set of tokens whose probability reaches P.")
    var topP: Float?

    @Option(name: .customLong("min-p"), help: "Drop tokens less likely than P times the most likely one.")
    var minP: Float?

    @Option(name: .customLong("repeat-penalty"), help: "Penalise tokens seen in the last 64 (1 = off).")
    var repeatPenalty: Float?

    @Option(name: .customLong("frequency-penalty"), help: "Subtract this times each token's count so far.")
    var frequencyPenalty: Float?

    @Option(name: .customLong("presence-penalty"), help: "Subtract this from every token seen so far.")
    var presencePenalty: Float?

    @Option(name: .customLong("stop"), help: "Stop when this text appears (repeatable); it is not printed.")
    var stop: [String] = []

    @Option(name: .customLong("schema"), help: "A JSON Schema file: the answer is JSON valid under it.")
    var schema: String?

    @Option(name: .customLong("grammar"), help: "A GBNF grammar file (llama.cpp's format): the answer matches it.")
    var grammar: String?

    /// The preset with the single settings applied.
    func options() throws -> GenerationOptions {
        guard var options = GenerationOptions.preset(named: preset) else {
            throw ValidationError("Unknown preset \"\(preset)\"; use one of \(GenerationOptions.presets.map(\.name).joined(separator: ", ")).")
        }
        if let maxTokens { options.maxTokens = maxTokens }
        if let temperature { options.sampling.temperature = temperature }
        if let seed { options.sampling.seed = seed }
        if let topK { options.sampling.topK = topK }
        if let topP { options.sampling.topP = topP }
        if let minP { options.sampling.minP = minP }
        if let repeatPenalty { options.sampling.repetitionPenalty = repeatPenalty }
        if let frequencyPenalty { options.sampling.frequencyPenalty = frequencyPenalty }
        if let presencePenalty { options.sampling.presencePenalty = presencePenalty }
        options.stop = stop
        if schema != nil, grammar != nil { throw ValidationError("Give --schema or --grammar, not both.") }
        if let schema {
            let text = try Self.read(schema, what: "schema")
            do {
                let parsed = try JSONValue(parsing: text)
                // Compiled here too, so that a schema Hearth cannot hold to is refused before the model loads.
                _ = try Grammar(jsonSchema: parsed)
                options.jsonSchema = parsed
            } catch let error as HearthError {
                throw ValidationError("\(schema): \(error.message)")
            }
        }
        if let grammar {
            do {
                options.grammar = try Grammar(gbnf: try Self.read(grammar, what: "grammar"))
            } catch let error as HearthError {
                throw ValidationError("\(grammar): \(error.message)")
            }
        }
        return options
    }

    private static func read(_ path: String, what: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: (path as NSString).expandingTildeInPath) else {
            throw ValidationError("Cannot read the \(what) file \(path).")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw ValidationError("The \(what) file \(path) is not UTF-8 text.") }
        return text
    }

    func validate() throws {
        do {
            try options().validate()
        } catch let error as HearthError {
            throw ValidationError(error.message)
        }
    }
}

/// One line summing up a generation: token counts, speeds and the time to the first token.
func statisticsLine(_ stats: GenerationStatistics) -> String {
    var line = String(format: "prompt: %d tokens", stats.promptTokens)
    if stats.cachedPromptTokens > 0 { line += String(format: " (%d cached)", stats.cachedPromptTokens) }
    line += String(format: ", %.1f tok/s | generation: %d tokens, %.1f tok/s | first token: %.0f ms",
                   stats.promptTokensPerSecond, stats.completionTokens, stats.tokensPerSecond,
                   stats.timeToFirstToken * 1000)
    return line
}

/// Pulls `name` if it is not on disk: at once with `yes`, after asking on a terminal, and not
/// at all otherwise (the error says how).
func pullIfMissing(_ name: String, hearth: Hearth, yes: Bool) async throws {
    guard try hearth.cachedModel(name) == nil else { return }
    // Someone who typed a path into a folder that exists meant a local model.
    let folder = (name as NSString).deletingLastPathComponent
    if !folder.isEmpty, FileManager.default.fileExists(atPath: (folder as NSString).expandingTildeInPath) {
        throw HearthError.invalidArgument("There is no file or folder \(name) (the folder \(folder) has none of that name). "
            + "If you meant the Hub model \(name), pull it with `hearth pull \(name)`.")
    }
    if hearth.configuration.hub.offline { throw HearthError.offlineNotCached(name: name) }
    if !yes {
        guard isatty(STDIN_FILENO) != 0 else {
            throw HearthError.invalidArgument("\(name) is not in the cache: pull it with `hearth pull \(name)`, or pass --yes.")
        }
        guard confirm("\(name) is not in the cache. Pull it now?", defaultYes: true) else { throw ExitCode(1) }
    }
    let printer = ProgressPrinter(json: false)
    try await hearth.pull(name) { printer.report($0) }
}
