import Foundation

/// The database engines the chat store runs on, for tests that run once on each.
public enum StoreEngine: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A SQLite file (`SQLiteChatStore`).
    case sqlite
    /// A database on the test process's PostgreSQL server (`PostgresChatStore`).
    case postgres

    /// SQLite always; PostgreSQL when it is installed (the PostgreSQL suites say so when not).
    public static var available: [StoreEngine] { PostgresTestServer.isInstalled ? allCases : [.sqlite] }

    public var description: String { rawValue }

    /// Where a new, empty database is, as `--database` takes it: a SQLite file in `directory`,
    /// or the URL (with its password) of a new database on the shared PostgreSQL server.
    public func newDatabase(in directory: TemporaryDirectory) throws -> String {
        switch self {
        case .sqlite:
            return directory.file("hearth.sqlite").path
        case .postgres:
            let server = try PostgresTestServer.shared
            return server.url(database: try server.createDatabase())
        }
    }
}
