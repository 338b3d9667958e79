import Foundation
import HearthCore
internal import GRDB

/// The tables of the chat database and the migrations that make them.
///
/// Migrations are plain SQL, never derived from the Swift types, so that a migration written
/// today still makes the same tables after the types change. A migration, once released, is
/// never edited: a change to the schema is a new migration appended to the list.
enum StoreSchema {
    /// "HRTH" in the file header (`PRAGMA application_id`), so that a Hearth database can be
    /// told from another program's SQLite file at the same path.
    static let applicationID: Int32 = 0x4852_5448

    /// The row of `counter` from which threads take their "Chat N" numbers.
    static let threadNumberCounter = "threadNumber"

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1 threads, messages and the thread counter") { db in
            try db.execute(sql: "PRAGMA application_id = \(applicationID)")
            // Dates are whole milliseconds since 1970 (see `StoredDate`). `activity` orders the
            // thread list: it grows with each change, unlike `updatedAt`, which two changes in
            // one millisecond (or a clock set back) would tie or reverse.
            try db.execute(sql: """
                CREATE TABLE thread (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    model TEXT,
                    preset TEXT,
                    systemPrompt TEXT,
                    createdAt INTEGER NOT NULL,
                    updatedAt INTEGER NOT NULL,
                    activity INTEGER NOT NULL
                );
                CREATE INDEX thread_by_activity ON thread(activity);
                """)
            // AUTOINCREMENT so that an id is never handed out twice, even after the newest
            // message is deleted (Regenerate) or every message is (clearAll). Roles are checked in
            // Swift rather than by a CHECK constraint, so that a later role needs no table rebuild.
            try db.execute(sql: """
                CREATE TABLE message (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    threadID TEXT NOT NULL REFERENCES thread(id) ON DELETE CASCADE,
                    role TEXT NOT NULL,
                    content TEXT NOT NULL,
                    createdAt INTEGER NOT NULL,
                    completionTokens INTEGER,
                    tokensPerSecond REAL
                );
                CREATE INDEX message_by_thread ON message(threadID, id);
                """)
            // A counter of its own rather than max(number) over threads: deleting the newest
            // thread must not hand its number out again.
            try db.execute(sql: """
                CREATE TABLE counter (
                    name TEXT PRIMARY KEY NOT NULL,
                    value INTEGER NOT NULL
                );
                INSERT INTO counter (name, value) VALUES ('\(threadNumberCounter)', 0);
                """)
        }
        // The thoughts of a reasoning model's answer, kept beside the answer (NULL for others).
        migrator.registerMigration("v2 the thoughts before an answer") { db in
            try db.execute(sql: "ALTER TABLE message ADD COLUMN reasoning TEXT")
        }
        return migrator
    }

    /// Refuses a file that is someone else's SQLite database, or one that a newer Hearth has
    /// migrated further than this build knows how to.
    static func checkOwnership(_ db: Database, path: String) throws {
        let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        if applicationID != 0 && applicationID != Self.applicationID {
            throw HearthError.chatStoreDamaged(
                path: path, reason: "it is another application's SQLite database (application_id \(applicationID))")
        }
        if applicationID == 0 {
            // A new file has no tables yet. One with tables but without Hearth's mark was made by
            // something else; migrating it would mix Hearth's tables into it.
            let tables = try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_master
                WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations'
                ORDER BY name
                """)
            if !tables.isEmpty {
                throw HearthError.chatStoreDamaged(
                    path: path,
                    reason: "it is a SQLite database, but not Hearth's (it has the tables \(tables.joined(separator: ", ")))")
            }
        }
        let known = Set(migrator.migrations)
        let unknown = try migrator.appliedIdentifiers(db).subtracting(known)
        if !unknown.isEmpty {
            throw HearthError.chatStoreTooNew(path: path, unknownMigrations: unknown.sorted())
        }
    }
}

/// Text the user or a model wrote, stored so that it comes back byte for byte.
///
/// GRDB binds and reads strings as C strings, so a NUL character (which JSON allows, and a
/// byte-level tokenizer can produce) would silently cut the text short. Binding the UTF-8 bytes
/// as a blob cast to TEXT, and reading the column back cast to a blob, keeps every byte while
/// the column stays TEXT for SQLite's own tools.
enum StoredText {
    /// The placeholder to write in SQL where a value from `bind` goes.
    static let placeholder = "CAST(? AS TEXT)"

    static func bind(_ text: String?) -> Data? {
        text.map { Data($0.utf8) }
    }

    /// The expression to SELECT for a text column, named as the column.
    static func select(_ column: String) -> String {
        "CAST(\(column) AS BLOB) AS \(column)"
    }

    static func decode(_ row: Row, _ column: String) throws -> String? {
        let bytes: Data? = try row.decode(forColumn: column)
        // The bytes were valid UTF-8 when written; a file edited by hand gets U+FFFD, not a trap.
        return bytes.map { String(decoding: $0, as: UTF8.self) }
    }

    static func decodeRequired(_ row: Row, _ column: String) throws -> String {
        try decode(row, column) ?? ""
    }
}

extension ChatThread {
    /// The columns `init(row:)` reads, in a form to put after SELECT.
    static let columns = ["id", StoredText.select("name"), StoredText.select("model"), StoredText.select("preset"),
                          StoredText.select("systemPrompt"), "createdAt", "updatedAt"].joined(separator: ", ")

    /// Throws rather than traps on a value of the wrong type: the file may have been edited by
    /// hand, and a damaged file must not bring the server down.
    init(row: Row) throws {
        self.init(
            id: try row.decode(forColumn: "id"), name: try StoredText.decodeRequired(row, "name"),
            model: try StoredText.decode(row, "model"), preset: try StoredText.decode(row, "preset"),
            systemPrompt: try StoredText.decode(row, "systemPrompt"),
            createdAt: StoredDate.date(milliseconds: try row.decode(forColumn: "createdAt")),
            updatedAt: StoredDate.date(milliseconds: try row.decode(forColumn: "updatedAt")))
    }
}

extension StoredMessage {
    /// The columns `init(row:)` reads, in a form to put after SELECT.
    static let columns = ["id", "threadID", "role", StoredText.select("content"), "createdAt", "completionTokens",
                          "tokensPerSecond", StoredText.select("reasoning")].joined(separator: ", ")

    /// Throws rather than traps on a value of the wrong type, as `ChatThread.init(row:)` does.
    init(row: Row) throws {
        self.init(
            id: try row.decode(forColumn: "id"), threadID: try row.decode(forColumn: "threadID"),
            role: try row.decode(forColumn: "role"), content: try StoredText.decodeRequired(row, "content"),
            createdAt: StoredDate.date(milliseconds: try row.decode(forColumn: "createdAt")),
            completionTokens: try row.decode(forColumn: "completionTokens"),
            tokensPerSecond: try row.decode(forColumn: "tokensPerSecond"), reasoning: try StoredText.decode(row, "reasoning"))
    }
}
