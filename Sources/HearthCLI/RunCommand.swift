import ArgumentParser
import Foundation
import Hearth

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Stream a model's answer to a prompt.",
        discussion: """
            By default the prompt is sent as a user message in the model's chat format; --raw \
            continues the text as it is. Speeds go to standard error.
            """
    )

    @OptionGroup var modelOptions: ModelOptions

    @Argument(help: "The prompt.")
    var prompt: String

    @Option(name: [.customShort("n"), .customLong("max-tokens")], help: "Most tokens to generate.")
    var maxTokens = 512

    @Option(name: .customLong("temp"), help: "Sampling temperature; 0 always picks the most likely token.")
    var temperature: Float = 0

    @Option(help: "Seed for sampling, for repeatable output.")
    var seed: UInt64?

    @Option(name: .customLong("top-k"), help: "Sample from the K most likely tokens only.")
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

    var samplingOptions: SamplingOptions {
        SamplingOptions(temperature: temperature, topK: topK, topP: topP, minP: minP,
                        repetitionPenalty: repeatPenalty, frequencyPenalty: frequencyPenalty,
                        presencePenalty: presencePenalty, seed: seed)
    }

    @Flag(help: "Continue the prompt as plain text instead of applying the chat format.")
    var raw = false

    @Option(help: "System prompt for the chat format.")
    var system: String?

    @Option(name: [.short, .customLong("ctx-size")], help: "Context length (default: the model's, at most 4096).")
    var contextLength: Int?

    func validate() throws {
        guard maxTokens >= 0 else { throw ValidationError("--max-tokens must not be negative.") }
        do {
            try samplingOptions.validate()
        } catch let error as HearthError {
            throw ValidationError(error.message)
        }
        if raw, system != nil { throw ValidationError("--system needs the chat format; drop --raw.") }
    }

    func run() throws {
        try reportingErrors {
            let model = try modelOptions.load()
            let tokenizer = model.tokenizer
            let tokens: [Int32]
            if raw {
                tokens = tokenizer.encode(prompt, addSpecial: true, parseSpecial: false)
            } else {
                let format = try ChatFormat(gguf: model.gguf)
                let text = try format.render([ChatMessage(role: .user, content: prompt)], system: system)
                tokens = tokenizer.encode(text, addSpecial: true, parseSpecial: true)
            }
            let state = try model.makeState(contextLength: contextLength)
            if tokens.count + 1 > state.contextLength {
                throw HearthError.contextOverflow(needed: tokens.count + 1, limit: state.contextLength)
            }
            let budget = min(maxTokens, state.contextLength - tokens.count)
            let stats = try model.generate(prompt: tokens, maxTokens: budget,
                                           sampler: Sampler(options: samplingOptions),
                                           state: state) { chunk in
                writeNow(chunk.text)
                return true
            }
            writeNow("\n")
            printError(String(format: "prompt: %d tokens, %.1f tok/s | generation: %d tokens, %.1f tok/s | first token: %.0f ms",
                              stats.promptTokens, stats.promptTokensPerSecond, stats.generatedTokens,
                              stats.generationTokensPerSecond, stats.timeToFirstToken * 1000))
        }
    }
}
