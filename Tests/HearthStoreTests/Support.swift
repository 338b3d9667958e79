import Foundation
import GRDB
import HearthCore
import HearthStore
import HearthStorePostgres
import HearthTestSupport
import Testing

/// A database file in a fresh temporary directory, one level down so that opening it also
/// proves the store creates missing parent directories.
///
/// The directory is removed when this object goes, which Swift may do right after its last
/// use: tests hold it with `defer { withExtendedLifetime(file) {} }` while a store is open.
final class StoreFile {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.url.appendingPathComponent("data/hearth.sqlite").path
    }

    /// A new store on the file; each call opens its own connections, as a new process would.
    func open() throws -> SQLiteChatStore { try SQLiteChatStore(path: path) }

    /// Reads the file directly, outside the store.
    func inspect<T>(_ body: (Database) throws -> T) throws -> T {
        let queue = try DatabaseQueue(path: path)
        return try queue.read(body)
    }

    /// Changes the file directly, outside the store.
    func alter(_ body: (Database) throws -> Void) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write(body)
    }

    /// The file's own check of its pages and indexes: ["ok"] when sound.
    func integrityCheck() throws -> [String] {
        try inspect { try String.fetchAll($0, sql: "PRAGMA integrity_check") }
    }

    /// The number of rows of `table`, counted in the file.
    func count(_ table: String) throws -> Int {
        try inspect { try Int.fetchOne($0, sql: "SELECT count(*) FROM \(table)") ?? -1 }
    }
}

/// A new, empty database of one engine for one test: a SQLite file in a temporary directory,
/// or a database of its own on the shared PostgreSQL server, so that tests run in parallel.
///
/// Hold it as `StoreFile` is held (`defer { withExtendedLifetime(database) {} }`): the SQLite
/// file's directory goes with it.
final class StoreDatabase {
    let engine: StoreEngine
    private let file: StoreFile?
    private let postgres: (server: PostgresTestServer, name: String)?

    init(_ engine: StoreEngine) throws {
        self.engine = engine
        switch engine {
        case .sqlite:
            file = try StoreFile()
            postgres = nil
        case .postgres:
            let server = try PostgresTestServer.shared
            file = nil
            postgres = (server, try server.createDatabase())
        }
    }

    /// The URL of the PostgreSQL database (nil for SQLite).
    var url: PostgresURL? {
        get throws { try postgres.map { try PostgresURL($0.server.url(database: $0.name)) } }
    }

    /// A new store on the database; each call opens its own connections, as a new process would.
    func open() async throws -> any ChatStore {
        if let file { return try file.open() }
        return try await PostgresChatStore(url: try #require(try url))
    }

    /// Runs `sql` outside the store and returns its single value: through GRDB on the SQLite
    /// file, through psql on PostgreSQL. Table and column names differ (threadID, thread_id).
    func value(sqlite: String, postgres postgresSQL: String) throws -> String {
        if let file { return try file.inspect { try String.fetchOne($0, sql: sqlite) } ?? "" }
        let (server, name) = try #require(postgres)
        return try server.psql(postgresSQL, database: name).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The number of rows of `table`, counted outside the store.
    func count(_ table: String) throws -> Int {
        Int(try value(sqlite: "SELECT count(*) FROM \(table)", postgres: "SELECT count(*) FROM \(table)")) ?? -1
    }

    /// The number of messages of a thread, counted outside the store.
    func messageCount(threadID: String) throws -> Int {
        let quoted = "'" + threadID.replacingOccurrences(of: "'", with: "''") + "'"
        return Int(try value(sqlite: "SELECT count(*) FROM message WHERE threadID = \(quoted)",
                             postgres: "SELECT count(*) FROM message WHERE thread_id = \(quoted)")) ?? -1
    }

    /// The database's own consistency check: ["ok"] when sound. SQLite checks its pages and
    /// indexes; on PostgreSQL, no message may be without its thread, and ids must be unique.
    func integrityCheck() throws -> [String] {
        if let file { return try file.integrityCheck() }
        let problems = try value(sqlite: "", postgres: """
            SELECT (SELECT count(*) FROM message m LEFT JOIN thread t ON t.id = m.thread_id WHERE t.id IS NULL)
                 + (SELECT count(*) - count(DISTINCT id) FROM message)
            """)
        return problems == "0" ? ["ok"] : ["\(problems) orphaned or duplicate messages"]
    }
}

/// Runs `body`, expecting it to throw a `HearthError`, and returns that error.
func hearthError(_ body: () async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) async -> HearthError? {
    do {
        try await body()
        Issue.record("expected a HearthError, nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as HearthError {
        return error
    } catch {
        Issue.record("expected a HearthError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The text of an `.invalidArgument` error, or nil for any other error.
func invalidArgumentText(_ error: HearthError?) -> String? {
    if case .invalidArgument(let text) = error { return text }
    return nil
}
