import ArgumentParser

@main
struct HearthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "Run language models locally.",
        subcommands: [RunCommand.self, ChatCommand.self, EmbedCommand.self, SimilarCommand.self, RerankCommand.self, PullCommand.self, SearchCommand.self, ListCommand.self,
                      ShowCommand.self, RemoveCommand.self, PruneCommand.self, ServeCommand.self, BenchCommand.self, TokenizeCommand.self, InspectCommand.self,
                      TranscribeCommand.self]
    )
}
