import ArgumentParser

@main
struct HearthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "Run language models locally.",
        subcommands: [InspectCommand.self]
    )
}
