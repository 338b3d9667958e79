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
            """
    )

    @OptionGroup var modelOptions: ModelOptions
    @OptionGroup var generation: GenerationArguments

    @Argument(help: "The prompt.")
    var prompt: String

    @Flag(help: "Continue the prompt as plain text instead of applying the chat format.")
    var raw = false

    @Option(help: "System prompt for the chat format.")
    var system: String?

    func validate() throws {
        if raw, system != nil { throw ValidationError("--system needs the chat format; drop --raw.") }
    }

    func run() async throws {
        try await reportingErrors {
            let model = try await modelOptions.load()
            let options = try generation.options()
            let stream = raw ? model.complete(prompt, options: options)
                             : model.stream(prompt, system: system, options: options)
            var statistics: GenerationStatistics?
            for try await chunk in stream {
                writeNow(chunk.text)
                if let stats = chunk.statistics { statistics = stats }
            }
            writeNow("\n")
            if let statistics { printError(statisticsLine(statistics)) }
        }
    }
}
