import ArgumentParser
import Foundation
import Hearth

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Stream a model's answer to a prompt.",
        discussion: """
            By default the prompt is sent as a user message in the model's chat format; --raw \
            continues the text as it is. Speeds go to standard error.

            --prompts FILE answers every line of FILE instead (- reads standard input), up to \
            --parallel at once in shared forward passes. A line is a prompt as plain text, or a \
            JSON object with "prompt" (or "messages") and options of its own: "id", "system", \
            "raw", "max_tokens", "temperature", "seed", "top_k", "top_p", "min_p", \
            "repeat_penalty", "frequency_penalty", "presence_penalty", "stop", "preset". Each \
            answer is written as a JSON line as soon as it is finished ("line", "id", "prompt", \
            "text", "finish_reason", "prompt_tokens", "tokens"; "error" for a prompt that could \
            not run), to standard output or -o FILE. A malformed line stops the run with an \
            error naming it; Ctrl-C stops it too; either way every answer already written stays.
            """
    )

    @OptionGroup var modelOptions: ModelOptions
    @OptionGroup var generation: GenerationArguments

    @Argument(help: "The prompt.")
    var prompt: String?

    @Option(help: "Answer every line of this file (- for standard input) and write JSON lines.")
    var prompts: String?

    @Option(name: [.short, .customLong("output")], help: "With --prompts: write the answers to this file.")
    var output: String?

    @Option(help: "With --prompts: most prompts answered at once.")
    var parallel = 8

    @Flag(help: "Continue the prompt as plain text instead of applying the chat format.")
    var raw = false

    @Option(help: "System prompt for the chat format.")
    var system: String?

    func validate() throws {
        if raw, system != nil { throw ValidationError("--system needs the chat format; drop --raw.") }
        switch (prompt, prompts) {
        case (nil, nil): throw ValidationError("Give a prompt, or --prompts FILE.")
        case (_?, _?): throw ValidationError("Give a prompt or --prompts FILE, not both.")
        default: break
        }
        if prompts == nil, output != nil { throw ValidationError("-o needs --prompts.") }
        guard (1...256).contains(parallel) else { throw ValidationError("--parallel must be between 1 and 256.") }
    }

    func run() async throws {
        if let prompts {
            try await reportingErrors {
                let model = try await modelOptions.load(batchedGenerations: parallel)
                try await PromptBatch(model: model, path: prompts, output: output, parallel: parallel,
                                      defaults: try generation.options(), raw: raw, system: system).run()
            }
            return
        }
        let prompt = self.prompt ?? ""
        try await reportingErrors {
            let model = try await modelOptions.load()
            let options = try generation.options()
            let stream = raw ? model.complete(prompt, options: options)
                             : model.stream(prompt, system: system, options: options)
            var statistics: GenerationStatistics?
            var writer = AnswerWriter()
            for try await chunk in stream {
                writer.write(chunk)
                if let stats = chunk.statistics { statistics = stats }
            }
            writeNow("\n")
            if let statistics { printError(statisticsLine(statistics)) }
        }
    }
}
