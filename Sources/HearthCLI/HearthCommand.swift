import ArgumentParser

@main
struct HearthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "Run language models locally.",
        subcommands: [RunCommand.self, ChatCommand.self, EmbedCommand.self, BenchCommand.self, TokenizeCommand.self, InspectCommand.self]
    )
}
