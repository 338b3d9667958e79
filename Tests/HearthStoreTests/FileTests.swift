import Foundation
import GRDB
import HearthCore
import HearthStore
import HearthTestSupport
import Testing

@Suite("The database file")
struct FileTests {
    @Test("a new file is created with its directories, private, in WAL mode, marked as Hearth's")
    func newFile() async throws {
        let file = try StoreFile()
        defer { withExtendedLifetime(file) {} }
        let store = try file.open()
        #expect(store.path == file.path)
        _ = try await store.createThread()
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let directory = try FileManager.default.attributesOfItem(atPath: (file.path as NSString).deletingLastPathComponent)
        #expect((directory[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(try file.inspect { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
        #expect(try file.inspect { try Int.fetchOne($0, sql: "PRAGMA application_id") } == 0x4852_5448)
        #expect(try file.inspect { try String.fetchAll($0, sql: "SELECT identifier FROM grdb_migrations") }
            == ["v1 threads, messages and the thread counter", "v2 the thoughts before an answer"])
        #expect(try file.integrityCheck() == ["ok"])
    }

    @Test("an existing empty file (as touch makes) is taken as a new database")
    func emptyFile() async throws {
        let file = try StoreFile()
        defer { withExtendedLifetime(file) {} }
        try FileManager.default.createDirectory(atPath: (file.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: file.path, contents: Data()))
        #expect(try await file.open().createThread().name == "Chat 1")
    }

    @Test("a file migrated by a newer Hearth is refused, named, and left as it was")
    func newerMigrations() async throws {
        let file = try StoreFile()
        defer { withExtendedLifetime(file) {} }
        let thread = try await file.open().createThread()
        try file.alter { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v9 from the future')")
            try db.execute(sql: "ALTER TABLE thread ADD COLUMN pinned INTEGER")
        }
        let error = await hearthError { _ = try file.open() }
        #expect(error == .chatStoreTooNew(path: file.path, unknownMigrations: ["v9 from the future"]))
        #expect(error?.message.contains(file.path) == true)
        #expect(error?.message.contains("newer version of Hearth") == true)
        #expect(error?.category == .resource)
        #expect(try file.count("thread") == 1)
        #expect(try file.inspect { try String.fetchOne($0, sql: "SELECT id FROM thread") } == thread.id)
    }

    @Test("a file that is not a SQLite database is refused with its path and what to do, and not changed",
          arguments: ["text", "fake header"])
    func notADatabase(kind: String) async throws {
        let file = try StoreFile()
        defer { withExtendedLifetime(file) {} }
        try FileManager.default.createDirectory(atPath: (file.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var generator = SplitMix64(seed: 7)
        let bytes: Data
        if kind == "text" {
            bytes = Data(String(repeating: "These are my notes, not a database.\n", count: 200).utf8)
        } else {
            // The right magic string, then noise: SQLite must still refuse it rather than guess.
            bytes = Data("SQLite format 3\u{0}".utf8) + Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        try bytes.write(to: URL(fileURLWithPath: file.path))
        let error = await hearthError { _ = try file.open() }
        guard case .chatStoreDamaged(let path, _) = error else {
            Issue.record("expected chatStoreDamaged, got \(String(describing: error))")
            return
        }
        #expect(path == file.path)
        #expect(error?.message.contains(file.path) == true)
        #expect(error?.message.contains("Move it aside") == true)
        #expect(FileManager.default.contents(atPath: file.path) == bytes)
    }

    @Test("another program's SQLite database is refused and gets no Hearth tables")
    func foreignDatabase() async throws {
        let file = try StoreFile()
        defer { withExtendedLifetime(file) {} }
        try FileManager.default.createDirectory(atPath: (file.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try file.alter { db in
            try db.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        }
        let error = await hearthError { _ = try file.open() }
        guard case .chatStoreDamaged(_, let reason) = error else {
            Issue.record("expected chatStoreDamaged, got \(String(describing: error))")
            return
        }
        #expect(reason.contains("not Hearth's") && reason.contains("notes"))
        #expect(try file.inspect { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") } == ["notes"])

        let marked = try StoreFile()

        defer { withExtendedLifetime(marked) {} }
        try FileManager.default.createDirectory(atPath: (marked.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try marked.alter { try $0.execute(sql: "PRAGMA application_id = 42") }
        guard case .chatStoreDamaged(_, let markedReason) = await hearthError({ _ = try marked.open() }) else {
            Issue.record("expected chatStoreDamaged for a file with another application_id")
            return
        }
        #expect(markedReason.contains("another application"))
    }

    @Test("paths SQLite would take as a temporary or in-memory database are refused", arguments: ["", ":memory:"])
    func notAFilePath(path: String) async {
        #expect(invalidArgumentText(await hearthError { _ = try SQLiteChatStore(path: path) }) != nil)
    }

    @Test("a path that cannot hold a database fails with a HearthError naming it")
    func unusablePath() async throws {
        let directory = try TemporaryDirectory()
        // The path is a directory.
        let error = await hearthError { _ = try SQLiteChatStore(path: directory.url.path) }
        #expect(error?.category == .resource)
        #expect(error?.message.contains(directory.url.path) == true)
        // The parent "directory" is a file.
        let blocker = directory.file("blocker")
        try Data("x".utf8).write(to: blocker)
        let nested = blocker.appendingPathComponent("hearth.sqlite").path
        guard case .chatStoreFailed(let path, let reason) = await hearthError({ _ = try SQLiteChatStore(path: nested) }) else {
            Issue.record("expected chatStoreFailed when the parent is a file")
            return
        }
        #expect(path == nested)
        #expect(reason.contains(blocker.path))
    }
}
