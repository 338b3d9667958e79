import Foundation
import GRDB
import HearthFormats
import HearthStore
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
    func open() throws -> ChatStore { try ChatStore(path: path) }

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
